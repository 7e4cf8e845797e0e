"""Time from the I/O path (model/iopath/timing.py, model/predictions/results.py): the signs of the stack effects,
each by its mechanism, on the DiskSim-validated HP C2247A (a preset), and the paper's analytic view
where its assumptions hold.

The drive kernel is numba's; these tests run it (cached after the first compilation)."""

from __future__ import annotations

import numpy as np
from dataclasses import replace as dataclasses_replace
import pytest

from diskmodel.model.stacks.block import BlockEnv
from diskmodel.model.predictions.block_workloads import FioJob
from diskmodel.model.drive.disk import expected_random_service_time_s
from diskmodel.model.drive.drives import PresetDrive
from diskmodel.model.iopath.stream import Op, Stream
from diskmodel.model.iopath.timing import FlatDrive, time_streams
from diskmodel.model.stacks.loop_file import LoopFile
from diskmodel.model.predict import predict, predict_block
from diskmodel.model.drive.presets import load_preset
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import FileSystemNode, Stack
from diskmodel.model.stacks.volumes import Partition

MIB = 1 << 20
DRIVE = "hp_c2247a"


@pytest.fixture(scope="module")
def env():
    disk = load_preset(DRIVE)
    return BlockEnv({f"sd{c}": disk for c in "abc"})


def _part(c: str, size: int = 800 * MIB) -> Partition:
    return Partition(MIB, size, f"/dev/sd{c}1", f"sd{c}")


def _raid(kind: str, n: int, chunk: int = 64 * 1024) -> RaidArray:
    return RaidArray(kind, tuple(_part(c) for c in "abc"[:n]), chunk_size_bytes=chunk)


def _stack(volume, n: int = 1) -> Stack:
    return Stack(FileSystemNode(volume, kind="ext4"), tuple(PresetDrive(DRIVE, f"sd{c}") for c in "abc"[:n]))


def test_raid5_small_writes_cost_more_than_raid0(env):
    # Each 4 KiB write on a 3-drive RAID 5 reads the rest of its stripe before it writes data and
    # parity (reconstruct-write); on RAID 0 it is one write on one drive.
    job = FioJob("randwrite", block_size_bytes=4096, size_bytes=2 * MIB)
    r0 = predict_block(_raid("raid0", 3), job, env)
    r5 = predict_block(_raid("raid5", 3), job, env)
    per_write = sum(r5.member_requests.values())
    assert per_write == pytest.approx(3.0, abs=0.05)  # md's rcw on 3 drives: 1 read + 2 writes
    assert sum(r0.member_requests.values()) == pytest.approx(1.0, abs=0.05)
    assert r5.elapsed_s > 1.5 * r0.elapsed_s


@pytest.mark.parametrize("job", [FioJob("randread", block_size_bytes=4096, size_bytes=2 * MIB, iodepth=8),
                                 FioJob("read", block_size_bytes=MIB, size_bytes=16 * MIB)],
                         ids=["random-qd8", "sequential-1MiB"])
def test_striping_over_two_drives_reads_faster_than_one(env, job):
    # Requests in flight at once (iodepth 8), or one large request split at the chunk, keep both
    # drives busy at the same time.
    one = predict_block(_part("a"), job, env)
    two = predict_block(_raid("raid0", 2), job, env)
    assert two.elapsed_s < 0.8 * one.elapsed_s
    busy = two.timed.timing.device_frame()["busy_s"]
    assert busy["sda"] == pytest.approx(busy["sdb"], rel=0.3)


def test_a_larger_chunk_reaches_each_member_in_more_requests(env):
    # A 1 MiB read covers both drives whatever the chunk. md splits it at the chunk; 16 KiB pieces merge
    # again in the plug into one request per member, but a 256 KiB piece is at least BLK_PLUG_FLUSH_SIZE,
    # so the next member's request flushes the plug (blk_add_rq_to_plug) and each member gets its two
    # chunks as two requests, the second while the first is served: the larger chunk is not faster.
    job = FioJob("read", block_size_bytes=MIB, size_bytes=16 * MIB)
    small = predict_block(_raid("raid0", 2, 16 * 1024), job, env)
    large = predict_block(_raid("raid0", 2, 256 * 1024), job, env)
    assert small.member_requests == {"sda": 1.0, "sdb": 1.0}
    assert large.member_requests == {"sda": 2.0, "sdb": 2.0}
    assert small.elapsed_s <= large.elapsed_s


