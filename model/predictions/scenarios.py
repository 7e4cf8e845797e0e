"""What-if helpers: tables of predictions for several layouts, locations and stripe widths.

Pure functions over :mod:`diskmodel.model` (no I/O), for the notebooks and for
engineers predicting a layout before deployment:

* :func:`spaced_partitions`: equal partitions with equal gaps across a disk
  (the Dagenais study's 2 GB partitions with 7 GB gaps);
* :func:`location_table`: per partition, the mean media rate, the expected
  random-read service time and, optionally, predicted PostMark throughput;
* :func:`prediction_table`: PostMark throughput of several storage stacks
  under several workloads (:func:`diskmodel.model.predict.predict` for each pair);
* :func:`striped_random_read_time_s` and :func:`striping_table`: requests
  striped over N identical, independent disks, which serve their pieces in
  parallel (the request ends with the slowest disk);
* :func:`plot_predicted_vs_measured`: predicted against measured throughput
  from a frame such as :func:`diskmodel.model.fit.paper.predict_paper` returns;
* the block layers' what-ifs (fio jobs, :mod:`diskmodel.model.predictions.block_workloads`):
  :func:`block_table` (any block nodes), :func:`mirror_table` (RAID 1 over
  two disks that differ, by read policy), :func:`raid_level_table` (one
  disk, RAID 0, 1, 5, 6 and degraded RAID 5 over N alike),
  :func:`thin_table` (first write against overwrite by chunk size) and
  :func:`loop_depth_table` (0..N nested loop files, sparse or zero-filled).

Units: bytes and seconds in every column (``*_bytes``, ``*_s``,
``*_bytes_per_s``); ms and MB only when formatting.
"""
from __future__ import annotations

import numpy as np

from .._checks import finite_array, show, whole_number
from ..drive.disk import expected_random_service_time_s
from ..filesystems.filesystem import FileSystem, PageCache
from ..predict import predict
from ..stacks.stack import Stack, stack_on
from ..stacks.volume_on_disk import VolumeOnDisk
from ..stacks.volumes import Partition, StripedVolume
from ..stacks.lvm_mapping import LvmMapping
from ..drive.seek import random_pair_distance_pmf
from ..units import KIB

__all__ = ["spaced_partitions", "location_table", "prediction_table", "striped_random_read_time_s",
           "striped_volume_read_time_s", "striping_table", "plot_predicted_vs_measured", "block_table",
           "mirror_table", "raid_level_table", "thin_table", "loop_depth_table"]


#: Most partitions spaced_partitions cuts: each is an object (and, in
#: location_table, a row and possibly a predict() run); a tiny size over a
#: large capacity would otherwise loop for ages.  GPT holds 128 by default.
MAX_PARTITIONS = 100_000


def spaced_partitions(capacity_bytes: int, size_bytes: int, gap_bytes: int, *, first_start_bytes: int = 0,
                      prefix: str = "part") -> tuple[Partition, ...]:
    """As many partitions of *size_bytes* as fit, each *gap_bytes* after the previous one's end.

    The Dagenais study (Figure 2) used 2 GB partitions with 7 GB
    gaps: ``spaced_partitions(disk.capacity_bytes, 2 * 10**9, 7 * 10**9)``.
    Partitions are named ``{prefix}1``, ``{prefix}2``, ... from the outer edge
    (byte 0) inward.
    """
    capacity = whole_number("capacity_bytes", capacity_bytes, minimum=1)
    size = whole_number("size_bytes", size_bytes, minimum=1)
    gap = whole_number("gap_bytes", gap_bytes, minimum=0)
    start = whole_number("first_start_bytes", first_start_bytes, minimum=0)
    if start + size > capacity:
        raise ValueError(f"first_start_bytes + size_bytes ({start + size}) exceeds capacity_bytes ({capacity})")
    count = (capacity - start - size) // (size + gap) + 1
    if count > MAX_PARTITIONS:
        raise ValueError(f"size_bytes ({size}) and gap_bytes ({gap}) would cut {count} partitions from "
                         f"capacity_bytes ({capacity}); at most {MAX_PARTITIONS}")
    parts = []
    while start + size <= capacity:
        parts.append(Partition(start, size, f"{prefix}{len(parts) + 1}"))
        start += size + gap
    return tuple(parts)


