"""A buffered loop device's worker: its copy and per-request time, charged in turn where the
application waits (:class:`diskmodel.model.iopath.timing.LoopWorker`).

The expected times are sums by hand: a job's time with the layers' copies free, plus each request's
overhead and its bytes at the copy rate, once per layer it crosses while the application waits.
The orderings are the loop-image study's and Dagenais' (each nested layer lowers the rate; a loop
file is no faster than the device under it)."""
from __future__ import annotations

import math

import pytest

from diskmodel.model.iopath.timing import FlatDrive
from diskmodel.model.predictions.block_workloads import FioJob
from diskmodel.model.predictions.results import predict_block_job
from diskmodel.model.stacks.loop_file import LoopFile, nested_loop_files
from diskmodel.model.stacks.volumes import Partition
from diskmodel.model.units import GIB, KIB, MIB

DRIVE = FlatDrive(100e-6, 1e9, 8 * GIB)  # flash-like: 100 µs, 1 GB/s
RATE = 2e9  # the layers' copy rate [bytes/s]


def layers(depth: int, **fields):
    return nested_loop_files(Partition(0, 4 * GIB, "/dev/sda1", "sda"), depth, allocation="zero_filled",
                             host_file_system="ext4", **fields)


def elapsed(depth: int, job: FioJob, **fields) -> float:
    return predict_block_job(layers(depth, **fields), job, {"sda": DRIVE}).elapsed_s


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_nested_layers_pay_their_writes_copies_in_turn(depth):
    """O_DIRECT 1 MiB writes then fsync: the top layer copies each write while fio waits; at the fsync
    each layer below copies what the layer above wrote back, one layer after the other. So the
    copies add depth x bytes / rate, and the overheads one per request per layer (the lower
    layers get the write-back's requests: as many, 1 MiB each, where the file system's write-back
    sends the image's pages in 1 MiB requests)."""
    job = FioJob("write", MIB, 32 * MIB)
    free = elapsed(depth, job, copy_rate_bytes_per_s=math.inf, request_overhead_s=0.0)
    paid = elapsed(depth, job, copy_rate_bytes_per_s=RATE, request_overhead_s=0.0)
    assert paid - free == pytest.approx(depth * 32 * MIB / RATE, rel=0.02)


def test_a_waited_read_pays_the_drive_then_the_copy():
    """4 KiB O_DIRECT random reads through one layer: each waits for the drive, then for the worker's
    overhead and its copy of 4 KiB out of the image's page cache (lo_read_simple)."""
    job = FioJob("randread", 4 * KIB, 256 * KIB)
    free = elapsed(1, job, copy_rate_bytes_per_s=math.inf, request_overhead_s=0.0)
    paid = elapsed(1, job, copy_rate_bytes_per_s=RATE, read_copy_rate_bytes_per_s=RATE / 2, request_overhead_s=20e-6)
    assert paid - free == pytest.approx(64 * (20e-6 + 4 * KIB / (RATE / 2)), rel=0.02)


def test_each_nested_layer_lowers_writes_and_none_beats_the_bare_device():
    """Dagenais (fig. 5): each nested loop layer lowers the rate; and a loop file is no faster than the
    device under it, at the layers' default copy rate."""
    job = FioJob("write", MIB, 32 * MIB)
    bare = predict_block_job(Partition(0, 4 * GIB, "/dev/sda1", "sda"), job, {"sda": DRIVE}).elapsed_s
    times = [elapsed(d, job) for d in (1, 2, 3)]
    assert bare < times[0] < times[1] < times[2]


def test_the_worker_is_listed_beside_the_drives_and_its_fields_are_used():
    """The worker's requests are timed beside the drives', not among them: the drives' figures stay the
    drives'; the summary lists the worker's load; its copy rate is no longer named as unused."""
    p = predict_block_job(layers(1, copy_rate_bytes_per_s=RATE), FioJob("write", MIB, 8 * MIB), {"sda": DRIVE})
    assert p.timing.devices == ("sda",)
    assert p.timing.workers.devices == ("/dev/loop1",)
    frame = p.timing.workers.device_frame()
    assert frame.loc["/dev/loop1", "write_bytes"] == 8 * MIB
    assert frame.loc["/dev/loop1", "busy_s"] >= 8 * MIB / RATE
    assert "loop workers" in p.summary()
    assert not any("copy_rate" in text for _, text in p.assumptions)


def test_a_direct_io_layer_has_no_worker():
    node = LoopFile(Partition(0, 4 * GIB, "/dev/sda1", "sda"), GIB, allocation="zero_filled", direct_io=True,
                    copy_rate_bytes_per_s=1e6, name="/dev/loop1")
    p = predict_block_job(node, FioJob("write", MIB, 8 * MIB), {"sda": DRIVE})
    assert p.timing.workers is None


