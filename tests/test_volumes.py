"""model/stacks/volumes.py and model/stacks/volume_on_disk.py: partitions, LVM linear/striped
volumes, access through the extent map, and the LVM mapping overhead (eqs. 10-12)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from diskmodel.model.drive.disk import expected_random_service_time_s
from diskmodel.model.drive.presets import load_preset
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import paper_stack
from diskmodel.model.stacks.volume_on_disk import VolumeOnDisk
from diskmodel.model.units import GB, MIB
from diskmodel.model.stacks.volumes import LinearVolume, Partition, Segment, StripedVolume
from diskmodel.model.stacks.lvm_mapping import LvmMapping, lvm_mapping_overhead_s


def paper_volume(name, capacity_bytes, **options):
    """The volume of the paper's stack *name* on a disk of *capacity_bytes*."""
    return paper_stack(name, capacity_bytes, **options).volume


@pytest.fixture(scope="module")
def disk():
    return load_preset("wd800bd")


# ---------------------------------------------------------------- golden values

def test_paper_layouts(disk):
    cap = disk.capacity_bytes
    native = paper_volume("native", cap)
    assert (native.start_bytes, native.size_bytes) == (cap - 20 * GB, 20 * GB)
    lvm1 = paper_volume("lvm1", cap)
    # floor((20e9 - 1 MiB) / 4 MiB) = 4768 extents
    assert lvm1.size_bytes == 4768 * 4 * MIB
    assert lvm1.logical_to_physical(0) == cap - 20 * GB + MIB
    lvm2 = paper_volume("lvm2", cap)
    assert lvm2.size_bytes == 2 * 2383 * 4 * MIB
    assert lvm2.n_physical_volumes == 2 and lvm2.n_segments == 2
    # the first byte of logical extent 2383 is the first PE of /dev/sda4
    assert lvm2.logical_to_physical(2383 * 4 * MIB) == cap - 10 * GB + MIB
    assert lvm2.logical_to_physical(2383 * 4 * MIB - 1) == cap - 20 * GB + MIB + 2383 * 4 * MIB - 1
    assert [x.mapping_complexity for x in (native, lvm1, lvm2)] == [0, 1, 2]


def test_explicit_segments_map_in_logical_order():
    pvs = (Partition(0, 100 * MIB, "a"), Partition(200 * MIB, 100 * MIB, "b"))
    # LE 0-9 on PV b at PE 5, LE 10-19 on PV a at PE 0
    lv = LinearVolume(pvs, segments=(Segment(10, 10, 0, 0), Segment(0, 10, 1, 5)))
    assert lv.size_bytes == 20 * 4 * MIB
    x = np.array([0, 4 * MIB - 1, 10 * 4 * MIB, 20 * 4 * MIB - 1])
    expected = np.array([200 * MIB + MIB + 5 * 4 * MIB, 200 * MIB + MIB + 5 * 4 * MIB + 4 * MIB - 1,
                         MIB, MIB + 10 * 4 * MIB - 1])
    np.testing.assert_array_equal(lv.logical_to_physical(x), expected)
    np.testing.assert_array_equal(lv.physical_to_logical(expected), x)


def test_striped_mapping_golden():
    sv = StripedVolume((Partition(0, 65 * MIB), Partition(100 * MIB, 65 * MIB)), stripe_size_bytes=64 * 1024)
    stripe = 64 * 1024
    # chunk 0 -> PV0 row 0, chunk 1 -> PV1 row 0, chunk 2 -> PV0 row 1
    got = sv.logical_to_physical(np.array([0, stripe, 2 * stripe + 7]))
    np.testing.assert_array_equal(got, [MIB, 100 * MIB + MIB, MIB + stripe + 7])
    assert sv.size_bytes == 2 * 16 * 4 * MIB


def test_region_access_matches_the_disk_model_for_a_partition(disk):
    native = paper_volume("native", disk.capacity_bytes)
    ours = VolumeOnDisk(disk, native).access_time_s(np.array([4096.0, 65536.0]))
    theirs = expected_random_service_time_s(disk, np.array([4096.0, 65536.0]), native.start_bytes, native.size_bytes)
    np.testing.assert_allclose(ours.total_s, theirs.total_s, rtol=1e-9)
    np.testing.assert_allclose(ours.seek_s, theirs.seek_s, rtol=1e-9)


def test_pvs_far_apart_lengthen_seeks(disk):
    near = paper_volume("lvm2", disk.capacity_bytes)
    far = paper_volume("lvm2", disk.capacity_bytes, pv_gap_bytes=40 * GB)
    t_near = VolumeOnDisk(disk, near).access_time_s(4096.0).seek_s
    placed = VolumeOnDisk(disk, far)
    t_far = placed.access_time_s(4096.0).seek_s
    assert float(t_far) > 1.5 * float(t_near)
    half = far.size_bytes // 2
    start = placed.region(0, 100 * MIB)
    across = start.seek_time_to_s(placed.region(far.size_bytes - 100 * MIB, 100 * MIB))
    within = start.seek_time_to_s(placed.region(half - 200 * MIB, 100 * MIB))
    assert across > within > 0