def location_table(disk, partitions, *, request_size_bytes: int = 4096, workload=None,
                   filesystem: FileSystem | None = None, cache: PageCache | None = None):
    """Per partition: where it lies, how fast it streams, how fast it serves random reads.

    Parameters
    ----------
    disk : Disk
    partitions : sequence of Partition (or any volume on *disk*)
    request_size_bytes : int
        Size of the random reads [bytes].
    workload : PostMarkConfig or PostMarkCounts, optional
        If given, PostMark read and write throughput is predicted on each
        partition (an ext2/ext3 *filesystem*, default ``FileSystem()``, and
        *cache*, default ``PageCache()``).

    Returns
    -------
    pandas.DataFrame, one row per partition (index: its name), columns
    ``start_bytes``, ``size_bytes``, ``media_rate_bytes_per_s`` (harmonic mean
    over its bytes, eq. 6), ``sequential_rate_bytes_per_s`` (that, capped by
    the interface rate), ``random_read_s`` (expected T_DST of a uniformly
    random read in the partition, eqs. 3-8), ``random_iops`` and, with a
    workload, ``postmark_read_bytes_per_s``, ``postmark_write_bytes_per_s``.
    """
    import pandas as pd

    request = whole_number("request_size_bytes", request_size_bytes, minimum=1)
    partitions = list(partitions)
    if not partitions:
        raise ValueError("partitions must not be empty")
    rows = []
    for index, part in enumerate(partitions):
        if request > part.size_bytes:
            raise ValueError(f"request_size_bytes ({request}) exceeds partitions[{index}]'s size ({part.size_bytes})")
        first, end = part.physical_span
        placed = VolumeOnDisk(disk, part)
        media = placed.region().media_rate_bytes_per_s
        random_s = float(placed.access_time_s(request).total_s)
        row = {"name": getattr(part, "name", "") or f"#{index + 1}", "start_bytes": int(first),
               "size_bytes": int(part.size_bytes), "media_rate_bytes_per_s": media,
               "sequential_rate_bytes_per_s": min(media, disk.interface_rate_bytes_per_s),
               "random_read_s": random_s, "random_iops": 1.0 / random_s}
        if workload is not None:
            p = predict(stack_on(disk, part, filesystem), workload, cache)
            row["postmark_read_bytes_per_s"] = p.read_throughput_bytes_per_s
            row["postmark_write_bytes_per_s"] = p.write_throughput_bytes_per_s
        rows.append(row)
    return pd.DataFrame(rows).set_index("name")


def prediction_table(stacks: dict, workloads: dict, *, cache: PageCache | None = None,
                     mappings: dict | None = None):
    """Predicted PostMark throughput for every (stack, workload) pair.

    Parameters
    ----------
    stacks : dict {label: Stack}
        E.g. ``{name: paper_stack(name, disk=disk) for name in PAPER_STACKS}``.
    workloads : dict {label: PostMarkConfig or PostMarkCounts}
    cache : PageCache, optional
    mappings : dict {stack label: LvmMapping}, optional
        Empirical LVM mapping costs per stack (default none: the mechanistic
        part of T_LVM_MO only).

    Returns
    -------
    pandas.DataFrame with columns layout (the stack's label), workload,
    read_bytes_per_s, write_bytes_per_s, elapsed_s and the terms
    T_DO ... T_LVM_MO [s].
    """
    import pandas as pd

    if not stacks:
        raise ValueError("stacks must not be empty")
    bad = [label for label, stack in stacks.items() if not isinstance(stack, Stack)]
    if bad:
        raise ValueError(f"stacks[{bad[0]!r}] must be a Stack (got {show(stacks[bad[0]])})")
    if not workloads:
        raise ValueError("workloads must not be empty")
    mappings = dict(mappings or {})
    unknown = set(mappings) - set(stacks)
    if unknown:
        raise ValueError(f"mappings: no stack named {sorted(unknown)}")
    rows = []
    for wname, workload in workloads.items():
        for lname, stack in stacks.items():
            p = predict(stack, workload, cache, mappings.get(lname, LvmMapping()))
            rows.append({"layout": lname, "workload": wname, "read_bytes_per_s": p.read_throughput_bytes_per_s,
                         "write_bytes_per_s": p.write_throughput_bytes_per_s, "elapsed_s": p.elapsed_s,
                         **p.terms})
    return pd.DataFrame(rows)


