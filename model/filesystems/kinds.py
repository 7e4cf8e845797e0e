"""The file-system kinds the model covers, their defaults, and how mkfs and mount options set them.

One :class:`diskmodel.model.filesystems.filesystem.FileSystem` describes any of seven
kinds: ``ext2``, ``ext3``, ``ext4``, ``xfs``, ``btrfs``, ``jfs`` and ``reiserfs``.  What a kind
can be, and what it is when nothing is said, is kept here as data:

* :data:`DEFAULTS`: each cost-deciding parameter's default per kind, from
  the mkfs and mount defaults of the tools of Debian 12 (:data:`TOOL_VERSIONS`:
  ``mkfs.ext4 -V``, ``mkfs.xfs -V``, ``mkfs.btrfs --version`` on the host
  this was written on) and the kernel's mount defaults;
* :data:`CHOICES`: the values a kind can take (a parameter with one choice
  is fixed by the kind, e.g. xfs always delays allocation);
* :func:`parameters_from_options`: the parameters that ``mkfs.<kind>`` and
  ``mount -o`` options set, so a stack's options and its model describe the
  same file system.  An option the kind's tools do not have is refused
  naming the option and the kind, and so is a value outside the option's
  syntax (:mod:`diskmodel.model.filesystems.options`: enumerations, bounded whole
  numbers, sizes, paths and names of a strict character set); options the
  kind has that do not change the model's cost (a label, ``-q``,
  ``errors=``) are accepted.

Where each default comes from (``FileSystem`` field: value):

ext2 / ext3 / ext4 (e2fsprogs 1.47.0, /etc/mke2fs.conf; kernel ext4 driver):
    block_size_bytes 4096 (``blocksize = 4096``); inode_size_bytes 256
    (``inode_size = 256``); dir_index True (``base_features`` has
    ``dir_index``); extents: ext4 only (its ``features`` add ``extent``;
    ext2/ext3 map blocks through indirect blocks); delayed_allocation: ext4
    only (mount default ``delalloc``; ``data=journal`` turns it off);
    journal: ext3/ext4 ``data=ordered``, ``commit=5`` (JBD2's
    JBD2_DEFAULT_MAX_COMMIT_AGE), 128 MiB (``ext2fs_default_journal_size``
    for file systems of 16-32 GiB, the paper's 20 GB; 64 MiB for 2-16 GiB,
    see :func:`mkfs_journal_bytes`); ext2 has none; block groups of 8 x
    block size blocks (one bitmap block each).
xfs (xfsprogs 6.1.0):
    block_size_bytes 4096 (``-b size``); inode_size_bytes 512 (``-i size``,
    v5 format with CRCs); allocation_groups 4 (``-d agcount`` on a single
    non-striped device under 4 TiB); journal (the log) 64 MiB (16384 log
    blocks for file systems of 1-16 GiB), metadata only (delayed logging),
    forced every 30 s (``fs.xfs.xfssyncd_centisecs`` = 3000); extents,
    delayed allocation and B+tree directories always.
btrfs (btrfs-progs 6.2, kernel mount defaults):
    block_size_bytes 4096 (``-s``/``--sectorsize``, the page size);
    metadata_node_bytes 16384 (``-n``/``--nodesize``); metadata_copies 2
    (``-m dup``, the default on a single device since btrfs-progs 5.15,
    also on SSDs); data_checksums True (crc32c; ``nodatasum`` turns them
    off); copy_on_write True (``nodatacow`` turns it off, and the checksums
    with it); inline_data_max_bytes 2048 (``max_inline=2048``); transaction
    commit every 30 s (``commit=30``); the "journal" region is the metadata
    block group the copy-on-write tree blocks are written to (the kernel's
    chunk allocator: 256 MiB on file systems up to 50 GiB, at most a tenth
    of the file system; :func:`mkfs_journal_bytes`); extents and delayed
    allocation always; no separate journal (``journal_mode`` "cow").

jfs (jfsutils 1.1.15, fs/jfs):
    block_size_bytes 4096 (the only size mkfs.jfs makes on Linux); inode_size_bytes 512
    (DISIZE, fs/jfs/jfs_dinode.h); its log inside the aggregate, at its end, of a 256th of the
    device, at most 128 MiB (``-s``; 4 MiB on 1 GiB, read back with ``jfs_debugfs``), metadata
    only (journal_mode "metadata"); no commit timer: a lazily committed transaction's log page
    is written when it fills or when a dirty inode is written back (fs/jfs/inode.c,
    jfs_write_inode -> jfs_flush_journal), at the write-back's 30 s (commit_interval_s 30);
    extents always; no delayed allocation (jfs_get_block allocates at ``write()``).
reiserfs (reiserfsprogs 3.6.27, fs/reiserfs):
    block_size_bytes 4096; the journal after the first bitmap: 8192 blocks and its header
    (``-s``; JOURNAL_BLOCK_COUNT); ``data=ordered`` (the kernel's default since 2.6.6);
    commit_interval_s 5: the running transaction is committed the write-back interval
    (``dirty_writeback_centisecs``, 5 s) after its first change dirtied the superblock, which
    queued flush_old_commits (fs/reiserfs/super.c, reiserfs_schedule_old_flush ->
    flush_old_commits -> reiserfs_sync_fs: a commit of the running transaction, long before the
    journal's 30 s maximum transaction age); a file that
    fits in one direct item is stored in its tree leaf, a tail (``tails=small``, the default:
    STORE_TAIL_IN_UNFM_S2, MAX_DIRECT_ITEM_LEN of a 4 KiB block: 4096 less the block head, two
    item heads, a stat data and a pointer, 3976 bytes; ``notail``/``tails=off``: none);
    inode_size_bytes 44 (a stat-data item, SD_V2_SIZE); no extents (indirect items), no
    delayed allocation.

inode_size_bytes for btrfs (160) is the size of an inode item in a leaf.
"""
from __future__ import annotations

