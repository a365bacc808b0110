"""Read a switch's real ECMP hash configuration (what ``fleet ecmp plan`` and the snapshot show).

NVUE: ``nv show system forwarding`` (``ecmp-hash`` fields ``on``/``off`` and
``hash-seed``, the ``applied`` column) and ``nv show router adaptive-routing``;
``nv config history`` is kept in the snapshot so the audit names the revision
a rollback returns to. SONiC: ``show switch-hash global`` (sonic-utilities,
SONiC 202305+); a switch that does not know that command leaves the fields
unknown, and the snapshot says so instead of guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.commands import Command, command
from fleet.collectors.sshpool import SshPool
from fleet.fabric.ecmp_plan import HashConfig

SONIC_FIELD_NAMES = (
    "SRC_IP", "DST_IP", "IP_PROTOCOL", "L4_SRC_PORT", "L4_DST_PORT", "IN_PORT", "RDMA_BTH_DEST_QP",
    "SRC_MAC", "DST_MAC", "ETHERTYPE", "VLAN_ID", "INNER_SRC_IP", "INNER_DST_IP", "INNER_IP_PROTOCOL",
    "INNER_L4_SRC_PORT", "INNER_L4_DST_PORT", "INNER_SRC_MAC", "INNER_DST_MAC", "INNER_ETHERTYPE",
)
_SONIC_FIELD = re.compile(r"\b(" + "|".join(sorted(SONIC_FIELD_NAMES, key=len, reverse=True)) + r")\b")


@dataclass(frozen=True, slots=True)
class ConfigSnapshot:
    """The hash configuration and the raw outputs it was read from (command line -> output)."""

    config: HashConfig
    outputs: tuple[tuple[str, str], ...]
    reachable: bool = True
    reason: str = ""

    @property
    def commands(self) -> tuple[str, ...]:
        return tuple(cmd for cmd, _ in self.outputs)

    @property
    def text(self) -> str:
        return "".join(f"$ {cmd}\n{out}" + ("" if out.endswith("\n") or not out else "\n")
                       for cmd, out in self.outputs)


def parse_nvue_forwarding(text: str) -> tuple[tuple[str, ...] | None, int | None]:
    """``nv show system forwarding`` -> (ecmp-hash fields that are on, hash-seed)."""
    fields: list[str] = []
    seed: int | None = None
    in_ecmp = False
    seen_ecmp = False
    for line in text.splitlines():
        if not line.strip() or set(line.strip()) <= {"-", " "}:
            continue
        if not line.startswith(" "):
            words = line.split()
            in_ecmp = words[0] == "ecmp-hash"
            seen_ecmp = seen_ecmp or in_ecmp
            if words[0] == "hash-seed" and len(words) > 1 and words[-1].isdigit():
                seed = int(words[-1])
            continue
        words = line.split()
        if in_ecmp and len(words) >= 2 and words[-1] == "on":
            fields.append(words[0])
    return (tuple(sorted(fields)) if seen_ecmp else None), seed


def parse_nvue_adaptive_routing(text: str) -> bool | None:
    """``nv show router adaptive-routing`` -> whether it is enabled (the ``applied`` column)."""
    for line in text.splitlines():
        words = line.split()
        if words and words[0] in ("state", "enable"):
            return words[-1] in ("enabled", "on")
    return None


def parse_sonic_switch_hash(text: str) -> tuple[str, ...] | None:
    """``show switch-hash global`` -> the ECMP hash fields (the part before the LAG section).

    Layout: the SONiC Generic Hash design (sonic-net/SONiC doc/hash/hash-design.md), nested
    ``Hash Field | Algorithm`` tables under ``ECMP`` then ``LAG``; ``N/A`` when none is set.
    """
    ecmp_part = re.split(r"\bLAG\b", text, maxsplit=1)[0]
    if "ECMP" not in ecmp_part:
        return None
    found = _SONIC_FIELD.findall(ecmp_part)
    return tuple(dict.fromkeys(found)) or None


async def _run(pool: SshPool, host: str, cmd: Command, timeout_s: float) -> tuple[bool, bool, str]:
    """(reached, succeeded, output with stderr) of one show command."""
    result = await pool.run(host, cmd, timeout_s)
    text = result.stdout + (result.stderr if not result.ok else "")
    reached = result.exit_status is not None
    if not reached:
        text += f"[no answer: {result.reason}]\n"
    return reached, result.ok, text


async def read_hash_config(pool: SshPool, host: str, os: str, timeout_s: float = 15.0) -> ConfigSnapshot:
    """The ECMP hash configuration ``host`` runs now, read from the switch itself."""
    if os == "cumulus":
        forwarding = command("nv", "show", "system", "forwarding")
        routing = command("nv", "show", "router", "adaptive-routing")
        history = command("nv", "config", "history")
        outputs: list[tuple[str, str]] = []
        results = []
        for cmd in (forwarding, routing, history):
            reached, ok, text = await _run(pool, host, cmd, timeout_s)
            outputs.append((cmd.text, text))
            results.append((reached, ok, text))
            if not reached:
                break
        if not all(r[0] for r in results):
            return ConfigSnapshot(HashConfig(os, None, note="switch did not answer"), tuple(outputs),
                                  reachable=False, reason=outputs[-1][1].strip().splitlines()[-1])
        fields, seed = parse_nvue_forwarding(results[0][2]) if results[0][1] else (None, None)
        ar = parse_nvue_adaptive_routing(results[1][2]) if results[1][1] else None
        notes = [f"`{c}` failed" for (c, _), r in zip(outputs, results, strict=True) if not r[1]]
        return ConfigSnapshot(HashConfig(os, fields, seed, ar, "; ".join(notes)), tuple(outputs))
    if os == "sonic":
        show = command("show", "switch-hash", "global")
        reached, ok, text = await _run(pool, host, show, timeout_s)
        if not reached:
            return ConfigSnapshot(HashConfig(os, None, note="switch did not answer"), ((show.text, text),),
                                  reachable=False, reason=text.strip().splitlines()[-1])
        fields = parse_sonic_switch_hash(text) if ok else None
        note = "" if fields is not None else (
            "this SONiC does not show its hash configuration (`show switch-hash global` failed or printed "
            "no ECMP fields): the fields in effect are unknown")
        return ConfigSnapshot(HashConfig(os, fields, note=note), ((show.text, text),))
    return ConfigSnapshot(HashConfig(os, None, note=f"no ECMP support for switch OS {os!r}"), ())
