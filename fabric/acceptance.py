"""Acceptance criteria: what a customer and a provider signed, as checks with thresholds, and their verdicts.

Why a file: the walkthrough with the customer must run exactly what was
agreed (e.g. all-reduce bus-bandwidth efficiency >= 94 % on every node, link
loss < 0.01 %, p99 latency under a bound on every rail, every cable where the
plan says), and the report must show each check's threshold next to the
measured numbers. The format (TOML, documented in
``docs/acceptance-criteria.example.toml``)::

    title = "..."            customer = "..."
    [suite]                  how to measure (link-test mode, rails, probe sizes ...)
    [[check]]                id, kind, the threshold key of the kind, scope, description
      nodes = "gpu[001-032]" (Slurm hostlist; default every node)
      rails = "0-3"          (default every rail)

Evaluation reads a :class:`fleet.fabric.baseline.Baseline` (the suite's numbers)
and the diagnosis' findings; every result carries the measured numbers and
the threshold as evidence, and its ``claim``: what was checked, in words
generated from what the suite measured (its link-test mode, the pairs, NICs
and nodes it reached, of how many in scope), so a report never says "every
pair" of a suite that sampled 3 % of them. Percentages are shares of a whole,
bounded by 100: link loss is lost / (moved + lost) packets. Pure: no I/O (the
caller reads the file).
"""

from __future__ import annotations

import math
import statistics
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import hostlist

from fleet.fabric.baseline import Baseline, part_nodes, part_rail, split_part
from fleet.fabric.config_checks import SPECS as CONFIG_CHECKS
from fleet.fabric.events import Finding


class CriteriaError(ValueError):
    """A problem in a criteria file, worded for the user: ``FILE: check N (id): problem``."""


@dataclass(frozen=True, slots=True)
class KindSpec:
    """A check kind: its threshold key in the file, the unit, and whether the measure must stay above it."""

    threshold_key: str | None
    unit: str
    at_least: bool
    what: str


CHECK_KINDS: Mapping[str, KindSpec] = {
    "allreduce_efficiency_min": KindSpec("min", "", True, "all-reduce bus bandwidth / theoretical (0-1)"),
    "alltoall_efficiency_min": KindSpec("min", "", True, "all-to-all bus bandwidth / theoretical (0-1)"),
    "link_loss_max": KindSpec("max_pct", "%", False,
                              "packets lost or dropped / (packets moved + lost) during the suite, per NIC (0-100 %)"),
    "latency_p99_max_usec": KindSpec("max", "usec", False, "link-test p99 latency of every pair"),
    "bandwidth_min_gbps": KindSpec("min", "Gb/s", True, "perftest bandwidth of every NIC"),
    "cabling_matches_plan": KindSpec(None, "", True, "LLDP neighbour = the cabling plan's switch and port"),
    "optics_rx_power_min_dbm": KindSpec("min", "dBm", True, "weakest lane's receive power of every NIC"),
    "no_findings_of_kind": KindSpec(None, "", True, "the diagnosis finds none of these kinds"),
    "config_checks_pass": KindSpec(None, "", True, "these fleet check configuration checks pass on every part"),
}

COLLECTIVE_KINDS: Mapping[str, str] = {"allreduce_efficiency_min": "allreduce", "alltoall_efficiency_min": "alltoall"}
"""Check kinds of a collective: judged per node (NVLink), or with ``fleet = true`` across every node."""

SUITE_KEYS: Mapping[str, type | tuple[type, ...]] = {
    "linktest_mode": str, "sample_rounds": int, "rails": str, "lat_iterations": int, "bw_test": str,
    "bw_iterations": int, "allreduce_max_bytes": str, "gpus_per_node": int, "fleet_allreduce": bool,
    "alltoall_max_bytes": str, "node_alltoall": bool, "fleet_alltoall": bool, "ep_bench": bool, "ep_script": str,
    "max_parallel": int, "probe_timeout_s": (int, float),
}  # fmt: skip
"""``[suite]`` keys and their types; their meaning is in ``fleet.collectors.baseline_run.SuiteSettings``."""

_CHECK_KEYS = frozenset({"id", "kind", "description", "nodes", "rails", "fleet", "kinds", "checks"})


