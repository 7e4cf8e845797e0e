"""Checks of read requests shared by every backend (real, simulated)."""
from __future__ import annotations

import operator

import numpy as np


def check_length(length_bytes, block_size_bytes: int, size_bytes: int) -> int:
    """*length_bytes* as an int: a positive multiple of the block size, at most the size."""
    try:
        length = operator.index(length_bytes)
    except TypeError:
        raise ValueError(f"length_bytes must be an integer (got {length_bytes!r})") from None
    if length <= 0 or length % block_size_bytes or length > size_bytes:
        raise ValueError(f"length_bytes={length} must be a positive multiple of block_size_bytes="
                         f"{block_size_bytes} and at most size_bytes={size_bytes}")
    return length


def check_offsets(offsets, length: int, block_size_bytes: int, size_bytes: int) -> np.ndarray:
    """*offsets* as a 1-D int64 array of aligned offsets whose reads fit the device."""
    offs = np.asarray(offsets if isinstance(offsets, np.ndarray) else list(offsets)).reshape(-1)
    if offs.size == 0:
        return offs.astype(np.int64)
    if not np.issubdtype(offs.dtype, np.integer):
        raise ValueError(f"offsets must be integers (got dtype {offs.dtype})")
    offs = offs.astype(np.int64, copy=False)
    bad = (offs < 0) | (offs % block_size_bytes != 0) | (offs > size_bytes - length)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"offsets[{i}]={int(offs[i])} must be a non-negative multiple of block_size_bytes="
                         f"{block_size_bytes} with offset + length_bytes <= size_bytes={size_bytes}")
    return offs
