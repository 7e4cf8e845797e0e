"""The network layers (diskmodel.model.stacks.network) on the timed I/O path (diskmodel.model.iopath.network).

NBD: a request crosses the link (round trip, per-request costs, its bytes and NBD's headers at the
payload rate) and is served by the server's drive, here a flat drive whose time a reader redoes by
hand; NFS: the client's operations pushed back on the workload's clock by their RPCs, then served by
the server's file system and drives. JSON round trips of stacks holding the nodes (NBD over a file on
the server's disk; the seed-000 remote mirror, RAID 1 over a local partition and an NBD device), and
bad input.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from diskmodel.model.stacks import nodes
from diskmodel.model.predictions.block_workloads import FioJob
from diskmodel.model.drive.drives import PresetDrive
from diskmodel.model.iopath.fileops import FileOps, Kind
from diskmodel.model.iopath.network import nfs_client_ops
from diskmodel.model.iopath.timing import FlatDrive
from diskmodel.model.stacks.network import NBD_HEADER_BYTES, Network, NbdDevice, NfsMount, nfsd_max_block_bytes
from diskmodel.model.predictions.results import predict_block_job
from diskmodel.model.stacks.raid import RaidArray
from diskmodel.model.stacks.stack import NODE_SCHEMA, FileSystemNode, Stack
from diskmodel.model.units import GIB, KIB, MIB
from diskmodel.model.stacks.volumes import Partition

#: A flash-like server drive: 100 µs per request plus 200 MB/s.
LATENCY_S, DISK_RATE = 100e-6, 200e6
DRIVES = {"srv": FlatDrive(LATENCY_S, DISK_RATE, 16 * GIB), "sda": FlatDrive(LATENCY_S, DISK_RATE, 16 * GIB)}
EXPORT = Partition(1 * MIB, 4 * GIB, "/srv/nbd.img", disk="srv")
SLOW = Network(12.5e6, 2e-3)      # 100 Mb/s, 2 ms
FAST = Network(125e6, 0.2e-3)     # 1 Gb/s, 0.2 ms
#: TCP payload per byte tbf meters at MTU 1500: (1500 - 52) / (1500 + 14).
PAYLOAD = 1448 / 1514
CALL_S = 2e-6  # the application's time per system call between requests (model.prediction)


def _flat_s(size):
    return LATENCY_S + size / DISK_RATE


# --------------------------------------------------------------------------- the network

def test_payload_rate_is_tcp_over_ethernet_framing():
    assert SLOW.payload_rate_bytes_per_s == pytest.approx(12.5e6 * PAYLOAD, rel=1e-12)
    assert float(SLOW.transfer_s(1448 * 1000)) == pytest.approx(1514 * 1000 / 12.5e6, rel=1e-12)
    assert Network(None, 0.0).transfer_s(10**9) == 0.0


def test_tbf_bucket_passes_what_the_idle_link_gathered():
    net = SLOW.evolve(burst_bytes=32768)
    wire = 65536 * 1514 / 1448
    assert float(net.transfer_s(65536, 2e-3)) == pytest.approx((wire - 25000) / 12.5e6, rel=1e-12)  # 2 ms of tokens
    assert float(net.transfer_s(65536, 1.0)) == pytest.approx((wire - 32768) / 12.5e6, rel=1e-12)  # a full bucket
    assert float(net.transfer_s(65536)) == pytest.approx(wire / 12.5e6, rel=1e-12)                 # a busy link
    assert float(net.transfer_s(1000, 1.0)) == 0.0
    with pytest.raises(ValueError, match=r"^burst_bytes must be 0 on an unshaped link \(got 4096\)$"):
        Network(None, 0.0, burst_bytes=4096)


# --------------------------------------------------------------------------- NBD, by hand

def test_nbd_requests_one_at_a_time_by_hand():
    device = NbdDevice(EXPORT, SLOW, client_overhead_s=40e-6, server_overhead_s=25e-6)
    size = 64 * KIB
    job = FioJob("read", size, 16 * size)
    p = predict_block_job(device, job, DRIVES)
    link = 2e-3 + 40e-6 + 25e-6 + (size + NBD_HEADER_BYTES) / (12.5e6 * PAYLOAD)
    assert p.elapsed_s == pytest.approx(16 * (link + _flat_s(size)) + 15 * CALL_S, rel=1e-9)
    # the export receives the device's requests unchanged
    assert len(p.streams["srv"]) == 16 and set(p.streams["srv"].size_bytes.tolist()) == {size}
    # a field the timed path does not use is named in the assumptions, not silently ignored
    cached = predict_block_job(device.evolve(server_cache_hit=0.5), job, DRIVES)
    assert dict(cached.assumptions)["not used: device"].startswith("server_cache_hit")
    assert cached.elapsed_s == p.elapsed_s


def test_nbd_copy_rate_is_paid_on_the_client_before_the_request_leaves():
    device = NbdDevice(EXPORT, Network(None, 0.0), client_overhead_s=0.0, server_overhead_s=0.0,
                       copy_rate_bytes_per_s=50e6)
    size = 128 * KIB  # nbd's largest request (a larger one is split, its pieces in flight together)
    job = FioJob("read", size, 4 * size)
    p = predict_block_job(device, job, DRIVES)
    assert p.elapsed_s == pytest.approx(4 * (size / 50e6 + _flat_s(size)) + 3 * CALL_S, rel=1e-9)


def test_the_drives_under_one_nbd_device_share_its_link():
    # an export striped over two drives: their replies cross one link, never faster than its payload rate
    export = RaidArray("raid0", (Partition(0, GIB, "/dev/srv1", disk="srv"), Partition(0, GIB, "/dev/sda1", disk="sda")),
                       chunk_size_bytes=64 * KIB)
    device = NbdDevice(export, SLOW, client_overhead_s=0.0, server_overhead_s=0.0)
    job = FioJob("read", 128 * KIB, 8 * MIB, iodepth=8)
    p = predict_block_job(device, job, DRIVES)
    assert p.throughput_bytes_per_s <= 12.5e6 * PAYLOAD
    assert p.throughput_bytes_per_s > 0.9 * 12.5e6 * PAYLOAD * 128 * KIB / (128 * KIB + NBD_HEADER_BYTES)


def test_remote_mirror_writes_wait_for_the_network_leg():
    local = Partition(1 * MIB, 4 * GIB, "/dev/sda3", disk="sda")
    remote = NbdDevice(EXPORT, SLOW)
    job = FioJob("write", 64 * KIB, 16 * 64 * KIB, end_fsync=False)
    mirrored = predict_block_job(RaidArray("raid1", (local, remote)), job, DRIVES)
    alone = predict_block_job(remote, job, DRIVES)
    assert mirrored.elapsed_s == pytest.approx(alone.elapsed_s, rel=1e-9)
    assert mirrored.elapsed_s > 10 * predict_block_job(local, job, DRIVES).elapsed_s


# --------------------------------------------------------------------------- NFS, by hand

def _mount(**changes) -> NfsMount:
    export = FileSystemNode(Partition(1 * MIB, 4 * GIB, "/dev/vda", disk="srv"), kind="ext4")
    base = NfsMount(export, SLOW, version="3", sync_export=False, client_overhead_s=0.0, server_op_s=0.0)
    return base.evolve(**changes)


def _ops(kinds, sizes):
    n = len(kinds)
    return FileOps(time_s=np.arange(n) * 1e-3, kind=np.array(kinds, np.int8), file=np.zeros(n, np.int64),
                   offset_bytes=np.zeros(n, np.int64), size_bytes=np.array(sizes, np.int64),
                   chunk_bytes=np.array(sizes, np.int64), direct=np.zeros(n, bool), dir_of_file=np.zeros(1, np.int64),
                   initial_bytes=np.zeros(1, np.int64))


def test_nfs_operations_are_pushed_back_by_their_rpcs_by_hand():
    mount = _mount(client_overhead_s=30e-6, server_op_s=20e-6)
    ops = _ops([Kind.CREATE, Kind.WRITE, Kind.WRITE, Kind.READ, Kind.DELETE], [0, 64 * KIB, 64 * KIB, 4 * KIB, 0])
    out = nfs_client_ops(mount, ops)
    rtt, rpc, rate = 2e-3, 50e-6, 12.5e6 * PAYLOAD
    cost = [2 * (rtt + rpc),                       # LOOKUP + CREATE (v3)
            rpc + 64 * KIB / rate,                 # a WRITE RPC, not waited for
            (rtt + rpc) + rpc + 64 * KIB / rate,   # the last write: the COMMIT at close
            3 * (rtt + rpc) + 4 * KIB / rate,      # LOOKUP + ACCESS, then one READ
            rtt + rpc]                             # REMOVE
    assert np.allclose(out.time_s, ops.time_s + np.cumsum(cost), rtol=1e-12, atol=0)
    # a sync export fsyncs the file on the server at its close
    synced = nfs_client_ops(mount.evolve(sync_export=True), ops)
    assert synced.kind.tolist() == [Kind.CREATE, Kind.WRITE, Kind.WRITE, Kind.FSYNC, Kind.READ, Kind.DELETE]
    assert synced.time_s[3] == synced.time_s[2]


def test_a_clients_fadvise_stays_on_the_client():
    # fio advises POSIX_FADV_RANDOM on its random job's file right after creating it. The advice is the
    # client's page cache's: nfsd reads the server's file with its own read-ahead, so the server gets the
    # same operations, and at the same times (the first write still follows the CREATE that opened the file).
    mount = _mount(client_overhead_s=30e-6, server_op_s=20e-6)
    advised = _ops([Kind.CREATE, Kind.RANDOM, Kind.WRITE, Kind.WRITE], [0, 0, 64 * KIB, 64 * KIB])
    plain = _ops([Kind.CREATE, Kind.WRITE, Kind.WRITE], [0, 64 * KIB, 64 * KIB])
    plain = FileOps(advised.time_s[[0, 2, 3]], *(getattr(plain, f) for f in ("kind", "file", "offset_bytes",
                    "size_bytes", "chunk_bytes", "direct", "dir_of_file", "initial_bytes")))
    a, b = nfs_client_ops(mount, advised), nfs_client_ops(mount, plain)
    assert a.kind.tolist() == [Kind.CREATE, Kind.WRITE, Kind.WRITE]
    assert np.array_equal(a.time_s, b.time_s)


def _reads(sizes):
    """One read of each size, each of its own file (each opened first: close-to-open)."""
    n = len(sizes)
    return FileOps(time_s=np.zeros(n), kind=np.full(n, int(Kind.READ), np.int8), file=np.arange(n),
                   offset_bytes=np.zeros(n, np.int64), size_bytes=np.array(sizes, np.int64),
                   chunk_bytes=np.array(sizes, np.int64), direct=np.zeros(n, bool), dir_of_file=np.zeros(n, np.int64),
                   initial_bytes=np.array(sizes, np.int64))


def test_nfs_data_spends_the_bucket_its_direction_gathered_by_hand():
    """tbf's bucket (sch_tbf.c): a reply after an idle spell crosses its first ``burst`` bytes at once."""
    rate, rtt, burst = 1.25e6, 10e-3, 32768
    net = Network(rate, rtt, burst_bytes=burst)
    mount = NfsMount(FileSystemNode(EXPORT, kind="ext4"), net, version="4.2", sync_export=False,
                     client_overhead_s=0.0, server_op_s=0.0)
    wire = 64 * KIB / PAYLOAD
    # three small files: each read follows its open's two round trips and its READ's, 30 ms in which
    # the reply direction gathers 37 500 tokens, more than the bucket holds: a full bucket each time
    out = nfs_client_ops(mount, _reads([64 * KIB] * 3))
    each = 3 * rtt + (wire - burst) / rate
    assert np.allclose(out.time_s, np.cumsum([each] * 3), rtol=1e-12, atol=0)
    # the same without a bucket: every byte at the rate
    plain = nfs_client_ops(mount.evolve(network=net.evolve(burst_bytes=0)), _reads([64 * KIB] * 3))
    assert np.allclose(plain.time_s, np.cumsum([3 * rtt + wire / rate] * 3), rtol=1e-12, atol=0)
    # a 3 MiB read at rsize 1 MiB: three READs, the bucket full before the first piece and refilled
    # by one round trip (12 500 tokens) before each of the others
    big = nfs_client_ops(mount, _reads([3 * MIB]))
    piece = MIB / PAYLOAD
    data_s = ((piece - burst) + 2 * (piece - rate * rtt)) / rate
    assert np.isclose(big.time_s[0], 5 * rtt + data_s, rtol=1e-12, atol=0)


