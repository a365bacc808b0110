"""Diagnosis rules, one module per family of faults (links, congestion, spines, GPUs, hosts, latency).

Each module exposes ``rules(ctx) -> list[Finding]`` over a :class:`fleet.fabric.rules.context.Context`;
:func:`fleet.fabric.diagnosis.diagnose` runs them in order and merges what they find.
"""
