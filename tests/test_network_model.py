"""The network layers' model (diskmodel.model.network): NBD and NFS over a shaped link.

Hand-computed cases (the formulas of the module docstring written out with
numbers), the queueing bounds as hypothesis properties (throughput never
above the link's payload rate nor the server's; never better on a slower or
longer link), JSON round trips of stacks holding the nodes (NBD over a file
on the server's disk; the seed-000 remote mirror, RAID 1 over a local
partition and an NBD device), and bad input.
"""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskmodel.model import nodes
from diskmodel.model.block import BlockEnv, BlockRequests, block_time_of
from diskmodel.model.disk import flat_latency_disk
from diskmodel.model.drives import PresetDrive
from diskmodel.model.network import (JOURNAL_COMMIT_BLOCKS, NBD_HEADER_BYTES, Network, NbdDevice, NfsMount,
                                     bottleneck, nfs_phase, nfs_stable_write_s)
from diskmodel.model.raid import RaidArray
from diskmodel.model.stack import NODE_SCHEMA, FileSystemNode, Stack
from diskmodel.model.units import GIB, KIB, MIB
from diskmodel.model.volumes import Partition

#: A flash-like server disk: 100 µs per 4 KiB request, 200 MB/s.
LATENCY_S, DISK_RATE = 100e-6, 200e6
DISK = flat_latency_disk(LATENCY_S, DISK_RATE, 16 * GIB)
ENV = BlockEnv({"srv": DISK, "sda": DISK})
EXPORT = Partition(1 * MIB, 4 * GIB, "/srv/nbd.img", disk="srv")
SLOW = Network(12.5e6, 2e-3)      # 100 Mb/s, 2 ms
FAST = Network(125e6, 0.2e-3)     # 1 Gb/s, 0.2 ms
#: TCP payload per byte tbf meters at MTU 1500: (1500 - 52) / (1500 + 14).
PAYLOAD = 1448 / 1514


def _sequential_disk_s(size):
    """The flat disk's sequential request: command overhead (latency less one 4 KiB transfer) + size / rate."""
    return (LATENCY_S - 4096 / DISK_RATE) + size / DISK_RATE


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
    # one request at a time: the bucket refills through the round trip and the other stages
    device = NbdDevice(EXPORT, net, client_overhead_s=0.0, server_overhead_s=0.0, server_cache_hit=1.0)
    one = block_time_of(device, BlockRequests(65536, sequential=True), ENV)
    assert one.time_s == pytest.approx(2e-3 + (65580 * 1514 / 1448 - 25000) / 12.5e6, rel=1e-12)
    # a deep queue keeps the link busy: the rate alone
    deep = block_time_of(device, BlockRequests(65536, sequential=True, queue_depth=16), ENV)
    assert deep.rate_bytes_per_s == pytest.approx(12.5e6 * PAYLOAD * 65536 / 65580, rel=1e-12)
    with pytest.raises(ValueError, match=r"^burst_bytes must be 0 on an unshaped link \(got 4096\)$"):
        Network(None, 0.0, burst_bytes=4096)


# --------------------------------------------------------------------------- NBD, by hand

def test_nbd_request_one_at_a_time_by_hand():
    device = NbdDevice(EXPORT, SLOW, client_overhead_s=40e-6, server_overhead_s=25e-6)
    size = 64 * KIB
    result = block_time_of(device, BlockRequests(size, sequential=True), ENV)
    link = (size + 44) / (12.5e6 * PAYLOAD)
    expected = 40e-6 + 2e-3 + link + 25e-6 + _sequential_disk_s(size)
    assert result.time_s == pytest.approx(expected, rel=1e-9)
    assert result.interval_s == pytest.approx(expected, rel=1e-9)
    assert result.rate_bytes_per_s == pytest.approx(size / expected, rel=1e-9)
    assert sum(result.parts.values()) == pytest.approx(result.time_s, rel=1e-12)
    assert result.parts["nbd_round_trip_s"] == 2e-3 and result.parts["nbd_queueing_s"] == pytest.approx(0, abs=1e-15)
    assert bottleneck(device, BlockRequests(size, sequential=True), ENV) == "latency"