def test_a_seek_between_two_regions_kept_for_the_next_call_is_the_one_computed(disk):
    """seek_time_to_s keeps its answers per other region: each is the pmf of the two regions' distances
    over the seek curve, for more regions than it keeps at once, asked twice in turn."""
    from diskmodel.model.stacks import volume_on_disk as vod

    volume = Partition(0, disk.capacity_bytes)
    placed = VolumeOnDisk(disk, volume)
    start = placed.region(0, 100 * MIB)
    others = [placed.region(k * 2 * GB, 100 * MIB) for k in range(vod._SEEKS_KEPT + 3)]
    computed = []
    for other in others:
        distance, pmf = vod._distance_pmf(start.cylinder_weights, start.first_cylinder, other.cylinder_weights,
                                          other.first_cylinder)
        computed.append(float(pmf @ disk.seek_time_s(distance)))
    assert len(set(computed)) == len(others)          # every pair its own seek
    for _ in range(2):
        assert [start.seek_time_to_s(other) for other in others] == computed


# ---------------------------------------------------------------- properties

@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(2, 40), min_size=1, max_size=4), data=st.data())
def test_linear_round_trip(sizes, data):
    pvs, start = [], 0
    for i, extents in enumerate(sizes):
        pvs.append(Partition(start, MIB + extents * 4 * MIB, f"pv{i}"))
        start += MIB + extents * 4 * MIB + data.draw(st.integers(0, 3)) * MIB
    # split each PV into two segments and shuffle their logical order
    pieces = []
    for i, extents in enumerate(sizes):
        cut = data.draw(st.integers(1, extents - 1))
        pieces += [(i, 0, cut), (i, cut, extents - cut)]
    order = data.draw(st.permutations(pieces))
    segments, logical = [], 0
    for pv, pe, count in order:
        segments.append(Segment(logical, count, pv, pe))
        logical += count
    lv = LinearVolume(tuple(pvs), segments=tuple(segments))
    offsets = np.array(data.draw(st.lists(st.integers(0, lv.size_bytes - 1), min_size=1, max_size=50)))
    physical = lv.logical_to_physical(offsets)
    np.testing.assert_array_equal(lv.physical_to_logical(physical), offsets)
    assert len(np.unique(physical)) == len(np.unique(offsets))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 4), stripe_kib=st.sampled_from([4, 64, 512]), data=st.data())
def test_striped_round_trip(n, stripe_kib, data):
    pvs = tuple(Partition(i * 50 * MIB, 40 * MIB) for i in range(n))
    sv = StripedVolume(pvs, stripe_size_bytes=stripe_kib * 1024)
    offsets = np.array(data.draw(st.lists(st.integers(0, sv.size_bytes - 1), min_size=1, max_size=50)))
    np.testing.assert_array_equal(sv.physical_to_logical(sv.logical_to_physical(offsets)), offsets)


@settings(max_examples=50, deadline=None)
@given(md=st.floats(0, 1e-2), fb=st.floats(0, 1e-3), m_ios=st.floats(0, 1e7), d_ios=st.floats(0, 1e8),
       n=st.integers(1, 5))
def test_more_pvs_never_reduce_the_mapping_overhead(md, fb, m_ios, d_ios, n):
    mapping = LvmMapping(md, fb)

    def volume(count):
        return LinearVolume(tuple(Partition(i * 20 * MIB, 20 * MIB) for i in range(count)))

    fewer = sum(lvm_mapping_overhead_s(volume(n), m_ios, d_ios, mapping).values())
    more = sum(lvm_mapping_overhead_s(volume(n + 1), m_ios, d_ios, mapping).values())
    native = sum(lvm_mapping_overhead_s(Partition(0, 20 * MIB), m_ios, d_ios, mapping).values())
    assert native == 0.0
    assert more >= fewer >= 0.0


# ---------------------------------------------------------------- bad input

def test_holes_and_overlaps_raise():
    pvs = (Partition(0, 100 * MIB),)
    with pytest.raises(ValueError, match="segments: hole"):
        LinearVolume(pvs, segments=(Segment(0, 5, 0, 0), Segment(6, 5, 0, 5)))
    with pytest.raises(ValueError, match="segments: logical extent"):
        LinearVolume(pvs, segments=(Segment(0, 5, 0, 0), Segment(4, 5, 0, 5)))
    with pytest.raises(ValueError, match="segments: physical extents"):
        LinearVolume(pvs, segments=(Segment(0, 5, 0, 0), Segment(5, 5, 0, 3)))
    with pytest.raises(ValueError, match="segments: extents"):
        LinearVolume(pvs, segments=(Segment(0, 50, 0, 0),))
    with pytest.raises(ValueError, match="physical_volumes overlap"):
        LinearVolume((Partition(0, 100 * MIB), Partition(50 * MIB, 100 * MIB)))


