"""NBD and NFS in the throwaway VM over a shaped veth link (diskmodel.calibrate.bench.network), for real.

One test, two boots under TCG (about a minute on this 2-core machine, more
under load): a measurement at 10 Mb/s with a 10 ms round trip, whose times
must respect what the shaping allows at best (no request faster than its
round trip plus its bytes over the link less a full tbf bucket, no run carrying more than
a full bucket plus the link's payload rate over its time, the NFS phases no faster than the model's round trips with
zero overheads), and a client pointed at an address nobody serves, which
must fail with one line naming that address (an NBD and an NFS client, a boot each), with the guest's teardown
reporting everything gone and nothing of the VM left on the host.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from conftest import require_tools, skip_or_fail
from diskmodel.calibrate.bench import vm
from diskmodel.calibrate.bench.network import ServerUnreachableError, run_network_bench, shaped
import numpy as np

from diskmodel.model.iopath.fileops import FileOps, Kind, metadata
from diskmodel.model.iopath.network import nfs_client_ops
from diskmodel.model.stacks.network import Network, NfsMount
from diskmodel.model.stacks.stack import FileSystemNode
from diskmodel.model.units import GIB, KIB, MIB
from diskmodel.model.stacks.volumes import Partition

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SHAPED = shaped(1.25e6, 10e-3)     # 10 Mb/s, 10 ms, tbf's usual bucket


def _leftovers(tmp: Path) -> list[str]:
    """qemu processes and run folders of ours still there."""
    found = [str(p) for p in tmp.glob("diskmodel-*")]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode("utf-8", "replace")
            except OSError:
                continue
            if argv.startswith("qemu-system") and str(tmp) in argv:
                found.append(f"qemu pid {entry.name}")
    return found


def test_shaped_link_bounds_nbd_and_nfs_and_an_unreachable_server_is_named(tmp_path, monkeypatch):
    require_tools("qemu-system-x86_64", "nbd-server", "nbd-client", "rpc.nfsd", "mount.nfs", "tc", "ip")
    ok, why = vm.vm_available()
    if not ok:
        skip_or_fail(why)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("DISKMODEL_RUN_DIR", str(tmp_path / "runs"))
    size = 64 * KIB
    run = run_network_bench([Network(None, 0.0), SHAPED], nbd_sizes=(size,), nbd_bytes=8 * size,
                            nfs_versions=("4.2",), nfs_exports=("async",), nfs_files=3, nfs_file_size_bytes=size,
                            export_bytes=8 * MIB, timeout_s=600)
    assert run.accelerator == "tcg"
    assert run.ping_rtt_s[1] >= SHAPED.rtt_s
    for op in ("read", "write"):
        shaped = run.find(1, "nbd", op, size)
        floor = SHAPED.rtt_s + float(SHAPED.transfer_s(size + 44, idle_s=1.0))   # a full bucket at best
        assert shaped.count == 8 and shaped.per_op_s >= floor, (op, shaped)
        # a token bucket passes at most its burst plus the rate over the run: throughput may
        # exceed the payload rate by burst/elapsed, never the bucket's bound (stop 26's CI
        # measured 1.19618 MB/s against a payload rate of 1.19551, within that allowance)
        assert shaped.elapsed_s >= float(SHAPED.transfer_s(shaped.count * size, idle_s=1.0)), (op, shaped)
        assert shaped.per_op_s > run.find(0, "nbd", op, size).per_op_s
    # the model's NFS phases with no overheads and no disk time: the network's share alone
    mount = NfsMount(FileSystemNode(Partition(0, 1 * GIB, disk="vda"), kind="ext4"), SHAPED, version="4.2",
                     sync_export=False, client_overhead_s=0.0, server_op_s=0.0)
    reads = FileOps(time_s=np.zeros(3), kind=np.full(3, int(Kind.READ), np.int8), file=np.arange(3),
                    offset_bytes=np.zeros(3, np.int64), size_bytes=np.full(3, size, np.int64),
                    chunk_bytes=np.full(3, size, np.int64), direct=np.zeros(3, bool), dir_of_file=np.zeros(3, np.int64),
                    initial_bytes=np.full(3, size, np.int64))
    phases = {"write": metadata("create", 3, file_bytes=size), "read": reads,
              "remove": metadata("delete", 3, file_bytes=size)}
    for phase, ops in phases.items():
        measured = run.find(1, "nfs", phase, size, "4.2", "async")
        assert measured.count == 3
        link_s = float(nfs_client_ops(mount, ops).time_s[-1] - ops.time_s[-1])   # the RPCs' time on the link
        assert measured.elapsed_s >= 0.9 * link_s, phase

    with pytest.raises(ServerUnreachableError) as info:
        run_network_bench([Network(None, 0.0)], nbd_sizes=(4 * KIB,), nbd_bytes=32 * KIB, nfs_versions=(),
                          export_bytes=8 * MIB, server_ip="10.77.0.9", timeout_s=300)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("cannot reach the NBD server at 10.77.0.9:10809: ")
    assert "@@NET TEARDOWN clean" in info.value.output
    # an NFS server nobody serves: its mount gives up (retry=0, within 30 s), named in one line
    with pytest.raises(ServerUnreachableError) as info:
        run_network_bench([Network(None, 0.0)], nbd_sizes=(), nfs_versions=("3",), nfs_exports=("sync",),
                          nfs_files=1, export_bytes=8 * MIB, server_ip="10.77.0.9", timeout_s=300)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("cannot reach the NFS server at 10.77.0.9:/srv/sync: ")
    assert "@@NET TEARDOWN clean" in info.value.output
    assert _leftovers(tmp_path) == []
    assert sorted((tmp_path / "runs").glob("*.json")) == []     # every run's state file removed by its teardown