# --------------------------------------------------------------------------- stacks and JSON

def test_nbd_over_a_file_and_the_remote_mirror_round_trip_through_stack_json():
    nbd = NbdDevice(EXPORT, SLOW, server="10.77.0.1:10809", name="/dev/nbd0")
    stacks = [
        Stack(FileSystemNode(nbd, kind="ext4"), (PresetDrive("wd800bd", name="srv"),), "ext4 on nbd"),
        Stack(FileSystemNode(RaidArray("raid1", (Partition(1 * MIB, 4 * GIB, "/dev/sda3", disk="sda"), nbd)),
                             kind="ext3"),
              (PresetDrive("wd800bd", name="sda"), PresetDrive("wd800bd", name="srv")), "remote mirror"),
    ]
    for stack in stacks:
        text = stack.to_json()
        again = Stack.from_json(text)
        assert again == stack
        assert again.to_json() == text
        data = json.loads(text)
        assert '"kind": "nbd"' in text and data["file_system"]["kind"] in ("ext3", "ext4")
        assert "nbd /dev/nbd0 from 10.77.0.1:10809, network 100 Mb/s, rtt 2 ms" in again.describe()


def test_predict_takes_an_nbd_stack_and_the_link_binds_a_deep_queue():
    from diskmodel.model.predict import predict

    stack = Stack(FileSystemNode(NbdDevice(EXPORT, SLOW), kind="ext4"), (PresetDrive("wd800bd", name="srv"),))
    job = FioJob("read", block_size_bytes=1 * MIB, size_bytes=16 * MIB, iodepth=8)
    slow = predict(stack, job)
    # never above the link's payload rate (each request pays its own bytes on it)
    assert slow.throughput_bytes_per_s < 12.5e6 * PAYLOAD
    local = predict(Stack(FileSystemNode(EXPORT, kind="ext4"), stack.disks), job)
    assert slow.throughput_bytes_per_s < local.throughput_bytes_per_s
    assert slow.timed.timing.devices == ("srv",)


