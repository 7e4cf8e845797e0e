"""The mount and mkfs options each file-system kind has, and the syntax of their values.

:mod:`diskmodel.model.filesystems.kinds` reads from options what the model needs;
this module says which options exist and what their values may be, so that
nothing but a well-formed option of the kind reaches ``mount -o`` or
``mkfs.<kind>``.  Each option is refused in one line naming it and what would
work (``errors=remount-ro;touch... : errors takes continue, remount-ro or panic``).

Value types: a flag (no value), an enumeration, a whole number within
bounds, a size (a number with a unit suffix), a path or a name of a strict
character set (letters, digits and ``. _ - / + @ :``; no shell
metacharacter, no space, no control character).

Sources (the options of the tools and kernel of Debian 12 and later kernels):

* ext2/ext3/ext4 mount: ``ext4(5)`` and the kernel's
  Documentation/admin-guide/ext4.rst (ext2 and ext3 are mounted by the ext4
  driver); bounds from fs/ext4/super.c (``inode_readahead_blks``: 0 or a
  power of two up to 2^30; ``journal_ioprio`` 0-7; ``commit`` up to INT_MAX/HZ
  seconds, taken here for HZ=1000);
* xfs mount: ``xfs(5)`` and Documentation/admin-guide/xfs.rst (``allocsize``
  a power of two from 4 KiB to 1 GiB; ``logbufs`` 2-8; ``logbsize`` 16-256 KiB,
  a power of two);
* btrfs mount: ``btrfs(5)`` (``compress=zlib[:1-9]|lzo|zstd[:1-15]|no``, level 0
  the default; ``space_cache=v1|v2``; ``discard=sync|async``;
  ``fatal_errors=bug|panic``; ``rescue=`` one mode each);
* the VFS options of ``mount(8)`` every kind takes;
* jfs mount: Documentation/admin-guide/jfs.rst and fs/jfs/super.c (parse_options); reiserfs
  mount: ``mount(8)``'s reiserfs section and fs/reiserfs/super.c (reiserfs_parse_options:
  ``commit`` 0 to INT_MAX seconds, ``tails=on|off|small``, ``barrier=none|flush``);
* mkfs: ``mke2fs(8)``, ``mkfs.xfs(8)`` (xfsprogs 6.1), ``mkfs.btrfs(8)``
  (btrfs-progs 6.2), ``mkfs.jfs(8)`` (jfsutils 1.1.15: ``-s`` the log's size in MiB) and
  ``mkreiserfs(8)`` (reiserfsprogs 3.6.27: ``-s`` the journal's size in blocks).
"""
from __future__ import annotations

from .._checks import FieldError

import re
from dataclasses import dataclass
from typing import Callable

EXT_KINDS = ("ext2", "ext3", "ext4")

# ------------------------------------------------------------------ value types

@dataclass(frozen=True)
class Syntax:
    """What an option's value may be: *what* says it in words, *check(value)* is True for a good value.

    bare_ok: the option may also come without a value (``compress`` and ``compress=zstd``); items: the
    value is key[=value] items joined by commas, each key's value of the Syntax in *items* (``-E``, ``-d``).
    """

    what: str
    check: Callable[[str], bool] | None = None
    bare_ok: bool = False
    items: dict | None = None


FLAG = None  #: an option without a value

_NAME_CHARS = r"[A-Za-z0-9._+@:-]"
_PATH_RE = re.compile(rf"/?(?:{_NAME_CHARS}+/?)*")
_NAME_RE = re.compile(rf"{_NAME_CHARS}+")
_UUID_RE = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
_DIGITS_RE = re.compile(r"[0-9]{1,19}")
_INT_MAX = 2**31 - 1
_U32_MAX = 2**32 - 1


def _join(words) -> str:
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def enum(*values: str) -> Syntax:
    return Syntax(_join(values), lambda v: v in values)


