"""Text filters on the right of a pipe behave as grep and coreutils do where it matters."""

from __future__ import annotations

from fleet.simulator.pipes import grep, head, sort, tail, uniq, wc

TEXT = "rx_prio3_pause: 5\ntx_prio3_pause: 0\nrx_discards_phy: 2\nRX_BYTES: 9\n"


def test_grep() -> None:
    assert grep(["grep", "pause"], TEXT) == ("rx_prio3_pause: 5\ntx_prio3_pause: 0\n", "", 0)
    assert grep(["grep", "-iv", "rx_"], TEXT) == ("tx_prio3_pause: 0\n", "", 0)
    assert grep(["grep", "-c", "-E", "pause|discards"], TEXT) == ("3\n", "", 0)
    assert grep(["grep", "pause\\|discards"], TEXT)[0].count("\n") == 3  # basic regex alternation
    assert grep(["grep", "-F", "."], "a.b\nab\n") == ("a.b\n", "", 0)
    assert grep(["grep", "-w", "rx"], "rx 1\nrx_bytes 2\n") == ("rx 1\n", "", 0)
    assert grep(["grep", "nothing"], TEXT) == ("", "", 1)
    assert grep(["grep", "-z", "x"], TEXT)[2] == 2


def test_head_tail_wc_sort_uniq() -> None:
    assert head(["head", "-n", "1"], TEXT) == ("rx_prio3_pause: 5\n", "", 0)
    assert head(["head", "-2"], TEXT)[0].count("\n") == 2
    assert head(["head", "-c", "5"], TEXT) == ("rx_pr", "", 0)
    assert tail(["tail", "-n1"], TEXT) == ("RX_BYTES: 9\n", "", 0)
    assert wc(["wc", "-l"], TEXT) == ("4\n", "", 0)
    assert sort(["sort", "-nr"], "2\n10\n1\n") == ("10\n2\n1\n", "", 0)
    assert uniq(["uniq", "-c"], "a\na\nb\n") == ("      2 a\n      1 b\n", "", 0)
