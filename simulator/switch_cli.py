"""Switch configuration changes (NVUE ``nv set``/``nv config apply``, SONiC ``config switch-hash``) and
Cumulus's hash calculator ``cl-ecmpcalc``.

NVUE stages changes (``nv set ...`` -> ``nv config diff``) and applies them as
one revision (``nv config apply [-y]``, listed by ``nv config history``). A new
hash seed or an adaptive-routing change restarts switchd on Cumulus: the
switch forwards nothing for ``SWITCHD_RESTART_S`` seconds and its ports go down
and come back, which the model shows. SONiC applies ``config switch-hash
global ecmp-hash ...`` at once, without a restart. Applying re-hashes every
flow the switch forwards. The show commands live in ``fleet.simulator.tools.nvue``
and ``fleet.simulator.tools.sonic``.

RoCE QoS changes go to the model's :class:`~fleet.simulator.qos_state.QosState`: NVUE
stages ``nv set qos ...`` / ``nv set interface PORT qos|link ...`` and applies them with
the revision (``nv config apply REV|startup`` returns to an earlier revision's settings);
SONiC applies ``config interface pfc priority``, ``config interface mtu``, ``config pfcwd
start|stop``, ``config qos reload``, ``ecnconfig -q Q on|off`` and ``sonic-cfggen -a JSON
--write-to-db`` at once.
"""

from __future__ import annotations

import json

from fleet.simulator.qos_state import LOSSLESS_PRIORITY, QosState
from fleet.simulator.session import Machine, StreamIO
from fleet.simulator.tools.nvue import ECMP_FIELDS as NVUE_ECMP_FIELDS
from fleet.simulator.traffic import SWITCHD_RESTART_S, SwitchConfig, nic_of_ip

HASH_SEED_PATH = "system forwarding hash-seed"
ECMP_PATH = "system forwarding ecmp-hash"
AR_PATH = "router adaptive-routing state"

SONIC_FIELDS = {
    "SRC_IP": "source-ip",
    "DST_IP": "destination-ip",
    "IP_PROTOCOL": "ip-protocol",
    "L4_SRC_PORT": "source-port",
    "L4_DST_PORT": "destination-port",
    "IN_PORT": "ingress-interface",
    "RDMA_BTH_DEST_QP": "rdma-bth-dest-qp",
    "SRC_MAC": "",
    "DST_MAC": "",
    "ETHERTYPE": "",
    "VLAN_ID": "",
    "INNER_SRC_IP": "",
    "INNER_DST_IP": "",
    "INNER_IP_PROTOCOL": "",
    "INNER_L4_SRC_PORT": "",
    "INNER_L4_DST_PORT": "",
}
"""SONiC hash field -> the NVUE-named field the model hashes on ("": constant for routed RoCE traffic)."""

NV_USAGE = "Usage:\n  nv set system forwarding hash-seed <0-4294967295>\n  nv set system forwarding ecmp-hash <field> on|off\n  nv set router adaptive-routing state enabled|disabled\n  nv config apply [-y] [-m <message>]\n"


def is_nv_change(argv: list[str]) -> bool:
    """Whether an ``nv`` command changes state (the rest is printed by the nvue renderer)."""
    return len(argv) > 1 and (argv[1] in ("set", "unset") or argv[1:3] in (["config", "apply"], ["config", "detach"]))


