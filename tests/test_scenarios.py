"""model/predictions/scenarios.py: what-if tables over locations, layouts and stripe widths."""
from __future__ import annotations

import numpy as np
import pytest

from diskmodel.model.drive.disk import expected_random_service_time_s
from diskmodel.model.units import GB, MIB
from diskmodel.model.stacks.volumes import Partition, StripedVolume
from diskmodel.model.stacks.lvm_mapping import LvmMapping
from diskmodel.model.stacks.volume_on_disk import VolumeOnDisk
from diskmodel.model.predict import predict
from diskmodel.model.drive.presets import load_preset
from diskmodel.model.predictions.scenarios import (location_table, plot_predicted_vs_measured, prediction_table,
                                                   spaced_partitions, striped_random_read_time_s,
                                                   striped_volume_read_time_s, striping_table)
from diskmodel.model.drive.seek import TwoPieceSeek, random_pair_distance_pmf
from diskmodel.model.stacks.stack import paper_stack, stack_on
from diskmodel.model.predictions.workload import PostMarkConfig


@pytest.fixture(scope="module")
def disk():
    return load_preset("wd800bd")


def test_spaced_partitions_dagenais(disk):
    # 2 GB partitions with 7 GB gaps on an 80 GB disk: starts 0, 9, ..., 72 GB (72 + 2 <= 80.03)
    parts = spaced_partitions(disk.capacity_bytes, 2 * GB, 7 * GB, prefix="/dev/hda")
    assert [p.start_bytes for p in parts] == [k * 9 * GB for k in range(9)]
    assert {p.size_bytes for p in parts} == {2 * GB}
    assert parts[0].name == "/dev/hda1" and parts[-1].name == "/dev/hda9"


@pytest.mark.parametrize("kwargs, name", [({"size_bytes": 0}, "size_bytes"), ({"gap_bytes": -1}, "gap_bytes"),
                                          ({"size_bytes": 10**12}, "first_start_bytes")])
def test_spaced_partitions_bad_input(disk, kwargs, name):
    args = {"capacity_bytes": disk.capacity_bytes, "size_bytes": 2 * GB, "gap_bytes": 7 * GB, **kwargs}
    with pytest.raises(ValueError, match=name):
        spaced_partitions(**args)


def test_location_table(disk):
    parts = spaced_partitions(disk.capacity_bytes, 2 * GB, 7 * GB)
    table = location_table(disk, parts)
    rates = table["media_rate_bytes_per_s"].to_numpy()
    # outer zones are faster: the rate never rises inward, and the first 2 GB lie in the outer zone
    assert np.all(np.diff(rates) <= 0) and rates[0] > 1.5 * rates[-1]
    assert rates[0] == pytest.approx(disk.zone_rates_bytes_per_s()[0])
    assert table["random_read_s"].iloc[3] == pytest.approx(
        float(VolumeOnDisk(disk, parts[3]).access_time_s(4096).total_s))
    assert np.allclose(table["random_iops"], 1 / table["random_read_s"])


def test_location_table_with_postmark(disk):
    parts = spaced_partitions(disk.capacity_bytes, 2 * GB, 70 * GB)
    workload = PostMarkConfig(number_of_files=200, transactions=200)
    table = location_table(disk, parts, workload=workload)
    direct = predict(stack_on(disk, parts[1]), workload)
    assert table["postmark_read_bytes_per_s"].iloc[1] == pytest.approx(direct.read_throughput_bytes_per_s)
    with pytest.raises(ValueError, match="request_size_bytes"):
        location_table(disk, parts, request_size_bytes=float("nan"))


def test_prediction_table(disk):
    stacks = {name: paper_stack(name, disk=disk) for name in ("native", "lvm2")}
    workloads = {"small": PostMarkConfig(number_of_files=200, transactions=200)}
    mapping = LvmMapping(md_mapping_s=1e-3)
    table = prediction_table(stacks, workloads, mappings={"lvm2": mapping})
    assert len(table) == 2 and set(table["layout"]) == {"native", "lvm2"}
    direct = predict(stacks["lvm2"], workloads["small"], lvm_mapping=mapping)
    row = table.set_index("layout").loc["lvm2"]
    assert row["write_bytes_per_s"] == direct.write_throughput_bytes_per_s
    assert row["T_LVM_MO"] == direct.terms["T_LVM_MO"] > predict(stacks["lvm2"], workloads["small"]).terms["T_LVM_MO"]
    with pytest.raises(ValueError, match="mappings"):
        prediction_table(stacks, workloads, mappings={"lvm9": None})
    with pytest.raises(ValueError, match=r"stacks\['native'\] must be a Stack"):
        prediction_table({"native": stacks["native"].volume}, workloads)