def test_nfs_mount_round_trips_through_node_json():
    mount = _mount(version="4.2", sync_export=True)
    data = nodes.to_json_data(mount)
    assert data["kind"] == "nfs" and data["network"] == {"rate_bytes_per_s": 12.5e6, "rtt_s": 2e-3,
                                                           "mtu_bytes": 1500, "burst_bytes": 0}
    assert NODE_SCHEMA.read(json.loads(json.dumps(data))) == mount


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("changes, words", [
    ({"server": "10.77.0.1"}, ["server", "host:port", "'10.77.0.1'"]),
    ({"server": "10.77.0.1:99999"}, ["server", "99999"]),
    ({"network": (12.5e6, 2e-3)}, ["network", "Network"]),
    ({"server_cache_hit": 1.5}, ["server_cache_hit", "1.5"]),
    ({"copy_rate_bytes_per_s": 0}, ["copy_rate_bytes_per_s", "0"]),
    ({"export": "srv"}, ["export", "block node"]),
])
def test_bad_nbd_fields_are_one_line_errors(changes, words):
    with pytest.raises(ValueError) as info:
        NbdDevice(EXPORT, SLOW).evolve(**changes)
    message = str(info.value)
    assert "\n" not in message and all(w in message for w in words)


@pytest.mark.parametrize("changes, words", [
    ({"version": "5"}, ["version", "'5'"]),
    ({"server": "10.77.0.1:srv"}, ["server", "host:/path"]),
    ({"wsize_bytes": 4 * MIB}, ["wsize_bytes", str(4 * MIB)]),
    ({"sync_export": "yes"}, ["sync_export", "'yes'"]),
])
def test_bad_nfs_fields_are_one_line_errors(changes, words):
    with pytest.raises(ValueError) as info:
        _mount(**changes)
    message = str(info.value)
    assert "\n" not in message and all(w in message for w in words)