from .._checks import FieldError

from .options import check_mkfs_value, check_mount_option, mkfs_table, shown, takes_value
from ..units import KIB, MIB

#: The tools whose mkfs defaults :data:`DEFAULTS` follows (Debian 12 packages).
TOOL_VERSIONS = {"e2fsprogs": "1.47.0 (5-Feb-2023)", "xfsprogs": "6.1.0", "btrfs-progs": "6.2",
                 "jfsutils": "1.1.15", "reiserfsprogs": "3.6.27"}

KINDS = ("ext2", "ext3", "ext4", "xfs", "btrfs", "jfs", "reiserfs")
#: reiserfs's largest direct item in a 4 KiB block: MAX_DIRECT_ITEM_LEN (fs/reiserfs/reiserfs.h) [bytes].
REISERFS_TAIL_MAX_BYTES = 4096 - 24 - 2 * 24 - 44 - 4
EXT_KINDS = ("ext2", "ext3", "ext4")

_EXT_BLOCKS = (1024, 2048, 4096)  # ext block sizes above the 4 KiB page are not mountable on x86 kernels
_XFS_BLOCKS = (1024, 2048, 4096, 8192, 16384, 32768, 65536)  # v5 (CRC) minimum 1024; above the page size: LBS kernels

#: The values each parameter may take, per kind (None: any value the field accepts).
CHOICES = {
    "journal_mode": {"ext2": ("none",), "ext3": ("ordered", "writeback", "journal"),
                     "ext4": ("ordered", "writeback", "journal", "none"), "xfs": ("metadata",), "btrfs": ("cow",), "jfs": ("metadata",),
                     "reiserfs": ("ordered", "writeback", "journal")},
    "block_size_bytes": {"ext2": _EXT_BLOCKS, "ext3": _EXT_BLOCKS, "ext4": _EXT_BLOCKS, "xfs": _XFS_BLOCKS,
                         "btrfs": (4096,), "jfs": (4096,), "reiserfs": (4096,)},
    "inode_size_bytes": {"ext2": (128, 256, 512, 1024), "ext3": (128, 256, 512, 1024),
                         "ext4": (128, 256, 512, 1024), "xfs": (512, 1024, 2048), "btrfs": (160,),
                         "jfs": (512,), "reiserfs": (44,)},
    "dir_index": {"ext2": (True, False), "ext3": (True, False), "ext4": (True, False), "xfs": (True,),
                  "btrfs": (True,), "jfs": (True,), "reiserfs": (True,)},
    "extents": {"ext2": (False,), "ext3": (False,), "ext4": (True, False), "xfs": (True,), "btrfs": (True,),
                "jfs": (True,), "reiserfs": (False,)},
    "delayed_allocation": {"ext2": (False,), "ext3": (False,), "ext4": (True, False), "xfs": (True,),
                           "btrfs": (True,), "jfs": (False,), "reiserfs": (False,)},
    "metadata_copies": {"ext2": (1,), "ext3": (1,), "ext4": (1,), "xfs": (1,), "btrfs": (1, 2), "jfs": (1,),
                        "reiserfs": (1,)},
    "data_checksums": {"ext2": (False,), "ext3": (False,), "ext4": (False,), "xfs": (False,), "btrfs": (True, False),
                       "jfs": (False,), "reiserfs": (False,)},
    "copy_on_write": {"ext2": (False,), "ext3": (False,), "ext4": (False,), "xfs": (False,), "btrfs": (True, False),
                      "jfs": (False,), "reiserfs": (False,)},
    "allocation_groups": {"ext2": (None,), "ext3": (None,), "ext4": (None,), "xfs": None, "btrfs": (None,),
                          "jfs": (None,), "reiserfs": (None,)},
    "metadata_node_bytes": {"ext2": (None,), "ext3": (None,), "ext4": (None,), "xfs": (None,),
                            "btrfs": (4096, 8192, 16384, 32768, 65536), "jfs": (None,), "reiserfs": (None,)},
}

