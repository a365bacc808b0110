"""Diagnosis rules, one module per family of faults (links, congestion, spines, GPUs, hosts, latency).

Each module exposes ``rules(ctx) -> list[Finding]`` over a :class:`fabric.rules.context.Context`;
:func:`fabric.diagnosis.diagnose` runs them in order and merges what they find.
"""
