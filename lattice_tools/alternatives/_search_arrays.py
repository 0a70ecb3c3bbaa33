"""Array helpers of the sequence search: CSR gathers, run starts, grouping sorts (radix, composite
key, stable), first minimum per group, segmented log-sums, growable columns, chain tracing.

Segmented numpy reductions do not depend on what else is in the array, and every reduction sums
in a fixed order, so the search's results are deterministic.
"""
from __future__ import annotations

import math
from array import array

import numpy as np

from ._search import SearchTuning

INF = math.inf


def gather_rows(off: np.ndarray, states: np.ndarray):
    """Indices of the CSR rows ``states`` concatenated, and the row position of each."""
    lo = off[states]
    cnt = off[states + 1] - lo
    total = int(cnt.sum())
    rep = np.repeat(np.arange(len(states)), cnt)
    if not total:
        return np.zeros(0, dtype=np.int64), rep
    seg = np.cumsum(cnt) - cnt
    idx = np.arange(total) - np.repeat(seg - lo, cnt)
    return idx, rep


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




def radix_halves(keys: np.ndarray, span: int, tuning: SearchTuning):
    """``(low, high)`` uint16 halves of non-negative ``keys < span`` for :func:`stable_order`
    (``high`` is None when one half suffices; both None when the keys need more than 32 bits, or
    when ``tuning`` says not to radix-sort keys of this span)."""
    if span <= tuning.radix16_span:
        return keys.astype(np.uint16), None
    if span <= tuning.radix32_span:
        return (keys & 0xFFFF).astype(np.uint16), (keys >> 16).astype(np.uint16)
    return None, None


def stable_order(keys: np.ndarray, idx: np.ndarray, low: np.ndarray | None, high: np.ndarray | None,
                  ramp: np.ndarray, tuning: SearchTuning) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for ``keys = table[idx]`` (non-negative int64), given
    the table's radix halves (:func:`radix_halves`) and ``ramp = arange(len(keys))``.

    numpy's stable sort of 16-bit integers is a radix sort (linear time); two stable passes, low
    half then high half, sort 32-bit keys.  Otherwise the keys made unique with their index
    (``key * n + i``) are sorted with the faster unstable sort, which gives the same order
    (unless ``tuning.composite_keys`` is off)."""
    total = len(keys)
    if low is not None and high is None:
        return np.argsort(low[idx], kind="stable")
    if low is not None and total >= tuning.radix_min_total:
        o1 = np.argsort(low[idx], kind="stable")
        return o1[np.argsort(high[idx[o1]], kind="stable")]
    if tuning.composite_keys and int(keys.max()) < (1 << 62) // total:
        return np.argsort(keys * total + ramp)
    return np.argsort(keys, kind="stable")


def first_min_per_group(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of the smallest value of each group of equal ``keys`` (earliest index among ties),
    groups in increasing key order: the same as ``o = np.lexsort((values, keys));
    o[run_starts(keys[o])]`` without the multi-key sort."""
    order = argsort_stable_keys(keys)
    seg = run_starts(keys[order])
    vs = values[order]
    mins = np.minimum.reduceat(vs, seg)
    lens = np.diff(np.append(seg, len(vs)))
    rep = np.repeat(mins, lens)
    hit = np.flatnonzero((vs == rep) | np.isnan(rep))  # lexsort sorts NaN last: a NaN-min group is all NaN
    return order[hit[run_starts(np.searchsorted(seg, hit, side="right"))]]


def first_min_per_cell(cells: np.ndarray, values: np.ndarray, num_cells: int) -> np.ndarray:
    """:func:`first_min_per_group` for keys that are small integers (``0 <= cells < num_cells``):
    the same indices (groups in increasing key order, the earliest index among equal minima; a
    group whose minimum is NaN gives its earliest index), found with two scatter-minimum passes
    over a dense table instead of a sort (linear time; ~5x faster on millions of candidates)."""
    n = len(cells)
    # ufunc.at takes a ~25x slower generic path unless the dtypes are numpy's canonical instances
    # (arrays that went through pickle, for one, are not): views fix that for free
    cells, values = cells.view(np.int64), values.view(np.float64)
    table = np.full(num_cells, INF)
    with np.errstate(invalid="ignore"):
        np.minimum.at(table, cells, values)  # propagates NaN like np.minimum.reduceat
    best = table[cells]
    hit = np.flatnonzero((values == best) | np.isnan(best))
    first = np.full(num_cells, n, dtype=np.int64)
    np.minimum.at(first, cells[hit], hit)
    return np.compress(first < n, first)  # (much faster than boolean-mask indexing)


#: The successor id of a choice that is not interned yet (typed-array row: ``NOT_INTERNED * k``).
NOT_INTERNED = array("q", [-1])


def typed_array(code: str, values: np.ndarray) -> array:
    """A typed ``array.array`` copy of a numpy array (``"d"``: float64, ``"q"``: int64)."""
    out = array(code)
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64 if code == "d" else np.int64).tobytes())
    return out


def segment_logsum(values: np.ndarray, seg: np.ndarray, lens: np.ndarray | None = None) -> np.ndarray:
    """Log-semiring sum of cost segments starting at ``seg`` (``lens``: their lengths, if the
    caller has them; callers silence numpy warnings once around the whole search instead of per
    call)."""
    if len(seg) == len(values):
        # all segments are singletons: m - log(exp(m - m)) is exactly m (exp(0) = 1, log(1) = 0)
        return values.copy()
    m = np.minimum.reduceat(values, seg)
    if lens is None:
        lens = np.empty(len(seg), dtype=np.int64)
        lens[:-1] = seg[1:] - seg[:-1]
        lens[-1] = len(values) - seg[-1]
    ex = np.exp(m.repeat(lens) - values)
    out = m - np.log(np.add.reduceat(ex, seg))
    out[m == INF] = INF
    return out


def segment_logsum_shifted(values: np.ndarray, seg: np.ndarray, lens: np.ndarray | None = None) -> np.ndarray:
    """:func:`segment_logsum` with one shift for all segments (the smallest value) instead of one per
    segment: half the passes over ``values``.  Exact unless a segment lies more than ~575 nats
    above the smallest value (``exp`` would lose digits), or is all infinite: then it is
    :func:`segment_logsum` (the two agree to a few ulps)."""
    if len(seg) == len(values):
        return values.copy()
    shift = values.min()
    sums = np.add.reduceat(np.exp(shift - values), seg)
    if not sums.min() >= 1e-250:
        return segment_logsum(values, seg, lens)
    return shift - np.log(sums)


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

