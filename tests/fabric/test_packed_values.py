"""``PackedValues``: a stream's values as one array in a shared key order, read like any mapping;
``SeriesLayouts``: one layout for equal keys, kept by whoever reads a fleet's samples."""

from __future__ import annotations

from array import array

import pytest

from fleet.fabric.samples import PackedValues, SeriesKey, SeriesLayouts

A: SeriesKey = ("tx_bytes", "mlx5_0", "1")
B: SeriesKey = ("rx_bytes", "mlx5_0", "1")
C: SeriesKey = ("gpu_temp_c", "gpu0", "")


def test_reads_as_the_dict_it_was_made_from() -> None:
    layouts = SeriesLayouts()
    plain = {A: 1.0, B: 2.5, C: -0.0}
    values = layouts.packed(plain)
    assert values == plain and plain == values
    assert list(values) == [A, B, C] and list(values.items()) == list(plain.items())
    assert len(values) == 3 and B in values and ("x", "", "") not in values
    assert values[B] == 2.5 and values.get(C) == -0.0 and values.get(("x", "", ""), 7.0) == 7.0
    with pytest.raises(KeyError):
        values[("x", "", "")]
    assert layouts.packed(values) is values
    assert repr(values) == f"PackedValues({plain!r})"


def test_equal_keys_share_one_layout() -> None:
    layouts = SeriesLayouts()
    first, second = layouts.packed({A: 1.0, B: 2.0}), layouts.packed({A: 3.0, B: 4.0})
    assert first.layout is second.layout is layouts.of((A, B))
    assert layouts.packed({B: 1.0, A: 2.0}).layout is not first.layout  # another order is another layout
    assert SeriesLayouts().of((A, B)) is not first.layout  # another reader's are its own


def test_merged_is_a_dict_merge() -> None:
    layouts = SeriesLayouts()
    values = layouts.packed({A: 1.0, B: 2.0})
    assert layouts.merged(values, {}) is values
    more = layouts.merged(values, {C: 3.0})
    assert isinstance(more, PackedValues) and list(more.items()) == [(A, 1.0), (B, 2.0), (C, 3.0)]
    again = layouts.merged(values, {C: 9.0})
    assert isinstance(again, PackedValues) and again.layout is more.layout  # the joined layout is shared too
    assert values == {A: 1.0, B: 2.0}  # unchanged
    assert layouts.merged(values, {B: 5.0, C: 6.0}) == {A: 1.0, B: 5.0, C: 6.0}
    assert list(layouts.merged(values, {C: 1.0, A: 0.5}).items()) == [(A, 0.5), (B, 2.0), (C, 1.0)]
    assert layouts.merged({A: 1.0}, layouts.packed({B: 2.0})) == {A: 1.0, B: 2.0}


def test_float64_bits_kept() -> None:
    nan_bits = array("d", [float("nan"), float("inf"), 2.0**60 + 1])
    values = PackedValues(SeriesLayouts().of((A, B, C)), nan_bits)
    assert values[B] == float("inf") and values[C] == float(2**60)
    assert values.data.tobytes() == nan_bits.tobytes()


def test_a_full_book_lets_the_oldest_go_and_every_layout_stays_valid() -> None:
    """A long run that saw more shapes than are kept: the oldest layouts and joins go, those held
    elsewhere still read their values, and a new layout of their keys is made when asked."""
    layouts = SeriesLayouts(most=8)
    first = layouts.of((A, C))
    joined = layouts.joined(first, layouts.of((B,)))
    for n in range(50):
        layouts.of(((f"m{n}", "", ""),))
        layouts.joined(first, layouts.of(((f"m{n}", "", ""),)))
    assert len(layouts._by_keys) <= 8 and len(layouts._joined) <= 8
    assert PackedValues(first, array("d", [1.0, 2.0])) == {A: 1.0, C: 2.0}
    assert joined is not None and joined.keys == (A, C, B)
    assert layouts.of((A, C)) is not first and layouts.of((A, C)).keys == first.keys
