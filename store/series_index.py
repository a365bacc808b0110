"""The reader's map of series ids to names, kinds and groups, loaded on first use and then
incrementally.

A 1,024-node fleet has ~434,000 series. Loading them row by row into Python
dicts took 0.7 s (2.4 s on a busy machine) on every ``StoreReader`` open,
before the console could draw anything. Here nothing is read until a query
needs it; then one query fetches the new rows and the per-host and per-metric
id lists are built with numpy (a sort of codes, not a Python loop per row).
Names are interned, so 434,000 keys share a few thousand strings, each cleaned once
(``clean_text``: a device or port name is what a machine reported).
"""

from __future__ import annotations

import sqlite3
from itertools import count

import numpy as np
import numpy.typing as npt

from fleet.fabric.text import clean_text
from fleet.store.codec import I64
from fleet.store.types import SeriesName

_NO_IDS = np.zeros(0, dtype=np.int64)


class SeriesIndex:
    """Every series id the reader has seen: its name, whether it is an error counter, its group."""

    def __init__(self) -> None:
        self.keys: list[SeriesName | None] = [None]
        """Indexed by series id (None where no series has that id)."""
        self.is_error = np.zeros(1, dtype=np.bool_)
        self.group = np.zeros(1, dtype=np.int64)
        self.metric_sids: dict[str, I64] = {}
        self.host_sids: dict[str, I64] = {}
        self.continuous: dict[str, I64] = {}
        """Per host, its gauge and counter ids (not error counters), sorted."""
        self.error_sids: I64 = _NO_IDS
        self.max_sid = 0
        self._names: dict[str, str] = {}
        self._groups: dict[int, tuple[str, str]] = {}
        self._max_gid = 0

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Read the series created since the last refresh (all of them the first time).

        Numbers come back as one comma-joined string per column (parsed by numpy), and
        names as (host, metric) per group and the ids per (device, port), so Python
        touches each distinct name once, not 434,000 rows of four strings.
        """
        began = not conn.in_transaction
        if began:
            conn.execute("BEGIN")  # one snapshot for the three queries
        try:
            found = conn.execute(
                "SELECT count(*), group_concat(id), group_concat(group_id), group_concat(kind = 'error') "
                "FROM (SELECT id, group_id, kind FROM series WHERE id > ? ORDER BY id)",
                (self.max_sid,)).fetchone()
            pairs = conn.execute(
                "SELECT device, port, group_concat(id) FROM series WHERE id > ? GROUP BY device, port",
                (self.max_sid,)).fetchall()
            groups = conn.execute(
                "SELECT id, host, metric FROM series_groups WHERE id > ?", (self._max_gid,)).fetchall()
        finally:
            if began:
                conn.execute("COMMIT")
        n = int(found[0])
        if n == 0:
            return
        ids, gids, errors = _ints(found[1], n), _ints(found[2], n), _ints(found[3], n).astype(np.bool_)
        tails: list[tuple[str, str]] = []
        tail_of = np.full(n, -1, dtype=np.int64)
        for device, port, joined in pairs:
            tail_of[np.searchsorted(ids, _ints(joined, None))] = len(tails)
            tails.append((self._share(device), self._share(port)))
        if (tail_of < 0).any():
            raise ValueError("series catalogue: a series without its device and port")
        for gid, host, metric in groups:
            self._groups[gid] = (self._share(host), self._share(metric))
            self._max_gid = max(self._max_gid, gid)
        keys: list[SeriesName] = list(map(tuple.__add__, map(self._groups.__getitem__, gids.tolist()),  # type: ignore[arg-type]
                                          map(tails.__getitem__, tail_of.tolist())))
        self._place(ids, keys, errors, gids)

    def _share(self, name: str) -> str:
        """The one copy of ``name``, made inert: a device or port name is the machine's word
        (``clean_text``; docs/hostile-input.md), cleaned once per distinct name."""
        shared = self._names.get(name)
        if shared is None:
            shared = self._names[name] = clean_text(name, one_line=True)
        return shared

    def _place(self, ids: I64, keys: list[SeriesName], errors: npt.NDArray[np.bool_], gids: I64) -> None:
        top = int(ids[-1])
        if top >= len(self.keys):
            grow = top + 1 - len(self.keys)
            self.keys.extend([None] * grow)
            self.is_error = np.concatenate([self.is_error, np.zeros(grow, dtype=np.bool_)])
            self.group = np.concatenate([self.group, np.zeros(grow, dtype=np.int64)])
        first = int(ids[0])
        if top - first + 1 == len(ids):  # the usual case: consecutive ids
            self.keys[first : top + 1] = keys
        else:
            for sid, key in zip(ids.tolist(), keys, strict=True):
                self.keys[sid] = key
        self.is_error[ids] = errors
        self.group[ids] = gids
        self.max_sid = top
        unique_gids = np.unique(gids).tolist()
        _merge(self.metric_sids, _by_name([self._groups[g][1] for g in unique_gids], unique_gids, gids, ids))
        touched = _by_name([self._groups[g][0] for g in unique_gids], unique_gids, gids, ids)
        _merge(self.host_sids, touched)
        for host in touched:
            sids = self.host_sids[host]
            self.continuous[host] = np.sort(sids[~self.is_error[sids]])
        if errors.any():
            self.error_sids = np.sort(np.concatenate([self.error_sids, ids[errors]]))

    def ensure(self, conn: sqlite3.Connection, sids: I64) -> None:
        """Refresh when ``sids`` hold ids newer than the last refresh."""
        if len(sids) and int(sids.max()) > self.max_sid:
            self.refresh(conn)


def _ints(joined: str, n: int | None) -> I64:
    """Integers from a comma-joined string (``n`` of them, when given)."""
    values = np.fromstring(joined, dtype=np.int64, sep=",")  # text mode: C parsing, not deprecated
    if n is not None and len(values) != n:
        raise ValueError(f"series catalogue: expected {n} numbers, read {len(values)}")
    return values


def _by_name(names: list[str], unique_gids: list[int], gids: I64, ids: I64) -> dict[str, I64]:
    """``ids`` grouped by the name of their group (``names[i]`` of ``unique_gids[i]``), in id order."""
    first_seen: dict[str, int] = {}
    group_code = np.fromiter(map(first_seen.setdefault, names, count()), dtype=np.int64, count=len(names))
    codes = group_code[np.searchsorted(np.array(unique_gids, dtype=np.int64), gids)]
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
    groups = np.split(ids[order], bounds)
    return {names[int(sorted_codes[start])]: group
            for start, group in zip(np.concatenate([[0], bounds]).tolist(), groups, strict=True)}


def _merge(into: dict[str, I64], new: dict[str, I64]) -> None:
    for name, ids in new.items():
        old = into.get(name)
        into[name] = ids if old is None else np.concatenate([old, ids])