def _max_positioning_s(disk, n: int, region_start_bytes: int, region_size_bytes: int | None,
                       bins: int = 512, grid: int = 4096) -> float:
    """E[max of n independent (seek + rotational latency)] over random pairs in a region [s].

    Each disk's positioning is seek(D) + U(0, T_rot), D the distance between
    two uniformly random cylinders of the region; the disks are independent
    (spindles not synchronised). E[max] = integral of 1 - F(x)^n, with F the
    mixture of uniforms over the seek-time distribution (binned).
    """
    geometry = disk.geometry
    start = region_start_bytes
    end = geometry.capacity_bytes if region_size_bytes is None else start + region_size_bytes
    c0, c1 = geometry.cylinder_of_byte(np.array([start, end - 1]))
    distance, probability = random_pair_distance_pmf(int(c1 - c0 + 1))
    seek = np.asarray(disk.seek_time_s(distance), dtype=float)
    period = disk.rotation_period_s
    # bin the seek times (pmf over up to ~10^5 distances) to keep F cheap; bin centres at the weighted means
    edges = np.linspace(seek.min(), seek.max() + 1e-12, bins + 1)
    which = np.clip(np.searchsorted(edges, seek, side="right") - 1, 0, bins - 1)
    weight = np.bincount(which, weights=probability, minlength=bins)
    centre = np.bincount(which, weights=probability * seek, minlength=bins)
    keep = weight > 0
    s, w = centre[keep] / weight[keep], weight[keep] / weight[keep].sum()
    x = np.linspace(0.0, s.max() + period, grid)
    cdf = np.clip((x[:, None] - s[None, :]) / period, 0.0, 1.0) @ w
    survival = 1.0 - cdf ** n
    return float(np.trapezoid(survival, x))


def striped_random_read_time_s(disk, size_bytes, n_disks: int, *, stripe_size_bytes: int = 64 * KIB,
                               region_start_bytes: int = 0, region_size_bytes: int | None = None) -> np.ndarray:
    """Expected time of a random read striped over *n_disks* identical, independent disks [s].

    A request of S bytes starts at a random stripe-aligned offset: it covers
    k = ceil(S / stripe) chunks dealt round-robin, so m = min(n, k) disks each
    read up to ceil(k / n) chunks, in parallel, each from the same region of
    its disk (``region_*``, default the whole disk). The request ends when the
    slowest disk does:

        T = T_CO + E[max over m of (T_Seek + T_RL)] + T_Settle + T_M + T_I

    with the positioning maximum taken over independent seek distances
    (uniform random pairs of cylinders) and rotational phases (eq. 8), and
    T_M, T_I those of the largest piece (each disk with its own link). For
    m = 1 this is :func:`diskmodel.model.expected_random_service_time_s`
    of the request. Queueing between requests is not modelled (one request
    at a time).

    Parameters
    ----------
    disk : Disk
    size_bytes : array_like
        Request sizes [bytes], > 0.
    n_disks : int
        Number of disks in the stripe set, >= 1.
    stripe_size_bytes : int
        Chunk size [bytes] (LVM's ``-I``, md's chunk), > 0.
    """
    n = whole_number("n_disks", n_disks, minimum=1)
    stripe = whole_number("stripe_size_bytes", stripe_size_bytes, minimum=1)
    capacity = disk.capacity_bytes
    start = whole_number("region_start_bytes", region_start_bytes, minimum=0, maximum=capacity - 1,
                         maximum_is="the disk's last byte")
    region = capacity - start if region_size_bytes is None else whole_number(
        "region_size_bytes", region_size_bytes, minimum=1, maximum=capacity - start,
        maximum_is="the disk's capacity less region_start_bytes")
    size = finite_array("size_bytes", size_bytes, positive=True, whole=True, nonempty=True)
    chunks = np.ceil(size / stripe)
    disks = np.minimum(chunks, n).astype(int)
    piece = np.minimum(np.ceil(chunks / n) * stripe, size)
    if np.any(piece > region):
        raise ValueError(f"size_bytes: a request of {show(size[piece > region].flat[0])} bytes puts "
                         f"{show(piece.max())} bytes on one disk, more than the region's {region}")
    base = expected_random_service_time_s(disk, piece, start, region_size_bytes)
    positioning = {m: _max_positioning_s(disk, m, start, region_size_bytes) for m in np.unique(disks)}
    pos = np.array([positioning[m] for m in disks.ravel()]).reshape(disks.shape)
    return base.command_overhead_s + pos + base.settle_s + base.transfer_s + base.interface_s


