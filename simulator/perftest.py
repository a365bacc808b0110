"""perftest (``ib_send_lat``, ``ib_write_lat``, ``ib_send_bw``, ``ib_write_bw``) and nccl-tests ``all_reduce_perf``.

A perftest server (no host argument) announces itself on its ``-p`` port in the
fleet's :class:`~simulator.session.Rendezvous`, prints perftest's waiting
banner and waits; a client started on another machine with that host and port
meets it there, both compute the run from the traffic model (latency along the
path's queues, bandwidth left by the flows that share its links, losses) and
print perftest's own text (``fleet.simulator.tools.perftest_format``). The server
exits after its client, as the real one does. ``all_reduce_perf`` (alone: one
node over NVLink; under ``mpirun -H a,b,..``: a ring over the nodes' rails)
takes its bus bandwidth from the same model and prints nccl-tests' text
(``fleet.simulator.tools.nccl_format``). Times in microseconds, bandwidths in Gb/s
(perftest) and GB/s (nccl-tests).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field, replace

from fleet.fabric.naming import RAILS_PER_NODE, nic_name
from fleet.simulator import alltoall
from fleet.simulator.model import FleetModel, NicIdentity
from fleet.simulator.session import Machine, StreamIO
from fleet.simulator.tools.nccl_format import (
    NcclParams,
    NcclRank,
    NcclRow,
    bus_factor,
    format_all_reduce_perf,
    make_row,
)
from fleet.simulator.tools.perftest_format import (
    WAITING_BANNER,
    BwRow,
    LatRow,
    PerftestEndpoint,
    PerftestParams,
    format_bw_client,
    format_lat_client,
    format_server,
)
from fleet.simulator.traffic import ProbeEstimate, fresh_random, unit_random

PERFTEST_COMMANDS = frozenset({"ib_send_lat", "ib_write_lat", "ib_send_bw", "ib_write_bw"})
NCCL_TESTS = frozenset({"all_reduce_perf", "alltoall_perf", "sendrecv_perf"})
NCCL_COMMANDS = NCCL_TESTS | {"mpirun"}

DEFAULT_PORT = 18515
MAX_RUN_S = 10.0
"""Longest a simulated run takes in wall time, however many iterations it was asked for."""

CPU_MHZ_CALIBRATION_S = 0.219
"""Wall time a perftest side spends on each result row calibrating its cycle counter, seconds.

