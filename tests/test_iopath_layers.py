"""The block layers of the I/O path (model/iopath): each against a stream worked out by hand, plus
hypothesis properties (bytes conserved through the linear layers, mirrors write every byte to each
member, parity adds exactly the stripe arithmetic, thin zeroing writes whole blocks)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from diskmodel.model.iopath import Flag, Op, Stream, concat
from diskmodel.model.iopath.block_layer import merge, split
from diskmodel.model.iopath.dm_linear import dm_linear
from diskmodel.model.iopath.dm_striped import dm_striped
from diskmodel.model.iopath.dm_thin import dm_thin
from diskmodel.model.iopath.loop import loop
from diskmodel.model.iopath.md_parity import md_raid5, md_raid6
from diskmodel.model.iopath.md_raid import md_raid0, md_raid1, md_raid10
from diskmodel.model.iopath.partition import partition

KiB = 1024
R, W, F, D = int(Op.READ), int(Op.WRITE), int(Op.FLUSH), int(Op.DISCARD)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rows(stream: Stream) -> list[tuple]:
    """(op, offset_bytes, size_bytes, parent) per request, the shape the hand-computed tables use."""
    return list(zip(stream.op.tolist(), stream.offset_bytes.tolist(), stream.size_bytes.tolist(), stream.parent.tolist()))


def one_line(excinfo, *fragments):
    msg = str(excinfo.value)
    assert "\n" not in msg, msg
    for frag in fragments:
        assert frag in msg, msg


def reqs(*rs) -> Stream:
    """Requests as (op, offset_bytes, size_bytes[, flags]); time_s is the index, in seconds / 100."""
    return Stream.from_records([(i / 100, r[0], r[1], r[2], *r[3:]) for i, r in enumerate(rs)])


# Hypothesis: reads and writes at 512-byte granularity within 4 MiB.
request = st.tuples(
    st.sampled_from([R, W]),
    st.integers(0, 8191).map(lambda s: s * 512),
    st.integers(1, 512).map(lambda s: s * 512),
)
streams = st.lists(request, min_size=1, max_size=30).map(lambda rs: reqs(*rs))


def covered_back(stream: Stream, outs: dict[str, Stream], to_logical) -> None:
    """Every output piece maps back (``to_logical(device, offset)``) inside its parent's range, and the
    pieces of one parent tile that range exactly: no byte lost, none added."""
    pieces = {}
    for name, s in outs.items():
        for op, off, size, parent in rows(s):
            if op == F:
                continue
            pieces.setdefault(parent, []).append((to_logical(name, off), size, op))
    for i, (op, off, size, _) in enumerate(rows(stream)):
        got = sorted(pieces.pop(i))
        assert all(p[2] == op for p in got)
        assert got[0][0] == off
        for a, b in zip(got, got[1:]):
            assert a[0] + a[1] == b[0], got
        assert got[-1][0] + got[-1][1] == off + size
    assert not pieces


# -- the stream ---------------------------------------------------------------------------------
def test_stream_totals_histogram_and_frame():
    s = reqs((R, 0, 4096), (W, 4096, 8192), (W, 0, 6000), (F, 0, 0), (D, 0, 65536))
    # reads: one of 4096; writes: 8192 + 6000 = 14192 in two requests
    assert s.totals() == {"read_bytes": 4096, "write_bytes": 14192, "read_requests": 1, "write_requests": 2}
    # 4096 -> bin 4096; 8192 -> bin 8192; 6000 in [4096, 8192) -> bin 4096; flush and discard excluded
    assert s.size_histogram() == {4096: 2, 8192: 1}
    assert s.size_histogram(Op.DISCARD) == {65536: 1}
    frame = s.to_frame()
    assert list(frame.columns) == ["time_s", "op", "offset_bytes", "size_bytes", "flags", "parent"]
    assert frame["op"].tolist() == ["read", "write", "write", "flush", "discard"]
    both = concat([s, s])
    assert len(both) == 10 and both.write_bytes == 2 * 14192
    with pytest.raises(ValueError):
        s.offset_bytes[0] = 1  # read-only arrays: the stream is frozen


@pytest.mark.parametrize(
    "kwargs, fragments",
    [
        (dict(op=[W], offset_bytes=[0], size_bytes=[0]), ("size_bytes[0] = 0",)),
        (dict(op=[W, 7], offset_bytes=[0, 0], size_bytes=[1, 1]), ("op[1] = 7",)),
        (dict(op=[R], offset_bytes=[-512], size_bytes=[512]), ("offset_bytes[0] = -512",)),
        (dict(op=[F], offset_bytes=[0], size_bytes=[4096]), ("size_bytes[0] = 4096", "flush")),
        (dict(op=[R, R], offset_bytes=[0], size_bytes=[1, 1]), ("offset_bytes has 1 entries",)),
        (dict(op=[R], offset_bytes=[0], size_bytes=[512], flags=[1 << 10]), ("flags[0] = 1024",)),
        (dict(op=[R], offset_bytes=[0], size_bytes=[512], parent=[-2]), ("parent[0] = -2",)),
        (dict(op=np.array([257]), offset_bytes=[0], size_bytes=[512]), ("op[0] = 257",)),
        (dict(op=[R], offset_bytes=[0], size_bytes=[512], flags=np.array([65536 + 1])), ("flags[0] = 65537",)),
        (dict(op=[R], offset_bytes=[0.5], size_bytes=[512]), ("offset_bytes[0] = 0.5",)),
        (dict(time_s=[float("nan")], op=[R], offset_bytes=[0], size_bytes=[512]), ("time_s[0]",)),
    ],
)
def test_stream_rejects_bad_fields_in_one_line(kwargs, fragments):
    with pytest.raises(ValueError) as e:
        Stream.from_arrays(**kwargs)
    one_line(e, *fragments)


# -- partition ----------------------------------------------------------------------------------
def test_partition_shifts_and_refuses_past_end():
    s = reqs((R, 0, 4096), (W, 1 * KiB * KiB - 4096, 4096), (F, 0, 0))
    out = partition(s, start_bytes=2048 * 512, length_bytes=KiB * KiB)
    # start 2048 sectors = 1048576 bytes: 0 -> 1048576; 1044480 -> 2093056; the flush keeps no range
    assert rows(out) == [(R, 1048576, 4096, 0), (W, 2093056, 4096, 1), (F, 0, 0, 2)]
    with pytest.raises(ValueError) as e:
        partition(reqs((W, KiB * KiB - 512, 1024)), 0, KiB * KiB)
    one_line(e, "partition", "request 0", "length_bytes 1048576")


@FAST
@given(streams, st.integers(0, 1 << 30))
def test_partition_conserves_bytes(s, start):
    out = partition(s, start, 8 * KiB * KiB)
    covered_back(s, {"d": out}, lambda _, off: off - start)


# -- dm-linear ----------------------------------------------------------------------------------
def test_dm_linear_splits_at_segment_boundary():
    table = [(0, 1 << 20, "sda", 8 << 20), (1 << 20, 1 << 20, "sdb", 0), (2 << 20, 2 << 20, "sda", 0)]
    s = reqs((W, (1 << 20) - 4096, 12288), (R, (2 << 20) - 512, 1024), (F, 0, 0))
    out = dm_linear(s, table)
    # request 0: 1044480..1056768 crosses 1 MiB: 4096 bytes at sda 8 MiB + 1044480 = 9433088,
    #            8192 bytes at sdb 0; request 1: 512 at sdb 1048064, 512 at sda 0.
    assert rows(out["sda"]) == [(W, 9433088, 4096, 0), (R, 0, 512, 1), (F, 0, 0, 2)]
    assert rows(out["sdb"]) == [(W, 0, 8192, 0), (R, 1048064, 512, 1), (F, 0, 0, 2)]
    with pytest.raises(ValueError) as e:
        dm_linear(s, [(0, 1 << 20, "sda", 0), (2 << 20, 1 << 20, "sdb", 0)])
    one_line(e, "segments[1] start = 2097152")
    with pytest.raises(ValueError) as e:
        dm_linear(reqs((R, 4 << 20, 512)), table)
    one_line(e, "dm-linear", "request 0")


@FAST
@given(streams, st.lists(st.integers(1, 64), min_size=1, max_size=5))
def test_dm_linear_conserves_bytes(s, lengths_kib):
    lengths = [n * 64 * KiB for n in lengths_kib]
    lengths[-1] += 5 << 20  # the table covers every request (they end before 4.25 MiB)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).tolist()
    table = [(st_, ln, f"d{i % 2}", (i << 30) + 512 * i) for i, (st_, ln) in enumerate(zip(starts, lengths))]

    def back(dev, off):
        for st_, ln, d, doff in table:
            if d == dev and doff <= off < doff + ln:
                return st_ + off - doff
        raise AssertionError((dev, off))

    covered_back(s, dm_linear(s, table), back)


# -- dm-striped and md RAID 0 -------------------------------------------------------------------
def test_dm_striped_hand_computed():
    # chunk 64 KiB over 3 devices. Write at 60 KiB of 136 KiB = 60..196 KiB:
    #   60..64 (chunk 0 -> a, row 0: 60 KiB), 64..128 (chunk 1 -> b at 0), 128..192 (chunk 2 -> c at 0),
    #   192..196 (chunk 3 -> a, row 1: 64 KiB).
    s = reqs((W, 60 * KiB, 136 * KiB))
    out = dm_striped(s, ["a", "b", "c"], 64 * KiB, device_offset_bytes=[0, 0, 512])
    assert rows(out["a"]) == [(W, 60 * KiB, 4 * KiB, 0), (W, 64 * KiB, 4 * KiB, 0)]
    assert rows(out["b"]) == [(W, 0, 64 * KiB, 0)]
    assert rows(out["c"]) == [(W, 512, 64 * KiB, 0)]


def test_md_raid0_hand_computed_and_flush_to_all():
    # chunk 512 KiB over 2 members, data offset 1 MiB: read 1 MiB at 768 KiB -> chunk 1 (b) 256 KiB,
    # chunk 2 (a, row 1) 512 KiB, chunk 3 (b, row 1) 256 KiB.
    s = reqs((F, 0, 0), (R, 768 * KiB, 1024 * KiB))
    out = md_raid0(s, ["a", "b"], 512 * KiB, data_offset_bytes=1 << 20)
    assert rows(out["a"]) == [(F, 0, 0, 0), (R, (1 << 20) + 512 * KiB, 512 * KiB, 1)]
    assert rows(out["b"]) == [(F, 0, 0, 0), (R, (1 << 20) + 256 * KiB, 256 * KiB, 1), (R, (1 << 20) + 512 * KiB, 256 * KiB, 1)]


@FAST
@given(streams, st.integers(2, 5), st.sampled_from([4 * KiB, 64 * KiB, 512 * KiB]), st.booleans())
def test_striping_conserves_bytes(s, n, chunk, use_md):
    names = [f"m{i}" for i in range(n)]
    out = md_raid0(s, names, chunk) if use_md else dm_striped(s, names, chunk)

    def back(dev, off):
        j = names.index(dev)
        row, within = divmod(off, chunk)
        return (row * n + j) * chunk + within

    covered_back(s, out, back)
    assert sum(o.read_bytes + o.write_bytes for o in out.values()) == s.read_bytes + s.write_bytes


# -- md RAID 1 and RAID 10 ----------------------------------------------------------------------
def test_md_raid1_read_balance():
    s = reqs((W, 0, 8192), (R, 8192, 4096), (R, 1 << 20, 4096), (R, (1 << 20) + 4096, 4096), (R, 12288, 4096))
    # members idle (queue depth 1): a read stays on the mirror it continues, else the first mirror.
    idle = md_raid1(s, ["a", "b"])
    assert rows(idle["a"]) == [(W, 0, 8192, 0), (R, 8192, 4096, 1), (R, 1 << 20, 4096, 2), (R, (1 << 20) + 4096, 4096, 3), (R, 12288, 4096, 4)]
    assert rows(idle["b"]) == [(W, 0, 8192, 0)]
    # members busy: nearest head. After the write both heads are at 8192: read 1 -> a (tie, first),
    # a's head 12288; read 2 at 1 MiB: distances a 1036288, b 1040384 -> a, a's head 1 MiB + 4096;
    # read 3 continues a's last read -> a; read 4 at 12288: a is 1 MiB - 4096 away, b 4096 -> b.
    busy = md_raid1(s, ["a", "b"], members_idle=False)
    assert [p for _, _, _, p in rows(busy["a"])] == [0, 1, 2, 3]
    assert rows(busy["b"]) == [(W, 0, 8192, 0), (R, 12288, 4096, 4)]


def test_md_raid1_pending_sends_a_discontiguous_piece_to_the_idle_mirror():
    # raid1.c read_balance (6.1): one instant's reads of a file in three extents (0, 1 MiB, 3 MiB).
    # Extent 1 -> a (both idle, first); extent 2 is not sequential and a has one pending -> b;
    # extent 3: both one pending, rotational -> the nearest head, b's (1 MiB + 64 KiB). Next
    # instant (none pending): the read continuing extent 2 is nobody's next sector now (b moved
    # on) -> a, the first idle; the read continuing extent 3 is b's next sector -> b.
    M = 1 << 20
    s = Stream.from_records([(0.0, R, 0, 65536), (0.0, R, M, 65536), (0.0, R, 3 * M, 65536),
                             (0.01, R, M + 65536, 65536), (0.02, R, 3 * M + 65536, 65536)])
    out = md_raid1(s, ["a", "b"])
    assert [p for *_, p in rows(out["a"])] == [0, 3]
    assert [p for *_, p in rows(out["b"])] == [1, 2, 4]
    # A metadata read (the inode) is done before read(2) issues the data: not pending, so the
    # data read, not sequential, still finds a idle.
    s = Stream.from_records([(0.0, R, 8 * M, 4096, int(Flag.META)), (0.0, R, M, 65536)])
    assert [p for *_, p in rows(md_raid1(s, ["a", "b"])["a"])] == [0, 1]
    # Every mirror busy (a deep queue): the read at 2 MiB goes to a (heads tie at 0); the read
    # 4 KiB past its end is not sequential. Rotational: the nearest head, a's. Non-rotational: the
    # least pending, b.
    s = Stream.from_records([(0.0, R, 2 * M, 4096), (0.0, R, 2 * M + 8192, 4096)])
    assert [p for *_, p in rows(md_raid1(s, ["a", "b"], members_idle=False)["a"])] == [0, 1]
    assert [p for *_, p in rows(md_raid1(s, ["a", "b"], members_idle=False, nonrot=True)["b"])] == [1]


def test_md_raid10_near2_hand_computed():
    # 3 members, chunk 4 KiB: chunk c's copies in slots 2c, 2c+1; slot p = member p % 3, row p // 3.
    # chunk 0 -> a0 b0; chunk 1 -> c0 a1; chunk 2 -> b1 c1 (row r at offset r * 4096).
    s = reqs((W, 0, 10000), (R, 3000, 8192))
    out = md_raid10(s, ["a", "b", "c"], 4096)
    assert rows(out["a"]) == [(W, 0, 4096, 0), (W, 4096, 4096, 0), (R, 3000, 1096, 1)]
    assert rows(out["b"]) == [(W, 0, 4096, 0), (W, 4096, 1808, 0), (R, 4096, 3000, 1)]
    assert rows(out["c"]) == [(W, 0, 4096, 0), (W, 4096, 1808, 0), (R, 0, 4096, 1)]


@FAST
@given(streams, st.integers(2, 4), st.booleans())
def test_a_mirror_writes_every_byte_to_each_member(s, n, idle):
    names = [f"m{i}" for i in range(n)]
    out = md_raid1(s, names, data_offset_bytes=4096, members_idle=idle)
    writes = s.take(s.op == W)
    for name in names:
        got = out[name].take(out[name].op == W)
        assert rows(got) == [(W, o + 4096, z, p) for (_, o, z, _), p in zip(rows(writes), np.flatnonzero(s.op == W))]
    # every read is served once, by one member
    assert sum(o.read_bytes for o in out.values()) == s.read_bytes
    assert sum(o.read_requests for o in out.values()) == s.read_requests


@FAST
@given(streams, st.integers(2, 5))
def test_raid10_writes_each_byte_twice_reads_once(s, n):
    out = md_raid10(s, [f"m{i}" for i in range(n)], 64 * KiB)
    assert sum(o.write_bytes for o in out.values()) == 2 * s.write_bytes
    assert sum(o.read_bytes for o in out.values()) == s.read_bytes


# -- md RAID 5 and RAID 6 -----------------------------------------------------------------------
def test_raid5_one_page_write_rmw_and_rcw():
    one = reqs((W, 0, 4096))
    # 5 members (D = 4): stripe 0 has P on member 4 - 0 = 4 (e), data 0 on (4 + 1 + 0) % 5 = 0 (a).
    # rmw reads 1 data + P = 2 < rcw reads the 3 other data pages -> rmw: read a, e; write a, e.
    out = md_raid5(one, list("abcde"), 64 * KiB)
    assert rows(out["a"]) == [(R, 0, 4096, 0), (W, 0, 4096, 0)]
    assert rows(out["e"]) == [(R, 0, 4096, 0), (W, 0, 4096, 0)]
    assert all(len(out[m]) == 0 for m in "bcd")
    # 4 members (D = 3): P on d, data 0 on a; rmw = 2 = rcw -> md's default picks rcw: read b, c.
    out = md_raid5(one, list("abcd"), 64 * KiB)
    assert [rows(out[m]) for m in "abcd"] == [[(W, 0, 4096, 0)], [(R, 0, 4096, 0)], [(R, 0, 4096, 0)], [(W, 0, 4096, 0)]]
    # rmw_level "prefer" takes rmw on the tie; "disable" never does.
    out = md_raid5(one, list("abcd"), 64 * KiB, rmw_level="prefer")
    assert [o.totals()["read_requests"] for o in out.values()] == [1, 0, 0, 1]
    out = md_raid5(one, list("abcde"), 64 * KiB, rmw_level="disable")
    assert [o.read_requests for o in out.values()] == [0, 1, 1, 1, 0]


def test_raid5_partial_and_full_stripe_writes():
    # 4 members, chunk 4 KiB (D = 3), stripe 0: P on d, data 0, 1, 2 on a, b, c. Writing 0..8192
    # overwrites data 0 and 1: rmw = 2 + 1 = 3 > rcw = 3 - 2 = 1 -> read c, write a, b and P.
    out = md_raid5(reqs((W, 0, 8192)), list("abcd"), 4096)
    assert [rows(out[m]) for m in "abcd"] == [[(W, 0, 4096, 0)], [(W, 0, 4096, 0)], [(R, 0, 4096, 0)], [(W, 0, 4096, 0)]]
    # 3 members, chunk 64 KiB (D = 2): a full stripe 0..128 KiB writes 16 pages to each member, a
    # request's adjacent pages coming out as one 64 KiB request; no reads. 128 KiB * 3 / 2 = 192 KiB.
    out = md_raid5(reqs((W, 0, 128 * KiB)), list("abc"), 64 * KiB)
    assert [rows(out[m]) for m in "abc"] == [[(W, 0, 64 * KiB, 0)]] * 3
    assert sum(o.write_bytes for o in out.values()) == 192 * KiB


def test_raid5_layout_rotates_parity_left_symmetric():
    # 3 members, chunk 4 KiB (D = 2): stripe s has P on 2 - s % 3 and data l on (P + 1 + l) % 3.
    # Chunks 0..5: stripe 0 P=c, d0=a, d1=b; stripe 1 P=b, d0=c, d1=a; stripe 2 P=a, d0=b, d1=c.
    s = reqs(*[(R, c * 4096, 4096) for c in range(6)])
    out = md_raid5(s, list("abc"), 4096)
    assert rows(out["a"]) == [(R, 0, 4096, 0), (R, 4096, 4096, 3)]
    assert rows(out["b"]) == [(R, 0, 4096, 1), (R, 8192, 4096, 4)]
    assert rows(out["c"]) == [(R, 4096, 4096, 2), (R, 8192, 4096, 5)]


def test_raid6_one_page_write():
    # 6 members (D = 4), stripe 0: P on 6 - 1 - 0 = 5 (f), Q on (5 + 1) % 6 = 0 (a),
    # data 0 on (5 + 2 + 0) % 6 = 1 (b). rmw = 1 + 2 = 3 = rcw (3 other data pages) -> rcw:
    # read c, d, e; write b, f, a. With 7 members (D = 5) rcw = 4 > rmw = 3 -> read and write b, P, Q.
    out = md_raid6(reqs((W, 0, 4096)), list("abcdef"), 64 * KiB)
    assert [o.read_requests for o in out.values()] == [0, 0, 1, 1, 1, 0]
    assert [o.write_requests for o in out.values()] == [1, 1, 0, 0, 0, 1]
    out = md_raid6(reqs((W, 0, 4096)), list("abcdefg"), 64 * KiB)
    # 7 members: P on 6 (g), Q on 0 (a), data 0 on (6 + 2) % 7 = 1 (b)
    assert [o.read_requests for o in out.values()] == [1, 1, 0, 0, 0, 0, 1]
    assert [o.write_requests for o in out.values()] == [1, 1, 0, 0, 0, 0, 1]


def test_raid_parity_refuses_discard_and_bad_chunk():
    with pytest.raises(ValueError) as e:
        md_raid5(reqs((D, 0, 65536)), list("abc"), 65536)
    one_line(e, "md raid5", "request 0", "devices_handle_discard_safely")
    with pytest.raises(ValueError) as e:
        md_raid6(reqs((W, 0, 512)), list("abcd"), 6000)
    one_line(e, "md raid6", "chunk_bytes = 6000")
    with pytest.raises(ValueError) as e:
        md_raid5(reqs((W, 0, 512)), list("abc"), 4096, rmw_level="always")
    one_line(e, "rmw_level = 'always'")


@FAST
@given(
    st.sampled_from([5, 6]),
    st.integers(4, 7),
    st.sampled_from([4 * KiB, 16 * KiB, 64 * KiB]),
    st.lists(st.tuples(st.integers(0, 40), st.integers(1, 3)), min_size=1, max_size=8),
)
def test_parity_adds_exactly_the_stripe_arithmetic(level, n, chunk, picks):
    n_par = 1 if level == 5 else 2
    d = n - n_par
    stripe_bytes = d * chunk
    # full-stripe writes: no reads, written bytes = data * N / (N - parities)
    s = reqs(*[(W, a * stripe_bytes, k * stripe_bytes) for a, k in picks])
    fn = md_raid5 if level == 5 else md_raid6
    out = fn(s, [f"m{i}" for i in range(n)], chunk)
    assert sum(o.read_bytes for o in out.values()) == 0
    assert sum(o.write_bytes for o in out.values()) * d == s.write_bytes * n
    # one-page writes with rmw_level "prefer": rmw reads the page and the parities (1 + parities),
    # rcw the other D - 1 data pages; md takes rmw when it reads no more. Writes: page + parities.
    pages = reqs(*[(W, a * 4096, 4096) for a, _ in picks])
    out = fn(pages, [f"m{i}" for i in range(n)], chunk, rmw_level="prefer")
    reads = 1 + n_par if 1 + n_par <= d - 1 else d - 1
    assert sum(o.read_requests for o in out.values()) == len(pages) * reads
    assert sum(o.write_requests for o in out.values()) == len(pages) * (1 + n_par)


# -- loop ---------------------------------------------------------------------------------------
def test_loop_direct_io_maps_extents_and_marks_allocation():
    # image of 1 MiB, one extent: file 0..8192 at disk 1000000; the rest is a hole.
    s = reqs((R, 0, 8192), (W, 4096, 8192), (R, 8192, 4096), (W, 8192, 4096), (R, 65536, 4096), (F, 0, 0))
    out = loop(s, 1 << 20, [(0, 8192, 1000000)])
    # request 1 splits at 8192: 4096 at disk 1004096, 4096 in the hole (first write: ALLOC).
    assert rows(out.device) == [(R, 1000000, 8192, 0), (W, 1004096, 4096, 1)]
    assert rows(out.file) == [(W, 8192, 4096, 1), (R, 8192, 4096, 2), (W, 8192, 4096, 3), (F, 0, 0, 5)]
    assert out.file.flags.tolist() == [Flag.ALLOC, 0, 0, 0]
    # request 4 reads a never-written hole: zeros, no I/O anywhere
    assert out.allocated.tolist() == [[8192, 4096]]
    with pytest.raises(ValueError) as e:
        loop(s, 1 << 20, [], direct_io=False)
    one_line(e, "buffered loop needs the page-cache layer")
    with pytest.raises(ValueError) as e:
        loop(reqs((W, 1 << 20, 512)), 1 << 20, [])
    one_line(e, "loop", "request 0", "file_bytes 1048576")


@FAST
@given(streams, st.lists(st.tuples(st.integers(0, 1023), st.integers(1, 64)), max_size=6))
def test_loop_sends_every_write_once_and_allocates_only_holes(s, ext_pages):
    # extents at page granularity, made disjoint, each at a disk offset 1 GiB apart
    taken, extents = set(), []
    for i, (start, n) in enumerate(ext_pages):
        pages = set(range(start, start + n))
        if not pages & taken:
            taken |= pages
            extents.append((start * 4096, n * 4096, (i + 1) << 30))
    out = loop(s, 8 << 20, extents)
    assert out.device.write_bytes + out.file.write_bytes == s.write_bytes
    assert out.device.read_bytes + out.file.read_bytes <= s.read_bytes
    for off, length in out.allocated.tolist():
        assert all(p not in taken for p in range(off // 4096, (off + length) // 4096))
    if not extents:
        assert len(out.device) == 0


# -- dm-thin ------------------------------------------------------------------------------------
def test_dm_thin_provisions_in_first_write_order_and_zeroes():
    K = 64 * KiB
    s = reqs((R, 0, 4096), (W, 4096, 4096), (W, 5 * K, K), (R, 0, 8192), (W, 8192, 4096, Flag.FUA), (R, 3 * K, 512))
    out = dm_thin(s, K)
    # request 0 reads unprovisioned block 0: no I/O. Request 1 provisions block 0 -> data block 0:
    # partial, so zero data block 0 (64 KiB) first. Request 2 provisions block 5 -> data block 1 with
    # a whole-block write: no zeroing. Request 3 reads block 0 (mapped). Request 5: block 3 never written.
    assert rows(out.data) == [
        (W, 0, K, 1), (W, 4096, 4096, 1), (W, K, K, 2), (R, 0, 8192, 3), (W, 8192, 4096, 4),
    ]
    # the provisioning writes (requests 1 and 2) are flagged ALLOC: the block layer keeps them apart
    assert out.data.flags.tolist() == [Flag.ZERO, Flag.ALLOC, Flag.ALLOC, 0, Flag.FUA]
    # one 256 KiB write into an empty pool of 64 KiB blocks: four provisioning writes, not merged
    # (the emulated drive's log of a 4 MiB copy on such a volume shows one 64 KiB request per block);
    # a second write over the same blocks is an ordinary write, merged again.
    from diskmodel.model.iopath.path import queue
    again = dm_thin(reqs((W, 0, 4 * K), (W, 0, 4 * K)), K).data
    assert [r[2] for r in rows(queue(again.take(again.parent == 0)))] == [K] * 4
    assert [r[2] for r in rows(queue(again.take(again.parent == 1)))] == [4 * K]
    assert out.provisioned.tolist() == [0, 5]
    # the FUA write commits: 1 btree leaf (blocks 0 and 5 share one) + 1 space-map bitmap block,
    # flush, superblock, flush.
    assert rows(out.metadata) == [(W, 4096, 4096, 4), (W, 8192, 4096, 4), (F, 0, 0, 4), (W, 0, 4096, 4), (F, 0, 0, 4)]
    no_zero = dm_thin(s, K, zero_new_blocks=False)
    assert no_zero.data.write_bytes == out.data.write_bytes - K


def test_dm_thin_periodic_commit_and_bad_chunk():
    s = Stream.from_records([(0.5, W, 0, 65536), (2.5, W, 65536, 65536)])
    meta = dm_thin(s, 65536).metadata
    # one commit at the 1-s tick (block 0) and one at the 3-s tick (block 1): 2 writes + 2 flushes + 1 sb each
    assert meta.time_s.tolist() == [1.0] * 5 + [3.0] * 5
    assert meta.write_requests == 6 and int(np.count_nonzero(meta.op == F)) == 4
    with pytest.raises(ValueError) as e:
        dm_thin(s, 4096)
    one_line(e, "dm-thin", "chunk_bytes = 4096")


@FAST
@given(streams, st.sampled_from([64 * KiB, 128 * KiB]))
def test_thin_zeroing_writes_whole_block_on_first_partial_write(s, chunk):
    out = dm_thin(s, chunk)
    z = out.data.take((out.data.flags & Flag.ZERO) != 0)
    assert (z.size_bytes == chunk).all() and (z.offset_bytes % chunk == 0).all()
    # one zeroing per block whose first write piece did not cover it whole
    first = {}
    for op, off, size, i in rows(s):
        for b in range(off // chunk, (off + size - 1) // chunk + 1):
            if op == W and b not in first:
                lo, hi = max(off, b * chunk), min(off + size, (b + 1) * chunk)
                first[b] = hi - lo == chunk
    assert len(z) == sum(not whole for whole in first.values())
    plain = out.data.take((out.data.flags & Flag.ZERO) == 0)
    assert plain.write_bytes == s.write_bytes
    assert len(out.provisioned) == len(first)


# -- the block layer ----------------------------------------------------------------------------
def test_block_layer_split_and_merge_hand_computed():
    # split 300000 bytes at 1000 with chunk 64 KiB then max 128 KiB: 1000..65536, then whole chunks,
    # the last 262144..301000.
    out = split(reqs((W, 1000, 300000)), 128, chunk_bytes=64 * KiB)
    assert rows(out) == [(W, 1000, 64536, 0), (W, 65536, 65536, 0), (W, 131072, 65536, 0), (W, 196608, 65536, 0), (W, 262144, 38856, 0)]
    assert rows(split(reqs((R, 0, 300 * KiB)), 128)) == [(R, 0, 128 * KiB, 0), (R, 128 * KiB, 128 * KiB, 0), (R, 256 * KiB, 44 * KiB, 0)]
    s = Stream.from_records([
        (0, W, 8192, 4096), (0, W, 0, 4096), (0, W, 4096, 4096), (0, R, 12288, 4096),
        (0, W, 12288, 4096, Flag.FUA), (1, W, 16384, 4096),
    ])
    # one plug at t=0: writes 0, 4096 (front merge of request 2 into 1), 8192 merge up to 8 KiB:
    # 0..8192 then 8192 alone; the FUA write never merges; the t=1 write is another window.
    assert rows(merge(s, 8)) == [(W, 8192, 4096, 0), (W, 0, 8192, 1), (R, 12288, 4096, 3), (W, 12288, 4096, 4), (W, 16384, 4096, 5)]
    assert rows(merge(s, 512)) == [(W, 0, 12288, 0), (R, 12288, 4096, 3), (W, 12288, 4096, 4), (W, 16384, 4096, 5)]
    with pytest.raises(ValueError) as e:
        merge(s, 0)
    one_line(e, "max_sectors_kb = 0")


@FAST
@given(streams, st.sampled_from([4, 64, 512]), st.sampled_from([0.0, 0.05, 1.0]))
def test_block_layer_conserves_bytes(s, max_kb, window):
    cut = split(s, max_kb)
    assert (cut.size_bytes <= max_kb * KiB).all()
    assert (cut.read_bytes, cut.write_bytes) == (s.read_bytes, s.write_bytes)
    joined = merge(cut, max_kb, window)
    assert (joined.size_bytes <= max_kb * KiB).all()
    assert (joined.read_bytes, joined.write_bytes) == (s.read_bytes, s.write_bytes)
    assert len(joined) <= len(cut)
