"""Records to table rows and back; JSON for the free-form dict and tuple fields.

Text read back into events, hosts, ports, states and jobs is made inert (``clean_text``)
whoever wrote the file: the collector cleans what it stores, but a store written by an
older version, or by hand, must not put an escape sequence on a screen or in a report
(docs/hostile-input.md). Probes and audit rows are read as stored: the
audit's hashes cover their exact text.
"""

from __future__ import annotations

import json
from typing import Any

from fleet.fabric.events import Event, Severity
from fleet.fabric.records import (
    ActionRecord,
    HostRecord,
    HostStatus,
    JobRecord,
    PortRecord,
    ProbeRecord,
)
from fleet.fabric.states import HostState
from fleet.fabric.text import clean_text

Row = tuple[Any, ...]


def _dump(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _text(value: str) -> str:
    return clean_text(value, one_line=True)


def _texts(data: dict[str, Any]) -> dict[str, Any]:
    """A record's free-form dict with its keys and string values inert (values keep their line breaks)."""
    return {_text(str(k)): clean_text(v) if isinstance(v, str) else v for k, v in data.items()}


EVENT_COLUMNS = "ts, kind, severity, message, host, device, port, switch, job, data"


def event_row(e: Event) -> Row:
    return (e.ts, e.kind, str(e.severity), e.message, e.host, e.device, e.port, e.switch, e.job, _dump(e.data))


def row_event(r: Row) -> Event:
    return Event(r[0], _text(r[1]), Severity(r[2]), clean_text(r[3]), _text(r[4]), _text(r[5]), _text(r[6]),
                 _text(r[7]), _text(r[8]), _texts(json.loads(r[9])))


PROBE_COLUMNS = "ts, kind, src, dst, src_nic, dst_nic, ok, params, result, raw, job, run_id"


def probe_row(p: ProbeRecord) -> Row:
    return (p.ts, p.kind, p.src, p.dst, p.src_nic, p.dst_nic, int(p.ok), _dump(p.params),
            _dump(p.result), p.raw, p.job, p.run_id)


def row_probe(r: Row) -> ProbeRecord:
    return ProbeRecord(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), json.loads(r[7]),
                       json.loads(r[8]), r[9], r[10], r[11])


ACTION_COLUMNS = "ts, actor, target, action, step, commands, output, before, after, verdict"


def action_row(a: ActionRecord) -> Row:
    return (a.ts, a.actor, a.target, a.action, a.step, _dump(list(a.commands)), a.output,
            _dump(a.before), _dump(a.after), a.verdict)


def row_action(r: Row) -> ActionRecord:
    return ActionRecord(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6],
                        json.loads(r[7]), json.loads(r[8]), r[9])


HOST_COLUMNS = "name, role, address, os, grp, info"


def host_row(h: HostRecord, ts: float) -> Row:
    return (h.name, h.role, h.address, h.os, h.group, _dump(h.info), ts)


def row_host(r: Row) -> HostRecord:
    return HostRecord(_text(r[0]), _text(r[1]), _text(r[2]), _text(r[3]), r[4], _texts(json.loads(r[5])))


PORT_COLUMNS = "host, device, port, netdev, link_layer, peer_host, peer_port"


def port_row(p: PortRecord, ts: float) -> Row:
    return (p.host, p.device, p.port, p.netdev, p.link_layer, p.peer_host, p.peer_port, ts)


def row_port(r: Row) -> PortRecord:
    return PortRecord(_text(r[0]), _text(r[1]), _text(r[2]), _text(r[3]), _text(r[4]), _text(r[5]), _text(r[6]))


def status_row(s: HostStatus) -> Row:
    return (s.host, s.since, str(s.state), s.reason)


def row_status(r: Row) -> HostStatus:
    return HostStatus(_text(r[0]), HostState(r[2]), r[1], _text(r[3]))


JOB_COLUMNS = "job_id, name, user, account, state, nodes, partition, start_ts"


def row_job(r: Row, ts: float) -> JobRecord:
    return JobRecord(ts, _text(r[0]), _text(r[1]), _text(r[2]), _text(r[3]), _text(r[4]),
                     tuple(_text(node) for node in json.loads(r[5])), _text(r[6]), r[7])


def dump_nodes(nodes: tuple[str, ...]) -> str:
    return json.dumps(list(nodes))
