"""iproute2's ``rdma`` (res, statistic, link, dev) and mlnx-tools' ``show_gids`` for a simulated node.

Text layouts follow iproute2 ``rdma/res-qp.c``, ``res.c``, ``stat.c`` and
``link.c`` (upstream: kernel-owned QPs print ``comm [ib_core]``, as in
tests/fixtures/rdma/iproute2-rdma-res-show-qp-kernel-qps-mlx5-hns.txt). Every
field is printed as ``"name value "`` (``pr_out("%s %u ", ...)``), so text lines end
with a blank before the newline; the published captures lost it (git strips
trailing blanks from commit messages, markdown from notes). JSON
goes through ``jsonw``, iproute2's writer: compact ``[{"ifindex":0,...}]`` with
``-j``, and with ``-p`` its pretty form (``[ {`` ... ``},{`` ... ``} ]``), as in
tests/fixtures/rdma/hns-rdma-res-show-qp-jp-dd-after-fix.txt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fleet.simulator.state import NicView, NodeView, QpView
from fleet.simulator.tools import ToolContext, ToolOutput, register
from fleet.simulator.tools.ib import guid_colon

# hw_counters of an mlx5 RoCE port in the driver's order, the order ``rdma statistic
# show`` prints (tests/fixtures/rdma/cn-notes-rdma-statistic-show-4x-mlx5-errors.txt).
_MLX5_HW_COUNTERS: tuple[str, ...] = (
    "rx_write_requests",
    "rx_read_requests",
    "rx_atomic_requests",
    "out_of_buffer",
    "out_of_sequence",
    "duplicate_request",
    "rnr_nak_retry_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "rx_dct_connect",
    "resp_local_length_error",
    "resp_cqe_error",
    "req_cqe_error",
    "req_remote_invalid_request",
    "req_remote_access_errors",
    "resp_remote_access_errors",
    "resp_cqe_flush_error",
    "req_cqe_flush_error",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rp_cnp_ignored",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rx_icrc_encapsulated",
)
_ROCE_ONLY = ("roce_", "rp_", "np_", "rx_icrc")


def mlx5_hw_counter_names(link_layer: str = "Ethernet") -> tuple[str, ...]:
    """``hw_counters/*`` names of an mlx5 port in driver order; InfiniBand ports lack the RoCE ones."""
    if link_layer == "Ethernet":
        return _MLX5_HW_COUNTERS
    return tuple(n for n in _MLX5_HW_COUNTERS if not n.startswith(_ROCE_ONLY))


_LINK_PHYS = {
    "Sleep": "SLEEP",
    "Polling": "POLLING",
    "Disabled": "DISABLED",
    "PortConfigurationTraining": "PORT_CONFIGURATION_TRAINING",
    "LinkUp": "LINK_UP",
    "LinkErrorRecovery": "LINK_ERROR_RECOVERY",
    "PhyTest": "PHY_TEST",
}

JsonValue = int | str


def jsonw(records: Sequence[dict[str, JsonValue]], pretty: bool) -> str:
    """An array of flat objects as iproute2's json_writer prints it, with the final newline."""
    if not pretty:
        return json.dumps(list(records), separators=(",", ":")) + "\n"
    if not records:
        return "[ ]\n"
    parts: list[str] = []
    for record in records:
        members = ",".join(f"\n        {json.dumps(k)}: {json.dumps(v)}" for k, v in record.items())
        parts.append("{" + members + "\n    }")
    return "[ " + ",".join(parts) + " ]\n"


def _is_kernel(qp: QpView) -> bool:
    return qp.pid == 0 or qp.comm.startswith("[")


def _qp_record(index: int, nic: NicView, qp: QpView, pdn: dict[int, int]) -> dict[str, JsonValue]:
    """The attributes res-qp.c prints for one QP, in its order (RC/UC add the remote side)."""
    record: dict[str, JsonValue] = {
        "ifindex": index,
        "ifname": nic.name,
        "port": nic.port,
        "lqpn": qp.lqpn,
    }
    connected = qp.type in ("RC", "UC", "XRC_INI", "XRC_TGT")
    if connected:
        record["rqpn"] = qp.rqpn
    record["type"] = qp.type
    record["state"] = qp.state
    if connected:
        record["rq-psn"] = qp.rq_psn
    record["sq-psn"] = qp.sq_psn
    if connected:
        record["path-mig-state"] = "MIGRATED"
    if not _is_kernel(qp):
        record["pdn"] = pdn[qp.pid]
        record["pid"] = qp.pid
    record["comm"] = qp.comm.strip("[]")
    return record


def _pd_numbers(nic: NicView) -> dict[int, int]:
    """Protection domain of each user process: kernel ULPs hold the first ones (pdn 1..3)."""
    numbers: dict[int, int] = {}
    for qp in nic.qps:
        if not _is_kernel(qp) and qp.pid not in numbers:
            numbers[qp.pid] = 4 + len(numbers)
    return numbers


def _qp_text(record: dict[str, JsonValue], kernel: bool) -> str:
    words = [f"link {record['ifname']}/{record['port']}"]
    for key, value in record.items():
        if key in ("ifindex", "ifname", "port"):
            continue
        if key == "comm" and kernel:
            value = f"[{value}]"
        words.append(f"{key} {value}")
    return " ".join(words) + " \n"


def _select(node: NodeView, link: str | None) -> list[tuple[int, NicView]] | None:
    """The (device index, NIC) pairs a ``link DEV[/PORT]`` filter keeps; None if it names nothing."""
    pairs = list(enumerate(node.nics))
    if link is None:
        return pairs
    dev, _, port = link.partition("/")
    chosen = [(i, n) for i, n in pairs if n.name == dev and (not port or port == str(n.port))]
    return chosen or None


def _res_summary(node: NodeView, link: str | None) -> list[dict[str, JsonValue]]:
    """Resource counts per device (restrack order pd, cq, qp, cm_id, mr, ctx, srq).

    An idle mlx5 device holds 3 PDs, 5 CQs and 2 SRQs for its kernel ULPs;
    each user process adds a context, a PD and its memory registrations, each
    user QP its completion queue.
    """
    records: list[dict[str, JsonValue]] = []
    for index, nic in _select(node, link) or []:
        users = {qp.pid for qp in nic.qps if not _is_kernel(qp)}
        user_qps = sum(1 for qp in nic.qps if not _is_kernel(qp))
        records.append(
            {
                "ifindex": index,
                "ifname": nic.name,
                "pd": 3 + len(users),
                "cq": 5 + user_qps,
                "qp": len(nic.qps),
                "cm_id": 0,
                "mr": 2 * len(users),
                "ctx": len(users),
                "srq": 2,
            }
        )
    return records


@register("rdma")
def rdma(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``rdma [-j] [-p] {res|resource|statistic|stat|link|dev} [show ...]``."""
    node = ctx.node
    if node is None:
        return ToolOutput("", f"sh: 1: {argv[0]}: not found\n", 127)
    as_json = pretty = False
    words: list[str] = []
    for arg in argv[1:]:
        if arg.startswith("-") and len(arg) > 1 and not arg.startswith("--"):
            for letter in arg[1:]:
                if letter == "j":
                    as_json = True
                elif letter == "p":
                    pretty = True
                elif letter not in "dr":
                    return ToolOutput("", f"rdma: invalid option -- '{letter}'\n" + _RDMA_USAGE, 1)
        elif arg in ("--json",):
            as_json = True
        elif arg in ("--pretty",):
            pretty = True
        else:
            words.append(arg)
    if not words:
        return ToolOutput(_RDMA_USAGE, "", 0)
    obj, rest = words[0], words[1:]
    if rest and rest[0] in ("show", "list"):
        rest = rest[1:]
    if "resource".startswith(obj) and obj.startswith("r"):
        return _res(node, rest, as_json, pretty)
    if "statistic".startswith(obj) and obj.startswith("stat"):
        return _statistic(node, rest, as_json, pretty)
    if "link".startswith(obj) and obj.startswith("l"):
        return _link(node, rest, as_json, pretty)
    if "dev".startswith(obj) and obj.startswith("d"):
        return _dev(node, as_json, pretty)
    return ToolOutput("", f'Object "{obj}" is unknown, try "rdma help".\n', 1)


_RDMA_USAGE = (
    "Usage: rdma [ OPTIONS ] OBJECT { COMMAND | help }\n"
    "       rdma [ -f[orce] ] -b[atch] filename\n"
    "where  OBJECT := { dev | link | resource | system | statistic | help }\n"
    "       OPTIONS := { -V[ersion] | -d[etails] | -j[son] | -p[retty] | -r[aw]}\n"
)


def _link_filter(rest: list[str]) -> tuple[str | None, list[str]]:
    if len(rest) >= 2 and rest[-2] in ("link", "dev"):
        return rest[-1], rest[:-2]
    return None, rest


def _res(node: NodeView, rest: list[str], as_json: bool, pretty: bool) -> ToolOutput:
    if len(rest) == 1 and any(n.name == rest[0] for n in node.nics):
        rest = ["dev", rest[0]]  # res.c special case: "rdma res show DEV"
    if not rest or rest[0] in ("link", "dev"):
        link, _ = _link_filter(rest)
        if link is not None and _select(node, link) is None:
            return ToolOutput("", f'Wrong device name "{link.partition("/")[0]}"\n', 1)
        summary = _res_summary(node, link)
        if as_json:
            return ToolOutput(jsonw(summary, pretty))
        lines = []
        for record in summary:
            counts = " ".join(
                f"{k} {v}" for k, v in record.items() if k not in ("ifindex", "ifname")
            )
            lines.append(f"{record['ifindex']}: {record['ifname']}: {counts} \n")
        return ToolOutput("".join(lines))
    kind, rest = rest[0], rest[1:]
    if kind != "qp":
        return ToolOutput("", f'Unknown parameter "{kind}".\n', 1)
    link, rest = _link_filter(rest)
    selected = _select(node, link)
    if selected is None:
        return ToolOutput("", f'Wrong device name "{(link or "").partition("/")[0]}"\n', 1)
    records: list[dict[str, JsonValue]] = []
    kernels: list[bool] = []
    for index, nic in selected:
        pdn = _pd_numbers(nic)
        for qp in sorted(nic.qps, key=lambda q: q.lqpn):
            records.append(_qp_record(index, nic, qp, pdn))
            kernels.append(_is_kernel(qp))
    if as_json:
        return ToolOutput(jsonw(records, pretty))
    return ToolOutput("".join(_qp_text(r, k) for r, k in zip(records, kernels, strict=True)))


def _ordered_hw(nic: NicView) -> list[tuple[str, int]]:
    known = [(n, nic.hw_counters[n]) for n in _MLX5_HW_COUNTERS if n in nic.hw_counters]
    extra = [(n, v) for n, v in nic.hw_counters.items() if n not in _MLX5_HW_COUNTERS]
    return known + extra


def _statistic(node: NodeView, rest: list[str], as_json: bool, pretty: bool) -> ToolOutput:
    link, _ = _link_filter(rest)
    selected = _select(node, link)
    if selected is None:
        return ToolOutput("", f'Wrong device name "{(link or "").partition("/")[0]}"\n', 1)
    if as_json:
        records: list[dict[str, JsonValue]] = []
        for index, nic in selected:
            record: dict[str, JsonValue] = {"ifname": nic.name, "port": nic.port}
            record.update(_ordered_hw(nic))
            records.append({"ifindex": index, **record})
        return ToolOutput(jsonw(records, pretty))
    lines = [
        f"link {nic.name}/{nic.port} "
        + " ".join(f"{name} {value}" for name, value in _ordered_hw(nic))
        + " \n"
        for _, nic in selected
    ]
    return ToolOutput("".join(lines))


def _link(node: NodeView, rest: list[str], as_json: bool, pretty: bool) -> ToolOutput:
    """link.c: IB ports add subnet_prefix, lid, sm_lid and lmc before the state."""
    target = rest[0] if rest else None
    selected = _select(node, target)
    if selected is None:
        return ToolOutput("", f'Wrong device name "{(target or "").partition("/")[0]}"\n', 1)
    records: list[dict[str, JsonValue]] = []
    for index, nic in selected:
        record: dict[str, JsonValue] = {"ifindex": index, "ifname": nic.name, "port": nic.port}
        if nic.link_layer == "InfiniBand":
            record.update(
                {
                    "subnet_prefix": "fe80:0000:0000:0000",
                    "lid": nic.lid,
                    "sm_lid": nic.sm_lid,
                    "lmc": 0,
                }
            )
        record["state"] = nic.state
        record["physical_state"] = _LINK_PHYS.get(nic.phys_state, "UNKNOWN")
        if nic.netdev:
            record["netdev"] = nic.netdev
        records.append(record)
    if as_json:
        return ToolOutput(jsonw(records, pretty))
    lines = []
    for record in records:
        words = [f"link {record['ifname']}/{record['port']}"]
        words += [f"{k} {v}" for k, v in record.items() if k not in ("ifindex", "ifname", "port")]
        lines.append(" ".join(words) + " \n")
    return ToolOutput("".join(lines))


def _dev(node: NodeView, as_json: bool, pretty: bool) -> ToolOutput:
    """dev.c: "0: mlx5_0: node_type ca fw 28.39.1002 node_guid ... sys_image_guid ..."."""
    records: list[dict[str, JsonValue]] = [
        {
            "ifindex": index,
            "ifname": nic.name,
            "node_type": "ca",
            "fw": nic.fw_version,
            "node_guid": guid_colon(nic.node_guid),
            "sys_image_guid": guid_colon(nic.sys_image_guid),
        }
        for index, nic in enumerate(node.nics)
    ]
    if as_json:
        return ToolOutput(jsonw(records, pretty))
    lines = [
        f"{r['ifindex']}: {r['ifname']}: "
        + " ".join(f"{k} {v}" for k, v in r.items() if k not in ("ifindex", "ifname"))
        + " \n"
        for r in records
    ]
    return ToolOutput("".join(lines))


# --- show_gids ------------------------------------------------------------------------


@register("show_gids")
def show_gids(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``show_gids [DEV [PORT]]`` (mlnx-tools): tab-separated table and the ``n_gids_found`` footer."""
    parts = ctx.parts
    if parts is not None:  # the NICs' heads: no counters, optics or QPs computed for GIDs
        nics = [(nic.name, nic.port, nic.gids) for nic in (parts.nic_head(r) for r in parts.rails)]
    elif ctx.node is not None:
        nics = [(nic.name, nic.port, nic.gids) for nic in ctx.node.nics]
    else:
        return ToolOutput("", f"sh: 1: {argv[0]}: not found\n", 127)
    lines = [
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV",
        "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---",
    ]
    found = 0
    for name, port, gids in nics:
        if len(argv) > 1 and name != argv[1]:
            continue
        if len(argv) > 2 and str(port) != argv[2]:
            continue
        for gid in sorted(gids, key=lambda g: g.index):
            # the script turns gid_attrs/types ("IB/RoCE v1", "RoCE v2") into v1/v2
            version = gid.roce_version or "v1"
            if gid.ipv4:
                lines.append(f"{name}\t{port}\t{gid.index}\t{gid.gid}\t{gid.ipv4}  \t{version}\t{gid.netdev}")
            else:
                lines.append(f"{name}\t{port}\t{gid.index}\t{gid.gid}\t\t\t{version}\t{gid.netdev}")
            found += 1
    lines.append(f"n_gids_found={found}")
    return ToolOutput("".join(line + "\n" for line in lines))


@register("ibdev2netdev")
def ibdev2netdev(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ibdev2netdev`` (MLNX_OFED script): "mlx5_0 port 1 ==> ens1np0 (Up)" per port."""
    node = ctx.node
    if node is None:
        return ToolOutput("", f"sh: 1: {argv[0]}: not found\n", 127)
    lines = [
        f"{nic.name} port {nic.port} ==> {nic.netdev} ({'Up' if nic.state == 'ACTIVE' else 'Down'})\n"
        for nic in node.nics
    ]
    return ToolOutput("".join(lines))
