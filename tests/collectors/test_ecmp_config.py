"""Reading a switch's ECMP hash configuration back from its show commands."""

from __future__ import annotations

from fleet.collectors.ecmp_config import (
    parse_nvue_adaptive_routing,
    parse_nvue_forwarding,
    parse_sonic_switch_hash,
)

# `nv show system forwarding` in the layout of the NVUE reference ("Show Commands / System Forwarding").
NVUE_FORWARDING = """\
                          applied
------------------------  ---------
ecmp-hash
  destination-ip          on
  destination-port        on
  gtp-teid                off
  ingress-interface       on
  ip-protocol             on
  source-ip               on
  source-port             on
hash-seed                 231692234
lag-hash
  destination-ip          on
  source-mac              on
programming
  log-level               info
"""

# `show switch-hash global` in the layout of the SONiC Generic Hash design (sonic-net/SONiC
# doc/hash/hash-design.md, "Show command group"), fields shortened; not a capture from a switch.
SONIC_SWITCH_HASH = """\
+--------+-------------------------------------+
| Hash   | Configuration                       |
+========+=====================================+
| ECMP   | +-------------------+-------------+ |
|        | | Hash Field        | Algorithm   | |
|        | |-------------------+-------------| |
|        | | SRC_IP            | CRC         | |
|        | | DST_IP            |             | |
|        | | L4_SRC_PORT       |             | |
|        | | RDMA_BTH_DEST_QP  |             | |
|        | +-------------------+-------------+ |
+--------+-------------------------------------+
| LAG    | +-------------------+-------------+ |
|        | | Hash Field        | Algorithm   | |
|        | | SRC_MAC           | CRC         | |
|        | +-------------------+-------------+ |
+--------+-------------------------------------+
"""


def test_nvue_forwarding_fields_on_and_seed_but_not_the_lag_hash() -> None:
    fields, seed = parse_nvue_forwarding(NVUE_FORWARDING)
    assert fields == ("destination-ip", "destination-port", "ingress-interface", "ip-protocol", "source-ip",
                      "source-port")
    assert seed == 231692234


def test_nvue_forwarding_without_an_ecmp_section_is_unknown() -> None:
    assert parse_nvue_forwarding("Error: The requested item does not exist.\n") == (None, None)


def test_nvue_adaptive_routing_applied_state() -> None:
    table = "       operational  applied\n-----  -----------  --------\nstate  enabled      enabled\n"
    assert parse_nvue_adaptive_routing(table) is True
    assert parse_nvue_adaptive_routing(table.replace("enabled", "disabled")) is False
    assert parse_nvue_adaptive_routing("") is None


def test_sonic_switch_hash_ecmp_fields_only() -> None:
    assert parse_sonic_switch_hash(SONIC_SWITCH_HASH) == ("SRC_IP", "DST_IP", "L4_SRC_PORT", "RDMA_BTH_DEST_QP")
    assert parse_sonic_switch_hash('Usage: show [OPTIONS] COMMAND\\nError: No such command "global".\n') is None