@dataclass(frozen=True, slots=True)
class Scope:
    """Which parts a check covers: ``nodes`` None = every node, ``rails`` None = every rail."""

    nodes: frozenset[str] | None = None
    rails: frozenset[int] | None = None
    nodes_text: str = "all nodes"
    rails_text: str = "all rails"

    def covers(self, part: str) -> bool:
        nodes = part_nodes(part)
        if self.nodes is not None and nodes and not all(n in self.nodes for n in nodes):
            return False
        rail = part_rail(part)
        return self.rails is None or rail is None or rail in self.rails

    def covers_node(self, node: str) -> bool:
        return self.nodes is None or node in self.nodes

    def words(self) -> str:
        return f"{self.nodes_text}, {self.rails_text}"


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    kind: str
    threshold: float | None
    """In the kind's unit (``link_loss_max``: percent)."""
    scope: Scope
    description: str = ""
    fleet: bool = False
    """``allreduce_efficiency_min`` and ``alltoall_efficiency_min`` only: judge the collective across every node
    instead of each node."""
    kinds: tuple[str, ...] = ()
    """``no_findings_of_kind`` only: the finding kinds that must not appear."""
    checks: tuple[str, ...] = ()
    """``config_checks_pass`` only: the ``fleet check`` check ids that must pass (() = every check)."""

    @property
    def spec(self) -> KindSpec:
        return CHECK_KINDS[self.kind]

    def threshold_words(self) -> str:
        """``>= 0.94 (94 %)``, ``<= 0.01 %``, ``every cable as planned``, ``none of: ...``."""
        if self.kind == "no_findings_of_kind":
            return "none of: " + ", ".join(self.kinds)
        if self.kind == "config_checks_pass":
            return "passes: " + (", ".join(self.checks) if self.checks else "every configuration check")
        if self.threshold is None:
            return "every cable as planned"
        sign = ">=" if self.spec.at_least else "<="
        if self.kind == "allreduce_efficiency_min":
            return f"{sign} {self.threshold:g} ({100 * self.threshold:g} % of the hardware's)"
        if self.kind == "alltoall_efficiency_min":
            return f"{sign} {self.threshold:g} ({100 * self.threshold:g} % of the theoretical)"
        return f"{sign} {self.threshold:g} {self.spec.unit}".rstrip()


@dataclass(frozen=True, slots=True)
class Criteria:
    title: str
    customer: str
    suite: Mapping[str, Any]
    checks: tuple[Check, ...]
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "customer": self.customer, "suite": dict(self.suite), "source": self.source,
                "checks": [{"id": c.id, "kind": c.kind, "threshold": c.threshold, "scope": c.scope.words(),
                            "fleet": c.fleet, "kinds": list(c.kinds), "checks": list(c.checks),
                            "description": c.description,
                            "threshold_words": c.threshold_words()} for c in self.checks]}


