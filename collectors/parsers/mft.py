"""NVIDIA Firmware Tools: ``flint -d DEV query`` (the NIC's firmware) and ``mst status`` (its devices).

Why: NIC firmware must be the same across the fleet (an update on half the
fleet changes RoCE behaviour on that half); flint names the firmware version,
the PSID (board identity) and the release date. ``mst status`` maps MST
device paths to PCI addresses (tests/fixtures/ofed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.config_text import indent_of
from fleet.collectors.parsers.lspci import normalize_bdf
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import split_lines


@dataclass(frozen=True, slots=True)
class FlintQuery:
    fields: dict[str, str] = field(default_factory=dict)
    """Every ``Key: value`` as printed; continuation lines (``Rom Info``) joined with ``; ``."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0

    @property
    def fw_version(self) -> str:
        return self.fields.get("FW Version", "")

    @property
    def psid(self) -> str:
        return self.fields.get("PSID", "")


@parser
def parse_flint_query(text: str) -> FlintQuery:
    log = ProblemLog()
    fields: dict[str, str] = {}
    last = ""
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if sep and indent_of(line) == 0 and key.strip():
            last = key.strip()
            fields[last] = " ".join(value.split())
        elif last and indent_of(line) > 0:
            fields[last] = f"{fields[last]}; {' '.join(line.split())}"
        else:
            log.unknown(number, line, "not a 'Key: value' line")
    if "FW Version" not in fields:
        log.add(0, "", "no 'FW Version' line")
    return FlintQuery(fields, log.freeze(), log.unknown_lines)


@dataclass(frozen=True, slots=True)
class MstDevice:
    path: str
    """``/dev/mst/mt4129_pciconf0``."""
    description: str
    bdf: str = ""
    """``0000:0d:00.0`` from the ``domain:bus:dev.fn=`` continuation line."""


@dataclass(frozen=True, slots=True)
class MstStatus:
    modules: tuple[str, ...] = ()
    """The ``MST modules`` lines as printed (``MST PCI configuration module loaded``)."""
    devices: tuple[MstDevice, ...] = ()
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


@parser
def parse_mst_status(text: str) -> MstStatus:
    log = ProblemLog()
    section = ""
    modules: list[str] = []
    devices: list[MstDevice] = []
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped or set(stripped) == {"-"}:
            continue
        if stripped in ("MST modules:", "MST devices:"):
            section = stripped
            continue
        if section == "MST modules:":
            modules.append(stripped)
        elif section == "MST devices:" and indent_of(line) == 0:
            path, _, description = stripped.partition(" - ")
            devices.append(MstDevice(path.strip(), description.strip()))
        elif section == "MST devices:" and devices and "domain:bus:dev.fn=" in stripped:
            bdf = stripped.split("domain:bus:dev.fn=", 1)[1].split()[0]
            last = devices[-1]
            devices[-1] = MstDevice(last.path, last.description, normalize_bdf(bdf))
        elif section == "MST devices:" and devices:
            continue  # "Chip revision is: 00" and other per-device lines
        else:
            log.unknown(number, line)
    return MstStatus(tuple(modules), tuple(devices), log.freeze(), log.unknown_lines)