def test_bad_network_and_json_name_the_field():
    with pytest.raises(ValueError, match=r"^rtt_s must be >= 0 \(got -0.001\)$"):
        Network(12.5e6, -1e-3)
    with pytest.raises(ValueError, match=r"^rate_bytes_per_s must be > 0 \(got 0\)$"):
        Network(0, 1e-3)
    with pytest.raises(ValueError, match=r"^rate_bytes_per_s must be finite \(got inf\); None is unshaped$"):
        Network(math.inf, 1e-3)
    stack = Stack(FileSystemNode(NbdDevice(EXPORT, SLOW), kind="ext4"), (PresetDrive("wd800bd", name="srv"),))
    data = json.loads(stack.to_json())
    data["file_system"]["volume"]["network"]["rtt_s"] = "2ms"
    with pytest.raises(ValueError) as info:
        Stack.from_json_data(data)
    assert str(info.value) == "file_system.volume.network.rtt_s: must be a number (got '2ms')"


# --------------------------------------------------------------------------- stacks predicted end to end

def _nfs_stack(**changes) -> Stack:
    return Stack(_mount(**changes), (PresetDrive("wd800bd", name="srv"),), "")


def test_nfsd_takes_a_4096th_of_its_memory_for_its_largest_payload():
    # fs/nfsd/nfssvc.c's own comment: "1MB on 4Gig machines, but only uses 32K on 128M machines. Bottom out at
    # 8K on 32M and smaller"; and the 512 MiB VM's guest: MemTotal 468404 kB, max_block_size 65536
    assert nfsd_max_block_bytes(4 * GIB) == 1 * MIB
    assert nfsd_max_block_bytes(128 * MIB) == 32 * KIB
    assert nfsd_max_block_bytes(32 * MIB) == nfsd_max_block_bytes(1 * MIB) == 8 * KIB
    assert nfsd_max_block_bytes(468404 * KIB) == 64 * KIB
    with pytest.raises(ValueError, match="total_ram_bytes"):
        nfsd_max_block_bytes(0)