Why it is modelled: a real probe's wall time is not just iterations x latency.
perftest reports in microseconds by dividing cycle counts by ``get_cpu_mhz()``
(linux-rdma/perftest ``src/get_clock.c``), which always runs
``sample_get_cpu_mhz()``: MEASUREMENTS = 200 busy-waits on ``gettimeofday``,
the i-th until USECSTART + i * USECSTEP = 100 + 10 i microseconds have passed,
so at least 200 x 100 + 10 x (0 + 1 + ... + 199) = 219,000 us. ``-F`` only
silences the frequency warning; it does not skip the sampling.
``print_report_lat``, ``print_report_lat_duration`` and ``print_report_bw``
(``src/perftest_parameters.c``) call it once per printed row (``-a``: 23
rows). Both sides report at the same time, so a run lasts this long per row
once, not twice. It is the only part of perftest's own set-up and teardown
whose length the source fixes; opening the device, registering memory,
creating the QPs and exchanging them over TCP depend on the host and the NIC
and are not modelled, so a simulated run is still shorter than a real one.
Set to 0 to time only the iterations."""

NVLS_BUSBW_GBS = 480.0
"""Peak all-reduce bus bandwidth of 8 x H100 in one node with NVLink SHARP, GB/s: NCCL's default
algorithm on NVSwitch systems (NCCL maintainers, https://github.com/NVIDIA/nccl-tests/issues/212)."""
RING_BUSBW_GBS = 370.0
"""... and with the ring, GB/s: NVLink's 450 GB/s less ~20 % protocol overhead (same source). Across
nodes NCCL rings through every node, so this caps a multi-node all-reduce."""
NIC_NCCL_SHARE = 0.97
"""Share of a NIC's bandwidth NCCL reaches: 48-49 GB/s on a 400 Gb/s ConnectX-7
(https://github.com/NVIDIA/nccl-tests/issues/267)."""

MAX_MPPS = 30.0
"""Message rate one RC QP reaches with small messages, millions per second."""

_DEVICE_RAIL = {nic_name(rail): rail for rail in range(RAILS_PER_NODE)}
"""``-d`` device name -> rail: every simulated node has the same NICs."""


class UsageError(Exception):
    """A perftest or nccl-tests command line the real tool would reject."""


@dataclass(frozen=True)
class PerftestArgs:
    test: str
    device: str = "mlx5_0"
    ib_port: int = 1
    gid_index: int | None = None
    port: int = DEFAULT_PORT
    size_bytes: int | None = None  # perftest's default: 2 for latency, 65536 for bandwidth
    iterations: int | None = None
    duration_s: float | None = None
    all_sizes: bool = False
    report_gbits: bool = False
    rdma_cm: bool = False
    qps: int = 1
    flow_label: int | None = None  # RoCE: sets the UDP source port, so the ECMP path
    server_host: str | None = None

    @property
    def kind(self) -> str:
        return self.test.rsplit("_", 1)[1]

    def sizes(self) -> list[int]:
        if self.all_sizes:
            return [2**k for k in range(1, 24)]
        if self.size_bytes is not None:
            return [self.size_bytes]
        return [2 if self.kind == "lat" else 65536]

    def iters(self) -> int:
        return self.iterations if self.iterations is not None else (1000 if self.kind == "lat" else 5000)


_VALUE_FLAGS = {
    "-d": "device", "--ib-dev": "device", "-i": "ib_port", "--ib-port": "ib_port", "-x": "gid_index",
    "--gid-index": "gid_index", "-p": "port", "--port": "port", "-s": "size_bytes", "--size": "size_bytes",
    "-n": "iterations", "--iters": "iterations", "-D": "duration_s", "--duration": "duration_s",
    "-q": "qps", "--qp": "qps", "--flow_label": "flow_label",
}  # fmt: skip
_SWITCH_FLAGS = {"-a": "all_sizes", "--all": "all_sizes", "--report_gbits": "report_gbits", "-R": "rdma_cm"}
_IGNORED_FLAGS = {"-F", "--CPU-freq", "-b", "--bidirectional", "-c"}
_IGNORED_VALUE_FLAGS = {"-m", "--mtu", "-t", "--tx-depth", "-r", "--rx-depth", "-Q", "--cq-mod", "-S", "--sl", "-c", "--connection"}


def parse_perftest(argv: list[str]) -> PerftestArgs:
    """perftest's options as ``perftest_parameters.c`` accepts them (the ones the simulator models)."""
    values: dict[str, object] = {"test": argv[0]}
    words = argv[1:]
    i = 0
    while i < len(words):
        word = words[i]
        name, _, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in _VALUE_FLAGS or name in _IGNORED_VALUE_FLAGS:
            value = inline or (words[i + 1] if i + 1 < len(words) else None)
            if value is None:
                raise UsageError(f"{argv[0]}: option requires an argument -- '{name.lstrip('-')}'")
            i += 1 if inline else 2
            if name in _IGNORED_VALUE_FLAGS:
                continue
            key = _VALUE_FLAGS[name]
            try:
                values[key] = value if key == "device" else (float(value) if key == "duration_s" else int(value))
            except ValueError:
                raise UsageError(f" Invalid value for {name}: {value}") from None
            continue
        if name in _SWITCH_FLAGS:
            values[_SWITCH_FLAGS[name]] = True
        elif name in _IGNORED_FLAGS:
            pass
        elif word.startswith("-"):
            raise UsageError(f"{argv[0]}: unrecognized option '{word}'")
        else:
            values["server_host"] = word
        i += 1
    return PerftestArgs(**values)  # type: ignore[arg-type]


@dataclass
class _Meeting:
    """What a client hands the waiting server, and what the server learns back."""

    client_host: str
    client_args: PerftestArgs
    client_nic: NicIdentity
    done: asyncio.Event = field(default_factory=asyncio.Event)
    server_text: str = ""
    server_status: int = 0


def _nic(machine: Machine, device: str) -> NicIdentity | None:
    """The NIC ``-d`` names: its fixed identity is all perftest prints of it (no counters, no view)."""
    rail = _DEVICE_RAIL.get(device)
    return None if rail is None else machine.model.nic_identity(machine.host, rail)


def resolve_host(model: FleetModel, name: str) -> tuple[str, int | None] | None:
    """A perftest/mpirun host argument: node name, management address or RoCE address -> (node, rail)."""
    short = name.split(".")[0]
    if short in model.topology.nodes:
        return short, None
    for node, address in model.topology.addresses.items():
        if address == name and node in model.topology.nodes:
            return node, None
    match = re.fullmatch(r"10\.(\d+)\.(\d+)\.(\d+)", name)
    if match:
        rail = int(match.group(1)) - 1
        index = int(match.group(2)) * 200 + int(match.group(3)) - 1
        if 0 <= rail < 8 and 1 <= index <= len(model.topology.nodes):
            return model.topology.nodes[index - 1], rail
    return None


async def run_perftest(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``ib_{send,write}_{lat,bw}``: server mode waits for its client; client mode runs the test."""
    try:
        args = parse_perftest(argv)
    except UsageError as error:
        io.stderr(f"{error}\n")
        return 1
    nic = _nic(machine, args.device)
    if nic is None:
        io.stderr(f" Couldn't find device {args.device}\n Couldn't create IB resources\n")
        return 1
    if args.server_host is None:
        return await _serve(machine, args, nic, io)
    return await _client(machine, args, nic, io)


async def _serve(machine: Machine, args: PerftestArgs, nic: NicIdentity, io: StreamIO) -> int:
    key = (machine.host, args.port)
    servers = machine.rendezvous.servers
    if key in servers:
        io.stderr(f" Couldn't listen to port {args.port}\n Unable to open file descriptor for socket connection")
        return 1
    loop = asyncio.get_running_loop()
    arrival: asyncio.Future[object] = loop.create_future()
    servers[key] = (args, arrival)
    io.stdout(WAITING_BANNER)
    closed: asyncio.Future[object] = asyncio.ensure_future(io.closed.wait())
    try:
        waiters: set[asyncio.Future[object]] = {arrival, closed}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        closed.cancel()
        if key in servers and servers[key][1] is arrival:
            del servers[key]
    if not arrival.done():
        arrival.cancel()
        return 130
    meeting = arrival.result()
    assert isinstance(meeting, _Meeting)
    await meeting.done.wait()
    io.stdout(meeting.server_text[len(WAITING_BANNER) :])
    return meeting.server_status


async def _client(machine: Machine, args: PerftestArgs, nic: NicIdentity, io: StreamIO) -> int:
    model = machine.model
    assert args.server_host is not None
    target = resolve_host(model, args.server_host)
    waiting = machine.rendezvous.servers.get((target[0], args.port)) if target else None
    behaviour = model.behaviour(target[0], model.now()) if target else None
    if target is None or waiting is None or waiting[1].done() or (behaviour and behaviour.unreachable):
        io.stderr(
            f" Couldn't connect to {args.server_host}:{args.port}\n"
            "Unable to open file descriptor for socket connection Unable to init the socket connection\n"
        )
        return 1
    server_args, arrival = waiting
    assert isinstance(server_args, PerftestArgs)
    meeting = _Meeting(machine.host, args, nic)
    arrival.set_result(meeting)
    return await _run_pair(machine, args, nic, target[0], server_args, meeting, io)


async def _run_pair(
    machine: Machine,
    client_args: PerftestArgs,
    client_nic: NicIdentity,
    server_host: str,
    server_args: PerftestArgs,
    meeting: _Meeting,
    io: StreamIO,
) -> int:
    """Both halves of one run: the client's text to ``io``, the server's into the meeting.

    The run lasts ``run_seconds`` from the moment the client starts, whatever
    the simulator's own CPU does meanwhile: on a real fleet every node runs
    on its own CPU. What the model decides (the path's latency, bandwidth and
    reachability at ``t``) is read at once; turning it into perftest's text
    is pure and done half way through the run: a link test's round of probes
    starts and ends together (64 pairs on 128 nodes), and each pair's work
    there queues the others' starts and ends; a round lasts as long as its
    last pair. (Formatted near the end instead, the texts would queue the
    ends, and every probe's formatting would lengthen the round.)
    """
    loop = asyncio.get_running_loop()
    started = loop.time() if io.asked_at is None else io.asked_at
    model = machine.model
    t = model.now()
    server_nic = model.nic_identity(server_host, _DEVICE_RAIL.get(server_args.device, 0))
    seed = model.seed
    qpn_client = 0x100 + int(fresh_random(seed, "pt-qpn", machine.host, t) * 0xFFF00)
    qpn_server = 0x100 + int(fresh_random(seed, "pt-qpn", server_host, t) * 0xFFF00)
    src, dst = (machine.host, client_nic.rail), (server_host, server_nic.rail)
    estimate = model.probe(src, dst, t, qpn_client, flow_label=client_args.flow_label)
    test = client_args.test

    def params() -> tuple[PerftestParams, PerftestParams]:
        client_ep = _endpoint(model, client_nic, client_args, qpn_client, t)
        server_ep = _endpoint(model, server_nic, server_args, qpn_server, t)
        return (_params(model, client_args, client_nic, (client_ep,), (server_ep,)),
                _params(model, server_args, server_nic, (server_ep,), (client_ep,)))  # fmt: skip

    if not estimate.reachable:
        await asyncio.sleep(0.05)
        io.stderr(" Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\nscnt=1, ccnt=0\n")
        meeting.server_text = format_server(test, params()[1])
        meeting.server_status = 1
        meeting.done.set()
        return 1
    if client_args.kind == "lat":
        rows = [
            _lat_row(model, src, dst, size, client_args, t, qpn_client, estimate if size == 2 else None)
            for size in client_args.sizes()
        ]
        run_s = run_seconds(sum(r.t_avg_usec * 2 * r.iterations for r in rows) / 1e6, client_args, len(rows))
        await asyncio.sleep(max(0.0, started + run_s / 2 - loop.time()))
        client_params, server_params = params()
        server_text = format_server(test, server_params, lat_rows=rows)
        client_text = format_lat_client(test, client_params, rows)
    else:
        bw_rows = [_bw_row(estimate.bw_gbps, size, client_args) for size in client_args.sizes()]
        wall = sum(r.size_bytes * r.iterations * 8 / (r.bw_avg_gbps * 1e9) for r in bw_rows)
        run_s = run_seconds(wall, client_args, len(bw_rows))
        await asyncio.sleep(max(0.0, started + run_s / 2 - loop.time()))
        client_params, server_params = params()
        server_rows = [BwRow(r.size_bytes, r.iterations, 0.0, r.bw_avg_gbps, r.msg_rate_mpps) for r in bw_rows]
        server_text = format_server(
            test, server_params, bw_rows=server_rows if test == "ib_send_bw" else bw_rows,
            client_report_gbits=client_args.report_gbits,
        )  # fmt: skip
        client_text = format_bw_client(test, client_params, bw_rows)
    await asyncio.sleep(max(0.0, started + run_s - loop.time()))
    meeting.server_text = server_text
    meeting.done.set()
    io.stdout(client_text)
    return 0


def run_seconds(iterations_s: float, args: PerftestArgs, rows: int) -> float:
    """Wall seconds of one run: the iterations (or ``-D``), plus the cycle-counter calibration of each row.

    Capped at MAX_RUN_S, whatever was asked for.
    """
    measured_s = iterations_s if args.duration_s is None else args.duration_s
    return min(MAX_RUN_S, measured_s + rows * CPU_MHZ_CALIBRATION_S)


def _endpoint(model: FleetModel, nic: NicIdentity, args: PerftestArgs, qpn: int, t: float) -> PerftestEndpoint:
    gid = ""
    if nic.link_layer == "Ethernet":
        index = args.gid_index if args.gid_index is not None else 0
        gid = next((g.gid for g in nic.gids if g.index == index), nic.gids[0].gid if nic.gids else "")
    return PerftestEndpoint(
        lid=nic.lid,
        qpn=qpn,
        psn=int(fresh_random(model.seed, "psn", qpn, t) * 0xFFFFFF),
        rkey=int(fresh_random(model.seed, "rkey", qpn, t) * 0xFFFFFFFF),
        vaddr=0x7F0000000000 + int(fresh_random(model.seed, "vaddr", qpn, t) * 0xFFFFFFF) * 0x1000,
        gid=gid,
    )


def _params(
    model: FleetModel,
    args: PerftestArgs,
    nic: NicIdentity,
    local: tuple[PerftestEndpoint, ...],
    remote: tuple[PerftestEndpoint, ...],
) -> PerftestParams:
    ethernet = nic.link_layer == "Ethernet"
    return PerftestParams(
        device=nic.name,
        link_type="Ethernet" if ethernet else "IB",
        mtu_bytes=nic.mtu,
        local=local,
        remote=remote,
        ib_port=args.ib_port,
        gid_index=(args.gid_index if args.gid_index is not None else 0) if ethernet else args.gid_index,
        num_qps=args.qps,
        report_gbits=args.report_gbits,
        rdma_cm=args.rdma_cm,
    )


def _lat_row(
    model: FleetModel,
    src: tuple[str, int],
    dst: tuple[str, int],
    size: int,
    args: PerftestArgs,
    t: float,
    qpn: int,
    known: ProbeEstimate | None,
) -> LatRow:
    """One latency row; ``known``: the estimate for this size, when the caller already has it."""
    estimate = known or model.probe(src, dst, t, qpn, size_bytes=size, flow_label=args.flow_label)
    typical = estimate.latency_usec - (0.06 if args.test.startswith("ib_write") else 0.0)
    stdev = estimate.jitter_usec
    noise = fresh_random(model.seed, "lat", src, dst, size, t)
    return LatRow(
        size_bytes=size,
        iterations=args.iters() if args.duration_s is None else int(args.duration_s * 1e6 / (2 * typical)),
        t_min_usec=typical - 0.04 - 0.02 * noise,
        t_max_usec=estimate.tail_usec + 0.5 + 2.0 * noise,
        t_typical_usec=typical,
        t_avg_usec=typical + 0.3 * stdev,
        t_stdev_usec=stdev,
        p99_usec=typical + 2.5 * stdev,
        p999_usec=estimate.tail_usec,
    )


def _bw_row(bw_gbps: float, size: int, args: PerftestArgs) -> BwRow:
    """Small messages are bound by the QP's message rate, large ones by the path's bandwidth."""
    avg = min(bw_gbps, size * 8 * MAX_MPPS * args.qps / 1e3)
    iterations = args.iters() if args.duration_s is None else int(avg * 1e9 * args.duration_s / (size * 8))
    return BwRow(size, iterations, avg * 1.004, avg, avg * 1e9 / 8 / size / 1e6)


# --------------------------------------------------------------------------- all_reduce_perf


@dataclass(frozen=True)
class NcclArgs:
    min_bytes: int = 8
    max_bytes: int = 8 * 2**20
    step_factor: int = 2
    gpus_per_proc: int = 1
    iters: int = 20
    warmup_iters: int = 5
    check: int = 1


_NCCL_FLAGS = {
    "-b": "min_bytes", "--minbytes": "min_bytes", "-e": "max_bytes", "--maxbytes": "max_bytes",
    "-f": "step_factor", "--stepfactor": "step_factor", "-g": "gpus_per_proc", "--ngpus": "gpus_per_proc",
    "-n": "iters", "--iters": "iters", "-w": "warmup_iters", "--warmup_iters": "warmup_iters",
    "-c": "check", "--check": "check",
}  # fmt: skip


def _size(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMGkmg]?)", text)
    if not match:
        raise UsageError(f"invalid size {text}")
    return int(match.group(1)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}[match.group(2).lower()]


def parse_nccl(argv: list[str]) -> NcclArgs:
    values: dict[str, int] = {}
    i = 1
    while i < len(argv):
        flag = argv[i]
        if flag not in _NCCL_FLAGS or i + 1 >= len(argv):
            raise UsageError(f"{argv[0]}: invalid option -- '{flag}'")
        key = _NCCL_FLAGS[flag]
        values[key] = _size(argv[i + 1]) if key in ("min_bytes", "max_bytes") else int(argv[i + 1])
        i += 2
    return NcclArgs(**values)


@dataclass(frozen=True)
class MpirunArgs:
    """``mpirun -H a:8,b:8 [-np N] [-x VAR=value]... PROGRAM ...``: hosts with slots, ranks, exported variables."""

    hosts: list[tuple[str, int]]
    np: int | None
    program: list[str]
    env: dict[str, str]


def parse_mpirun(argv: list[str]) -> MpirunArgs:
    """``mpirun -H a:8,b:8 [-np N] [-N k] [-x VAR[=value]] [--map-by X] ... all_reduce_perf ...``."""
    hosts: list[tuple[str, int]] = []
    np: int | None = None
    env: dict[str, str] = {}
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        flag = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) else ""
        if flag in ("-H", "--host", "-host"):
            for item in value.split(","):
                name, _, slots = item.partition(":")
                hosts.append((name, int(slots) if slots.isdigit() else 8))
        elif flag in ("-np", "-n", "--np"):
            np = int(value)
        elif flag == "-x":
            name, sep, exported = value.partition("=")
            if sep:
                env[name] = exported
        elif flag in ("--mca", "-mca"):
            i += 1
        elif flag in ("--allow-run-as-root", "--oversubscribe", "--tag-output", "-v", "--verbose"):
            i += 1
            continue
        i += 2
    return MpirunArgs(hosts, np, argv[i:], env)


async def run_nccl(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """An nccl-tests program (``all_reduce_perf``, ``alltoall_perf``, ``sendrecv_perf``) on this node,
    or under ``mpirun`` across nodes; the two all-to-all tests run in ``fleet.simulator.alltoall``."""
    model = machine.model
    launch = MpirunArgs([(machine.host, 1)], None, argv, {})  # alone: one process driving -g GPUs
    try:
        if argv[0] == "mpirun":
            launch = parse_mpirun(argv)
            if not launch.hosts:
                launch = replace(launch, hosts=[(machine.host, 8)])
            if not launch.program or launch.program[0] not in NCCL_TESTS:
                io.stderr(f"mpirun: this simulated cluster runs only {', '.join(sorted(NCCL_TESTS))} under mpirun\n")
                return 1
        args = parse_nccl(launch.program)
    except (UsageError, ValueError) as error:
        io.stderr(f"{error}\n")
        return 1
    t = model.now()
    nodes: list[str] = []
    for name, _ in launch.hosts:
        resolved = resolve_host(model, name)
        if resolved is None:
            io.stderr(f"ssh: Could not resolve hostname {name}: Name or service not known\n")
            return 1
        if model.behaviour(resolved[0], t).unreachable:
            io.stderr(f"ssh: connect to host {name} port 22: Connection refused\n")
            return 1
        nodes.append(resolved[0])
    hosts, np_total = launch.hosts, launch.np
    slots = [s for _, s in hosts]
    if launch.program[0] != "all_reduce_perf":
        ranks = _ranks(model, nodes, slots, np_total if np_total is not None else sum(slots), args.gpus_per_proc,
                       t, launch.env)
        return await alltoall.run_exchange_test(machine, launch.program[0], args, ranks, launch.env, io)
    procs = np_total if np_total is not None else sum(slots)
    ranks = _ranks(model, nodes, slots, procs, args.gpus_per_proc, t, launch.env)
    busbw = _busbw_gbs(model, nodes, t)
    sizes = []
    size = max(1, args.min_bytes)
    while size <= args.max_bytes:
        sizes.append(size)
        size *= max(2, args.step_factor)
    params = NcclParams(
        n_gpus=args.gpus_per_proc, min_bytes=args.min_bytes, max_bytes=args.max_bytes, ranks=tuple(ranks),
        step_factor=args.step_factor, warmup_iters=args.warmup_iters, iters=args.iters, validation=args.check,
    )  # fmt: skip
    if busbw <= 0:
        header = format_all_reduce_perf(params, []).split("# Out of bounds")[0]
        io.stdout(header)
        await asyncio.sleep(min(MAX_RUN_S, 2.0))
        io.stderr(f"{machine.host}: Test NCCL failure common.cu:1005 'remote process exited or there was a network error'\n")
        return 1
    n = len(ranks)
    base_usec = 18.0 if len(set(nodes)) == 1 else 25.0 + 4.0 * len(set(nodes))
    rows: list[NcclRow] = []
    for size in sizes:
        algbw = busbw / bus_factor(n) if n > 1 else busbw
        out_time = base_usec + size / (algbw * 1e3)
        wobble = fresh_random(model.seed, "nccl", size, t)
        rows.append(make_row(size, n, out_time * (1.0 + 0.01 * wobble), out_time * (0.997 + 0.01 * (1 - wobble))))
    wall = sum(r.out_time_usec + r.in_time_usec for r in rows) * (args.iters + args.warmup_iters) / 1e6
    await asyncio.sleep(min(MAX_RUN_S, wall))
    io.stdout(format_all_reduce_perf(params, rows))
    return 0


def _ranks(
    model: FleetModel, nodes: list[str], slots: list[int], procs: int, gpus_per_proc: int, t: float,
    env: dict[str, str] | None = None,
) -> list[NcclRank]:
    """Each rank's host and GPU; ``CUDA_VISIBLE_DEVICES`` (exported with ``mpirun -x``) picks the GPUs."""
    ranks: list[NcclRank] = []
    assigned = 0
    visible = [int(d) for d in (env or {}).get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip().isdigit()]
    for node, slot in zip(nodes, slots, strict=True):
        view = model.node_view(node, t)
        for local in range(min(slot, procs - assigned)):
            pid = 4000 + int(unit_random(model.seed, "nccl-pid", node, local) * 60000)
            for g in range(gpus_per_proc):
                index = local * gpus_per_proc + g
                device = (visible[index % len(visible)] if visible else index) % len(view.gpus)
                gpu = view.gpus[device]
                ranks.append(NcclRank(len(ranks), pid, node, device, gpu.pci_bus_id, gpu.name))
            assigned += 1
    return ranks


def _busbw_gbs(model: FleetModel, nodes: list[str], t: float) -> float:
    """Bus bandwidth, GB/s: NVLink inside a node; across nodes the slowest rail of the ring gates it."""
    unique = list(dict.fromkeys(nodes))
    penalty = 1.0
    for node in unique:
        view = model.node_view(node, t)
        if any(g.xid_last == 79 for g in view.gpus):
            return 0.0
        if any(g.throttle_reasons & 0x60 for g in view.gpus):
            penalty = min(penalty, 0.85)
    if len(unique) == 1:
        return NVLS_BUSBW_GBS * penalty
    slowest = float("inf")
    for k, node in enumerate(unique):
        peer = unique[(k + 1) % len(unique)]
        for rail in range(8):
            estimate = model.probe((node, rail), (peer, rail), t, 0x4000 + rail)
            if not estimate.reachable:
                return 0.0
            slowest = min(slowest, estimate.bw_gbps)
    per_nic = slowest / 8 / 0.985 * NIC_NCCL_SHARE  # the probe's bandwidth carries perftest's own 98.5 %
    return min(RING_BUSBW_GBS, 8 * per_nic) * penalty
