"""``dcgmi diag -r N`` (the boxed table) and ``dcgmi diag -r N -j`` (JSON): DCGM's GPU health diagnostic.

Why: a node's GPUs pass or fail DCGM's deployment, integration (PCIe) and
hardware tests; a PCIe failure is the GPU side of a PCIe link that trained
down. Layouts (tests/fixtures/dcgm): DCGM 3.x prints one row per test
(``PCIe | Fail - All``) under CamelCase names; 4.x prints lower-case plugin
names with per-GPU ``GPU0: Pass`` rows; ``Warning`` rows wrap mid-word over
the rows below them (the pieces are joined as printed); a pasted table may
lack its closing border. The JSON form nests categories, tests and results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleet.collectors.parsers.base import ParseError, ParseProblem, parser
from fleet.collectors.parsers.jsontext import load_json
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import split_lines

_METADATA = {"DCGM Version": "version", "Driver Version Detected": "driver", "GPU Device IDs Detected": "devices"}


@dataclass(frozen=True, slots=True)
class DcgmTest:
    category: str
    """``Deployment``, ``Integration``, ``Hardware``, ``Stress`` ..."""
    name: str
    result: str
    """``Pass``, ``Fail``, ``Skip``, ``Warn`` (the word before `` - All`` in 3.x)."""
    gpu_results: tuple[tuple[str, str], ...] = ()
    """(``GPU0``, ``Pass``) rows (4.x) or (gpu id, status) of the JSON results."""
    warnings: tuple[str, ...] = ()
    info: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DcgmDiag:
    version: str = ""
    driver: str = ""
    device_ids: tuple[str, ...] = ()
    tests: tuple[DcgmTest, ...] = ()
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0

    @property
    def failed(self) -> tuple[DcgmTest, ...]:
        return tuple(t for t in self.tests if t.result == "Fail")


class _Test:
    __slots__ = ("category", "gpus", "info", "name", "result", "warnings")

    def __init__(self, category: str, name: str, result: str) -> None:
        self.category, self.name, self.result = category, name, result
        self.gpus: list[tuple[str, str]] = []
        self.warnings: list[str] = []
        self.info: list[str] = []

    def freeze(self) -> DcgmTest:
        return DcgmTest(self.category, self.name, self.result, tuple(self.gpus), tuple(self.warnings),
                        tuple(self.info))


def _result_word(text: str) -> str:
    return text.split(" - ", 1)[0].strip()


def _parse_table(text: str, log: ProblemLog) -> DcgmDiag:
    meta: dict[str, str] = {}
    tests: list[_Test] = []
    category = ""
    current: _Test | None = None
    last_key = ""
    full = False
    """Whether the last warning piece filled its cell: DCGM wraps mid-word there, else at a blank."""
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("Successfully ran") or set(stripped) <= {"+", "-", "="}:
            continue
        if stripped[:1] in "|+" and "-----" in stripped[:8]:
            category = stripped.strip("|+").split("+", 1)[0].strip(" -")
            continue
        if not (stripped.startswith("|") and stripped.count("|") >= 3):
            log.unknown(number, line, "not a table row")
            continue
        cells = stripped.strip("|").split("|")
        key, value = cells[0].strip(), "|".join(cells[1:]).strip()
        width = len("|".join(cells[1:])) - 2
        if key == "Diagnostic" and value == "Result":
            continue
        if key in _METADATA:
            meta[_METADATA[key]] = value
            continue
        if key == "Warning" or key == "Info":
            if current is None:
                log.unknown(number, line, f"{key} before any test")
                continue
            (current.warnings if key == "Warning" else current.info).append(value)
            last_key, full = key, len(value) >= width - 1
            continue
        if not key:
            if current is None:
                log.unknown(number, line, "continuation before any test")
            elif value.startswith("GPU") and ": " in value and value.split(": ", 1)[0][3:].isdigit():
                gpu, result = value.split(": ", 1)
                current.gpus.append((gpu, result.strip()))
            elif last_key in ("Warning", "Info"):
                target = current.warnings if last_key == "Warning" else current.info
                piece = "|".join(cells[1:])[1:].rstrip()  # a blank the wrap moved to this row stays
                target[-1] = (target[-1] + (piece if full else " " + value)) if target else value
                full = len(piece) >= width - 1
            else:
                log.unknown(number, line, "continuation of nothing")
            continue
        current = _Test(category, key, _result_word(value))
        tests.append(current)
        last_key = key
    devices = tuple(d.strip() for d in meta.get("devices", "").split(",") if d.strip())
    return DcgmDiag(meta.get("version", ""), meta.get("driver", ""), devices, tuple(t.freeze() for t in tests),
                    log.freeze(), log.unknown_lines)


def _texts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(v if isinstance(v, str) else str(v.get("warning", v)) if isinstance(v, dict) else str(v)
                     for v in value)
    if isinstance(value, dict):
        return (str(value.get("warning", value)),)
    return ()


def _parse_json(doc: Any, log: ProblemLog) -> DcgmDiag:
    root = doc.get("DCGM GPU Diagnostic") if isinstance(doc, dict) else None
    if not isinstance(root, dict):
        log.add(0, "", "JSON without a 'DCGM GPU Diagnostic' object")
        return DcgmDiag(problems=log.freeze(), unknown_lines=log.unknown_lines)
    tests: list[DcgmTest] = []
    for category in root.get("test_categories", []) if isinstance(root.get("test_categories"), list) else []:
        if not isinstance(category, dict):
            continue
        name = str(category.get("category", ""))
        for test in category.get("tests", []) if isinstance(category.get("tests"), list) else []:
            if not isinstance(test, dict):
                continue
            results = [r for r in test.get("results", []) if isinstance(r, dict)] \
                if isinstance(test.get("results"), list) else []
            statuses = [str(r.get("status", "")) for r in results]
            overall = "Fail" if "Fail" in statuses else statuses[0] if statuses else ""
            gpus = tuple((str(r.get("gpu_ids", "")), str(r.get("status", ""))) for r in results if "gpu_ids" in r)
            warnings = tuple(w for r in results for w in _texts(r.get("warnings", r.get("warning", ()))))
            info = tuple(i for r in results for i in _texts(r.get("info", ())))
            tests.append(DcgmTest(name, str(test.get("name", "")), overall, gpus, warnings, info))
    meta = root.get("runtime_metadata") or doc.get("runtime_metadata") or {}
    version = str(meta.get("version", "")) if isinstance(meta, dict) else ""
    driver = str(root.get("Driver Version Detected", doc.get("Driver Version Detected", "")))
    return DcgmDiag(version, driver, (), tuple(tests), log.freeze(), log.unknown_lines)


@parser
def parse_dcgmi_diag(text: str) -> DcgmDiag:
    log = ProblemLog()
    if text.lstrip().startswith("{"):
        try:
            doc = load_json(text, "dcgmi diag -j")
        except ParseError as error:
            log.add(0, "", f"{error}: not dcgmi's output")
            return DcgmDiag(problems=log.freeze())
        except ValueError as error:
            log.add(0, "", f"not valid JSON: {error}")
            return DcgmDiag(problems=log.freeze())
        return _parse_json(doc, log)
    return _parse_table(text, log)
