"""show_gids: RoCE v1/v2 GID pairs, IPv4-mapped GIDs, mixed vendors, footer count."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.show_gids import GidEntry, parse_show_gids

FIXTURES = Path(__file__).parents[2] / "fixtures" / "rdma"


def test_bond_with_v1_v2_and_ipv4() -> None:
    r = parse_show_gids((FIXTURES / "cn-notes-show_gids-mlx5-bond-roce-v1-v2.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0 and r.n_gids_found == 4
    assert r.gids[3] == GidEntry("mlx5_bond_0", 1, 3, "0000:0000:0000:0000:0000:ffff:0a60:531a", "10.96.83.26", "v2", "bond0")
    assert r.gids[0].ipv4 == "" and r.gids[0].roce_version == "v1"
    assert r.roce_v2_index("mlx5_bond_0") == 3


def test_mixed_huawei_and_mlx5_link_local_only() -> None:
    r = parse_show_gids((FIXTURES / "cn-notes-show_gids-mixed-huawei-hrn3-mlx5.txt").read_text())
    assert r.problems == () and len(r.gids) == 4
    assert [(g.device, g.index, g.ipv4, g.roce_version, g.netdev) for g in r.gids] == [
        ("hrn3_bond_0", 0, "", "v2", "bond0"),
        ("hrn3_bond_0", 1, "27.105.180.3", "v2", "bond0"),
        ("mlx5_bond_0", 0, "", "v1", "bond1"),
        ("mlx5_bond_0", 1, "", "v2", "bond1"),
    ]
    assert r.roce_v2_index("mlx5_bond_0") is None  # no IPv4 GID: RoCE v2 over IPv4 impossible here
    assert r.roce_v2_index("hrn3_bond_0") == 1


def test_footer_mismatch_is_a_problem() -> None:
    text = (FIXTURES / "cn-notes-show_gids-mlx5-bond-roce-v1-v2.txt").read_text().replace("n_gids_found=4", "n_gids_found=5")
    r = parse_show_gids(text)
    assert [p.reason for p in r.problems] == ["n_gids_found=5 but 4 GIDs read"]


def test_newer_version_extra_cell_is_reported_not_lost() -> None:
    row = "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0a60:531a\t10.96.83.26\tv2\tens1f0\tRoCE\n"
    r = parse_show_gids(row)
    assert len(r.gids) == 1 and r.gids[0].netdev == "ens1f0"
    assert r.problems[0].reason == "extra cell 'RoCE' ignored" and "RoCE" in r.problems[0].text