def parse_criteria(text: str, source: str = "criteria.toml") -> Criteria:
    """The criteria of a TOML text; every mistake is a :class:`CriteriaError` naming the check and key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise CriteriaError(f"{source}: {error}") from None
    unknown = set(data) - {"title", "customer", "suite", "check"}
    if unknown:
        raise CriteriaError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}")
    suite = data.get("suite", {})
    for key, value in suite.items():
        expected = SUITE_KEYS.get(key)
        if expected is None:
            raise CriteriaError(f"{source}: [suite]: unknown key {key!r} (known: {', '.join(SUITE_KEYS)})")
        if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
            raise CriteriaError(f"{source}: [suite]: {key} has the wrong type ({type(value).__name__})")
    raw_checks = data.get("check", [])
    if not isinstance(raw_checks, list) or not raw_checks:
        raise CriteriaError(f"{source}: no [[check]] entries")
    checks = [_check(raw, i + 1, source) for i, raw in enumerate(raw_checks)]
    ids = [c.id for c in checks]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CriteriaError(f"{source}: duplicate check id(s) {', '.join(duplicates)}")
    return Criteria(str(data.get("title", "Acceptance")), str(data.get("customer", "")), dict(suite),
                    tuple(checks), source)


def _check(raw: Mapping[str, Any], number: int, source: str) -> Check:
    where = f"{source}: check {number}"
    kind = str(raw.get("kind"))
    if kind not in CHECK_KINDS:
        raise CriteriaError(f"{where}: kind {raw.get('kind')!r} is not one of {', '.join(CHECK_KINDS)}")
    spec = CHECK_KINDS[kind]
    check_id = str(raw.get("id", f"{kind}-{number}"))
    where = f"{where} ({check_id})"
    allowed = _CHECK_KEYS | ({spec.threshold_key} if spec.threshold_key else set())
    unknown = set(raw) - allowed
    if unknown:
        raise CriteriaError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} for {kind}")
    threshold: float | None = None
    if spec.threshold_key is not None:
        value = raw.get(spec.threshold_key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise CriteriaError(f"{where}: {spec.threshold_key} must be a number ({spec.unit or 'a fraction'})")
        threshold = float(value)
    kinds = raw.get("kinds", [])
    if kind == "no_findings_of_kind" and (not isinstance(kinds, list) or not kinds
                                          or not all(isinstance(k, str) for k in kinds)):
        raise CriteriaError(f"{where}: kinds must be a non-empty list of finding kinds")
    fleet = raw.get("fleet", False)
    if fleet and kind not in COLLECTIVE_KINDS:
        raise CriteriaError(f"{where}: fleet = true applies to {' and '.join(COLLECTIVE_KINDS)} only")
    checks = raw.get("checks", [])
    if "checks" in raw and kind != "config_checks_pass":
        raise CriteriaError(f"{where}: checks applies to config_checks_pass only")
    if not isinstance(checks, list) or not all(isinstance(c, str) for c in checks):
        raise CriteriaError(f"{where}: checks must be a list of fleet check ids (docs/checks.md)")
    unknown_checks = [c for c in checks if c not in CONFIG_CHECKS]
    if unknown_checks:
        raise CriteriaError(f"{where}: {unknown_checks[0]!r} is not a fleet check id (known: "
                            f"{', '.join(CONFIG_CHECKS)})")
    return Check(check_id, kind, threshold, _scope(raw, where), str(raw.get("description", "")), bool(fleet),
                 tuple(kinds), tuple(checks))


def _scope(raw: Mapping[str, Any], where: str) -> Scope:
    nodes_text = raw.get("nodes", "all")
    rails_text = raw.get("rails", "all")
    nodes: frozenset[str] | None = None
    rails: frozenset[int] | None = None
    if nodes_text != "all":
        try:
            nodes = frozenset(hostlist.expand_hostlist(str(nodes_text)))
        except hostlist.BadHostlist as error:
            raise CriteriaError(f"{where}: nodes {nodes_text!r} is not a host list: {error}") from None
    if rails_text != "all":
        rails = frozenset(parse_rails(str(rails_text), where))
    return Scope(nodes, rails, "all nodes" if nodes is None else f"nodes {nodes_text}",
                 "all rails" if rails is None else f"rails {rails_text}")


def parse_rails(text: str, where: str = "rails") -> tuple[int, ...]:
    """``"0-7"`` / ``"0,3"`` -> the rail numbers."""
    try:
        return tuple(int(r) for r in hostlist.expand_hostlist(f"[{text}]"))
    except (hostlist.BadHostlist, ValueError):
        raise CriteriaError(f"{where}: rails {text!r} is not a list such as 0-7 or 0,3") from None


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True, slots=True)
class PartResult:
    """One part's verdict: its measured number (None: not measured) and why it fails, in words."""

    part: str
    measured: float | None
    passed: bool
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"part": self.part, "measured": self.measured, "passed": self.passed, "note": self.note}


@dataclass(frozen=True, slots=True)
class CheckResult:
    """A check's verdict with its evidence: every failing part, the worst value, the threshold."""

    check: Check
    passed: bool
    parts_checked: int
    failures: tuple[PartResult, ...]
    worst: PartResult | None
    """The part closest to (or furthest past) the threshold."""
    summary: str
    measured: Mapping[str, float] = field(default_factory=dict)
    """Distribution of the measured values (min, median, max, count) in the kind's unit."""
    claim: str = ""
    """What was checked, generated from what the suite measured (:func:`claim`)."""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.check.id, "kind": self.check.kind, "passed": self.passed, "claim": self.claim,
                "threshold": self.check.threshold, "threshold_words": self.check.threshold_words(),
                "unit": self.check.spec.unit, "scope": self.check.scope.words(),
                "description": self.check.description, "parts_checked": self.parts_checked,
                "summary": self.summary, "measured": dict(self.measured),
                "worst": self.worst.to_json() if self.worst else None,
                "failures": [f.to_json() for f in self.failures]}