#: Defaults of the parameters that differ by kind (the module docstring says where each comes from).
DEFAULTS = {
    "ext2": {"journal_mode": "none", "inode_size_bytes": 256, "commit_interval_s": 5.0,
             "journal_size_bytes": 128 * MIB, "extents": False, "delayed_allocation": False,
             "metadata_copies": 1, "data_checksums": False, "copy_on_write": False, "inline_data_max_bytes": 0,
             "allocation_groups": None, "metadata_node_bytes": None},
    "ext3": {"journal_mode": "ordered", "inode_size_bytes": 256, "commit_interval_s": 5.0,
             "journal_size_bytes": 128 * MIB, "extents": False, "delayed_allocation": False,
             "metadata_copies": 1, "data_checksums": False, "copy_on_write": False, "inline_data_max_bytes": 0,
             "allocation_groups": None, "metadata_node_bytes": None},
    "ext4": {"journal_mode": "ordered", "inode_size_bytes": 256, "commit_interval_s": 5.0,
             "journal_size_bytes": 128 * MIB, "extents": True, "delayed_allocation": True,
             "metadata_copies": 1, "data_checksums": False, "copy_on_write": False, "inline_data_max_bytes": 0,
             "allocation_groups": None, "metadata_node_bytes": None},
    "xfs": {"journal_mode": "metadata", "inode_size_bytes": 512, "commit_interval_s": 30.0,
            "journal_size_bytes": 64 * MIB, "extents": True, "delayed_allocation": True,
            "metadata_copies": 1, "data_checksums": False, "copy_on_write": False, "inline_data_max_bytes": 0,
            "allocation_groups": 4, "metadata_node_bytes": None},
    "btrfs": {"journal_mode": "cow", "inode_size_bytes": 160, "commit_interval_s": 30.0,
              "journal_size_bytes": 256 * MIB, "extents": True, "delayed_allocation": True,
              "metadata_copies": 2, "data_checksums": True, "copy_on_write": True, "inline_data_max_bytes": 2048,
              "allocation_groups": None, "metadata_node_bytes": 16 * KIB},
    "jfs": {"journal_mode": "metadata", "inode_size_bytes": 512, "commit_interval_s": 30.0,
            "journal_size_bytes": 128 * MIB, "extents": True, "delayed_allocation": False,
            "metadata_copies": 1, "data_checksums": False, "copy_on_write": False, "inline_data_max_bytes": 0,
            "allocation_groups": None, "metadata_node_bytes": None},
    "reiserfs": {"journal_mode": "ordered", "inode_size_bytes": 44, "commit_interval_s": 5.0,
                 "journal_size_bytes": 8193 * 4 * KIB, "extents": False, "delayed_allocation": False,
                 "metadata_copies": 1, "data_checksums": False, "copy_on_write": False,
                 "inline_data_max_bytes": REISERFS_TAIL_MAX_BYTES, "allocation_groups": None,
                 "metadata_node_bytes": None},
}

