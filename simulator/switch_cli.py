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
"""

from __future__ import annotations

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
    if words[:2] == ["router", "adaptive-routing"] and len(words) == 4 and words[2] in ("state", "enable"):
        choice = {"enabled": "enabled", "on": "enabled", "disabled": "disabled", "off": "disabled"}.get(words[3])
        if choice is None:
            io.stderr(f"Error: Invalid Command: adaptive-routing {words[2]} {words[3]}\n")
            return 1
        pending[AR_PATH] = choice
        return 0
    io.stderr(f"Error: Invalid Command: nv set {' '.join(words)}\n{NV_USAGE}")
    return 1


def _nv_apply(machine: Machine, args: list[str], pending: dict[str, str], io: StreamIO) -> int:
    model = machine.model
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
    pending.clear()
    io.stdout(f"applied [rev_id: {revision}]\n")
    return 0


SONIC_USAGE = (
    "Usage: config switch-hash global ecmp-hash [OPTIONS] ARGS...\n"
    "Try \"config switch-hash global ecmp-hash -h\" for help.\n"
)


async def run_sonic_config(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """SONiC ``config switch-hash global ecmp-hash FIELD...``: applies at once, no switchd restart."""
    args = argv[1:]
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