def striped_volume_read_time_s(disk, volume: StripedVolume, size_bytes) -> np.ndarray:
    """:func:`striped_random_read_time_s` for a :class:`StripedVolume` whose PVs lie on distinct disks.

    Every disk is *disk* (identical drives); the stripe width is the number of
    PVs, the chunk the volume's ``stripe_size_bytes``, and the random reads
    fall in the region the PVs' data areas occupy (the first PV's, the PVs
    being alike). Raises ValueError when two PVs share a disk (their pieces
    would queue on one arm, which this does not model) or the PVs differ in
    place or size.
    """
    if not isinstance(volume, StripedVolume):
        raise ValueError(f"volume must be a StripedVolume (got {type(volume).__name__})")
    if not volume.pvs_are_partitions:
        raise ValueError("volume: its physical_volumes must be partitions, one on each disk (got another block node)")
    if volume.n_disks != volume.n_physical_volumes:
        raise ValueError(f"volume: its {volume.n_physical_volumes} PVs lie on {volume.n_disks} disks; "
                         "striping over PVs of one disk is not parallel")
    pvs = volume.physical_volumes
    if len({(pv.start_bytes, pv.size_bytes) for pv in pvs}) != 1:
        raise ValueError("volume: the PVs must have the same start and size on their disks")
    per_pv = volume.size_bytes // volume.n_physical_volumes
    return striped_random_read_time_s(disk, size_bytes, volume.n_physical_volumes,
                                      stripe_size_bytes=volume.stripe_size_bytes,
                                      region_start_bytes=pvs[0].start_bytes + volume.pe_start_bytes,
                                      region_size_bytes=per_pv)


def striping_table(disk, disk_counts, request_sizes_bytes, *, stripe_size_bytes: int = 64 * KIB,
                   region_start_bytes: int = 0, region_size_bytes: int | None = None):
    """Random-read time and throughput, and streaming rate, by number of disks and request size.

    Returns a pandas.DataFrame with columns n_disks, request_size_bytes,
    random_read_s (:func:`striped_random_read_time_s`),
    random_throughput_bytes_per_s (request size / that time) and
    sequential_rate_bytes_per_s (n times one disk's mean media rate over the
    region, each capped by the interface rate).
    """
    import pandas as pd

    counts = [whole_number("disk_counts", c, minimum=1) for c in np.atleast_1d(disk_counts)]
    if not counts:
        raise ValueError("disk_counts must not be empty")
    sizes = finite_array("request_sizes_bytes", request_sizes_bytes, positive=True, whole=True,
                         nonempty=True).ravel()
    start = whole_number("region_start_bytes", region_start_bytes, minimum=0)
    length = disk.capacity_bytes - start if region_size_bytes is None else region_size_bytes
    one = min(VolumeOnDisk(disk, Partition(start, length)).region().media_rate_bytes_per_s,
              disk.interface_rate_bytes_per_s)
    rows = []
    for n in counts:
        times = striped_random_read_time_s(disk, sizes, n, stripe_size_bytes=stripe_size_bytes,
                                           region_start_bytes=start, region_size_bytes=region_size_bytes)
        for s, t in zip(sizes, np.atleast_1d(times)):
            rows.append({"n_disks": n, "request_size_bytes": int(s), "random_read_s": float(t),
                         "random_throughput_bytes_per_s": float(s / t), "sequential_rate_bytes_per_s": n * one})
    return pd.DataFrame(rows)