def test_nbd_many_in_flight_is_bound_by_the_link_not_the_disk():
    device = NbdDevice(EXPORT, SLOW)
    size = 1 * MIB
    requests = BlockRequests(size, sequential=True, queue_depth=32)
    result = block_time_of(device, requests, ENV)
    # the link's demand (size + headers) / payload rate is the largest: X = 1 / D_link
    assert result.rate_bytes_per_s == pytest.approx(12.5e6 * PAYLOAD * size / (size + NBD_HEADER_BYTES), rel=1e-12)
    assert result.time_s == pytest.approx(32 * result.interval_s, rel=1e-12)   # Little's law
    assert sum(result.parts.values()) == pytest.approx(result.time_s, rel=1e-12)
    assert bottleneck(device, requests, ENV) == "link"
    # on the fast link (119.6 MB/s of payload) the link still binds before the 200 MB/s disk
    fast = block_time_of(device.evolve(network=FAST), requests, ENV)
    assert fast.rate_bytes_per_s == pytest.approx(125e6 * PAYLOAD * size / (size + 44), rel=1e-12)
    unshaped = block_time_of(device.evolve(network=Network(None, 0.0)), requests, ENV)
    # unshaped, the server binds: its overhead plus the export's demand, which at 32 in flight is the
    # transfer alone (model.block: sequential requests in flight overlap their fixed cost with the transfers)
    assert unshaped.rate_bytes_per_s == pytest.approx(size / (30e-6 + size / DISK_RATE), rel=1e-9)
    assert bottleneck(device.evolve(network=Network(None, 0.0)), requests, ENV) == "server"


def test_server_cache_and_copy_rate():
    device = NbdDevice(EXPORT, Network(None, 0.0), client_overhead_s=0.0, server_overhead_s=0.0,
                       server_cache_hit=1.0, copy_rate_bytes_per_s=50e6)
    result = block_time_of(device, BlockRequests(1 * MIB, sequential=True), ENV)
    assert result.time_s == pytest.approx(MIB / 50e6, rel=1e-12)     # all copy: the disk is never reached
    assert result.member_ios == 0.0


def test_remote_mirror_writes_wait_for_the_network_leg():
    local = Partition(1 * MIB, 4 * GIB, "/dev/sda3", disk="sda")
    remote = NbdDevice(EXPORT, SLOW)
    mirror = RaidArray("raid1", (local, remote))
    write = BlockRequests(64 * KIB, is_write=True, sequential=True)
    assert block_time_of(mirror, write, ENV).time_s == pytest.approx(block_time_of(remote, write, ENV).time_s)
    assert block_time_of(mirror, write, ENV).time_s > 10 * block_time_of(local, write, ENV).time_s
    # md reads a sequential stream from the first member: the local disk
    read = BlockRequests(64 * KIB, sequential=True)
    assert block_time_of(mirror, read, ENV).time_s == pytest.approx(block_time_of(local, read, ENV).time_s)


# --------------------------------------------------------------------------- NFS, by hand

def _mount(**changes) -> NfsMount:
    export = FileSystemNode(Partition(1 * MIB, 4 * GIB, "/dev/vda", disk="srv"), kind="ext4")
    base = NfsMount(export, SLOW, version="3", sync_export=False, client_overhead_s=0.0, server_op_s=0.0)
    return base.evolve(**changes)


def test_nfs_async_write_phase_by_hand():
    files, size = 10, 64 * KIB
    p = nfs_phase(_mount(), ENV, "write", files, size)
    per_file = 3 * 2e-3 + (2e-3 + size / (12.5e6 * PAYLOAD))   # LOOKUP, CREATE, COMMIT; one WRITE behind a round trip
    assert p.elapsed_s == pytest.approx(files * per_file, rel=1e-12)
    assert p.parts["stable_s"] == 0.0
    assert p.throughput_bytes_per_s == pytest.approx(size / per_file, rel=1e-12)
    assert p.bottleneck == "link"


def test_nfs_sync_export_waits_for_journal_commits():
    files = 5
    sync = _mount(sync_export=True)
    commit = nfs_stable_write_s(sync, ENV)
    random_write = block_time_of(sync.export.volume, BlockRequests(JOURNAL_COMMIT_BLOCKS * 4096, is_write=True), ENV)
    assert commit == pytest.approx(random_write.time_s, rel=1e-12)
    async_remove = nfs_phase(_mount(), ENV, "remove", files, 0)
    sync_remove = nfs_phase(sync, ENV, "remove", files, 0)
    assert async_remove.elapsed_s == pytest.approx(files * 2e-3, rel=1e-12)       # one REMOVE each
    assert sync_remove.elapsed_s - async_remove.elapsed_s == pytest.approx(files * commit, rel=1e-9)
    # ext2 has no journal: two single-block writes (inode, directory)
    ext2 = sync.evolve(export=FileSystemNode(sync.export.volume, kind="ext2"))
    block = block_time_of(sync.export.volume, BlockRequests(4096, is_write=True), ENV).time_s
    assert nfs_stable_write_s(ext2, ENV) == pytest.approx(2 * block, rel=1e-12)