def test_a_loop_file_is_not_faster_than_native_for_writes():
    # The same buffered writes, synced at the end: through a loop file they are written back twice
    # (the guest's cache into the image, the host's cache onto the drive) with the host file
    # system's metadata on top.
    native = predict(_stack(_part("a")), "fio:rw=write,bs=64k,size=16M")
    loop = predict(_stack(LoopFile(_part("a"), 400 * MIB)), "fio:rw=write,bs=64k,size=16M")
    assert loop.write_bytes == native.write_bytes == 16 * MIB
    assert loop.elapsed_s >= native.elapsed_s
    assert loop.write_throughput_bytes_per_s <= native.write_throughput_bytes_per_s


def test_postmark_on_raid1_over_two_drives_is_predicted_with_its_assumptions():
    from diskmodel.model.predictions.workload import PostMarkConfig

    config = PostMarkConfig(number_of_files=200, transactions=500)
    p = predict(_stack(_raid("raid1", 2), 2), config)
    assert p.elapsed_s > 0
    frame = p.timing.device_frame()
    assert set(frame.index) == {"sda", "sdb"}
    # a mirror writes every byte to each drive
    assert frame.loc["sda", "write_bytes"] == frame.loc["sdb", "write_bytes"] > 0
    # one command at a time per drive, flushes included: none starts before the one before it completed
    # (requests the scheduler merged into one command share its start and completion)
    t = p.timing
    for k in range(len(t.devices)):
        m = t.device == k
        cmd = np.unique(np.stack([t.start_s[m], t.completion_s[m]], axis=1), axis=0)
        assert len(cmd) < m.sum()  # mq-deadline merged some of the write-back
        assert (cmd[1:, 0] >= cmd[:-1, 1] - 1e-12).all()
        assert ((t.op[m] == Op.FLUSH).sum()) > 0
    assert (frame["busy_s"] <= p.elapsed_s).all()
    text = p.summary()
    for topic in ("I/O path", "page cache", "LVM costs", "intervals"):
        assert f"{topic}:" in text
    assert p.intervals is None
    # each drive's model says what in it is estimated (the preset's own list)
    estimated = dict(p.assumptions)["drive sda"]
    assert estimated.startswith(load_preset(DRIVE).name)
    assert "interface_rate_bytes_per_s" in estimated
    assert "elapsed" in p.to_frame().index
    assert "Assumptions" in p._repr_html_()