def plot_predicted_vs_measured(frame, ax=None, *, by: str = "layout"):
    """Predicted against measured throughput (log-log, with the 1:1 line and +-20 %).

    *frame* has columns measured_bytes_per_s, predicted_bytes_per_s and *by*
    (a column to colour by), as :func:`diskmodel.model.fit.paper.predict_paper`
    returns. Returns the Axes.
    """
    import matplotlib.pyplot as plt

    missing = {"measured_bytes_per_s", "predicted_bytes_per_s", by} - set(frame.columns)
    if missing:
        raise ValueError(f"frame lacks columns {sorted(missing)}")
    if ax is None:
        _, ax = plt.subplots()
    for key, group in frame.groupby(by, sort=False):
        ax.scatter(group["measured_bytes_per_s"] / 1e6, group["predicted_bytes_per_s"] / 1e6, label=str(key))
    values = np.concatenate([frame["measured_bytes_per_s"], frame["predicted_bytes_per_s"]]) / 1e6
    line = np.geomspace(values.min() / 1.5, values.max() * 1.5, 50)
    ax.plot(line, line, color="k", lw=0.8, label="predicted = measured")
    ax.fill_between(line, line / 1.2, line * 1.2, color="grey", alpha=0.2, label="within 20 %")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured throughput [MB/s]")
    ax.set_ylabel("predicted throughput [MB/s]")
    ax.legend(fontsize="small")
    return ax


# ------------------------------------------------------------------ the block layers

def block_table(nodes: dict, jobs: dict | None = None, env=None):
    """Predicted fio jobs on block nodes: one row per (layer, job).

    Parameters
    ----------
    nodes : dict {label: block node}
    jobs : dict {label: FioJob}, default :func:`diskmodel.model.predictions.block_workloads.fio_jobs`
    env : BlockEnv
        The disks the nodes' partitions name.

    Notes
    -----
    Returns a pandas.DataFrame with columns layer, job, throughput_bytes_per_s,
    iops, latency_s, member_ios and the latency's parts [s] (0 where a layer
    has no such part).
    """
    import pandas as pd

    from ..stacks.block import BlockEnv
    from .block_workloads import fio_jobs
    from ..predict import predict_block

    if not nodes:
        raise ValueError("nodes must not be empty")
    if not isinstance(env, BlockEnv):
        raise ValueError(f"env must be a BlockEnv (got {show(env)})")
    jobs = fio_jobs() if jobs is None else jobs
    rows = []
    for label, node in nodes.items():
        for name, job in jobs.items():
            p = predict_block(node, job, env)
            rows.append({"layer": label, "job": name, "throughput_bytes_per_s": p.throughput_bytes_per_s,
                         "iops": p.iops, "latency_s": p.latency_s, "member_ios": sum(p.member_requests.values()),
                         **p.parts})
    return pd.DataFrame(rows).fillna(0.0)


def _whole_disk_partition(disk_name: str, disk, size_bytes: int | None) -> Partition:
    size = disk.capacity_bytes if size_bytes is None else whole_number("size_bytes", size_bytes, minimum=1,
                                                                        maximum=disk.capacity_bytes)
    return Partition(0, size, f"/dev/{disk_name}1", disk_name)