def test_nfs_read_follows_the_network_where_it_is_the_bottleneck():
    size = 8 * MIB
    slow = nfs_phase(_mount(), ENV, "read", 1, size)
    fast = nfs_phase(_mount(network=FAST), ENV, "read", 1, size)
    assert slow.bottleneck == "link" and slow.throughput_bytes_per_s < 12.5e6 * PAYLOAD
    assert fast.throughput_bytes_per_s / slow.throughput_bytes_per_s > 5
    # a slow server disk (2 MB/s) bounds the read instead, whatever the link
    slow_disk = BlockEnv({"srv": flat_latency_disk(5e-3, 2e6, 16 * GIB)})
    capped = nfs_phase(_mount(network=FAST), slow_disk, "read", 1, size)
    assert capped.bottleneck == "server" and capped.throughput_bytes_per_s < 2e6


# --------------------------------------------------------------------------- properties

rates = st.floats(1e5, 1e10)
rtts = st.floats(0.0, 0.05)
sizes = st.sampled_from([512, 4 * KIB, 64 * KIB, 128 * KIB, 1 * MIB])
overheads = st.floats(0.0, 1e-3)


@settings(max_examples=60, deadline=None)
@given(rate=rates, rtt=rtts, size=sizes, depth=st.integers(1, 64), client=overheads, server=overheads,
       hit=st.floats(0.0, 1.0), write=st.booleans(), sequential=st.booleans(), burst=st.integers(0, 4 * MIB))