def test_the_server_reads_an_nfs_file_in_rsize_calls_and_its_read_ahead_grows_from_them():
    """nfsd reads a file one READ's payload a call (nfsd_read), so the server's read-ahead sizes its windows
    from rsize: 1 MiB calls take 1 MiB windows (a request beyond the device's read-ahead is read whole),
    64 KiB ones the device's own 128 KiB windows, eight times as many requests for the same 4 MiB."""
    from diskmodel.model.iopath import parse_workload
    from diskmodel.model.predictions.results import predict_stack

    sizes = {}
    for rsize in (1 * MIB, 64 * KIB):
        timing = predict_stack(_nfs_stack(version="3", rsize_bytes=rsize, wsize_bytes=rsize),
                               parse_workload("dd:size=4M,step=read", sync_at_end=False)).timing
        reads = timing.size_bytes[timing.op == 0]
        sizes[rsize] = reads[reads > 4 * KIB]   # the data's windows, past the inode's block
        assert reads.sum() - sizes[rsize].sum() <= 4 * KIB
    assert list(sizes[1 * MIB]) == [1 * MIB] * 4
    assert list(sizes[64 * KIB]) == [128 * KIB] * 32
    # on a link that costs nothing the server's first READ comes at time 0: its read-ahead's next window
    # goes out after the windows the call read, not before time 0 (the file system refused the stream)
    timing = predict_stack(_nfs_stack(version="3", rsize_bytes=64 * KIB, wsize_bytes=64 * KIB,
                                       network=Network(None, 0.0)),
                           parse_workload("dd:size=4M,step=read", sync_at_end=False)).timing
    reads = timing.size_bytes[timing.op == 0]
    assert list(reads[reads > 4 * KIB]) == [128 * KIB] * 32