#: ext4 ``-O inline_data``: the 60 bytes of i_block plus the in-inode extended-attribute space of a
#: 256-byte inode (256 - 128 - 32 extra_isize - 4 header - 16 entry - 4 name) [bytes], an estimate.
EXT4_INLINE_DATA_BYTES = 132


def mkfs_journal_bytes(kind: str, fs_size_bytes: int, block_size_bytes: int = 4096) -> int:
    """The journal (log, metadata chunk) size mkfs gives a file system of *fs_size_bytes* [bytes].

    ext3/ext4: ``ext2fs_default_journal_size`` of e2fsprogs 1.47 (in blocks of the file system);
    xfs: 64 MiB (xfsprogs 6.1's minimum log on file systems from 1 GiB; fs/2048 when larger);
    btrfs: the first metadata block group (256 MiB, at most a tenth of the file system);
    jfs: mkfs.jfs's inline log, a 256th of the device, at most 128 MiB; reiserfs: mkreiserfs's
    journal, 8192 blocks and its header block.
    """
    if kind == "jfs":
        return min(128 * MIB, fs_size_bytes // 256 // block_size_bytes * block_size_bytes)
    if kind == "reiserfs":
        return 8193 * block_size_bytes
    if kind in EXT_KINDS:
        blocks = fs_size_bytes // block_size_bytes
        for limit, journal in ((32768, 1024), (256 * 1024, 4096), (512 * 1024, 8192), (4096 * 1024, 16384),
                               (8192 * 1024, 32768), (16384 * 1024, 65536), (32768 * 1024, 131072)):
            if blocks < limit:
                return journal * block_size_bytes
        return 262144 * block_size_bytes
    if kind == "xfs":
        return max(64 * MIB, fs_size_bytes // 2048)
    if kind == "btrfs":
        return min(256 * MIB, max(8 * MIB, fs_size_bytes // 10))
    raise ValueError(f"kind must be one of {', '.join(KINDS)} (got {kind!r})")


# ------------------------------------------------------------------ options

#: The atime mount options and whether each lets reads update access times.
_ATIME = {"noatime": False, "atime": True, "relatime": True, "strictatime": True}


def _mkfs_pairs(kind: str, options) -> list[tuple[str, str | None]]:
    """(flag, value) of each option of ``mkfs.<kind>``; an unknown flag or a bad value is refused naming it."""
    flags = {flag: takes_value(kind_type) for flag, kind_type in mkfs_table(kind).items()}
    out, i = [], 0
    options = list(options)
    while i < len(options):
        option = options[i]
        if option.startswith("--") and "=" in option:
            flag, value = option.split("=", 1)
        elif option in flags:
            flag, value = option, None
            if flags[option]:
                if i + 1 >= len(options):
                    raise FieldError("mkfs_options", problem=f"{shown(option)} of mkfs.{kind} needs a value", sep=": ")
                i += 1
                value = options[i]
        elif option[:2] in flags and not option.startswith("--") and flags[option[:2]]:
            flag, value = option[:2], option[2:]
        else:
            flag, value = option, None
        if flag not in flags:
            raise FieldError("mkfs_options", problem=f"{shown(flag)} is not an option of mkfs.{kind}", sep=": ")
        check_mkfs_value(kind, flag, value)
        out.append((flag, value))
        i += 1
    return out


def _int(where: str, text: str) -> int:
    """An integer with an optional k/m/g suffix (binary, as the mkfs tools read it)."""
    scale = {"k": KIB, "m": MIB, "g": 1 << 30}
    t = text.strip().lower()
    factor = 1
    if t and t[-1] in scale:
        factor, t = scale[t[-1]], t[:-1]
    try:
        return int(t) * factor
    except ValueError:
        raise FieldError(where, problem=f"{text!r} is not a size", sep=": ") from None


def _suboptions(where: str, text: str) -> dict:
    return dict(part.split("=", 1) if "=" in part else (part, "") for part in text.split(",") if part)


def _ext_features(kind: str, text: str, out: dict) -> None:
    for feature in text.split(","):
        on = not feature.startswith("^")
        name = feature.lstrip("^")
        if name == "has_journal":
            if not on and kind == "ext3":
                raise ValueError("mkfs_options: -O ^has_journal makes no ext3 (use kind ext2)")
            if kind == "ext2" and on:
                raise ValueError("mkfs_options: -O has_journal makes no ext2 (use kind ext3 or ext4)")
            if kind == "ext4" and not on:
                out["journal_mode"] = "none"
        elif name in ("extent", "extents"):
            out["extents"] = on
        elif name == "dir_index":
            out["dir_index"] = on
        elif name == "inline_data":
            out["inline_data_max_bytes"] = EXT4_INLINE_DATA_BYTES if on else 0


def _mkfs_parameters(kind: str, options) -> dict:
    out = {}
    for flag, value in _mkfs_pairs(kind, options):
        where = f"mkfs_options {flag}"
        if kind in EXT_KINDS:
            if flag == "-b":
                out["block_size_bytes"] = _int(where, value)
            elif flag == "-I":
                out["inode_size_bytes"] = _int(where, value)
            elif flag == "-J":
                size = _suboptions(where, value).get("size")
                if size is not None:
                    out["journal_size_bytes"] = _int(where, size) * MIB  # mke2fs: -J size= in MiB
            elif flag == "-O":
                _ext_features(kind, value, out)
        elif kind == "xfs":
            sub = _suboptions(where, value or "")
            if flag == "-b" and "size" in sub:
                out["block_size_bytes"] = _int(where, sub["size"])
            elif flag == "-i" and "size" in sub:
                out["inode_size_bytes"] = _int(where, sub["size"])
            elif flag == "-l" and "size" in sub:
                out["journal_size_bytes"] = _int(where, sub["size"])
            elif flag == "-d" and "agcount" in sub:
                out["allocation_groups"] = _int(where, sub["agcount"])
        elif kind == "jfs":
            if flag == "-s":
                out["journal_size_bytes"] = _int(where, value) * MIB  # mkfs.jfs -s: the log's size in MiB
            elif flag in ("-j", "-J"):
                raise ValueError(f"mkfs_options: {flag} (an external log) is not modelled for jfs")
        elif kind == "reiserfs":
            if flag in ("-b", "--block-size"):
                out["block_size_bytes"] = _int(where, value)
            elif flag in ("-s", "--journal-size"):
                out["journal_size_bytes"] = (_int(where, value) + 1) * 4 * KIB  # blocks, and the header block
            elif flag in ("-j", "--journal-device"):
                raise ValueError(f"mkfs_options: {flag} (an external journal) is not modelled for reiserfs")
            elif flag == "--format" and value == "3.5":
                raise ValueError("mkfs_options: --format 3.5 is not modelled for reiserfs (3.6 only)")
        else:  # btrfs
            if flag in ("-s", "--sectorsize"):
                out["block_size_bytes"] = _int(where, value)
            elif flag in ("-n", "--nodesize"):
                out["metadata_node_bytes"] = _int(where, value)
            elif flag in ("-m", "--metadata"):
                copies = {"single": 1, "dup": 2}.get(value.lower())
                if copies is None:
                    raise FieldError("mkfs_options", problem=f"--metadata {value} needs several devices; the model "
                                     "covers single and dup on one device", sep=": ")
                out["metadata_copies"] = copies
            elif flag in ("-M", "--mixed"):
                raise ValueError("mkfs_options: --mixed block groups are not modelled for btrfs")
    return out


def _mount_parameters(kind: str, options) -> dict:
    out = {}
    keys = {option.partition("=")[0]: option for option in options}
    if kind == "xfs" and len({"sunit", "swidth"} & set(keys)) == 1:  # xfs(5): "must be specified together"
        option = keys.get("sunit") or keys.get("swidth")
        raise FieldError("mount_options", problem=f"{shown(option)} : xfs takes sunit and swidth together", sep=": ")
    for option in options:
        key, value = check_mount_option(kind, option)
        where = f"mount_options {key}"
        if key in _ATIME:
            out["atime_updates"] = _ATIME[key]
        elif key == "data":
            out["journal_mode"] = value
            if value == "journal" and kind == "ext4":
                out["delayed_allocation"] = False  # ext4 turns delalloc off under data=journal
        elif key in ("notail", "tails"):  # reiserfs: tails=small and on store a file of one direct item
            out["inline_data_max_bytes"] = 0 if key == "notail" or value == "off" else REISERFS_TAIL_MAX_BYTES
        elif key == "commit":
            # commit=0 is the default interval (ext4(5), btrfs(5))
            out["commit_interval_s"] = float(value) or DEFAULTS[kind]["commit_interval_s"]
        elif key in ("delalloc", "nodelalloc"):
            out["delayed_allocation"] = key == "delalloc"
        elif key == "max_inline":
            out["inline_data_max_bytes"] = _int(where, value)
        elif key in ("nodatasum", "datasum"):
            out["data_checksums"] = key == "datasum"
        elif key in ("nodatacow", "datacow"):
            out["copy_on_write"] = key == "datacow"
            if key == "nodatacow":
                out["data_checksums"] = False  # nodatacow implies nodatasum
    return out


def parameters_from_options(kind: str, mkfs_options=(), mount_options=()) -> dict:
    """The :class:`~diskmodel.model.filesystems.filesystem.FileSystem` fields *mkfs_options* and *mount_options* set.

    *kind* is one of :data:`KINDS`.  ext: mkfs ``-b``, ``-I``, ``-J size=``,
    ``-O [^]extent,[^]dir_index,[^]has_journal,inline_data``; mount
    ``data=``, ``commit=``, ``[no]delalloc`` (ext4).  xfs: ``-b size=``,
    ``-i size=``, ``-l size=``, ``-d agcount=``.  btrfs: ``-s``, ``-n``,
    ``-m single|dup``; mount ``commit=``, ``max_inline=``, ``[no]datasum``,
    ``[no]datacow``.  All: ``noatime``/``atime``/``relatime``/``strictatime``.
    An option the kind does not have, or a value its syntax does not allow
    (:mod:`diskmodel.model.filesystems.options`), is refused here; what the values
    set is checked by ``FileSystem`` itself (e.g. a block size the kind
    cannot use).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)} (got {kind!r})")
    return {**_mkfs_parameters(kind, mkfs_options), **_mount_parameters(kind, mount_options)}


def check_kind(kind: str, values: dict) -> None:
    """Each of *values* (FileSystem fields) is one the kind can take; ValueError naming the field, value, kind."""
    for name, per_kind in CHOICES.items():
        if name not in values or per_kind is None:
            continue
        allowed = per_kind[kind]
        if allowed is None:
            continue
        value = values[name]
        if value not in allowed or isinstance(value, bool) != isinstance(allowed[0], bool):
            if len(allowed) == 1:
                raise ValueError(f"{name}: {kind} has only {allowed[0]!r} (got {value!r})")
            raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))} for {kind} (got {value!r})")


__all__ = ["CHOICES", "DEFAULTS", "EXT_KINDS", "KINDS", "TOOL_VERSIONS", "check_kind", "mkfs_journal_bytes",
           "parameters_from_options", "REISERFS_TAIL_MAX_BYTES"]