def evaluate(criteria: Criteria, baseline: Baseline, findings: Sequence[Finding] = ()) -> list[CheckResult]:
    """Every check's verdict, in the file's order."""
    return [evaluate_check(check, baseline, findings, criteria.suite) for check in criteria.checks]


def evaluate_check(check: Check, baseline: Baseline, findings: Sequence[Finding] = (),
                   suite: Mapping[str, Any] | None = None) -> CheckResult:
    """One check's verdict with its claim (the walkthrough screen calls this one at a time); ``suite``:
    the criteria's ``[suite]`` table the numbers were measured with."""
    if check.kind == "no_findings_of_kind":
        result = _findings_check(check, baseline, findings)
    elif check.kind == "config_checks_pass":
        result = _config_check(check, baseline)
    elif check.kind == "cabling_matches_plan":
        result = _cabling_check(check, baseline)
    else:
        kind, read = _MEASURES[check.kind]
        parts = _parts_in_scope(check, baseline, kind)
        result = _verdict(check, [_judge(check, part, read(baseline, part)) for part in parts])
    return replace(result, claim=claim(check, baseline, suite or {}))


def loss_pct(baseline: Baseline, part: str) -> float | None:
    """Link loss of a NIC during the suite, in percent (0-100): packets lost or dropped over the packets
    it moved plus those lost. A baseline from before ``lost`` was kept uses its error counts in their
    place (symbol errors among them, so an upper bound), still a share of at most 100 %."""
    lost = baseline.metric(part, "lost")
    if lost is None:
        lost = baseline.metric(part, "errors")
    packets = baseline.metric(part, "packets")
    if lost is None or packets is None:
        return None
    whole = packets + lost
    return 0.0 if whole <= 0 else 100.0 * lost / whole


_MODE_WORDS = {
    "mesh": "every pair of the nodes it reached (a full mesh)",
    "rail": "every pair of the nodes it reached, one rail after another",
}