def mirror_table(disk_a, disk_b, jobs: dict | None = None, *, size_bytes: int | None = None):
    """RAID 1 over two disks that may differ (two presets, two calibrations), against each alone.

    Rows for each member alone and for the mirror under each read policy
    (:data:`diskmodel.model.stacks.raid.READ_POLICIES`); members of *size_bytes*
    (default the smaller disk) from the start of each disk.  See :func:`block_table`.
    """
    from ..stacks.block import BlockEnv
    from ..stacks.raid import READ_POLICIES, mirror

    size = min(disk_a.capacity_bytes, disk_b.capacity_bytes) if size_bytes is None else size_bytes
    a, b = _whole_disk_partition("a", disk_a, size), _whole_disk_partition("b", disk_b, size)
    nodes = {f"{disk_a.name} alone": a, f"{disk_b.name} alone": b}
    nodes.update({f"raid1 ({policy})": mirror((a, b), read_policy=policy) for policy in READ_POLICIES})
    return block_table(nodes, jobs, BlockEnv({"a": disk_a, "b": disk_b}))


def raid_level_table(disk, members: int = 4, jobs: dict | None = None, *, chunk_size_bytes: int = 64 * KIB,
                     size_bytes: int | None = None):
    """One disk against RAID 0, 1, 5, 6 over *members* alike disks."""
    from ..stacks.block import BlockEnv
    from ..stacks.raid import RaidArray

    n = whole_number("members", members, minimum=4)
    names = [f"d{i}" for i in range(n)]
    parts = tuple(_whole_disk_partition(name, disk, size_bytes) for name in names)
    nodes = {"one disk": parts[0]}
    for kind in ("raid0", "raid1", "raid5", "raid6"):
        nodes[kind] = RaidArray(kind, parts, chunk_size_bytes=chunk_size_bytes)
    return block_table(nodes, jobs, BlockEnv(dict.fromkeys(names, disk)))


def thin_table(disk, chunk_sizes_bytes=(64 * KIB, 256 * KIB, 1024 * KIB), jobs: dict | None = None, *,
               pool_size_bytes: int | None = None):
    """A thin volume's first write against its overwrite, by pool chunk size (and the disk alone).

    Rows of :func:`block_table` with a ``pass`` column: "first write"
    (``FioJob.fresh``) or "overwrite"; reads are the same in both.
    """
    import pandas as pd

    from ..stacks.block import BlockEnv
    from .block_workloads import fio_jobs
    from ..stacks.thin import ThinVolume

    base = _whole_disk_partition("a", disk, None)
    pool = base.size_bytes // 2 if pool_size_bytes is None else pool_size_bytes
    nodes = {"disk alone": base}
    nodes.update({f"thin, {c // KIB} KiB chunks": ThinVolume(base, pool, pool, chunk_size_bytes=c)
                  for c in chunk_sizes_bytes})
    jobs = {k: j for k, j in (fio_jobs() if jobs is None else jobs).items() if j.is_write}
    env = BlockEnv({"a": disk})
    frames = [block_table(nodes, {k: j.evolve(fresh=fresh) for k, j in jobs.items()}, env).assign(
        **{"pass": "first write" if fresh else "overwrite"}) for fresh in (True, False)]
    return pd.concat(frames, ignore_index=True).fillna(0.0)


def loop_depth_table(disk, depths=(0, 1, 2, 3), jobs: dict | None = None, *,
                     allocations=("sparse", "zero_filled"), fresh: bool = True):
    """0..N nested loop files over *disk*, sparse or zero-filled (first writes when *fresh*)."""
    from ..stacks.block import BlockEnv
    from .block_workloads import fio_jobs
    from ..stacks.loop_file import nested_loop_files

    base = _whole_disk_partition("a", disk, None)
    nodes = {}
    for allocation in allocations:
        for depth in depths:
            label = "disk" if depth == 0 else f"{depth} loop, {allocation.replace('_', '-')}"
            nodes.setdefault(label, nested_loop_files(base, depth, allocation=allocation))
    jobs = fio_jobs() if jobs is None else jobs
    jobs = {k: j.evolve(fresh=fresh and j.is_write) for k, j in jobs.items()}
    return block_table(nodes, jobs, BlockEnv({"a": disk}))
