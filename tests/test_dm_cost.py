"""model/stacks/dm_cost.py: device-mapper's cost on an LVM volume from the bios it remaps, against hand computation."""
from __future__ import annotations

import pytest

from diskmodel.model._checks import FieldError
from diskmodel.model.drive.presets import load_preset
from diskmodel.model.stacks.dm_cost import (DeviceMapperCost, as_lvm_mapping, boundary_crossing_fraction, dm_bios,
                                            dm_overhead_s, segment_ends_bytes)
from diskmodel.model.stacks.stack import paper_stack
from diskmodel.model.stacks.volume_on_disk import VolumeOnDisk
from diskmodel.model.stacks.volumes import LinearVolume, Partition, StripedVolume
from diskmodel.model.stacks.lvm_mapping import LvmMapping

KIB, MIB = 1024, 1 << 20
COUNTS = {"metadata_ios": 1000.0, "data_block_ios": 3000.0, "data_requests": 50.0}


@pytest.fixture(scope="module")
def paper():
    return {name: paper_stack(name) for name in ("native", "lvm1", "lvm2")}


def test_the_paper_layouts_pay_one_cost_per_block_whatever_their_segments(paper):
    cost = DeviceMapperCost(2e-6)
    disk = load_preset("wd800bd")
    for name in ("lvm1", "lvm2"):
        volume = paper[name].volume
        # 4 KiB bios never cross LVM's 4 MiB extents: (1000 + 3000) blocks x 2 us = 8 ms, on one or two PVs
        assert boundary_crossing_fraction(volume, 4096) == 0.0
        assert dm_bios(volume, COUNTS) == {"block_bios": 4000.0, "split_bios": 0.0, "bios": 4000.0}
        assert dm_overhead_s(volume, COUNTS, cost) == pytest.approx(8e-3, rel=1e-12)
        # the equation model charges the same through LvmMapping, its complexity (1, 2) divided out
        charged = VolumeOnDisk(disk, volume, as_lvm_mapping(volume, cost)).mapping_overhead_s(COUNTS)
        assert sum(charged.values()) == pytest.approx(8e-3, rel=1e-12)
        assert charged["request_mapping_s"] == 0.0
    assert paper["lvm2"].volume.mapping_complexity == 2


def test_a_partition_has_no_device_mapper(paper):
    volume = paper["native"].volume
    assert dm_bios(volume, COUNTS)["bios"] == 0.0
    assert dm_overhead_s(volume, COUNTS, DeviceMapperCost(1e-3)) == 0.0
    assert as_lvm_mapping(volume, DeviceMapperCost(1e-3)) == LvmMapping()
    assert segment_ends_bytes(volume).size == 0


def test_bios_that_cross_an_unaligned_segment_end_are_split():
    # extents of 3 KiB: PV 0 holds 1 MiB // 3072 = 341 extents, so the one segment end is at
    # 341 x 3072 = 1047552 bytes, not a multiple of 4096 (255.75 blocks); the LV holds 682 extents =
    # 2095104 bytes = 511 whole slots of 4 KiB: 1 of 511 bios is split into two.
    pvs = (Partition(0, MIB, "/dev/sdb1"), Partition(MIB, MIB, "/dev/sdb2"))
    volume = LinearVolume(pvs, extent_size_bytes=3 * KIB, pe_start_bytes=0)
    assert list(segment_ends_bytes(volume)) == [1047552]
    assert boundary_crossing_fraction(volume, 4096) == pytest.approx(1 / 511)
    bios = dm_bios(volume, COUNTS)
    assert bios["split_bios"] == pytest.approx(4000 / 511) and bios["bios"] == pytest.approx(4000 * 512 / 511)
    cost = DeviceMapperCost(1e-6)
    mapping = as_lvm_mapping(volume, cost)
    assert mapping.md_mapping_s == pytest.approx(1e-6 * (512 / 511) / 2)  # complexity 2 divided out


def test_striped_chunk_ends_split_bios_that_do_not_divide_the_chunk():
    pvs = (Partition(0, 4 * MIB, "/dev/sdb1"), Partition(4 * MIB, 4 * MIB, "/dev/sdb2"))
    volume = StripedVolume(pvs, stripe_size_bytes=64 * KIB, extent_size_bytes=MIB, pe_start_bytes=0)
    assert volume.size_bytes == 8 * MIB
    assert boundary_crossing_fraction(volume, 4096) == 0.0
    # 48 KiB bios: chunk ends at 64 KiB x k, k = 1..127, aligned to 48 KiB only when k is a multiple of 3
    # (42 of them): 85 unaligned ends over 8 MiB // 48 KiB = 170 slots
    assert boundary_crossing_fraction(volume, 48 * KIB) == pytest.approx(85 / 170)


def test_bad_inputs_name_the_field(paper):
    with pytest.raises(ValueError, match="request_cost_s"):
        DeviceMapperCost(-1e-6)
    with pytest.raises(ValueError, match="block_bytes"):
        DeviceMapperCost(1e-6, block_bytes=0)
    with pytest.raises(FieldError, match="cost"):
        dm_overhead_s(paper["lvm1"].volume, COUNTS, 1e-6)
    with pytest.raises(ValueError, match="metadata_ios"):
        dm_bios(paper["lvm1"].volume, {**COUNTS, "metadata_ios": -1.0})