@pytest.mark.slow  # several seconds: the full tier runs it
def test_nbd_over_a_loop_file_and_the_remote_mirror_are_stacks_predicted_with_fio():
    from diskmodel.model.stacks.loop_file import LoopFile
    from diskmodel.model.predict import predict

    drives = (PresetDrive("wd800bd", name="sda"), PresetDrive("wd800bd", name="srv"))
    image = LoopFile(Partition(1 * MIB, 8 * GIB, "/dev/sdb1", disk="srv"), 4 * GIB)   # nbd-server's file
    nbd = NbdDevice(image, SLOW, server="10.77.0.1:10809")
    over_file = Stack(FileSystemNode(nbd, kind="ext4"), drives[1:], "nbd over a loop file")
    mirror = Stack(FileSystemNode(RaidArray("raid1", (Partition(1 * MIB, 4 * GIB, "/dev/sda3", disk="sda"), nbd)),
                                  kind="ext3"), drives, "remote mirror")
    write = FioJob("write", block_size_bytes=64 * KIB, size_bytes=8 * MIB)
    for stack in (over_file, mirror):
        again = Stack.from_json(stack.to_json())
        assert again == stack and predict(again, write).elapsed_s == predict(stack, write).elapsed_s
    p, m = predict(over_file, write), predict(mirror, write)
    # the mirror's writes wait for the network leg as the NBD device alone does
    assert m.elapsed_s >= p.elapsed_s * (1 - 1e-9)
    assert set(m.timed.timing.devices) == {"sda", "srv"}


def test_an_nfs_mount_is_a_stack_that_round_trips_through_json():
    stack = _nfs_stack(version="4.2", sync_export=True)
    text = stack.to_json()
    again = Stack.from_json(text)
    assert again == stack and again.to_json() == text
    data = json.loads(text)
    assert data["file_system"]["kind"] == "nfs" and data["file_system"]["export"]["kind"] == "ext4"
    assert stack.short_name == "nfs to ext4 on partition"
    assert stack.describe().splitlines()[1:3] == [
        "  nfs v4.2 10.0.0.1:/srv/export (sync export), network 100 Mb/s, rtt 2 ms, mtu 1500",
        "    ext4 file system (ordered, 4096-byte blocks)"]
    assert [path for path, _ in stack.partitions()] == ["file_system.export.volume"]
    # the mount has no volume of its own: what asks for one (the model of a local file system, the stack
    # builder) is told so in one line
    for ask in (lambda: stack.volume, stack.file_system_parameters, stack.volume_on_disk):
        with pytest.raises(ValueError, match=r"^file_system \(nfs\): an NFS mount has no volume of its own"):
            ask()
    data["file_system"] = data["file_system"]["export"]["volume"]
    with pytest.raises(ValueError, match=r"^file_system: must be a file system \(kind ext2, .*\) or an NFS mount"):
        Stack.from_json_data(data)


