"""MIG geometry: the geometric consequences listed in docs/reference/mig-profiles.md, and properties of the tables."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.mig import (
    EMPTY,
    GEOMETRY,
    MigKind,
    best_start,
    legal_starts,
    place,
    rebuild,
    remove,
    smallest_covering,
    stranded_compute,
)

G1, G1ME, G1D, G2, G3, G4, G7 = (
    MigKind.G1,
    MigKind.G1_ME,
    MigKind.G1_DOUBLE,
    MigKind.G2,
    MigKind.G3,
    MigKind.G4,
    MigKind.G7,
)


def test_two_3g_use_all_memory_and_strand_one_compute_slice():
    state = rebuild([(G3, 0), (G3, 4)])
    assert state.free_memory == 0
    assert state.compute_used == 6
    assert stranded_compute(state) == 1


def test_4g_and_3g_fill_a_gpu_only_with_4g_at_0_and_3g_at_4():
    state = rebuild([(G4, 0), (G3, 4)])
    assert (state.free_memory, state.free_compute) == (0, 0)
    assert legal_starts(EMPTY, G4) == (0,)
    assert legal_starts(rebuild([(G3, 0)]), G4) == ()  # a 3g at 0 leaves no room for the 4g


def test_a_3g_at_0_leaves_room_for_only_three_1g():
    state = rebuild([(G3, 0)])
    assert legal_starts(state, G1) == (4, 5, 6)
    for start in (4, 5, 6):
        state = place(state, G1, start)
    assert legal_starts(state, G1) == ()
    assert state.free_memory == 1  # slice 7 stays unused


def test_four_1g_double_memory_fill_memory_with_four_compute_slices():
    state = rebuild([(G1D, 0), (G1D, 2), (G1D, 4), (G1D, 6)])
    assert (state.free_memory, state.compute_used) == (0, 4)
    assert stranded_compute(state) == 3


def test_seven_1g_leave_memory_slice_7_unused_and_2g_never_starts_at_6():
    state = rebuild([(G1, s) for s in range(7)])
    assert state.mem_mask == 0b0111_1111
    assert state.free_compute == 0
    assert 6 not in GEOMETRY[G2].starts
    assert legal_starts(rebuild([(G1, s) for s in range(6)]), G2) == ()


def test_a_1g_at_0_blocks_the_4g_and_the_3g_at_0():
    state = rebuild([(G1, 0)])
    assert legal_starts(state, G4) == ()
    assert legal_starts(state, G3) == (4,)
    assert legal_starts(state, G7) == ()


def test_only_one_media_extension_instance_per_gpu():
    state = rebuild([(G1ME, 0)])
    assert legal_starts(state, G1ME) == ()
    assert legal_starts(state, G1) == (1, 2, 3, 4, 5, 6)


def test_an_illegal_start_is_refused():
    with pytest.raises(ValueError, match="cannot start"):
        place(EMPTY, G2, 1)
    with pytest.raises(ValueError, match="cannot start"):
        place(rebuild([(G3, 4)]), G2, 4)


def test_the_best_start_keeps_the_bigger_profiles_placeable():
    assert best_start(EMPTY, G3) is not None
    assert best_start(EMPTY, G3)[0] == 4  # type: ignore[index]  # the 4g at 0 still fits beside it
    one_g = best_start(EMPTY, G1)
    assert one_g is not None
    assert legal_starts(place(EMPTY, G1, one_g[0]), G4) == (0,)
    assert best_start(rebuild([(G4, 0), (G3, 4)]), G1) is None


def test_profile_names_follow_the_reference_table():
    assert CATALOG["A100-40GB"].profile_kind("1g.5gb") is G1
    assert CATALOG["H100-SXM-80GB"].profile_kind("3g.40gb") is G3
    assert CATALOG["H100-NVL-94GB"].profile_kind("1g.24gb") is G1D
    assert CATALOG["H200-141GB"].profile_kind("7g.141gb") is G7
    assert CATALOG["B200"].profile_kind("4g.90gb") is G4
    assert CATALOG["GB200"].profile_kind("2g.47gb") is G2
    assert CATALOG["A100-80GB"].profile_kind("1g.10gb+me") is G1ME
    assert all(len(m.mig_profiles) == 7 for m in CATALOG.values())


def test_a_fraction_maps_to_the_smallest_covering_slice():
    assert smallest_covering(100) is G1  # 0.1 of a GPU <= 1/7
    assert smallest_covering(200) is G2
    assert smallest_covering(460) is G4
    assert smallest_covering(999) is G7


@given(st.lists(st.tuples(st.sampled_from(list(MigKind)), st.integers(0, 7)), max_size=12))
def test_any_sequence_of_legal_placements_respects_the_slices(attempts):
    state, placed = EMPTY, []
    for kind, start in attempts:
        if start in legal_starts(state, kind):
            state = place(state, kind, start)
            placed.append((kind, start))
    assert state.compute_used <= 7
    used = 0
    for kind, start in placed:
        run = ((1 << GEOMETRY[kind].memory) - 1) << start
        assert not used & run  # memory runs never overlap
        used |= run
    assert used == state.mem_mask
    assert sum(1 for k, _ in placed if k is G1ME) <= 1
    for kind, start in reversed(placed):
        state = remove(state, kind, start)
    assert state == EMPTY