def whole(low: int, high: int, *, power_of_two: bool = False) -> Syntax:
    def check(value: str) -> bool:
        if not _DIGITS_RE.fullmatch(value):
            return False
        n = int(value)
        return low <= n <= high and (not power_of_two or n == 0 or n & (n - 1) == 0)

    what = f"a whole number from {low} to {high}" + (" (0 or a power of two)" if power_of_two else "")
    return Syntax(what, check)


_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50, "e": 1 << 60}


def size(low: int, high: int, *, power_of_two: bool = False, suffixes: str = "kmg", blocks: bool = False) -> Syntax:
    """A byte count with an optional binary suffix (*suffixes*; mkfs.xfs also counts in b (blocks), s (sectors))."""
    letters = suffixes + ("bs" if blocks else "")
    pattern = re.compile(rf"([0-9]{{1,19}})([{letters}{letters.upper()}]?)")

    def check(value: str) -> bool:
        m = pattern.fullmatch(value)
        if not m:
            return False
        unit = m.group(2).lower()
        if unit in ("b", "s"):
            return int(m.group(1)) >= 1
        n = int(m.group(1)) * _SUFFIX[unit]
        return low <= n <= high and (not power_of_two or n & (n - 1) == 0)

    shown = f"{low} to {high} bytes" + (", a power of two" if power_of_two else "")
    return Syntax(f"a size of {shown} (digits, optionally with {', '.join(letters)})", check)


PATH = Syntax("a path of letters, digits and . _ + @ : - /", lambda v: bool(v) and bool(_PATH_RE.fullmatch(v)))
OPTIONAL_NAME = Syntax("nothing or a name of letters, digits and . _ + @ : -",
                       lambda v: v == "" or bool(_NAME_RE.fullmatch(v)))
UUID = Syntax("a UUID (8-4-4-4-12 hex digits)", lambda v: bool(_UUID_RE.fullmatch(v)))
BOOL01 = enum("0", "1")


def label(limit: int) -> Syntax:
    return Syntax(f"a label of at most {limit} letters, digits and . _ + @ : -",
                  lambda v: bool(_NAME_RE.fullmatch(v)) and len(v) <= limit)


def either(*types) -> Syntax:
    """A value of any of *types* (FLAG among them: the option may also come without a value)."""
    valued = [t for t in types if t is not FLAG]
    what = _join([t.what for t in valued]) + (" (or no value)" if FLAG in types else "")
    return Syntax(what, lambda v: any(t.check(v) for t in valued), bare_ok=FLAG in types)


def _listing(separator: str, item: Syntax) -> Syntax:
    """Items of *item* joined by *separator* (``quotatype=usrquota:grpquota``)."""
    return Syntax(f"{item.what}, several joined by {separator}",
                  lambda v: bool(v) and all(item.check(part) for part in v.split(separator)))


# ------------------------------------------------------------------ mount options

_VFS = {key: FLAG for key in (
    "defaults", "rw", "ro", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "async", "auto",
    "noauto", "nouser", "user", "nofail", "lazytime", "nolazytime", "nodiratime", "diratime", "silent", "loud",
    "iversion", "noiversion", "mand", "nomand", "noatime", "atime", "relatime", "strictatime")}