def test_a_pv_may_be_any_block_node(disk):
    # pvcreate /dev/md0: LVM over md RAID 1 of sda1 and sdb1. The PV's bytes are md0's own, so the
    # segment starts pe_start into it; N_D counts the mirrors' two disks.
    md0 = RaidArray("raid1", (Partition(MIB, 100 * MIB, "sda1", "sda"), Partition(MIB, 100 * MIB, "sdb1", "sdb")),
                    name="md0")
    lv = LinearVolume((md0, Partition(MIB, 100 * MIB, "sdc1", "sdc")), extent_size_bytes=4 * MIB)
    assert lv.pv_segments() == [(0, 96 * MIB, 0, MIB), (96 * MIB, 96 * MIB, 1, MIB)]
    assert lv.segment_table()["physical_start_bytes"].tolist() == [MIB, 2 * MIB]
    assert lv.n_disks == 3 and lv.mapping_complexity == 6 and not lv.pvs_are_partitions
    striped = StripedVolume((md0, md0.evolve(name="md1")), stripe_size_bytes=64 * 1024)
    assert striped.size_bytes == 2 * 96 * MIB
    with pytest.raises(ValueError) as e:  # the equations place a volume on one disk
        VolumeOnDisk(disk, lv)
    assert "\n" not in str(e.value) and "physical_volumes" in str(e.value)
    # disk byte offsets mean nothing across disks: sda1 and sdb1 hold the same ones
    two_disks = LinearVolume((Partition(MIB, 100 * MIB, "sda1", "sda"), Partition(MIB, 100 * MIB, "sdb1", "sdb")))
    assert two_disks.logical_to_physical(96 * MIB).tolist() == 2 * MIB  # sdb1's first extent, on sdb
    for method in (lv.physical_to_logical, two_disks.physical_to_logical, striped.physical_to_logical,
                   lambda _: two_disks.physical_span, lambda at: striped.physical_pieces(at, MIB)):
        with pytest.raises(ValueError, match="physical_volumes: disk byte offsets need every PV to be a partition"):
            method(2 * MIB)
    for bad, where in ((("sda1",), "physical_volumes[0]"), ((), "physical_volumes"), ("md0", "physical_volumes")):
        with pytest.raises(ValueError, match=re.escape(where)):
            LinearVolume(bad)


@pytest.mark.parametrize("kwargs, name", [
    ({"start_bytes": -1, "size_bytes": 10}, "start_bytes"),
    ({"start_bytes": 0, "size_bytes": 0}, "size_bytes"),
    ({"start_bytes": 0.5, "size_bytes": 10}, "start_bytes"),
])
def test_bad_partition(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Partition(**kwargs)


def test_bad_offsets_and_parameters(disk):
    lv = paper_volume("lvm2", disk.capacity_bytes)
    with pytest.raises(ValueError, match="offset_bytes"):
        lv.logical_to_physical(np.array([lv.size_bytes]))
    with pytest.raises(ValueError, match="offset_bytes"):
        lv.logical_to_physical(np.array([np.nan]))
    with pytest.raises(ValueError, match="physical_offset_bytes"):
        lv.physical_to_logical(np.array([0]))  # the start of the disk is no PV
    with pytest.raises(ValueError, match="physical_offset_bytes"):  # PV metadata area
        lv.physical_to_logical(np.array([disk.capacity_bytes - 10 * GB + 10]))
    with pytest.raises(ValueError, match="extent_size_bytes"):
        LinearVolume((Partition(0, 100 * MIB),), extent_size_bytes=0)
    with pytest.raises(ValueError, match="stripe_size_bytes"):
        StripedVolume((Partition(0, 100 * MIB),), stripe_size_bytes=3 * 1024 * 1024)
    with pytest.raises(ValueError, match="md_mapping_s"):
        LvmMapping(md_mapping_s=-1e-6)
    with pytest.raises(ValueError, match="fb_mapping_s"):
        LvmMapping(fb_mapping_s=float("nan"))
    with pytest.raises(ValueError, match="name"):
        paper_volume("lvm3", disk.capacity_bytes)
    with pytest.raises(ValueError, match="capacity_bytes"):
        paper_volume("native", 10 * GB)
    with pytest.raises(ValueError, match="distance_scale"):
        VolumeOnDisk(disk, lv).access_time_s(4096.0, distance_scale=2.0)
    with pytest.raises(ValueError, match="logical_size_bytes"):
        VolumeOnDisk(disk, lv).access_time_s(4096.0, logical_start_bytes=lv.size_bytes - 10, logical_size_bytes=100)
    with pytest.raises(ValueError, match="volume extends past the disk's capacity"):
        VolumeOnDisk(disk, Partition(disk.capacity_bytes - MIB, 2 * MIB))


@pytest.mark.serial  # asserts a wall time
def test_vectorised_mapping_is_fast(disk):
    import time

    lv = paper_volume("lvm2", disk.capacity_bytes)
    x = np.random.default_rng(0).integers(0, lv.size_bytes, 2_000_000)
    start = time.perf_counter()
    back = lv.physical_to_logical(lv.logical_to_physical(x))
    assert time.perf_counter() - start < 2.0
    np.testing.assert_array_equal(back, x)