def test_map_nodes_changes_every_loop_layer_and_keeps_the_rest():
    from diskmodel.model.stacks.nodes import map_nodes, walk

    top = layers(3, copy_rate_bytes_per_s=RATE)

    def free(node):
        return node.evolve(copy_rate_bytes_per_s=math.inf) if isinstance(node, LoopFile) else node

    out = map_nodes(top, free)
    kinds = [(type(n).__name__, getattr(n, "copy_rate_bytes_per_s", None)) for _, n, _ in walk(out)]
    assert kinds == [("LoopFile", math.inf)] * 3 + [("Partition", None)]
    assert [n for _, n, _ in walk(top)][-1] == [n for _, n, _ in walk(out)][-1]
    assert elapsed(3, FioJob("write", MIB, 8 * MIB), copy_rate_bytes_per_s=math.inf) == predict_block_job(
        out, FioJob("write", MIB, 8 * MIB), {"sda": DRIVE}).elapsed_s


def test_a_loop_file_reads_no_faster_than_the_device_under_it_and_each_layer_lowers_reads():
    """The loop worker reads its image through the host's page cache, and waits for the image's async
    read-ahead windows where it issues them, as the application waits for its own: so a copy read from
    ext3 on a loop file is no faster than from ext3 on the partition (the loop-image study: alike, or
    slower), and each nested layer lowers sequential reads (Dagenais, fig. 5). Before, the image's
    windows ran beside the application and the loop file read 1.5x faster than native."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from stacks_check import predicted

    from diskmodel.model.drive.disk import flat_latency_disk
    from diskmodel.model.drive.drives import InMemoryDrive
    from diskmodel.model.predict import predict
    from diskmodel.model.stacks.stack import FileSystemNode, Stack

    disk = flat_latency_disk(18e-6, 1.25e9, 4 * GIB)
    fields = dict(readahead_bytes=2560 * KIB, copy_rate_bytes_per_s=6e9, read_copy_rate_bytes_per_s=11e9)
    part = Partition(MIB, 512 * MIB)

    def stack(node):
        return Stack(FileSystemNode(node, kind="ext3"), (InMemoryDrive(disk, "sda"),), "s")

    native = predicted(stack(part), f"dd:size={50 * MIB},step=read")["elapsed_s"]
    image = LoopFile(part, 448 * MIB, allocation="sparse", host_file_system="ext4", **fields)
    looped = predicted(stack(image), f"dd:size={50 * MIB},step=read")["elapsed_s"]
    assert native < looped < 1.5 * native
    rates = [predict(stack(nested_loop_files(part, d, allocation="sparse", host_file_system="ext4", **fields)),
                     FioJob("read", MIB, 64 * MIB)).throughput_bytes_per_s for d in range(4)]
    assert rates[0] > rates[1] > rates[2] > rates[3]


def test_predict_json_lists_the_loop_workers_beside_the_devices(tmp_path, capsys):
    import json

    from diskmodel.calibrate.cli import main

    stack = {"format": "diskmodel.stack", "disks": [{"kind": "preset", "name": "sda", "preset": "wd800bd"}],
             "file_system": {"kind": "ext4", "volume": {
                 "kind": "loop_file", "name": "/dev/loop7", "image_size_bytes": 10**9, "allocation": "sparse",
                 "host": {"kind": "partition", "start_bytes": 0, "size_bytes": 2 * 10**9, "disk": "sda"}}}}
    (tmp_path / "stack.json").write_text(json.dumps(stack))
    assert main(["predict", "--json", "--stack", str(tmp_path / "stack.json"),
                 "--workload", "dd:size=4194304,step=read"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["devices"]) == {"sda"}
    worker = out["loop_workers"]["/dev/loop7"]
    assert worker["read_bytes"] >= 4194304 and 0 < worker["busy_s"] < out["elapsed_s"]


def test_a_copy_on_a_loop_file_prints_its_summary():
    """The copy's prediction has rows, not one timing: its summary lists them (it once asked for a timing's
    loop workers and raised AttributeError)."""
    from diskmodel.model.drive.drives import PresetDrive
    from diskmodel.model.predict import predict
    from diskmodel.model.predictions.block_workloads import FileCopy
    from diskmodel.model.stacks.stack import FileSystemNode, Stack

    image = LoopFile(Partition(0, 2 * GIB, "/dev/sda1", "sda"), GIB, allocation="sparse")
    p = predict(Stack(FileSystemNode(image, kind="ext4"), (PresetDrive("wd800bd", name="sda"),), "s"),
                FileCopy(file_sizes_bytes=(MIB,), repeats=1))
    text = p.summary()
    assert f"{MIB:>12} bytes: write" in text and "assumptions:" in text
