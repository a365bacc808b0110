"""``PackedValues``: a stream's values as one array in a shared key order, read like any mapping."""

from __future__ import annotations

from array import array

import pytest

from fleet.fabric import samples
from fleet.fabric.samples import PackedValues, SeriesKey, layout_of, packed

A: SeriesKey = ("tx_bytes", "mlx5_0", "1")
B: SeriesKey = ("rx_bytes", "mlx5_0", "1")
C: SeriesKey = ("gpu_temp_c", "gpu0", "")


def test_reads_as_the_dict_it_was_made_from() -> None:
    plain = {A: 1.0, B: 2.5, C: -0.0}
    values = packed(plain)
    assert values == plain and plain == values
    assert list(values) == [A, B, C] and list(values.items()) == list(plain.items())
    assert len(values) == 3 and B in values and ("x", "", "") not in values
    assert values[B] == 2.5 and values.get(C) == -0.0 and values.get(("x", "", ""), 7.0) == 7.0
    with pytest.raises(KeyError):
        values[("x", "", "")]
    assert packed(values) is values
    assert repr(values) == f"PackedValues({plain!r})"


def test_equal_keys_share_one_layout() -> None:
    first, second = packed({A: 1.0, B: 2.0}), packed({A: 3.0, B: 4.0})
    assert first.layout is second.layout is layout_of((A, B))
    assert packed({B: 1.0, A: 2.0}).layout is not first.layout  # another order is another layout


def test_plus_merges_as_a_dict_would() -> None:
    values = packed({A: 1.0, B: 2.0})
    assert values.plus({}) is values
    more = values.plus({C: 3.0})
    assert isinstance(more, PackedValues) and list(more.items()) == [(A, 1.0), (B, 2.0), (C, 3.0)]
    assert more.layout is values.plus({C: 9.0}).layout  # the extended layout is shared too
    assert values == {A: 1.0, B: 2.0}  # unchanged
    overlapping = values.plus({B: 5.0, C: 6.0})
    assert overlapping == {A: 1.0, B: 5.0, C: 6.0}
    assert values.plus({C: 1.0, A: 0.5}) == {A: 0.5, B: 2.0, C: 1.0}


def test_float64_bits_kept() -> None:
    nan_bits = array("d", [float("nan"), float("inf"), 2.0**60 + 1])
    values = PackedValues(layout_of((A, B, C)), nan_bits)
    assert values[B] == float("inf") and values[C] == float(2**60)
    assert values.data.tobytes() == nan_bits.tobytes()


def test_a_full_table_still_shares_the_shapes_in_use() -> None:
    """A long run that saw more shapes than are kept still shares the layouts of the shapes it sees now."""
    in_use = layout_of((A, C))
    for n in range(samples._MAX_LAYOUTS + 10):
        layout_of(((f"m{n}", "", ""),))
        if n % 1000 == 0:
            assert layout_of((A, C)) is in_use
    assert layout_of.cache_info().currsize <= samples._MAX_LAYOUTS
    assert layout_of((A, C)) is layout_of((A, C))


def test_an_extended_layout_keeps_its_roots_keys_in_place() -> None:
    base = packed({A: 1.0, B: 2.0})
    more = base.plus({C: 3.0})
    assert isinstance(more, PackedValues)
    assert more.layout.root is base.layout.root is base.layout
    assert [more.layout.index[key] for key in base.layout.keys] == [0, 1]
