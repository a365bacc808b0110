"""The inventory: which machines fleet talks to, and how to reach them.

A TOML file (format and an example in ``docs/inventory.md``)::

    [defaults]            user, port, identity_file, known_hosts, jump_host, mode, interval
    [[nodes]]             names (Slurm hostlist); one-host entries: address, port; mode
    [[switches]]          names, os (cumulus|sonic), role (leaf|spine); one-host: address, port
    [slurm]               host; address, port
    [cabling]             plan (CSV of node, nic, switch, port)

Every mistake is reported as ``FILE:LINE: KEY: problem`` so that an engineer
editing a 1,000-host inventory at 03:00 goes straight to the line. Unknown keys
are rejected rather than ignored: a typo such as ``adress`` must not silently
send fleet to the wrong machine. Relative paths are resolved against the
folder of the inventory file, so a state dir can be moved as a whole.
"""

from __future__ import annotations

import csv
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hostlist

from fleet.collectors.ssh_names import hostname_problem, jump_host_problem, username_problem

MODES = ("agent", "commands")
SWITCH_OSES = ("cumulus", "sonic")
SWITCH_ROLES = ("leaf", "spine")

_DEFAULT_KEYS = frozenset(
    {"user", "port", "identity_file", "known_hosts", "jump_host", "mode", "interval"}
)
_NODE_KEYS = frozenset({"names", "address", "port", "mode"})
_SWITCH_KEYS = frozenset({"names", "os", "role", "address", "port"})
_SLURM_KEYS = frozenset({"host", "address", "port"})
_CABLING_KEYS = frozenset({"plan"})
_TOP_KEYS = frozenset({"defaults", "nodes", "switches", "slurm", "cabling"})
_CABLING_COLUMNS = ("node", "nic", "switch", "port")


class InventoryError(ValueError):
    """A problem in an inventory (or its cabling plan), located by file, line and key."""

    def __init__(self, path: Path, line: int, key: str, problem: str) -> None:
        self.path = path
        self.line = line
        self.key = key
        self.problem = problem
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {key}: {problem}" if key else f"{where}: {problem}")


@dataclass(frozen=True, slots=True)
class InventoryHost:
    """One machine to connect to.

    ``address`` empty: the name is resolved like OpenSSH would (``~/.ssh/config``,
    DNS). ``port``/``user`` None: left to ``~/.ssh/config`` and OpenSSH's defaults.
    """

    name: str
    role: str  # "node" | "leaf" | "spine" | "head"
    address: str = ""
    port: int | None = None
    user: str | None = None
    os: str = "linux"  # nodes and the head: "linux"; switches: "cumulus" | "sonic"
    mode: str = "commands"  # nodes: "agent" | "commands"; switches and head: "commands"
    identity_file: Path | None = None
    jump_host: str | None = None

    @property
    def connect_address(self) -> str:
        """What to connect to: the address when given, else the name."""
        return self.address or self.name


@dataclass(frozen=True, slots=True)
class CablingRow:
    """One cable of the plan as designed: NIC ``nic`` of ``node`` goes to ``switch`` ``port``."""

    node: str
    nic: str
    switch: str
    port: str


@dataclass(frozen=True, slots=True)
class Inventory:
    path: Path
    hosts: tuple[InventoryHost, ...]
    known_hosts: Path | None
    """None: OpenSSH's default, ``~/.ssh/known_hosts``."""
    interval_s: float
    cabling: tuple[CablingRow, ...] = ()
    cabling_path: Path | None = None

    def host(self, name: str) -> InventoryHost:
        """The host called ``name``; KeyError when the inventory has none."""
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(name)

    def by_role(self, *roles: str) -> tuple[InventoryHost, ...]:
        return tuple(host for host in self.hosts if host.role in roles)

    @property
    def nodes(self) -> tuple[InventoryHost, ...]:
        return self.by_role("node")

    @property
    def switches(self) -> tuple[InventoryHost, ...]:
        return self.by_role("leaf", "spine")

    @property
    def head(self) -> InventoryHost | None:
        heads = self.by_role("head")
        return heads[0] if heads else None