def test_nbd_throughput_never_exceeds_the_link_or_the_server(rate, rtt, size, depth, client, server, hit, write,
                                                             sequential, burst):
    device = NbdDevice(EXPORT, Network(rate, rtt, burst_bytes=burst), client_overhead_s=client,
                       server_overhead_s=server, server_cache_hit=hit)
    requests = BlockRequests(size, is_write=write, sequential=sequential, queue_depth=depth)
    result = block_time_of(device, requests, ENV)
    served = block_time_of(EXPORT, requests, ENV)
    assert result.rate_bytes_per_s <= Network(rate, rtt).payload_rate_bytes_per_s * (1 + 1e-12)
    server_busy_s = server + (1 - hit) * served.interval_s  # 0 with no server overhead and every read a hit
    if server_busy_s > 0:
        assert result.rate_bytes_per_s <= size / server_busy_s * (1 + 1e-12)
    assert result.time_s >= rtt + client
    # a slower link, or a smaller bucket, never helps
    assert block_time_of(device.evolve(network=Network(rate / 2, rtt, burst_bytes=burst)), requests,
                         ENV).rate_bytes_per_s <= result.rate_bytes_per_s * (1 + 1e-12)
    assert block_time_of(device.evolve(network=Network(rate, rtt, burst_bytes=burst // 2)), requests,
                         ENV).rate_bytes_per_s <= result.rate_bytes_per_s * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(rate=rates, rtt=rtts, size=st.integers(0, 16 * MIB), files=st.integers(1, 50),
       version=st.sampled_from(["3", "4.0", "4.1", "4.2"]), sync=st.booleans(),
       phase=st.sampled_from(["write", "read", "remove"]), burst=st.integers(0, 4 * MIB))
def test_nfs_never_beats_the_link(rate, rtt, size, files, version, sync, phase, burst):
    mount = _mount(network=Network(rate, rtt, burst_bytes=burst), version=version, sync_export=sync,
                   client_overhead_s=20e-6)
    p = nfs_phase(mount, ENV, phase, files, size)
    assert p.throughput_bytes_per_s <= mount.network.payload_rate_bytes_per_s * (1 + 1e-12)
    assert p.elapsed_s == pytest.approx(sum(p.parts.values()), rel=1e-12)
    slower = nfs_phase(mount.evolve(network=Network(rate / 3, rtt + 1e-3, burst_bytes=burst // 3)), ENV, phase,
                       files, size)
    assert slower.elapsed_s >= p.elapsed_s


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


def test_predict_takes_an_nbd_stack_and_follows_the_network():
    from diskmodel.model.block_workloads import FioJob
    from diskmodel.model.predict import predict

    stack = Stack(FileSystemNode(NbdDevice(EXPORT, SLOW), kind="ext4"), (PresetDrive("wd800bd", name="srv"),))
    job = FioJob("read", block_size_bytes=1 * MIB, size_bytes=64 * MIB, iodepth=32)
    slow = predict(stack, job)
    assert slow.throughput_bytes_per_s == pytest.approx(12.5e6 * PAYLOAD * MIB / (MIB + 44), rel=1e-12)
    fast = predict(Stack.from_json(stack.to_json().replace('"rate_bytes_per_s": 12500000.0',
                                                           '"rate_bytes_per_s": 1250000000.0')), job)
    # an NBD stack is predicted by the network's expected-value model (no NBD layer on the I/O path):
    # the disk alone by the same model is the like-for-like reference

    local_stack = Stack(FileSystemNode(EXPORT, kind="ext4"), stack.disks)
    local = block_time_of(EXPORT, job.requests(), local_stack.block_env())
    # on a 10 Gb/s link the server's disk binds: within the NBD overheads of the disk alone
    assert fast.throughput_bytes_per_s == pytest.approx(local.rate_bytes_per_s, rel=0.01)
    assert fast.throughput_bytes_per_s <= local.rate_bytes_per_s


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


def test_nbd_over_a_loop_file_and_the_remote_mirror_are_stacks_predicted_with_fio():
    from diskmodel.model.block_workloads import FioJob
    from diskmodel.model.loop_file import LoopFile
    from diskmodel.model.predict import predict

    drives = (PresetDrive("wd800bd", name="sda"), PresetDrive("wd800bd", name="srv"))
    image = LoopFile(Partition(1 * MIB, 8 * GIB, "/dev/sdb1", disk="srv"), 4 * GIB)   # nbd-server's file
    nbd = NbdDevice(image, SLOW, server="10.77.0.1:10809")
    over_file = Stack(FileSystemNode(nbd, kind="ext4"), drives[1:], "nbd over a loop file")
    mirror = Stack(FileSystemNode(RaidArray("raid1", (Partition(1 * MIB, 4 * GIB, "/dev/sda3", disk="sda"), nbd)),
                                  kind="ext3"), drives, "remote mirror")
    write = FioJob("write", block_size_bytes=64 * KIB, size_bytes=64 * MIB)
    read = FioJob("read", block_size_bytes=64 * KIB, size_bytes=64 * MIB)
    for stack in (over_file, mirror):
        again = Stack.from_json(stack.to_json())
        assert again == stack and predict(again, write) == predict(stack, write)
    env = over_file.block_env()
    # NBD over the file: the protocol's answer, one request at a time; the file's own cost is in it
    p = predict(over_file, write)
    assert p.latency_s == block_time_of(nbd, write.requests(), env).time_s
    assert p.latency_s > block_time_of(image, write.requests(), env).time_s + SLOW.rtt_s
    # the mirror's writes wait for the network leg; its reads come from the local disk (md's first member)
    m = predict(mirror, write)
    assert m.throughput_bytes_per_s == pytest.approx(p.throughput_bytes_per_s, rel=1e-12)
    # the reference, the local member alone, by the same expected-value model as the NBD stack
    member = mirror.volume.members[0]
    menv = mirror.block_env()
    assert predict(mirror, read).throughput_bytes_per_s == pytest.approx(
        block_time_of(member, read.requests(), menv).rate_bytes_per_s, rel=1e-12)
    assert m.throughput_bytes_per_s < block_time_of(member, write.requests(), menv).rate_bytes_per_s / 5


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


def test_predict_postmark_on_an_nfs_stack_sums_its_operations_by_hand():
    from diskmodel.model.predict import NfsPostMarkPrediction, predict
    from diskmodel.model.workload import PostMarkConfig, expected_counts

    stack = _nfs_stack(client_overhead_s=50e-6, server_op_s=50e-6)
    counts = expected_counts(PostMarkConfig(number_of_files=300, transactions=1000))
    p = predict(stack, counts)
    assert isinstance(p, NfsPostMarkPrediction)
    t = counts.total
    env = stack.block_env()
    want = {"create_s": t.creates * nfs_phase(stack.file_system, env, "write", 1,
                                              round(t.bytes_created / t.creates)).elapsed_s,
            "append_s": t.appends * nfs_phase(stack.file_system, env, "write", 1,
                                              round(t.bytes_appended / t.appends)).elapsed_s,
            "read_s": t.reads * nfs_phase(stack.file_system, env, "read", 1, round(t.bytes_read / t.reads)).elapsed_s,
            "delete_s": t.deletes * nfs_phase(stack.file_system, env, "remove", 1, 0).elapsed_s}
    assert p.parts == pytest.approx(want, rel=1e-12)
    assert p.elapsed_s == pytest.approx(sum(want.values()), rel=1e-12)
    assert p.read_throughput_bytes_per_s == pytest.approx(t.bytes_read / p.elapsed_s, rel=1e-12)
    assert p.write_throughput_bytes_per_s == pytest.approx(t.bytes_written / p.elapsed_s, rel=1e-12)
    # PostMark's small files are bound by round trips: a longer round trip costs, a faster link hardly helps
    longer = predict(_nfs_stack(client_overhead_s=50e-6, server_op_s=50e-6, network=SLOW.evolve(rtt_s=4e-3)), counts)
    faster = predict(_nfs_stack(client_overhead_s=50e-6, server_op_s=50e-6, network=SLOW.evolve(
        rate_bytes_per_s=125e6)), counts)
    assert longer.elapsed_s > 1.5 * p.elapsed_s and faster.elapsed_s > 0.7 * p.elapsed_s
    # a sync export waits for the server's disk on every create, append and delete
    assert predict(_nfs_stack(sync_export=True), counts).elapsed_s > predict(_nfs_stack(), counts).elapsed_s


def test_predict_copy_on_an_nfs_stack_and_refusals():
    from diskmodel.model.block_workloads import FioJob
    from diskmodel.model.predict import predict
    from diskmodel.model.volumes import LvmMapping
    from diskmodel.model.workload import FileCopy
    from diskmodel.model.filesystem import PageCache

    stack = _nfs_stack()
    copy = FileCopy(file_sizes_bytes=(8 * MIB,), repeats=2)
    p = predict(stack, copy)
    env = stack.block_env()
    cached = 8 * MIB / copy.copy_rate_bytes_per_s
    assert p.kind == "nfs" and p.rows[0]["write_s"] == pytest.approx(
        cached + nfs_phase(stack.file_system, env, "write", 1, 8 * MIB).elapsed_s, rel=1e-12)
    assert p.rows[0]["read_s"] == pytest.approx(
        cached + nfs_phase(stack.file_system, env, "read", 1, 8 * MIB).elapsed_s, rel=1e-12)
    assert p.read_bytes_per_s < SLOW.payload_rate_bytes_per_s     # over 100 Mb/s: the link binds
    job = FioJob("randread", block_size_bytes=4 * KIB, size_bytes=16 * MIB)
    with pytest.raises(ValueError, match=r"^workload randread_4k: file_system \(nfs, 10.0.0.1:/srv/export\) is a "
                                         r"file system over the network, not a block device"):
        predict(stack, job)
    for options in ({"cache": PageCache(size_bytes=1 * GIB)}, {"lvm_mapping": LvmMapping(md_mapping_s=1e-4)}):
        with pytest.raises(ValueError, match=r"^cache and lvm_mapping: the NFS model takes neither"):
            predict(stack, copy, **options)


def test_diskmodel_predict_takes_an_nfs_stack_file(tmp_path, capsys):
    from diskmodel.calibrate import cli
    from diskmodel.model.predict import predict
    from diskmodel.model.workload import postmark_preset

    stack = _nfs_stack(sync_export=True, client_overhead_s=50e-6, server_op_s=50e-6)
    path = tmp_path / "nfs.json"
    path.write_text(stack.to_json())
    assert cli.main(["predict", "--stack", str(path), "--workload", "test2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = predict(stack, postmark_preset("test2"))
    assert out["stack"] == "nfs to ext4 on partition"
    assert out["read_throughput_bytes_per_s"] == want.read_throughput_bytes_per_s
    assert out["elapsed_s"] == want.elapsed_s and out["parts_s"] == want.parts
    assert cli.main(["predict", "--stack", str(path), "--workload", "randread_4k"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"diskmodel: error: --stack {path}: workload randread_4k: file_system (nfs")
    assert cli.main(["predict", "--stack", str(path), "--page-cache-bytes", "1000"]) == 2
    assert capsys.readouterr().err.startswith(f"diskmodel: error: --page-cache-bytes does not apply to --stack {path}")