def test_striped_one_disk_is_the_plain_random_read(disk):
    sizes = np.array([4096, 65536, 1 << 20])
    assert np.allclose(striped_random_read_time_s(disk, sizes, 1),
                       expected_random_service_time_s(disk, sizes).total_s, rtol=1e-6)
    # a request within one chunk touches one disk, however many there are
    assert striped_random_read_time_s(disk, 4096, 8) == pytest.approx(
        float(expected_random_service_time_s(disk, 4096).total_s), rel=1e-6)


def test_striped_max_of_latencies_without_seek(disk):
    # with no seek, the slowest of m disks waits E[max of m U(0, T)] = T m / (m + 1)
    flat = disk.evolve(seek=TwoPieceSeek(0.0, 0.0, 0.0, 0.0, 10.0), settle_s=0.0)
    size = 4 * 65536  # four chunks -> four disks, one chunk each
    t = striped_random_read_time_s(flat, size, 4)
    one = expected_random_service_time_s(flat, 65536)
    expected = float(one.command_overhead_s + one.transfer_s + one.interface_s) + flat.rotation_period_s * 4 / 5
    assert t == pytest.approx(expected, rel=2e-3)


def test_striped_positioning_against_monte_carlo(disk):
    # E[max over 3 disks of seek(D) + U(0, T)] by simulation, D the distance of random cylinder pairs
    rng = np.random.default_rng(1)
    cylinders = disk.geometry.cylinders
    distance, probability = random_pair_distance_pmf(cylinders)
    d = rng.choice(distance, size=(200_000, 3), p=probability)
    positioning = disk.seek_time_s(d) + rng.uniform(0, disk.rotation_period_s, size=d.shape)
    size = 3 * 65536
    base = expected_random_service_time_s(disk, 65536)
    simulated = (positioning.max(axis=1).mean() + float(base.command_overhead_s + base.settle_s
                                                       + base.transfer_s + base.interface_s))
    assert striped_random_read_time_s(disk, size, 3) == pytest.approx(simulated, rel=0.005)


def test_striping_table(disk):
    table = striping_table(disk, [1, 2, 4], [4096, 16 << 20])
    big = table[table["request_size_bytes"] == 16 << 20].set_index("n_disks")
    # a 16 MiB read: more disks, less time, but not below the one-disk time / n (positioning waits)
    assert big["random_read_s"].is_monotonic_decreasing
    assert big.loc[4, "random_read_s"] > big.loc[1, "random_read_s"] / 4
    small = table[table["request_size_bytes"] == 4096]["random_read_s"]
    assert np.allclose(small, small.iloc[0])
    assert table.set_index("n_disks")["sequential_rate_bytes_per_s"].loc[4].iloc[0] == pytest.approx(
        4 * table["sequential_rate_bytes_per_s"].iloc[0])
    with pytest.raises(ValueError, match="n_disks|disk_counts"):
        striping_table(disk, [0], [4096])
    with pytest.raises(ValueError, match="size_bytes"):
        striped_random_read_time_s(disk, -1, 2)


def test_plot_predicted_vs_measured():
    import matplotlib
    matplotlib.use("Agg")
    import pandas as pd

    frame = pd.DataFrame({"measured_bytes_per_s": [1e6, 2e6], "predicted_bytes_per_s": [1.1e6, 1.5e6],
                          "layout": ["native", "lvm1"]})
    ax = plot_predicted_vs_measured(frame)
    assert ax.get_xscale() == "log" and len(ax.collections) >= 2
    with pytest.raises(ValueError, match="frame lacks"):
        plot_predicted_vs_measured(frame.drop(columns="layout"))


def test_striped_volume(disk):
    pvs = tuple(Partition(0, 20 * GB, f"sd{c}1", disk=f"sd{c}") for c in "abcd")
    volume = StripedVolume(pvs, stripe_size_bytes=256 * 1024)
    got = striped_volume_read_time_s(disk, volume, [4096, 1 * MIB])
    per_pv = volume.size_bytes // 4
    want = striped_random_read_time_s(disk, [4096, 1 * MIB], 4, stripe_size_bytes=256 * 1024,
                                      region_start_bytes=MIB, region_size_bytes=per_pv)
    assert np.allclose(got, want)
    # 1 MiB over four 256 KiB chunks on four disks beats one disk reading it all
    assert got[1] < float(VolumeOnDisk(disk, Partition(0, 20 * GB)).access_time_s(1 * MIB).total_s)
    one_disk = StripedVolume(tuple(Partition(k * 20 * GB, 20 * GB, f"sda{k}") for k in range(2)))
    with pytest.raises(ValueError, match="volume"):
        striped_volume_read_time_s(disk, one_disk, 4096)