async def run_nv(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``nv set|unset ...``, ``nv config apply``, ``nv config detach`` on a Cumulus switch."""
    model = machine.model
    pending = model.pending.setdefault(machine.host, {})
    args = argv[1:]
    if args[:1] == ["set"]:
        return _nv_set(args[1:], pending, io)
    if args[:1] == ["unset"]:
        path = " ".join(args[1:])
        if len(args) == 5 and args[1] == "interface" and args[3:] == ["qos", "pfc"]:
            pending[f"interface {args[2]} pfc"] = "none"  # the port leaves PFC (applied with the rest)
            return 0
        if pending.pop(path, None) is None:
            io.stderr("Error: The requested item does not exist.\n")
            return 1
        return 0
    if args[:2] == ["config", "detach"]:
        pending.clear()
        return 0
    return _nv_apply(machine, args[2:], pending, io)


def _nv_set(words: list[str], pending: dict[str, str], io: StreamIO) -> int:
    if words[:3] == ["system", "forwarding", "hash-seed"] and len(words) == 4:
        value = words[3]
        if not value.isdigit() or int(value) > 4294967295:
            io.stderr(f"Error: Invalid Command: '{value}' is not a valid hash-seed (0-4294967295)\n")
            return 1
        pending[HASH_SEED_PATH] = str(int(value))
        return 0
    if words[:3] == ["system", "forwarding", "ecmp-hash"] and len(words) == 5:
        field, state = words[3], words[4]
        if field not in NVUE_ECMP_FIELDS or state not in ("on", "off"):
            io.stderr(f"Error: Invalid Command: ecmp-hash {field} {state}\n")
            return 1
        pending[f"{ECMP_PATH} {field}"] = state
        return 0
    qos = _nv_qos_path(words)
    if qos is not None:
        if isinstance(qos, str):
            io.stderr(f"Error: Invalid Command: {qos}\n")
            return 1
        path, value = qos
        pending[path] = value
        return 0
    if words[:2] == ["router", "adaptive-routing"] and len(words) == 4 and words[2] in ("state", "enable"):
        choice = {"enabled": "enabled", "on": "enabled", "disabled": "disabled", "off": "disabled"}.get(words[3])
        if choice is None:
            io.stderr(f"Error: Invalid Command: adaptive-routing {words[2]} {words[3]}\n")
            return 1
        pending[AR_PATH] = choice
        return 0
    io.stderr(f"Error: Invalid Command: nv set {' '.join(words)}\n{NV_USAGE}")
    return 1


QOS_PREFIX = "qos "
"""Pending paths under this prefix (and ``interface PORT qos|link ...``) are RoCE QoS settings."""


def _nv_qos_path(words: list[str]) -> tuple[str, str] | str | None:
    """(pending path, value) of a QoS ``nv set``; an error string for a bad one; None for another path."""
    if words[:1] == ["qos"]:
        if words[1:3] == ["roce", "mode"] and len(words) == 4 and words[3] in ("lossless", "lossy"):
            return "qos roce mode", words[3]
        if words[1:4] == ["congestion-control", "default-global", "traffic-class"] and len(words) == 7 \
                and words[4].isdigit() and words[5] == "ecn" and words[6] in ("enable", "disable"):
            return f"qos ecn tc {words[4]}", words[6]
        if words[1:4] == ["mapping", "default-global", "trust"] and len(words) == 5 \
                and words[4] in ("both", "dscp", "pcp"):
            return "qos trust", {"both": "pcp,dscp"}.get(words[4], words[4])
        if words[1:4] == ["mapping", "default-global", "dscp"] and len(words) == 7 and words[4].isdigit() \
                and int(words[4]) < 64 and words[5] == "switch-priority" and words[6].isdigit() and int(words[6]) < 8:
            return f"qos dscp {words[4]}", words[6]
        return f"nv set {' '.join(words)}"
    if words[:1] == ["interface"] and len(words) >= 5:
        port, rest = words[1], words[2:]
        if rest[:3] == ["qos", "pfc-watchdog", "state"] and len(rest) == 4 and rest[3] in ("enable", "disable"):
            return f"interface {port} pfc_watchdog", rest[3]
        if rest[:2] == ["link", "mtu"] and len(rest) == 3 and rest[2].isdigit() and 552 <= int(rest[2]) <= 9216:
            return f"interface {port} mtu", rest[2]
        if rest[:3] == ["qos", "pfc", "profile"] and len(rest) == 4:
            return f"interface {port} pfc", rest[3]
        if rest[:1] in (["qos"], ["link"]):
            return f"nv set {' '.join(words)}"
    return None


def _commit_qos(state: QosState, switch: str, path: str, value: str, t: float) -> None:
    words = path.split()
    if path == "qos roce mode":
        for key, default in (("trust", "pcp,dscp"), ("lossless_buffer", value == "lossless")):
            state.write(switch, (key,), default, t)
        state.write(switch, ("ecn_tc", LOSSLESS_PRIORITY), True, t)
        state.write(switch, ("dscp", 26), LOSSLESS_PRIORITY, t)
        state.write(switch, ("dscp", 48), 6, t)
        for port in state.topology.switch_port_names(switch):
            state.write(switch, ("port", port, "pfc"), value == "lossless", t)
    elif words[:3] == ["qos", "ecn", "tc"]:
        state.write(switch, ("ecn_tc", int(words[3])), value == "enable", t)
    elif path == "qos trust":
        state.write(switch, ("trust",), value, t)
    elif words[:2] == ["qos", "dscp"]:
        state.write(switch, ("dscp", int(words[2])), int(value), t)
    elif words[0] == "interface":
        port, setting = words[1], words[2]
        written = {"pfc_watchdog": value == "enable", "mtu": int(value) if value.isdigit() else 0,
                   "pfc": value == "default-global"}[setting]
        state.write(switch, ("port", port, setting), written, t)


def _is_qos(path: str) -> bool:
    return path.startswith(QOS_PREFIX) or path.startswith("interface ")


def _nv_apply(machine: Machine, args: list[str], pending: dict[str, str], io: StreamIO) -> int:
    model = machine.model
    revision_asked = next((a for a in args if not a.startswith("-") and a not in ("-y",)
                           and (a.isdigit() or a == "startup")), None)
    if revision_asked is not None and "-m" not in args[: args.index(revision_asked)]:
        return _nv_apply_revision(machine, revision_asked, io)
    message = "Config update by cumulus"
    if "-m" in args or "--message" in args:
        flag = "-m" if "-m" in args else "--message"
        index = args.index(flag)
        if index + 1 >= len(args):
            io.stderr("Error: option -m requires an argument\n")
            return 2
        message = args[index + 1]
    if not pending:
        io.stdout("Warning: There are no pending changes to apply.\n")
        return 0
    t = model.now()
    current = model.switch_config(machine.host, t)
    fields = set(current.ecmp_fields)
    seed = current.hash_seed
    ar = current.adaptive_routing
    for path, value in [(p, v) for p, v in pending.items() if _is_qos(p)]:
        _commit_qos(model.qos, machine.host, path, value, t)
        del pending[path]
    for path, value in pending.items():
        if path == HASH_SEED_PATH:
            seed = int(value)
        elif path == AR_PATH:
            ar = value == "enabled"
        elif path.startswith(ECMP_PATH):
            field = path.removeprefix(ECMP_PATH).strip()
            if value == "on":
                fields.add(field)
            else:
                fields.discard(field)
    new = SwitchConfig(hash_seed=seed, ecmp_fields=frozenset(fields), adaptive_routing=ar)
    restart = seed != current.hash_seed or ar != current.adaptive_routing
    if restart:
        io.stdout(
            "Warning: The following changes will restart switchd and interrupt traffic "
            f"for about {SWITCHD_RESTART_S:.0f} seconds:\n"
            + "".join(f"  {p}: {v}\n" for p, v in sorted(pending.items()) if p in (HASH_SEED_PATH, AR_PATH))
        )
    revision = model.apply_switch_config(machine.host, t, new, restart=restart, message=message)
    model.qos.snapshot(machine.host, revision, t)
    pending.clear()
    io.stdout(f"applied [rev_id: {revision}]\n")
    return 0


def _nv_apply_revision(machine: Machine, asked: str, io: StreamIO) -> int:
    """``nv config apply REV|startup [-y]``: the settings of that revision (startup: as the switch booted)."""
    model = machine.model
    t = model.now()
    history = dict((rev, msg) for rev, _, msg in model.history.get(machine.host, ()))
    if asked != "startup" and int(asked) not in history:
        io.stderr(f"Error: Revision {asked} does not exist.\n")
        return 1
    target = 0 if asked == "startup" else int(asked)
    config = model.switch_config_at_revision(machine.host, target)
    current = model.switch_config(machine.host, t)
    restart = (config.hash_seed, config.adaptive_routing) != (current.hash_seed, current.adaptive_routing)
    model.qos.restore(machine.host, target, t)
    revision = model.apply_switch_config(machine.host, t, config, restart=restart, message=f"apply {asked}")
    model.qos.snapshot(machine.host, revision, t)
    model.pending.get(machine.host, {}).clear()
    io.stdout(f"applied [rev_id: {revision}]\n")
    return 0


SONIC_USAGE = (
    "Usage: config switch-hash global ecmp-hash [OPTIONS] ARGS...\n"
    "Try \"config switch-hash global ecmp-hash -h\" for help.\n"
)


async def run_sonic_config(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """SONiC ``config switch-hash global ecmp-hash FIELD...`` (no switchd restart) and the QoS ``config``
    commands of the module docstring: all apply at once."""
    args = argv[1:]
    if args[:2] in (["interface", "pfc"], ["interface", "mtu"], ["pfcwd", "start"], ["pfcwd", "stop"],
                    ["qos", "reload"]):
        return _sonic_qos_config(machine, args, io)
    if args[:3] != ["switch-hash", "global", "ecmp-hash"]:
        io.stderr(f"Usage: config [OPTIONS] COMMAND [ARGS]...\nError: No such command \"{' '.join(args[:1])}\".\n")
        return 2
    names = args[3:]
    if not names:
        io.stderr(SONIC_USAGE + "\nError: Missing argument \"ECMP_HASH\".\n")
        return 2
    unknown = [n for n in names if n not in SONIC_FIELDS]
    if unknown:
        io.stderr(
            SONIC_USAGE + f"\nError: Invalid value for \"ECMP_HASH\": invalid choice: {unknown[0]}. "
            f"(choose from {', '.join(SONIC_FIELDS)})\n"
        )
        return 2
    model = machine.model
    t = model.now()
    current = model.switch_config(machine.host, t)
    fields = frozenset(SONIC_FIELDS[n] for n in names if SONIC_FIELDS[n])
    new = SwitchConfig(hash_seed=current.hash_seed, ecmp_fields=fields, adaptive_routing=current.adaptive_routing)
    model.apply_switch_config(machine.host, t, new, restart=False, message=f"ecmp-hash {' '.join(names)}")
    return 0


def _sonic_ports(machine: Machine, names: list[str], io: StreamIO) -> list[str] | None:
    ports = machine.model.topology.switch_port_names(machine.host)
    if names == ["all"]:
        return list(ports)
    unknown = [n for n in names if n not in ports]
    if unknown:
        io.stderr(f"Error: Interface name {unknown[0]} is invalid. Please enter a valid interface name!!\n")
        return None
    return names


def _sonic_qos_config(machine: Machine, args: list[str], io: StreamIO) -> int:
    model = machine.model
    state, switch, t = model.qos, machine.host, model.now()
    if args[:3] == ["interface", "pfc", "priority"]:
        if len(args) != 6 or not args[4].isdigit() or int(args[4]) > 7 or args[5] not in ("on", "off"):
            io.stderr("Usage: config interface pfc priority <interface_name> <priority> (on | off)\n")
            return 2
        ports = _sonic_ports(machine, [args[3]], io)
        if ports is None:
            return 2
        if int(args[4]) == LOSSLESS_PRIORITY:
            state.write(switch, ("port", args[3], "pfc"), args[5] == "on", t)
        return 0
    if args[:2] == ["interface", "mtu"]:
        if len(args) != 4 or not args[3].isdigit() or not 68 <= int(args[3]) <= 9216:
            io.stderr("Usage: config interface mtu <interface_name> <interface_mtu>\n")
            return 2
        if _sonic_ports(machine, [args[2]], io) is None:
            return 2
        state.write(switch, ("port", args[2], "mtu"), int(args[3]), t)
        return 0
    if args[:2] == ["pfcwd", "start"]:
        rest = [a for a in args[2:]]
        for flag in ("--action", "-a", "--restoration-time", "-r"):
            if flag in rest:
                i = rest.index(flag)
                del rest[i : i + 2]
        if not rest or not rest[-1].isdigit():
            io.stderr("Usage: config pfcwd start [OPTIONS] [PORTS]... DETECTION_TIME\n")
            return 2
        ports = _sonic_ports(machine, rest[:-1] or ["all"], io)
        if ports is None:
            return 2
        for port in ports:
            state.write(switch, ("port", port, "pfc_watchdog"), True, t)
        return 0
    if args[:2] == ["pfcwd", "stop"]:
        ports = _sonic_ports(machine, args[2:] or ["all"], io)
        if ports is None:
            return 2
        for port in ports:
            state.write(switch, ("port", port, "pfc_watchdog"), False, t)
        return 0
    # config qos reload: the lossless defaults again (templates), trust DSCP, ECN on the lossless queue
    state.write(switch, ("trust",), "dscp", t)
    state.write(switch, ("lossless_buffer",), True, t)
    state.write(switch, ("ecn_tc", LOSSLESS_PRIORITY), True, t)
    for dscp in range(64):
        state.write(switch, ("dscp", dscp), dscp // 8, t)
    io.stdout("Running command: /usr/local/bin/sonic-cfggen -d -t /usr/share/sonic/device/x86_64-nvidia_sn5600-r0/"
              "Mellanox-SN5600-V256/buffers.json.j2,config-db -t /usr/share/sonic/device/"
              "x86_64-nvidia_sn5600-r0/Mellanox-SN5600-V256/qos.json.j2,config-db -y /etc/sonic/sonic_version.yml "
              "--write-to-db\n")
    return 0


async def run_ecnconfig(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``ecnconfig -q Q[,Q] on|off``: WRED/ECN on the queues (the AZURE_LOSSLESS profile bound or not)."""
    args = argv[1:]
    if len(args) != 3 or args[0] != "-q" or not all(q.isdigit() and int(q) < 8 for q in args[1].split(",")):
        io.stderr("usage: ecnconfig [-h] [-v] [-l] [-p PROFILE] [-q QUEUE] ...\n")
        return 2
    model = machine.model
    for queue in args[1].split(","):
        model.qos.write(machine.host, ("ecn_tc", int(queue)), args[2] == "on", model.now())
    return 0


async def run_sonic_cfggen_write(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``sonic-cfggen -a JSON --write-to-db``: DSCP_TO_TC_MAP entries and PORT_QOS_MAP bindings."""
    args = argv[1:]
    if "-a" not in args or args.index("-a") + 1 >= len(args):
        io.stderr("usage: sonic-cfggen [-h] ... [-a ADDITIONAL_DATA] [--write-to-db]\n")
        return 2
    try:
        data = json.loads(args[args.index("-a") + 1])
    except ValueError as error:
        io.stderr(f"sonic-cfggen: error: argument -a: invalid JSON: {error}\n")
        return 2
    model = machine.model
    t = model.now()
    if not isinstance(data, dict):
        io.stderr("sonic-cfggen: error: argument -a: a JSON object is expected\n")
        return 2
    for name, table in data.items():
        if name == "DSCP_TO_TC_MAP" and isinstance(table, dict):
            for entries in table.values():
                for dscp, tc in dict(entries).items():
                    if str(dscp).isdigit() and int(dscp) < 64 and str(tc).isdigit() and int(tc) < 8:
                        model.qos.write(machine.host, ("dscp", int(dscp)), int(tc), t)
        elif name == "PORT_QOS_MAP" and isinstance(table, dict):
            if any(isinstance(v, dict) and "dscp_to_tc_map" in v for v in table.values()):
                model.qos.write(machine.host, ("trust",), "dscp", t)
            elif any(isinstance(v, dict) and "dot1p_to_tc_map" in v for v in table.values()):
                model.qos.write(machine.host, ("trust",), "pcp", t)
    return 0


ECMPCALC_USAGE = (
    "usage: cl-ecmpcalc [-h] [-v] [-p PROTOCOL] [-s SRC] [--sport SPORT] [-d DST]\n"
    "                   [--dport DPORT] [--vid VID] [-i IN_INTERFACE]\n"
    "                   [--sportid SPORTID] [--smodid SMODID] [-o OUT_INTERFACE]\n"
    "                   [--dportid DPORTID] [--dmodid DMODID] [--hardware]\n"
    "                   [--nohardware] [-hs HASHSEED]\n"
    "                   [-hf HASHFIELDS [HASHFIELDS ...]]\n"
    "                   [--hashfunction {crc16-ccitt,crc16-bisync}] [-e EGRESS]\n"
    "                   [-c MCOUNT]\n"
)
"""``cl-ecmpcalc -h``'s usage, as the Cumulus Linux ECMP documentation prints it."""

_ECMPCALC_VALUES = {"-p": "protocol", "-s": "src", "--sport": "sport", "-d": "dst", "--dport": "dport",
                    "-i": "ingress"}
_PROTOCOLS = {"udp": 17, "tcp": 6, "17": 17, "6": 6}


async def run_ecmpcalc(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """Cumulus ``cl-ecmpcalc``: the port the switch's hardware hash sends a flow out of.

    Every hashed field must be given, as the documentation says (ingress port,
    source and destination address, protocol, and for UDP and TCP both ports);
    the answer comes from the same choice the simulated traffic takes, so a
    probe with that UDP source port crosses the spine behind the port printed.
    """
    values: dict[str, str] = {}
    words = argv[1:]
    index = 0
    while index < len(words):
        name = words[index]
        if name in _ECMPCALC_VALUES and index + 1 < len(words):
            values[_ECMPCALC_VALUES[name]] = words[index + 1]
            index += 2
        elif name in ("--hardware", "-v"):
            index += 1
        else:
            io.stderr(f"{ECMPCALC_USAGE}cl-ecmpcalc: error: unrecognized arguments: {name}\n")
            return 2
    io.stdout("ecmpcalc: will query hardware\n")
    protocol = _PROTOCOLS.get(values.get("protocol", "").lower())
    if protocol is not None and not {"sport", "dport"} <= set(values):
        io.stderr(f"{ECMPCALC_USAGE}cl-ecmpcalc: error: --sport and --dport required for TCP and UDP frames\n")
        return 2
    missing = [flag for flag, key in (("-i", "ingress"), ("-s", "src"), ("-d", "dst"), ("-p", "protocol"))
               if key not in values]
    if missing or protocol is None:
        io.stderr(f"{ECMPCALC_USAGE}cl-ecmpcalc: error: every hashed field is required "
                  f"(missing {' '.join(missing) or '-p udp|tcp'})\n")
        return 2
    model = machine.model
    topology = model.topology
    port_names = set(topology.switch_port_names(machine.host))
    if values["ingress"] not in port_names:
        io.stderr(f"cl-ecmpcalc: error: {values['ingress']} is not a physical switch port\n")
        return 1
    src, dst = nic_of_ip(topology, values["src"]), nic_of_ip(topology, values["dst"])
    if src is None or dst is None:
        io.stderr(f"cl-ecmpcalc: error: no route to {values['dst'] if dst is None else values['src']}\n")
        return 1
    try:
        sport, dport = int(values["sport"]), int(values["dport"])
    except ValueError:
        io.stderr(f"{ECMPCALC_USAGE}cl-ecmpcalc: error: ports must be numbers\n")
        return 2
    io.stdout(model.ecmp_egress(machine.host, model.now(), values["ingress"], src, dst, sport, dport, protocol) + "\n")
    return 0
