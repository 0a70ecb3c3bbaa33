"""Array helpers of the sequence search: run starts, a fast stable argsort of integer keys, typed
arrays, growable columns, chain tracing."""
from __future__ import annotations

import math
from array import array

import numpy as np

INF = math.inf


def run_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Start index of each run of equal values in a sorted array."""
    flags = np.empty(len(sorted_keys), dtype=bool)
    if len(flags):
        flags[0] = True
        np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=flags[1:])
    return flags.nonzero()[0]


def argsort_stable_keys(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for non-negative int64 keys, computed with the (much
    faster) unstable sort on the unique composite key ``keys * n + index`` when it fits in int64."""
    n = len(keys)
    if n and int(keys.max()) < (1 << 62) // max(n, 1):
        return np.argsort(keys * n + np.arange(n, dtype=np.int64))
    return np.argsort(keys, kind="stable")




#: The successor id of a choice that is not interned yet (typed-array row: ``NOT_INTERNED * k``).
NOT_INTERNED = array("q", [-1])


def typed_array(code: str, values: np.ndarray) -> array:
    """A typed ``array.array`` copy of a numpy array (``"d"``: float64, ``"q"``: int64)."""
    out = array(code)
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64 if code == "d" else np.int64).tobytes())
    return out


class GrowableColumns:
    """Parallel arrays appended to in place (capacity doubled when full), so that earlier entries
    keep their positions and are never copied per append."""

    def __init__(self, capacity: int, dtypes):
        self.data = [np.empty(capacity, dtype=t) for t in dtypes]
        self.size = 0

    def append(self, *columns) -> None:
        n = len(columns[0])
        if self.size + n > len(self.data[0]):
            cap = max(2 * len(self.data[0]), self.size + n)
            self.data = [np.concatenate([d[:self.size], np.empty(cap - self.size, dtype=d.dtype)]) for d in self.data]
        for d, c in zip(self.data, columns, strict=False):
            d[self.size:self.size + n] = c
        self.size += n

    def arrays(self) -> list:
        return [d[:self.size] for d in self.data]



def trace_chains(starts: np.ndarray, lengths: np.ndarray, parent: np.ndarray, value: np.ndarray) -> list:
    """For each start node: the tuple of ``value`` along its chain of ``parent`` links, ``length``
    nodes long, the start node's value last (all chains followed at once, one numpy step per
    level; a chain of length 0 gives ``()``)."""
    width = int(lengths.max(initial=0))
    mat = np.zeros((len(starts), width), dtype=value.dtype)
    li = starts.copy()
    for col in range(width - 1, -1, -1):  # right-aligned: the chains still running at this level
        live = np.flatnonzero(lengths > width - 1 - col)
        at = li[live]
        mat[live, col] = value[at]
        li[live] = parent[at]
    rows = mat.tolist()
    return [tuple(r[width - k:]) for r, k in zip(rows, lengths.tolist(), strict=False)]