def test_random_reads_on_one_disk_agree_with_the_paper_equations(env):
    # Where eqs. (3)-(8) hold (one disk, requests uniformly at random in a region, queue depth 1,
    # no cache hit), the simulated mean request time is their expected T_DST.
    disk = env.disk("sda")
    region = 800 * MIB
    job = FioJob("randread", block_size_bytes=4096, size_bytes=region)
    rng = np.random.default_rng(7)
    n = 600
    off = MIB + rng.integers(0, region // 4096, n) * 4096
    t = np.arange(n) * 1e-3
    stream = Stream.from_arrays(time_s=t, op=np.zeros(n, np.int8), offset_bytes=off, size_bytes=np.full(n, 4096))
    timing = time_streams({"sda": stream}, {"sda": disk}, t, float(t[-1]))
    simulated = float(timing.op_wait_s.mean())
    e = expected_random_service_time_s(disk, 4096, MIB, region)
    expected = float(sum(np.asarray(getattr(e, f)).mean() for f in ("command_overhead_s", "seek_s", "settle_s",
                                                                     "rotation_s", "transfer_s", "interface_s")))
    assert job.size_bytes == region
    assert simulated == pytest.approx(expected, rel=0.15)


def test_flat_drive_is_first_in_first_out_at_depth_one():
    # Three requests at once, then one after the queue drained: hand-computed completions.
    drive = FlatDrive(latency_s=1e-3, bytes_per_s=1.024e6, capacity_bytes=MIB)
    s = Stream.from_arrays(time_s=[0.0, 0.0, 0.0, 1.0], op=[Op.READ] * 4, offset_bytes=[0, 4096, 8192, 0],
                           size_bytes=[1024, 1024, 1024, 1024])
    timing = time_streams({"d": s}, {"d": drive}, [], 1.0)
    assert timing.completion_s == pytest.approx([2e-3, 4e-3, 6e-3, 1.002])
    assert timing.elapsed_s == pytest.approx(1.002)


def test_a_request_beyond_the_drive_is_one_line_naming_the_device():
    drive = FlatDrive(latency_s=1e-3, bytes_per_s=1e6, capacity_bytes=4096)
    s = Stream.from_arrays(op=[Op.WRITE], offset_bytes=[4096], size_bytes=[512])
    with pytest.raises(ValueError, match=r"^device d: a request ends at byte 4608, beyond the drive's 4096 bytes$"):
        time_streams({"d": s}, {"d": drive}, [], 0.0)


def test_a_drive_without_a_cache_is_said_in_the_first_line(env):
    import dataclasses

    from diskmodel.model.drive.cache import DriveCache

    job = FioJob("randread", block_size_bytes=4096, size_bytes=MIB)
    bare = dataclasses.replace(env.disk("sda"), drive_cache=None)  # its cache's size only, no segments or policies
    first = predict_block(_part("a"), job, BlockEnv({"sda": bare})).summary().splitlines()[0]
    assert first.endswith("; no drive cache on sda (the model has none)")
    cached = dataclasses.replace(bare, drive_cache=DriveCache(segments=2, segment_size_bytes=128 * 1024))
    p = predict_block(_part("a"), job, BlockEnv({"sda": cached}))
    assert "no drive cache" not in p.summary()


def test_the_preset_s_read_ahead_serves_small_sequential_reads_without_a_revolution_each(env):
    # The HP C2247A preset carries DiskSim's buffer for the drive (segments, read-ahead): of 4 KiB reads
    # one after the other, every other one comes from the read-ahead (the drive's own simulation, as
    # DiskSim's code serves them); without the buffer each one misses the sector that just passed under
    # the head and waits most of a revolution.
    import dataclasses

    from diskmodel.model.disksim_drives.convert import load_disksim_drive
    from diskmodel.data.disksim import disksim_drive_folder

    preset = env.disk("sda")
    assert preset.drive_cache == load_disksim_drive(disksim_drive_folder(DRIVE)).disk.drive_cache
    revolution_s = 60.0 / preset.rpm
    job = FioJob("read", block_size_bytes=4096, size_bytes=MIB)
    with_cache = predict_block(_part("a"), job, env)
    without = predict_block(_part("a"), job, BlockEnv({"sda": dataclasses.replace(preset, drive_cache=None)}))
    assert with_cache.latency_s < 0.6 * revolution_s
    assert without.latency_s > 0.8 * revolution_s
    wd = load_preset("wd800bd")
    seq = predict_block(_part("a"), job, BlockEnv({"sda": wd}))
    assert seq.latency_s < 0.2 * 60.0 / wd.rpm


# ------------------------------------------------------------------ intervals

GOLDEN_CALIBRATION = __import__("pathlib").Path(__file__).parent / "golden" / "calibration_wd800bd_simulated.json"


@pytest.fixture(scope="module")
def calibration():
    from diskmodel.calibrate.harness.results import calibration_from_json

    return calibration_from_json(GOLDEN_CALIBRATION)


def test_the_draws_follow_the_calibration_s_estimates_and_covariance(calibration):
    from diskmodel.model.predictions.intervals import calibration_draws

    draws = calibration_draws(calibration, 400, seed=3)
    period = np.array([d.rotation_period_s for d in draws])
    assert period.mean() == pytest.approx(calibration.rotation_period_s, abs=4 * calibration.rotation_period_bse_s / 20)
    assert period.std(ddof=1) == pytest.approx(calibration.rotation_period_bse_s, rel=0.15)
    # the two-piece fit's parameters with their covariance; the profiled knee held at its estimate
    a = np.array([d.two_piece.params["short_offset_s"] for d in draws])
    assert a.std(ddof=1) == pytest.approx(float(calibration.two_piece.bse["short_offset_s"]), rel=0.15)
    assert {d.two_piece.params["knee_cylinders"] for d in draws} == {calibration.two_piece.params["knee_cylinders"]}
    # seeded: the same draws again
    again = calibration_draws(calibration, 400, seed=3)
    assert [d.rotation_period_s for d in again] == period.tolist()


def test_a_flat_device_with_a_two_piece_fit_too_draws_its_flat_models_mean_latency(calibration):
    """A device found flat (no mechanical seek) is timed by its flat latency model even where a rotation and
    a two-piece fit were found as well (a busy host's noise): the draws vary that model's mean latency, by its
    standard error, so its prediction's interval is not of nothing."""
    import dataclasses

    from diskmodel.model.fit.latency import fit_flat_latency
    from diskmodel.model.predictions.intervals import calibration_draws

    latency_s = 1e-3 * np.random.default_rng(5).lognormal(0.0, 0.2, 400)
    flat = dataclasses.replace(calibration, flat_test=dataclasses.replace(calibration.flat_test, flat=True),
                               latency_model=fit_flat_latency(latency_s, 1e-9))
    assert not flat.mechanical_seek and flat.seek_fit is flat.two_piece
    means = np.array([d.latency_model.mean_s for d in calibration_draws(flat, 400, seed=2)])
    assert means.std(ddof=1) == pytest.approx(latency_s.std(ddof=1) / np.sqrt(latency_s.size), rel=0.15)
    assert means.mean() == pytest.approx(latency_s.mean(), rel=0.01)


def test_a_prediction_from_a_calibration_has_intervals_that_follow_its_uncertainty(calibration):
    import dataclasses

    from diskmodel.model.fit.calibration_views import calibrated_disk
    from diskmodel.model.predictions.results import predict_block_job

    disk = calibrated_disk(calibration)
    node, job = Partition(0, 800 * MIB, "/dev/a1", "a"), FioJob("randread", 4096, MIB)
    plain = predict_block_job(node, job, {"a": disk})
    assert plain.intervals is None
    with pytest.raises(ValueError, match=r"^conf_int: this prediction has no intervals"):
        plain.conf_int()
    p = predict_block_job(node, job, {"a": disk}, calibrations={"a": calibration}, draws=6, seed=1)
    ci = p.conf_int(0.05)
    assert ci.loc["elapsed_s", "estimate"] == plain.elapsed_s
    assert ci.loc["elapsed_s", "lower"] < plain.elapsed_s < ci.loc["elapsed_s", "upper"]
    assert "interval of elapsed" in p.summary() and "6 re-timings" in dict(p.assumptions)["intervals"]
    # no uncertainty to draw from: the interval is the point
    exact = dataclasses.replace(calibration, rotation_period_bse_s=0.0,
                                two_piece=dataclasses.replace(calibration.two_piece,
                                                              covariance=np.zeros((5, 5))))
    q = predict_block_job(node, job, {"a": disk}, calibrations={"a": exact}, draws=3)
    assert q.conf_int().loc["elapsed_s", "draws_sd"] == pytest.approx(0.0, abs=1e-12)  # float rounding aside
    with pytest.raises(ValueError, match=r"^calibrations: drive 'b' is not one of the stack's \(a\)$"):
        predict_block_job(node, job, {"a": disk}, calibrations={"b": calibration})


def test_an_operation_whose_requests_completed_before_it_asked_waited_no_time():
    # Buffered random writes on RAID 5: most of what a waited operation needs was written back before
    # it asked, and it waits 0, never a negative time (the printed percentiles read "-0.000 ms").
    p = predict(_stack(_raid("raid5", 3), 3), "fio:rw=randwrite,bs=4k,size=8M")
    waits = p.timing.op_wait_s
    assert waits.size and (waits == 0).sum() > waits.size // 2
    assert waits.min() >= 0.0 and min(p.timing.wait_percentiles().values()) >= 0.0


def _stream_rate_bytes_per_s(disk, zone: int = 0) -> float:
    """A zone's sustained read rate from its geometry alone: a cylinder's tracks, each a revolution,
    plus the track and cylinder skews' passage between them."""
    z, g = disk.geometry.zones[zone], disk.geometry
    sectors = g.surfaces * z.sectors_per_track
    passage = sectors + (g.surfaces - 1) * z.track_skew_sectors + z.cylinder_skew_sectors
    return sectors * g.sector_size_bytes / (passage * disk.rotation_period_s / z.sectors_per_track)


@pytest.mark.parametrize("turnaround_s", [10e-6, 100e-6])
def test_a_queued_sequential_read_streams_at_the_media_rate_on_a_drive_that_reads_ahead(monkeypatch, turnaround_s):
    # dd's reads, read ahead by the kernel, wait in the queue; the host dispatches each some microseconds
    # after the one before completed, when the drive's read-ahead has begun past it, so the drive streams.
    # Dispatched at the very completion (DiskSim's driver), each one missed its first block by the command
    # overhead and waited a revolution: 39 MB/s where the zone gives 57.
    from diskmodel.model.iopath import timing

    monkeypatch.setattr(timing, "HOST_TURNAROUND_S", turnaround_s)
    wd = load_preset("wd800bd")
    stack = Stack(FileSystemNode(Partition(MIB, 8 << 30, "/dev/sda1", "sda"), kind="ext4"),
                  (PresetDrive("wd800bd", "sda"),))
    p = predict(stack, "dd:size=64M,step=read")
    assert p.read_throughput_bytes_per_s == pytest.approx(_stream_rate_bytes_per_s(wd), rel=0.03)


def test_disksims_driver_dispatches_a_waiting_request_at_the_completion():
    # The simulation alone keeps DiskSim's driver (host_turnaround_s None): a request queued behind
    # another starts at its completion, as in DiskSim's traces.
    from diskmodel.model.drive.parameters import DriveParameters
    from diskmodel.model.simulator.session import DriveSession

    p = DriveParameters.from_disk(load_preset("wd800bd"))
    for turnaround_s, lost_revolution in ((None, True), (20e-6, False)):
        session = DriveSession(dataclasses_replace(p, host_turnaround_s=turnaround_s))
        first = session.serve(False, 2048, 1024, 0.0)
        second = session.serve(False, 3072, 1024, 0.0)  # queued behind the first
        assert second.start_s == pytest.approx(first.completion_s + (turnaround_s or 0.0), abs=1e-12)
        assert (second.latency_s > 0.5 * 60.0 / p.rpm) == lost_revolution


@pytest.mark.parametrize("kind", ["raid0", "raid1", "raid5"])
def test_lvm_raid_is_timed_as_the_kernel_builds_it(kind):
    # lvcreate --type striped is dm-stripe: md raid0's arithmetic on the members' extents; --type raid1/5
    # is dm-raid, which runs md's own personalities. So each member receives md's requests.
    from diskmodel.model.iopath import parse_workload
    from diskmodel.model.iopath.path import run

    n = 2 if kind == "raid1" else 3
    drives = tuple(PresetDrive(DRIVE, f"sd{c}") for c in "abc"[:n])
    streams = {}
    parts = tuple(_part(c) for c in "abc"[:n])
    # one size for both: md's data start after its data offset, so its default array is smaller
    size = RaidArray(kind, parts, chunk_size_bytes=64 * 1024, tool="md").size_bytes
    for tool in ("md", "lvm"):
        array = RaidArray(kind, parts, chunk_size_bytes=64 * 1024, tool=tool, array_size_bytes=size)
        stack = Stack(FileSystemNode(array, kind="ext4"), drives)
        streams[tool] = run(stack, parse_workload("fio:rw=write,bs=64k,size=4M"))
        assert predict(stack, "fio:rw=write,bs=64k,size=4M").elapsed_s > 0
    for name, s in streams["md"].items():
        assert s.totals() == streams["lvm"][name].totals()
