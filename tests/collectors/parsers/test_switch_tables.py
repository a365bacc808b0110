"""Fixed-width switch tables: NVUE `nv show interface` and SONiC `show lldp table` as the simulator prints them."""

from __future__ import annotations

from fleet.collectors.parsers.switch_tables import parse_switch_table

NVUE = """\
Interface  State  Speed  MTU    Type      Remote Host  Remote Port  Summary
---------  -----  -----  -----  --------  -----------  -----------  --------------------------
eth0       up     1G     1500   eth                                 IP Address: 127.42.0.33/24
swp1       up     400G   9216   swp       gpu001       enp12s0np0
swp17      down   400G   9216   swp
"""

SONIC = """\
Capability codes: (R) Router, (B) Bridge, (O) Other
LocalPort    RemoteDevice    RemotePortID    Capability    RemotePortDescr
-----------  --------------  --------------  ------------  -----------------
Ethernet0    gpu017          enp12s0np0                    enp12s0np0
Ethernet64   spine01         swp9            BR            swp9
"""


def test_empty_cells_stay_in_their_column() -> None:
    table = parse_switch_table(NVUE)
    assert table.columns[:3] == ("Interface", "State", "Speed") and table.problems == ()
    rows = {row["Interface"]: row for row in table.rows}
    assert (rows["swp1"]["Remote Host"], rows["swp1"]["Remote Port"]) == ("gpu001", "enp12s0np0")
    assert (rows["swp17"]["State"], rows["swp17"]["Remote Host"]) == ("down", "")
    assert rows["eth0"]["Summary"] == "IP Address: 127.42.0.33/24"


def test_a_legend_before_the_header_is_skipped() -> None:
    table = parse_switch_table(SONIC)
    assert [(r["LocalPort"], r["RemoteDevice"], r["RemotePortID"]) for r in table.rows] == [
        ("Ethernet0", "gpu017", "enp12s0np0"), ("Ethernet64", "spine01", "swp9")]


def test_hostile_input_gives_problems_not_rows() -> None:
    for text in ("", "garbage\x00\x01 not a table", "sh: 1: nv: not found\n"):
        table = parse_switch_table(text)
        assert table.rows == () and table.problems
    truncated = parse_switch_table(NVUE[: NVUE.index("swp1") + 2])
    assert [row["Interface"] for row in truncated.rows] == ["eth0"] and truncated.problems
