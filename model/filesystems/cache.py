"""Cache service time (Djordjevic & Timcenko 2015, eq. 2).

    T_CST ~= P_H * S_R / R_CT + P_M * T_DST                   (2)

and a stated model of the hit probability P_H:

* random access over a working set W with a cache of C bytes holding a
  uniformly random part of it: P_H = min(1, C / W) (LRU under the
  independent-reference model with uniform popularity);
* sequential access with read-ahead of A bytes: one miss brings in the
  request and the next A bytes, so of the requests of S bytes a fraction
  S / (S + A) misses.

The mix is weighted by the sequential fraction of requests.
"""
from __future__ import annotations

import numpy as np

from .._checks import finite_array


def hit_probability(cache_size_bytes, working_set_bytes, *, request_size_bytes=4096,
                    sequential_fraction=0.0, readahead_bytes=0):
    """P_H for a request mix [dimensionless, 0..1]; see the module docstring.

    Parameters
    ----------
    cache_size_bytes : array_like
        Cache available to the workload [bytes], >= 0.
    working_set_bytes : array_like
        Bytes the random part of the workload touches [bytes], > 0.
    request_size_bytes : array_like
        S_R [bytes], whole numbers > 0.
    sequential_fraction : array_like
        Fraction of requests that continue the previous one [0..1].
    readahead_bytes : array_like
        Read-ahead after a sequential miss [bytes], >= 0.
    """
    cache = finite_array("cache_size_bytes", cache_size_bytes, nonnegative=True)
    working_set = finite_array("working_set_bytes", working_set_bytes, positive=True)
    request = finite_array("request_size_bytes", request_size_bytes, positive=True, whole=True, nonempty=True)
    sequential = finite_array("sequential_fraction", sequential_fraction, nonnegative=True, maximum=1.0)
    readahead = finite_array("readahead_bytes", readahead_bytes, nonnegative=True)
    random_hit = np.minimum(1.0, cache / working_set)
    sequential_hit = readahead / (request + readahead)
    return sequential * sequential_hit + (1.0 - sequential) * random_hit


def cache_service_time_s(hit_probability, request_size_bytes, cache_rate_bytes_per_s, disk_service_time_s):
    """T_CST of eq. (2) [s].

    Parameters
    ----------
    hit_probability : array_like
        P_H in [0, 1]; P_M = 1 - P_H.
    request_size_bytes : array_like
        S_R [bytes], whole numbers > 0.
    cache_rate_bytes_per_s : array_like
        R_CT, the rate at which a hit is served [bytes/s].
    disk_service_time_s : array_like
        T_DST of a miss [s] (eq. 3).
    """
    p_hit = finite_array("hit_probability", hit_probability, nonnegative=True, maximum=1.0)
    size = finite_array("request_size_bytes", request_size_bytes, positive=True, whole=True, nonempty=True)
    rate = finite_array("cache_rate_bytes_per_s", cache_rate_bytes_per_s, positive=True)
    miss_time = finite_array("disk_service_time_s", disk_service_time_s, nonnegative=True)
    return _cache_service_time_s(p_hit, size, rate, miss_time)


def _cache_service_time_s(p_hit, size_bytes, rate_bytes_per_s, miss_time_s):
    """Eq. (2) on checked values; *size_bytes* may be a mean size (the file-system model's expectations)."""
    return p_hit * size_bytes / rate_bytes_per_s + (1.0 - p_hit) * miss_time_s