def claim(check: Check, baseline: Baseline, suite: Mapping[str, Any]) -> str:
    """What the check verified, in words generated from what was measured, never from what was hoped.

    E.g. ``Link-test p99 latency <= 5 usec (2-byte RDMA writes) on 128 node pairs x rail it measured, of
    3,968 in scope (3.2 %): 4 rounds of random disjoint pairs (sample mode), each node meeting 4 peers per
    rail``. The coverage (parts measured of parts in scope) is a share of at most 100 %.
    """
    scope = check.scope
    nodes = [n for n in baseline.shape.nodes if scope.covers_node(n)]
    rails = [r for r in baseline.shape.rails if scope.rails is None or r in scope.rails]
    rails_words = _rails_words(rails)
    if check.kind == "latency_p99_max_usec":
        measured = _pairs_measured(baseline, rails, scope)
        total = len(nodes) * (len(nodes) - 1) // 2 * len(rails)
        mode = str(suite.get("linktest_mode", "mesh"))
        rounds = int(suite.get("sample_rounds", 4))
        how = _MODE_WORDS.get(mode, f"{_count(rounds, 'round')} of random disjoint pairs (sample mode), each node "
                                    f"meeting {_count(rounds, 'peer')} per rail")
        return (f"Link-test p99 latency {check.threshold_words()} (2-byte RDMA writes) on {len(measured):,} node "
                f"pairs x rail it measured on {rails_words}, of {total:,} in scope ({_share(len(measured), total)}): "
                f"{how}")
    nics = [n for n in baseline.shape.nics if scope.covers(f"nic/{n.replace(':', '/')}")]
    if check.kind in ("bandwidth_min_gbps", "optics_rx_power_min_dbm", "link_loss_max"):
        metric = {"bandwidth_min_gbps": "bw_avg_gbps", "optics_rx_power_min_dbm": "rx_power_dbm",
                  "link_loss_max": "packets"}[check.kind]
        measured_nics = sum(1 for n in nics if baseline.metric(f"nic/{n.replace(':', '/')}", metric) is not None)
        what = {
            "bandwidth_min_gbps": f"{suite.get('bw_test', 'ib_write_bw')} bandwidth of each NIC, node i against "
                                  "node i + n/2 on the same rail (across the spines),",
            "optics_rx_power_min_dbm": "The weakest lane's receive power of each NIC",
            "link_loss_max": "Packets lost or dropped, over the packets moved plus those lost, on each NIC during "
                             "the suite",
        }[check.kind]
        return (f"{what} {check.threshold_words()}: {measured_nics:,} of {len(nics):,} NICs in scope measured "
                f"({_share(measured_nics, len(nics))}) on {rails_words}")
    if check.kind in COLLECTIVE_KINDS:
        collective = COLLECTIVE_KINDS[check.kind]
        tool = f"{collective.replace('allreduce', 'all_reduce')}_perf"
        if check.fleet:
            part = baseline.parts.get(f"fleet/{collective}", {})
            reached = [n for n in baseline.shape.nodes if n not in baseline.unreachable]
            ran = "ran" if part else "did not run"
            allow = "what their NICs allow" if collective == "allreduce" else \
                "the theoretical figure of their NICs and the fabric's bisection"
            return (f"One {tool} across the {len(reached):,} reachable nodes ({ran}) reaches "
                    f"{check.threshold_words()} bus bandwidth of {allow}")
        measured_nodes = sum(1 for n in nodes if baseline.metric(f"node/{n}", f"{collective}_efficiency") is not None)
        return (f"{tool} on each node's {suite.get('gpus_per_node', 8)} GPUs (NVLink) reaches "
                f"{check.threshold_words()} bus bandwidth: {measured_nodes:,} of {len(nodes):,} nodes in scope "
                f"measured ({_share(measured_nodes, len(nodes))})")
    if check.kind == "cabling_matches_plan":
        compared = sum(1 for nic, cable in baseline.cabling.items()
                       if cable.matches is not None and scope.covers(f"nic/{nic.replace(':', '/')}"))
        return (f"The LLDP neighbour of each NIC is the switch port the cabling plan gives: {compared:,} of "
                f"{len(nics):,} NICs in scope compared ({_share(compared, len(nics))})")
    if check.kind == "config_checks_pass":
        present = [c for c in (check.checks or tuple(baseline.config_checks)) if c in baseline.config_checks]
        results = sum(int(baseline.config_checks[c].get(k, 0)) for c in present for k in ("pass", "warn", "fail"))
        if not baseline.config_checks:
            return "fleet check's configuration checks: the suite did not read the configuration"
        return (f"fleet check's configuration checks ({', '.join(check.checks) or 'all of them'}) against its "
                f"profile, on the {results:,} results the suite read from {len(nodes):,} nodes in scope and the "
                f"switches they are cabled to")
    return (f"The diagnosis over the suite's history and the link test's localization raise none of: "
            f"{', '.join(check.kinds)} ({scope.words()}, {len(nodes):,} nodes)")


def _pairs_measured(baseline: Baseline, rails: Sequence[int], scope: Scope) -> set[tuple[str, str, str]]:
    """(rail, node, node) of every pair the link test measured in scope, either direction counted once."""
    found: set[tuple[str, str, str]] = set()
    for part in baseline.parts:
        kind, names = split_part(part)
        if kind == "pair" and len(names) == 3 and names[0].isdigit() and int(names[0]) in rails \
                and scope.covers(part):
            low, high = sorted(names[1:3])
            found.add((names[0], low, high))
    return found