def default_inventory_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/fleet/inventory.toml`` (``~/.config`` when the variable is unset)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".config")
    return Path(base) / "fleet" / "inventory.toml"


# --- locating keys in the text -------------------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*(\]\]?)\s*(#.*)?$")
_KEY = re.compile(r"^\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_\-]+)\s*=")

TableKey = tuple[str, int]
"""(table name, index of the ``[[array]]`` entry; 0 for a plain table and the root ``""``)."""


class _Lines:
    """Line numbers of tables and keys, found by scanning the text (tomllib gives none).

    Multi-line strings and arrays are skipped so that a ``key =`` inside them is
    never mistaken for a key.
    """

    def __init__(self, text: str) -> None:
        self.tables: dict[TableKey, int] = {}
        self.keys: dict[tuple[str, int, str], int] = {}
        counts: dict[str, int] = {}
        table: TableKey = ("", 0)
        depth = 0
        in_multiline: str | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if in_multiline is not None:
                if in_multiline in line:
                    in_multiline = None
                continue
            if depth > 0:
                depth += _bracket_delta(line)
                continue
            header = _HEADER.match(line)
            if header and header.group(1) in ("[", "[["):
                name = header.group(2).replace('"', "").replace("'", "").strip()
                if header.group(1) == "[[":
                    index = counts.get(name, 0)
                    counts[name] = index + 1
                else:
                    index = 0
                table = (name, index)
                self.tables.setdefault(table, number)
                continue
            key = _KEY.match(line)
            if key:
                name = key.group(1).strip("\"'")
                self.keys.setdefault((table[0], table[1], name), number)
                rest = line[key.end():]
                for quote in ('"""', "'''"):
                    if rest.count(quote) % 2 == 1:
                        in_multiline = quote
                        break
                else:
                    depth = max(0, _bracket_delta(rest))

    def of(self, table: str, index: int, key: str = "") -> int:
        """Line of ``key`` in the table (or of the table header when the key is absent)."""
        if key and (table, index, key) in self.keys:
            return self.keys[(table, index, key)]
        subtable = f"{table}.{key}" if table else key
        if key and (subtable, 0) in self.tables:
            return self.tables[(subtable, 0)]
        if (table, index) in self.tables:
            return self.tables[(table, index)]
        return self.keys.get(("", 0, table), 0)  # an inline table: ``nodes = [{...}]``


def _bracket_delta(text: str) -> int:
    """Net ``[`` minus ``]`` in ``text`` outside strings and comments."""
    delta = 0
    quote = ""
    for char in text:
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            break
        elif char == "[":
            delta += 1
        elif char == "]":
            delta -= 1
    return delta


# --- loading ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Defaults:
    user: str | None
    port: int | None
    identity_file: Path | None
    known_hosts: Path | None
    jump_host: str | None
    mode: str
    interval_s: float