_EXT_COMMON = {
    # nouser_xattr: in ext4(5), but the ext4 driver that mounts ext2/3/4 no longer parses it (6.x)
    **{key: FLAG for key in ("acl", "noacl", "user_xattr", "grpid", "bsdgroups", "nogrpid",
                             "sysvgroups", "bsddf", "minixdf", "nouid32", "debug", "oldalloc", "orlov", "quota",
                             "noquota", "usrquota", "grpquota", "nocheck")},
    "errors": enum("continue", "remount-ro", "panic"),
    "resgid": whole(0, _U32_MAX), "resuid": whole(0, _U32_MAX), "sb": whole(0, _U32_MAX),
    "check": enum("none"),
}
_EXT_JOURNAL = {
    **{key: FLAG for key in ("norecovery", "noload", "nobarrier", "journal_checksum", "nojournal_checksum",
                             "journal_async_commit")},
    "data": enum("journal", "ordered", "writeback"),
    "commit": whole(0, _INT_MAX // 1000),
    "barrier": either(FLAG, BOOL01),
    "journal_dev": whole(0, _U32_MAX),
    "journal_path": PATH,
    "data_err": enum("ignore", "abort"),
    "jqfmt": enum("vfsold", "vfsv0", "vfsv1"),
    "usrjquota": OPTIONAL_NAME, "grpjquota": OPTIONAL_NAME,
}
_EXT4_ONLY = {
    **{key: FLAG for key in ("delalloc", "nodelalloc", "nodiscard", "dioread_nolock", "dioread_lock",
                             "noauto_da_alloc", "noinit_itable", "block_validity", "noblock_validity", "nombcache",
                             "prjquota", "i_version", "inlinecrypt", "abort", "discard")},
    "inode_readahead_blks": whole(0, 1 << 30, power_of_two=True),
    "stripe": whole(0, _U32_MAX),
    "max_batch_time": whole(0, _U32_MAX), "min_batch_time": whole(0, _U32_MAX),
    "journal_ioprio": whole(0, 7),
    "auto_da_alloc": either(FLAG, BOOL01),
    "init_itable": either(FLAG, whole(0, _U32_MAX)),
    "max_dir_size_kb": whole(0, _U32_MAX),
    "mb_optimize_scan": BOOL01,
    "dax": either(FLAG, enum("always", "never", "inode")),
}
_XFS = {
    **{key: FLAG for key in ("attr2", "noattr2", "discard", "nodiscard", "grpid", "bsdgroups", "nogrpid",
                             "sysvgroups", "filestreams", "ikeep", "noikeep", "inode32", "inode64", "largeio",
                             "nolargeio", "noalign", "norecovery", "nouuid", "noquota", "uquota", "usrquota", "quota",
                             "uqnoenforce", "qnoenforce", "gquota", "grpquota", "gqnoenforce", "pquota", "prjquota",
                             "pqnoenforce", "swalloc", "wsync")},
    "allocsize": size(4096, 1 << 30, power_of_two=True),
    "logbufs": whole(2, 8),
    "logbsize": size(16384, 262144, power_of_two=True),
    "logdev": PATH, "rtdev": PATH,
    "sunit": whole(0, _INT_MAX), "swidth": whole(0, _INT_MAX),
    "dax": either(FLAG, enum("always", "never", "inode")),
}
_COMPRESS = Syntax("zlib, zlib:0 to zlib:9, lzo, zstd, zstd:0 to zstd:15 or no",
                   lambda v: bool(re.fullmatch(r"zlib(:[0-9])?|lzo|zstd(:([0-9]|1[0-5]))?|no", v)))
_BTRFS = {
    **{key: FLAG for key in ("acl", "noacl", "autodefrag", "noautodefrag", "barrier", "nobarrier", "clear_cache",
                             "datacow", "nodatacow", "datasum", "nodatasum", "degraded", "nodiscard", "enospc_debug",
                             "noenospc_debug", "flushoncommit", "noflushoncommit", "nologreplay", "norecovery",
                             "rescan_uuid_tree", "skip_balance", "nospace_cache", "ssd", "ssd_spread", "nossd",
                             "nossd_spread", "treelog", "notreelog", "usebackuproot", "user_subvol_rm_allowed")},
    "commit": whole(0, _INT_MAX // 1000),
    "compress": either(FLAG, _COMPRESS), "compress-force": either(FLAG, _COMPRESS),
    "device": PATH,
    "discard": either(FLAG, enum("sync", "async")),
    "fatal_errors": enum("bug", "panic"),
    "max_inline": size(0, _U32_MAX),
    "metadata_ratio": whole(0, _U32_MAX),
    # one mode per rescue= (several rescue= options for several modes): kernels from 6.8 (the new mount
    # API) refuse the ":"-joined list that 5.9-6.7 took
    "rescue": enum("usebackuproot", "nologreplay", "ignorebadroots", "ibadroots", "ignoredatacsums", "idatacsums",
                   "ignoremetacsums", "ignoresuperflags", "all"),
    "space_cache": either(FLAG, enum("v1", "v2")),
    "subvol": PATH,
    "subvolid": whole(0, 2**64 - 1),
    "thread_pool": whole(1, _INT_MAX),
}


_JFS = {
    **{key: FLAG for key in ("integrity", "nointegrity", "nodiscard", "noquota", "quota", "usrquota", "grpquota")},
    "iocharset": Syntax("a character set name of letters, digits and -", lambda v: bool(re.fullmatch(r"[A-Za-z0-9-]+", v))),
    "resize": either(FLAG, whole(0, 2**63 - 1)),
    "errors": enum("continue", "remount-ro", "panic"),
    "uid": whole(0, _U32_MAX), "gid": whole(0, _U32_MAX),
    "umask": Syntax("an octal mask of up to four digits", lambda v: bool(re.fullmatch(r"[0-7]{1,4}", v))),
    "discard": either(FLAG, whole(0, _U32_MAX)),
}
_REISERFS = {
    **{key: FLAG for key in ("conv", "hashed_relocation", "no_unhashed_relocation", "noborder", "nolog", "notail",
                             "replayonly", "attrs", "noattrs", "user_xattr", "nouser_xattr", "acl", "noacl",
                             "usrquota", "grpquota", "noquota", "nolargeio")},
    "hash": enum("rupasov", "tea", "r5", "detect"),
    "jdev": PATH,
    "barrier": enum("none", "flush"),
    "resize": whole(0, _U32_MAX),
    "data": enum("ordered", "journal", "writeback"),
    "commit": whole(0, _INT_MAX),
    "tails": enum("on", "off", "small"),
    "errors": enum("continue", "ro-remount", "panic"),
    "jqfmt": enum("vfsold", "vfsv0", "vfsv1"),
    "usrjquota": OPTIONAL_NAME, "grpjquota": OPTIONAL_NAME,
}


def mount_table(kind: str) -> dict:
    """{option name: value type} of the mount options of *kind*."""
    table = dict(_VFS)
    if kind == "jfs":
        table.update(_JFS)
    elif kind == "reiserfs":
        table.update(_REISERFS)
    elif kind in EXT_KINDS:
        table.update(_EXT_COMMON)
        if kind != "ext2":
            table.update(_EXT_JOURNAL)
        if kind == "ext4":
            table.update(_EXT4_ONLY)
    elif kind == "xfs":
        table.update(_XFS)
    else:
        table.update(_BTRFS)
    return table


def shown(text: str, limit: int = 40) -> str:
    """*text* on one line, control characters escaped, cut to *limit* characters with an ellipsis."""
    one_line = text.encode("unicode_escape").decode("ascii", "backslashreplace")
    return one_line if len(one_line) <= limit else one_line[:limit] + "…"


def _check_value(where: str, option: str, key: str, value: str | None, kind_type) -> None:
    """Refuse *value* of *key* unless *kind_type* takes it; the error names *where*, *option* and what works."""
    if kind_type is FLAG:
        if value is not None:
            raise FieldError(where, problem=f"{shown(option)} : {key} takes no value", sep=": ")
        return
    if value is None:
        if not kind_type.bare_ok:
            raise FieldError(where, problem=f"{shown(option)} : {key} needs a value, {kind_type.what}", sep=": ")
        return
    if kind_type.items is not None:
        for item in value.split(","):
            sub_key, eq, sub_value = item.partition("=")
            if sub_key not in kind_type.items:
                raise FieldError(where, problem=f"{shown(option)} : {key} takes {kind_type.what}", sep=": ")
            _check_value(where, option, f"{key} {sub_key}", sub_value if eq else None, kind_type.items[sub_key])
    elif not kind_type.check(value):
        raise FieldError(where, problem=f"{shown(option)} : {key} takes {kind_type.what}", sep=": ")


def check_mount_option(kind: str, option: str) -> tuple[str, str | None]:
    """(key, value) of one mount option of *kind*, or ValueError naming it and what would work."""
    key, eq, value = option.partition("=")
    table = mount_table(kind)
    if key not in table:
        raise FieldError("mount_options", problem=f"{shown(option)} is not a mount option of {kind}", sep=": ")
    _check_value("mount_options", option, key, value if eq else None, table[key])
    return key, (value if eq else None)


# ------------------------------------------------------------------ mkfs options

_EXT_FEATURES = ("has_journal", "ext_attr", "resize_inode", "dir_index", "filetype", "sparse_super",
                 "sparse_super2", "large_file", "huge_file", "uninit_bg", "dir_nlink", "extra_isize", "extent",
                 "extents", "flex_bg", "meta_bg", "mmp", "bigalloc", "quota", "inline_data", "metadata_csum",
                 "metadata_csum_seed", "encrypt", "project", "ea_inode", "large_dir", "casefold", "fname_encoding",
                 "verity", "stable_inodes", "64bit", "journal_dev", "orphan_file", "fast_commit", "stable_inodes")
_FEATURE_LIST = Syntax(f"features of {', '.join(sorted(set(_EXT_FEATURES)))} (each may start with ^), joined by "
                       "commas", lambda v: bool(v) and all(f.lstrip("^") in _EXT_FEATURES and f.count("^") <= 1
                                                           for f in v.split(",")))
_EXT_EXTENDED = {
    "mmp_update_interval": whole(0, _U32_MAX), "stride": whole(0, _U32_MAX), "stripe_width": whole(0, _U32_MAX),
    "stripe-width": whole(0, _U32_MAX), "offset": whole(0, 2**63 - 1), "resize": whole(0, 2**63 - 1),
    "packed_meta_blocks": either(FLAG, BOOL01), "lazy_itable_init": either(FLAG, BOOL01),
    "lazy_journal_init": either(FLAG, BOOL01), "assume_storage_prezeroed": either(FLAG, BOOL01),
    "no_copy_xattrs": FLAG, "num_backup_sb": enum("0", "1", "2"),
    "root_owner": either(FLAG, Syntax("uid:gid, whole numbers",
                                      lambda v: bool(re.fullmatch(r"[0-9]{1,10}:[0-9]{1,10}", v)))),
    "test_fs": FLAG, "discard": FLAG, "nodiscard": FLAG,
    "quotatype": _listing(":", enum("usrquota", "grpquota", "prjquota")),
    "encoding": enum("utf8", "utf8-12.1"), "encoding_flags": enum("strict"),
    "orphan_file_size": size(0, 2**63 - 1), "android_sparse": FLAG,
}
_EXT_JOURNAL_OPTIONS = {"size": whole(1, 10240000), "fast_commit_size": whole(0, 10240000), "device": PATH,
                        "location": size(0, 2**63 - 1, suffixes="kmgt")}
_EXT_SIZE = size(1024, 65536, power_of_two=True)
_EXT_USAGE = Syntax("usage types of mke2fs.conf (e.g. small, largefile), joined by commas",
                    lambda v: bool(re.fullmatch(r"[a-z0-9_]+(,[a-z0-9_]+)*", v)))


def _suboption_list(table: dict) -> Syntax:
    """key[=value] items of *table*, joined by commas (``-E stride=16,stripe_width=64``, ``-d agcount=4``)."""
    return Syntax(f"key[=value] items of {', '.join(table)}, joined by commas", items=table)


_MKE2FS = {
    "-b": _EXT_SIZE, "-C": size(1024, 1 << 30, power_of_two=True), "-d": PATH,
    "-e": enum("continue", "remount-ro", "panic"), "-E": _suboption_list(_EXT_EXTENDED), "-g": whole(8, _U32_MAX),
    "-G": whole(1, _U32_MAX), "-i": whole(1024, 1 << 26), "-I": whole(128, 65536, power_of_two=True),
    "-J": _suboption_list(_EXT_JOURNAL_OPTIONS), "-L": label(16),
    "-m": Syntax("a percentage from 0 to 50", lambda v: bool(re.fullmatch(r"[0-9]{1,2}(\.[0-9]{1,6})?", v))
                 and float(v) <= 50),
    "-M": PATH, "-N": whole(1, _U32_MAX), "-o": enum("Linux", "GNU", "hurd", "Masix", "FreeBSD", "Lites"),
    "-O": _FEATURE_LIST, "-r": enum("0", "1"), "-T": _EXT_USAGE,  # -t: the kind itself (mkfs_table)
    "-U": either(UUID, enum("clear", "random", "time")), "-z": PATH,
    **{flag: FLAG for flag in ("-c", "-D", "-F", "-q", "-v", "-S", "-K", "-n", "-j")},
}

_XFS_SIZE = size(0, 2**63 - 1, suffixes="kmgtpe", blocks=True)
_XFS_SUB = {
    "-b": {"size": size(512, 65536, power_of_two=True, suffixes="k"), "log": whole(9, 16)},
    "-d": {"agcount": whole(1, _U32_MAX), "agsize": _XFS_SIZE, "cowextsize": whole(0, _U32_MAX), "name": PATH,
           "file": BOOL01, "size": _XFS_SIZE, "sunit": whole(0, _INT_MAX), "su": _XFS_SIZE,
           "swidth": whole(0, _INT_MAX), "sw": whole(0, _INT_MAX), "noalign": either(FLAG, BOOL01),
           "rtinherit": BOOL01, "projinherit": whole(0, _U32_MAX), "extszinherit": whole(0, _U32_MAX),
           "daxinherit": BOOL01, "concurrency": either(FLAG, whole(0, _U32_MAX))},
    "-i": {"size": size(256, 2048, power_of_two=True, suffixes="k"), "log": whole(8, 11), "perblock": whole(1, 256),
           "maxpct": whole(0, 100), "align": BOOL01, "attr": enum("1", "2"), "projid32bit": BOOL01,
           "sparse": either(FLAG, BOOL01), "nrext64": either(FLAG, BOOL01), "exchange": either(FLAG, BOOL01)},
    "-l": {"internal": either(FLAG, BOOL01), "logdev": PATH, "size": _XFS_SIZE, "version": enum("1", "2"),
           "sunit": whole(0, _INT_MAX), "su": _XFS_SIZE, "lazy-count": BOOL01, "agnum": whole(0, _U32_MAX),
           "file": BOOL01, "name": PATH},
    "-m": {"crc": BOOL01, "finobt": BOOL01, "uuid": UUID, "rmapbt": BOOL01, "reflink": BOOL01,
           "inobtcount": BOOL01, "bigtime": BOOL01},
    "-n": {"size": size(512, 65536, power_of_two=True, suffixes="k"), "log": whole(9, 16),
           "version": enum("2", "ci"), "ftype": BOOL01},
    "-r": {"extsize": _XFS_SIZE, "rtdev": PATH, "size": _XFS_SIZE, "noalign": either(FLAG, BOOL01), "file": BOOL01,
           "name": PATH},
    "-s": {"size": size(512, 32768, power_of_two=True, suffixes="k"), "log": whole(9, 15)},
}
_MKXFS = {
    **{flag: _suboption_list(table) for flag, table in _XFS_SUB.items()},
    "-L": label(12), "-p": PATH, "-c": _suboption_list({"options": PATH}),
    **{flag: FLAG for flag in ("-f", "-q", "-K", "-N")},
}

_BTRFS_PROFILE = enum("raid0", "raid1", "raid1c3", "raid1c4", "raid5", "raid6", "raid10", "dup", "single")
# mkfs.btrfs -O list-all and -R list-all of btrfs-progs 6.2; later versions take the runtime features
# (quota, free-space-tree) and block-group-tree, squota, raid-stripe-tree under -O too.
_BTRFS_FEATURES = ("mixed-bg", "extref", "raid56", "skinny-metadata", "no-holes", "raid1c34", "zoned",
                   "block-group-tree", "free-space-tree", "quota", "squota", "raid-stripe-tree")
_BTRFS_RUNTIME_FEATURES = ("quota", "free-space-tree")


def _feature_list(names) -> Syntax:
    return Syntax(f"features of {', '.join(names)} (each may start with ^), joined by commas",
                  lambda v: bool(v) and all(f.lstrip("^") in names and f.count("^") <= 1 for f in v.split(",")))


_BTRFS_FEATURE_LIST = _feature_list(_BTRFS_FEATURES)
_BTRFS_RUNTIME_LIST = _feature_list(_BTRFS_RUNTIME_FEATURES)
_BTRFS_SIZE = size(4096, 65536, power_of_two=True, suffixes="k")
_MKBTRFS = {
    "-n": _BTRFS_SIZE, "--nodesize": _BTRFS_SIZE, "-s": _BTRFS_SIZE, "--sectorsize": _BTRFS_SIZE,
    "-m": _BTRFS_PROFILE, "--metadata": _BTRFS_PROFILE, "-d": _BTRFS_PROFILE, "--data": _BTRFS_PROFILE,
    "-O": _BTRFS_FEATURE_LIST, "--features": _BTRFS_FEATURE_LIST,
    "-R": _BTRFS_RUNTIME_LIST, "--runtime-features": _BTRFS_RUNTIME_LIST,
    "-L": label(255), "--label": label(255), "-U": UUID, "--uuid": UUID,
    "--csum": enum("crc32c", "xxhash", "sha256", "blake2"), "--checksum": enum("crc32c", "xxhash", "sha256", "blake2"),
    "-b": size(1, 2**63 - 1, suffixes="kmgtpe"), "--byte-count": size(1, 2**63 - 1, suffixes="kmgtpe"),
    "-r": PATH, "--rootdir": PATH,
    **{flag: FLAG for flag in ("-f", "--force", "-q", "--quiet", "-K", "--nodiscard", "-M", "--mixed", "-v",
                               "--verbose")},
}


_MKJFS = {
    "-s": whole(1, 128), "-L": label(16), "-j": PATH, "-J": enum("journal_dev", "external"),
    **{flag: FLAG for flag in ("-c", "-f", "-O", "-q", "-V")},
}
_MKREISERFS = {
    **{flag: whole(512, 8192, power_of_two=True) for flag in ("-b", "--block-size")},
    **{flag: enum("rupasov", "tea", "r5") for flag in ("-h", "--hash")},
    **{flag: UUID for flag in ("-u", "--uuid")},
    **{flag: label(16) for flag in ("-l", "--label")},
    "--format": enum("3.5", "3.6"),
    **{flag: PATH for flag in ("-j", "--journal-device", "-B", "--badblocks")},
    **{flag: whole(513, 32749) for flag in ("-s", "--journal-size")},
    **{flag: whole(0, _U32_MAX) for flag in ("-o", "--journal-offset")},
    **{flag: whole(256, 1024) for flag in ("-t", "--transaction-max-size")},
    **{flag: FLAG for flag in ("-f", "--force", "-q", "--quiet", "-d", "--debug", "-V")},
}


def mkfs_table(kind: str) -> dict:
    """{flag: value type} of the options of ``mkfs.<kind>``."""
    if kind == "jfs":
        return _MKJFS
    if kind == "reiserfs":
        return _MKREISERFS
    if kind in EXT_KINDS:
        return {**_MKE2FS, "-t": enum(kind)}
    return _MKXFS if kind == "xfs" else _MKBTRFS


def takes_value(kind_type) -> bool:
    """Does a flag of this type take a value (the next argument, or glued on)?"""
    return kind_type is not FLAG


def check_mkfs_value(kind: str, flag: str, value: str | None) -> None:
    """Refuse *value* of mkfs flag *flag* unless the flag takes it (suboption lists checked item by item)."""
    _check_value("mkfs_options", flag if value is None else f"{flag} {value}", flag, value, mkfs_table(kind)[flag])


__all__ = ["Syntax", "check_mkfs_value", "check_mount_option", "mkfs_table", "mount_table", "shown", "takes_value"]