def _count(count: int, word: str) -> str:
    """``1 round``, ``4 rounds``."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _share(part: int, whole: int) -> str:
    """``3.2 %`` of a whole: never above 100 %."""
    if whole <= 0:
        return "nothing in scope"
    return f"{100.0 * min(part, whole) / whole:.3g} %"


def _rails_words(rails: Sequence[int]) -> str:
    if not rails:
        return "no rail"
    if list(rails) == list(range(rails[0], rails[-1] + 1)) and len(rails) > 2:
        return f"rails {rails[0]}-{rails[-1]}"
    return f"rail{'s' if len(rails) > 1 else ''} {', '.join(map(str, rails))}"


def _metric(name: str) -> Callable[[Baseline, str], float | None]:
    return lambda baseline, part: baseline.metric(part, name)


_MEASURES: Mapping[str, tuple[str, Callable[[Baseline, str], float | None]]] = {
    "allreduce_efficiency_min": ("node", _metric("allreduce_efficiency")),
    "alltoall_efficiency_min": ("node", _metric("alltoall_efficiency")),
    "link_loss_max": ("nic", loss_pct),
    "latency_p99_max_usec": ("pair", _metric("p99_usec")),
    "bandwidth_min_gbps": ("nic", _metric("bw_avg_gbps")),
    "optics_rx_power_min_dbm": ("nic", _metric("rx_power_dbm")),
}


def _parts_in_scope(check: Check, baseline: Baseline, kind: str) -> list[str]:
    """The parts the check judges: measured ones, plus in-scope nodes/NICs the suite could not measure."""
    if check.fleet:
        return [f"fleet/{COLLECTIVE_KINDS[check.kind]}"]
    parts = {p for p in baseline.parts if split_part(p)[0] == kind and check.scope.covers(p)}
    if kind == "node":
        parts |= {f"node/{n}" for n in baseline.shape.nodes if check.scope.covers_node(n)}
    elif kind == "nic":
        parts |= {f"nic/{nic.replace(':', '/')}" for nic in baseline.shape.nics}
        parts = {p for p in parts if check.scope.covers(p)}
    return sorted(parts)


def _judge(check: Check, part: str, value: float | None) -> PartResult:
    assert check.threshold is not None
    if value is None:
        return PartResult(part, None, False, "not measured")
    ok = value >= check.threshold if check.spec.at_least else value <= check.threshold
    if ok:
        return PartResult(part, value, True)
    sign = "<" if check.spec.at_least else ">"
    return PartResult(part, value, False, f"{_num(value)} {sign} {_num(check.threshold)} {check.spec.unit}".rstrip())


def _verdict(check: Check, results: Sequence[PartResult]) -> CheckResult:
    failures = tuple(r for r in results if not r.passed)
    measured = [r.measured for r in results if r.measured is not None and math.isfinite(r.measured)]
    stats: dict[str, float] = {}
    if measured:
        stats = {"min": min(measured), "median": statistics.median(measured), "max": max(measured),
                 "count": float(len(measured))}
    judged = [r for r in results if r.measured is not None]
    worst = None
    if judged:
        pick = min if check.spec.at_least else max
        worst = pick(judged, key=lambda r: r.measured if r.measured is not None else 0.0)
    unit = check.spec.unit
    if not results:
        summary = "nothing in scope was measured"
    elif failures:
        summary = f"{len(failures)} of {len(results)} failed; " + "; ".join(
            f"{_short(f.part)} {f.note}" for f in failures[:5]) + (" ..." if len(failures) > 5 else "")
    else:
        assert worst is not None and worst.measured is not None
        summary = f"all {len(results)} pass; worst {_short(worst.part)} {_num(worst.measured)} {unit}".rstrip()
    return CheckResult(check, bool(results) and not failures, len(results), failures, worst, summary, stats)


def _cabling_check(check: Check, baseline: Baseline) -> CheckResult:
    results = []
    for nic, cable in sorted(baseline.cabling.items()):
        node, _, device = nic.partition(":")
        part = f"nic/{node}/{device}"
        if not check.scope.covers(part):
            continue
        if cable.matches is None:
            results.append(PartResult(part, None, False, f"not comparable (seen {cable.seen or '-'}, "
                                                         f"planned {cable.planned or '-'})"))
        elif cable.matches:
            results.append(PartResult(part, 1.0, True))
        else:
            results.append(PartResult(part, 0.0, False, f"LLDP sees {cable.seen}, the plan says {cable.planned}"))
    failures = tuple(r for r in results if not r.passed)
    if not results:
        summary = "no cable in scope could be compared with a plan"
    elif failures:
        summary = f"{len(failures)} of {len(results)} cables differ; " + "; ".join(
            f"{_short(f.part)}: {f.note}" for f in failures[:5])
    else:
        summary = f"all {len(results)} cables as planned"
    return CheckResult(check, bool(results) and not failures, len(results), failures,
                       failures[0] if failures else None, summary,
                       {"matching": float(len(results) - len(failures)), "count": float(len(results))})


def _config_check(check: Check, baseline: Baseline) -> CheckResult:
    """Every required ``fleet check`` check passes on every part in scope (a warning, a part that could not be
    read, fails it: it was not verified)."""
    if not baseline.config_checks:
        missing = PartResult("fleet", None, False, "the suite did not read the configuration")
        return CheckResult(check, False, 0, (missing,), missing, "the suite did not read the configuration")
    wanted = check.checks or tuple(baseline.config_checks)
    failures: list[PartResult] = []
    checked = 0
    for check_id in wanted:
        entry = baseline.config_checks.get(check_id)
        if entry is None:
            failures.append(PartResult(f"config/{check_id}", None, False, "not run"))
            continue
        checked += sum(int(entry.get(k, 0)) for k in ("pass", "warn", "fail"))
        for failed in entry.get("failed", ()):
            part = str(failed.get("part", ""))
            host = part.partition(":")[0]
            if host in baseline.shape.nodes and not check.scope.covers_node(host):
                continue
            verdict = "not read" if failed.get("verdict") == "warn" else "expected"
            failures.append(PartResult("/".join(("config", check_id, *part.split(":"))), None, False,
                                       f"{verdict} {failed.get('expected', '')}, found {failed.get('found', '')}"))
    summary = (f"{len(failures)} failed; " + "; ".join(f"{_short(f.part)}: {f.note}" for f in failures[:5])
               + (" ..." if len(failures) > 5 else "")) if failures else f"all {checked} results pass"
    return CheckResult(check, not failures, checked, tuple(failures), failures[0] if failures else None, summary,
                       {"failed": float(len(failures)), "count": float(checked)})


def _findings_check(check: Check, baseline: Baseline, findings: Sequence[Finding]) -> CheckResult:
    wanted = set(check.kinds)
    hits = [f for f in findings if f.kind in wanted and (not f.node or check.scope.covers_node(f.node))]
    failures = tuple(PartResult(_finding_part(f), None, False, f"{f.kind} ({f.severity.value}): {_evidence(f)}")
                     for f in hits)
    summary = (f"{len(hits)} finding(s): " + "; ".join(f"{_short(p.part)} {p.note}" for p in failures[:5])
               if hits else f"no finding of {', '.join(check.kinds)} among {len(findings)} finding(s)")
    return CheckResult(check, not hits, len(baseline.shape.nodes), failures, failures[0] if failures else None,
                       summary, {"findings": float(len(hits))})


def _finding_part(finding: Finding) -> str:
    if finding.node and finding.nic:
        return f"nic/{finding.node}/{finding.nic}"
    if finding.node:
        return f"node/{finding.node}"
    return f"switch/{finding.switch}{'/' + finding.port if finding.port else ''}" if finding.switch else "fleet"


def _evidence(finding: Finding) -> str:
    return ", ".join(f"{k}={_num(v) if isinstance(v, float) else v}" for k, v in sorted(finding.evidence.items())[:4])


def _short(part: str) -> str:
    """``nic/gpu003/mlx5_2`` -> ``gpu003 mlx5_2``; ``pair/2/a/b`` -> ``rail 2 a-b``."""
    kind, names = split_part(part)
    if kind == "pair" and len(names) == 3:
        return f"rail {names[0]} {names[1]}-{names[2]}"
    if kind == "fleet":
        return "fleet"
    return " ".join(names)


def _num(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value:.4g}"


__all__ = [
    "CHECK_KINDS", "COLLECTIVE_KINDS", "SUITE_KEYS", "Check", "CheckResult", "Criteria", "CriteriaError", "KindSpec", "PartResult",
    "Scope", "claim", "evaluate", "evaluate_check", "loss_pct", "parse_criteria", "parse_rails",
]  # fmt: skip
