"""The pieces of a scrape's text, written as prometheus-client writes them.

Shared by the sample families (``fleet.collectors.openmetrics``) and the record
families (``fleet.collectors.openmetrics_records``), so that both come out
byte for byte as the library would write them (a test compares them).
OpenMetrics 1.0: https://github.com/OpenObservability/OpenMetrics/blob/main/specification/OpenMetrics.md;
the Prometheus 0.0.4 text format: https://prometheus.io/docs/instrumenting/exposition_formats/.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from prometheus_client.utils import floatToGoString

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def escaped(value: str) -> str:
    """A label value or HELP text as both text formats escape it (backslash, newline, quote)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def label_text(labels: Mapping[str, str]) -> str:
    """``{a="x",b="y"}`` with names sorted, as prometheus-client writes them (scrapes diff cleanly)."""
    return "{" + ",".join(f'{name}="{escaped(value)}"' for name, value in sorted(labels.items())) + "}"


def label_name(text: str) -> str:
    """``text`` as a valid label name: every character outside ``[a-zA-Z0-9_]`` becomes ``_``."""
    name = re.sub(r"[^a-zA-Z0-9_]", "_", text)
    return name if _LABEL_NAME.fullmatch(name) else "_" + name


def header(family: str, kind: str, help_text: str, openmetrics: bool) -> str:
    """HELP and TYPE lines. In the 0.0.4 format a counter family is named with its ``_total`` and an
    info family with its ``_info``, as a gauge (the library's munging)."""
    if openmetrics:
        return f"# HELP {family} {escaped(help_text)}\n# TYPE {family} {kind}\n"
    name = family + "_total" if kind == "counter" else family + "_info" if kind == "info" else family
    shown = help_text.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {shown}\n# TYPE {name} {'gauge' if kind == 'info' else kind}\n"


def sample_line(name: str, labels: Mapping[str, str], value: float, openmetrics: bool,
                ts: float | None = None) -> str:
    """One sample; ``ts`` (unix seconds) written as each format wants it: seconds, or whole milliseconds."""
    return f"{name}{label_text(labels)} {floatToGoString(value)}{timestamp_text(ts, openmetrics)}\n"


def timestamp_text(ts: float | None, openmetrics: bool) -> str:
    """`` <ts>`` as the library writes a sample's timestamp, or "" without one."""
    if ts is None:
        return ""
    return f" {ts}" if openmetrics else f" {int(float(ts) * 1000):d}"
