"""Operations on a file's extents that move no data: fallocate(2) and FICLONE, as a mixin of the
file-system model (:mod:`.fs`), which supplies ``files``, ``allocate``, ``dirty_inode``, ``meta``, the
journal ``j`` and the allocator."""

from __future__ import annotations

__all__ = ["ExtentOps"]


class ExtentOps:
    """fallocate(2) (mode 0) and FICLONE on the file system's files."""

    @staticmethod
    def in_prealloc(ino, fb0: int, fb1: int) -> bool:
        """Do file blocks [fb0, fb1) lie in one btrfs prealloc range not written since? If so, the range
        loses them (a prealloc extent written once is a regular extent: its next write is copied)."""
        for i, (a, b) in enumerate(ino.prealloc):
            if a <= fb0 and fb1 <= b:
                ino.prealloc[i:i + 1] = [r for r in ((a, fb0), (fb1, b)) if r[0] < r[1]]
                return True
        return False

    def fallocate(self, t, f: int, off: int, size: int):
        """fallocate(2), mode 0: ext4 (ext4_fallocate -> ext4_alloc_file_blocks), xfs
        (xfs_alloc_file_space) and btrfs (btrfs_prealloc_file_range) allocate the range's blocks as
        unwritten (prealloc) extents, dirtying the allocation's metadata and the inode; a later write
        goes to those blocks (btrfs's first write too, in place: its nocow path for prealloc extents).
        ext2 and ext3 files are block-mapped: EOPNOTSUPP, nothing happens (fio goes on without)."""
        if self.p.kind not in ("ext4", "xfs", "btrfs") or size <= 0:
            return
        ino = self.files[f]
        fb0, fb1 = off // self.bs, -(-(off + size) // self.bs)
        self.allocate(t, ino, fb0, fb1)
        if self.p.kind == "btrfs":
            ino.prealloc.append((fb0, fb1))
        self.dirty_inode(t, ino)

    def clone(self, t, f: int, src: int):
        """FICLONE: ``f`` shares ``src``'s blocks; the extent references change (btrfs: the extent
        tree's leaves; xfs: the refcount btree block of each AG and the inode)."""
        dst, s = self.files[f], self.files[src]
        dst.extents = [list(e) for e in s.extents]
        dst.blocks = s.blocks
        self.dirty_inode(t, dst)
        for _, n, db in s.extents:
            if self.p.kind == "btrfs":
                self.j.dirty(t, ("ext", db // 100))
            else:  # the refcount btree's root: XFS_REFC_BLOCK, after the free inode btree's
                self.meta(t, (db // self.alloc.group_blocks) * self.alloc.group_blocks + 5)