class _Loader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.folder = path.parent
        self.lines = _Lines(text)

    def error(self, table: str, index: int, key: str, problem: str) -> InventoryError:
        label = f"{table}.{key}" if table and key else (key or table)
        if table in ("nodes", "switches") and key:
            label = f"{table}[{index}].{key}"
        return InventoryError(self.path, self.lines.of(table, index, key), label, problem)

    def check_keys(self, table: str, index: int, data: Mapping[str, Any], allowed: frozenset[str]) -> None:
        for key in data:
            if key not in allowed:
                raise self.error(
                    table, index, key, f"unknown key (allowed: {', '.join(sorted(allowed))})"
                )

    def string(self, table: str, index: int, data: Mapping[str, Any], key: str) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(table, index, key, f"must be a non-empty string, got {value!r}")
        return value.strip()

    def choice(
        self, table: str, index: int, data: Mapping[str, Any], key: str, choices: tuple[str, ...]
    ) -> str | None:
        value = self.string(table, index, data, key)
        if value is not None and value not in choices:
            raise self.error(table, index, key, f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def port(self, table: str, index: int, data: Mapping[str, Any]) -> int | None:
        value = data.get("port")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
            raise self.error(table, index, "port", f"must be an integer 1-65535, got {value!r}")
        return value

    def file(self, table: str, index: int, data: Mapping[str, Any], key: str) -> Path | None:
        value = self.string(table, index, data, key)
        if value is None:
            return None
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.folder / path

    def table(self, raw: Mapping[str, Any], name: str) -> Mapping[str, Any]:
        value = raw.get(name, {})
        if not isinstance(value, dict):
            raise self.error("", 0, name, "must be a table ([" + name + "])")
        return value

    def array(self, raw: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
        value = raw.get(name, [])
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self.error("", 0, name, "must be an array of tables ([[" + name + "]])")
        return value

    def names(self, table: str, index: int, data: Mapping[str, Any], key: str = "names") -> list[str]:
        text = self.string(table, index, data, key)
        if text is None:
            raise self.error(table, index, key, "missing (a hostname or Slurm hostlist such as gpu[001-128])")
        try:
            names = [name.strip() for name in hostlist.expand_hostlist(text)]
        except hostlist.BadHostlist as exc:
            raise self.error(table, index, key, f"bad hostlist {text!r}: {exc}") from None
        if not names or any(not name for name in names):
            raise self.error(table, index, key, f"hostlist {text!r} names no host")
        for name in names:
            problem = hostname_problem(name)
            if problem is not None:
                raise self.error(table, index, key, f"{name!r} is not a usable host name: {problem}")
        return names

    def address(self, table: str, index: int, data: Mapping[str, Any]) -> str:
        """The entry's ``address`` ("" when absent), refused where OpenSSH would refuse it."""
        address = self.string(table, index, data, "address") or ""
        problem = hostname_problem(address) if address else None
        if problem is not None:
            raise self.error(table, index, "address", f"{address!r} is not a usable address: {problem}")
        return address

    def checked(self, table: str, index: int, data: Mapping[str, Any], key: str,
                check: Callable[[str], str | None]) -> str | None:
        """The string ``key``, refused with ``check``'s reason when ``check`` finds one."""
        value = self.string(table, index, data, key)
        problem = check(value) if value is not None else None
        if problem is not None:
            raise self.error(table, index, key, f"{value!r} is not usable: {problem}")
        return value

    def single_host_only(self, table: str, index: int, data: Mapping[str, Any], names: list[str]) -> None:
        for key in ("address", "port"):
            if key in data and len(names) > 1:
                raise self.error(
                    table, index, key, f"allowed only in an entry that names one host ({len(names)} named)"
                )

    def defaults(self, raw: Mapping[str, Any]) -> _Defaults:
        data = self.table(raw, "defaults")
        self.check_keys("defaults", 0, data, _DEFAULT_KEYS)
        interval = data.get("interval", 1.0)
        if isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0:
            raise self.error("defaults", 0, "interval", f"must be a positive number of seconds, got {interval!r}")
        return _Defaults(
            user=self.checked("defaults", 0, data, "user", username_problem),
            port=self.port("defaults", 0, data),
            identity_file=self.file("defaults", 0, data, "identity_file"),
            known_hosts=self.file("defaults", 0, data, "known_hosts"),
            jump_host=self.checked("defaults", 0, data, "jump_host", jump_host_problem),
            mode=self.choice("defaults", 0, data, "mode", MODES) or "agent",
            interval_s=float(interval),
        )

    def load(self, raw: Mapping[str, Any]) -> Inventory:
        for key in raw:
            if key not in _TOP_KEYS:
                raise self.error("", 0, key, f"unknown table (allowed: {', '.join(sorted(_TOP_KEYS))})")
        defaults = self.defaults(raw)
        hosts: list[InventoryHost] = []
        seen: dict[str, int] = {}

        def add(host: InventoryHost, table: str, index: int, key: str) -> None:
            if host.name in seen:
                raise self.error(table, index, key, f"host {host.name!r} already defined on line {seen[host.name]}")
            seen[host.name] = self.lines.of(table, index, key)
            hosts.append(host)

        def make(name: str, role: str, address: str, port: int | None, host_os: str, mode: str) -> InventoryHost:
            return InventoryHost(
                name, role, address, port, defaults.user, host_os, mode, defaults.identity_file, defaults.jump_host
            )

        for index, entry in enumerate(self.array(raw, "nodes")):
            self.check_keys("nodes", index, entry, _NODE_KEYS)
            names = self.names("nodes", index, entry)
            self.single_host_only("nodes", index, entry, names)
            mode = self.choice("nodes", index, entry, "mode", MODES) or defaults.mode
            address = self.address("nodes", index, entry)
            port = self.port("nodes", index, entry) or defaults.port
            for name in names:
                add(make(name, "node", address, port, "linux", mode), "nodes", index, "names")
        for index, entry in enumerate(self.array(raw, "switches")):
            self.check_keys("switches", index, entry, _SWITCH_KEYS)
            names = self.names("switches", index, entry)
            self.single_host_only("switches", index, entry, names)
            switch_os = self.choice("switches", index, entry, "os", SWITCH_OSES) or "cumulus"
            role = self.choice("switches", index, entry, "role", SWITCH_ROLES)
            if role is None:
                raise self.error("switches", index, "role", "missing (leaf or spine)")
            address = self.address("switches", index, entry)
            port = self.port("switches", index, entry) or defaults.port
            for name in names:
                add(make(name, role, address, port, switch_os, "commands"), "switches", index, "names")
        if "slurm" in raw:
            slurm = self.table(raw, "slurm")
            self.check_keys("slurm", 0, slurm, _SLURM_KEYS)
            names = self.names("slurm", 0, slurm, "host")
            if len(names) != 1:
                raise self.error("slurm", 0, "host", "must name exactly one host")
            address = self.address("slurm", 0, slurm)
            port = self.port("slurm", 0, slurm) or defaults.port
            add(make(names[0], "head", address, port, "linux", "commands"), "slurm", 0, "host")
        cabling_path: Path | None = None
        cabling: tuple[CablingRow, ...] = ()
        if "cabling" in raw:
            table = self.table(raw, "cabling")
            self.check_keys("cabling", 0, table, _CABLING_KEYS)
            cabling_path = self.file("cabling", 0, table, "plan")
            if cabling_path is None:
                raise self.error("cabling", 0, "plan", "missing (path of a CSV: node,nic,switch,port)")
            try:
                text = cabling_path.read_text(encoding="utf-8")
            except OSError as exc:
                raise self.error("cabling", 0, "plan", f"cannot read {cabling_path}: {exc.strerror}") from None
            cabling = read_cabling_plan(cabling_path, text)
        return Inventory(self.path, tuple(hosts), defaults.known_hosts, defaults.interval_s, cabling, cabling_path)


def read_cabling_plan(path: Path, text: str) -> tuple[CablingRow, ...]:
    """Rows of a cabling plan CSV (``node,nic,switch,port``; a header row is optional)."""
    rows: list[CablingRow] = []
    for number, row in enumerate(csv.reader(text.splitlines()), start=1):
        cells = [cell.strip() for cell in row]
        if not cells or all(not cell for cell in cells) or cells[0].startswith("#"):
            continue
        if number == 1 and tuple(cell.lower() for cell in cells) == _CABLING_COLUMNS:
            continue
        if len(cells) != 4 or not all(cells):
            raise InventoryError(path, number, "", f"expected 4 non-empty columns node,nic,switch,port, got {row!r}")
        rows.append(CablingRow(*cells))
    return tuple(rows)


_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def parse_inventory(path: Path, text: str) -> Inventory:
    """Validate inventory ``text`` as if read from ``path`` (paths resolve against its folder)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        position = _TOML_POSITION.search(message)
        line = int(position.group(1)) if position else 0
        raise InventoryError(path, line, "", "TOML syntax: " + _TOML_POSITION.sub("", message).strip()) from None
    return _Loader(path, text).load(raw)


def load_inventory(path: Path) -> Inventory:
    """Read and validate the inventory at ``path``; InventoryError names file, line and key."""
    path = path.expanduser().absolute()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InventoryError(path, 0, "", f"cannot read the inventory: {exc.strerror}") from None
    return parse_inventory(path, text)
