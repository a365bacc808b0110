"""The `/` filter of the Fleet screen: what a user types, turned into a predicate.

Words are ANDed. ``state:down`` (health or collection state), ``job:1234``,
``tenant:acme``, ``group:3``; a word with brackets is a Slurm hostlist
(``gpu[001-016,020]``); any other word matches part of the node name or its
worst NIC; ``!word`` negates a word.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import hostlist

from fleet.console.view_model import NodeRow

Predicate = Callable[[NodeRow], bool]


class FilterError(ValueError):
    """The filter text cannot be read; the message says which word and why."""


def _word(word: str) -> Predicate:
    key, sep, value = word.partition(":")
    if sep:
        value = value.lower()
        if key == "state":
            return lambda r: value in (r.health.value, r.state.lower())
        if key == "job":
            return lambda r: value in (j.lower() for j in r.jobs)
        if key == "tenant":
            return lambda r: value in (t.lower() for t in r.tenants)
        if key == "group":
            if not value.lstrip("-").isdigit():
                raise FilterError(f"group:{value}: a group is a number")
            number = int(value)
            return lambda r: r.group == number
        raise FilterError(f"{key}: unknown field; use state:, job:, tenant:, group:")
    if "[" in word:
        try:
            names = frozenset(hostlist.expand_hostlist(word))
        except hostlist.BadHostlist as error:
            raise FilterError(f"{word}: {error}") from error
        return lambda r: r.name in names
    lowered = word.lower()
    return lambda r: lowered in r.name.lower() or lowered == r.worst_nic.lower()


@dataclass(frozen=True, slots=True)
class NodeFilter:
    text: str
    predicates: tuple[tuple[Predicate, bool], ...]

    def matches(self, row: NodeRow) -> bool:
        return all(pred(row) != negate for pred, negate in self.predicates)


def parse_filter(text: str) -> NodeFilter:
    predicates = []
    for word in text.split():
        negate = word.startswith("!")
        predicates.append((_word(word[1:] if negate else word), negate))
    return NodeFilter(text=text.strip(), predicates=tuple(predicates))