def test_predict_postmark_on_an_nfs_stack_follows_its_round_trips():
    from diskmodel.model.predict import predict
    from diskmodel.model.predictions.workload import PostMarkConfig

    config = PostMarkConfig(number_of_files=60, transactions=200)
    base = dict(client_overhead_s=50e-6, server_op_s=50e-6)
    p = predict(_nfs_stack(**base), config)
    local = predict(Stack(_mount().export, (PresetDrive("wd800bd", name="srv"),)), "postmark:files=60,transactions=200")
    assert p.elapsed_s > local.elapsed_s
    # PostMark's small files are bound by round trips: a longer round trip costs, a faster link hardly helps
    longer = predict(_nfs_stack(**base, network=SLOW.evolve(rtt_s=4e-3)), config)
    faster = predict(_nfs_stack(**base, network=SLOW.evolve(rate_bytes_per_s=125e6)), config)
    assert longer.elapsed_s > 1.5 * p.elapsed_s and faster.elapsed_s > 0.7 * p.elapsed_s
    # a sync export makes the server's disk stable at every close
    assert predict(_nfs_stack(**base, sync_export=True), config).elapsed_s > p.elapsed_s


def test_predict_copy_on_an_nfs_stack_and_refusals():
    from diskmodel.model.filesystems.filesystem import PageCache
    from diskmodel.model.predict import predict
    from diskmodel.model.stacks.lvm_mapping import LvmMapping
    from diskmodel.model.predictions.workload import FileCopy

    stack = _nfs_stack()
    copy = FileCopy(file_sizes_bytes=(8 * MIB,), repeats=2)
    p = predict(stack, copy)
    assert p.read_bytes_per_s < SLOW.payload_rate_bytes_per_s     # over 100 Mb/s: the link binds
    assert p.write_bytes_per_s < SLOW.payload_rate_bytes_per_s
    job = FioJob("randread", block_size_bytes=4 * KIB, size_bytes=16 * MIB)
    with pytest.raises(ValueError, match=r"^workload randread_4k: file_system \(nfs, 10.0.0.1:/srv/export\) is a "
                                         r"file system over the network, not a block device"):
        predict(stack, job)
    for options, field in (({"cache": PageCache(size_bytes=1 * GIB)}, "cache"),
                           ({"lvm_mapping": LvmMapping(md_mapping_s=1e-4)}, "lvm_mapping")):
        with pytest.raises(ValueError, match=rf"^{field}: the timed I/O path"):
            predict(stack, "postmark:files=10,transactions=10", **options)


def test_diskmodel_predict_takes_an_nfs_stack_file(tmp_path, capsys):
    from diskmodel.calibrate import cli
    from diskmodel.model.predict import predict
    from diskmodel.model.predictions.workload import postmark_preset

    stack = _nfs_stack(sync_export=True, client_overhead_s=50e-6, server_op_s=50e-6)
    path = tmp_path / "nfs.json"
    path.write_text(stack.to_json())
    assert cli.main(["predict", "--stack", str(path), "--workload", "test2", "--files", "100", "--transactions",
                     "300", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = predict(stack, postmark_preset("test2").evolve(number_of_files=100, transactions=300))
    assert out["stack"] == "nfs to ext4 on partition"
    assert out["read_throughput_bytes_per_s"] == want.read_throughput_bytes_per_s
    assert out["elapsed_s"] == want.elapsed_s and set(out["devices"]) == {"srv"}
    assert cli.main(["predict", "--stack", str(path), "--workload", "randread_4k"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"diskmodel: error: --stack {path}: workload randread_4k: file_system (nfs")
    assert cli.main(["predict", "--stack", str(path), "--page-cache-bytes", "1000"]) == 2
    assert capsys.readouterr().err.startswith(f"diskmodel: error: --page-cache-bytes does not apply to --stack {path}")
