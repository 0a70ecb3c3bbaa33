"""Helpers shared by the batched fast paths: growable per-id attribute arrays (for the corpus-wide
interning tables), shared count objects, and the DP's in-row prefix minimum."""
from __future__ import annotations

import numpy as np

from .levenshtein import make_counts

INT16_LIMIT = int(np.iinfo(np.int16).max)


def prefix_min(t: np.ndarray) -> None:
    """In place, ``t[k] = min(t[:k+1])`` along axis 0, in log2(len(t)) vector steps (Hillis-Steele
    doubling: ufuncs read overlapping in/out operands as if copied first).  Several times faster
    here than ``np.minimum.accumulate``, whose loop along axis 0 is scalar."""
    s, n = 1, len(t)
    while s < n:
        np.minimum(t[s:], t[:-s], out=t[s:])
        s *= 2


class _Column:
    """A per-id attribute: appended to as a Python list, read as a numpy array (synced lazily)."""

    def __init__(self, dtype):
        self.items: list = []
        self.dtype = dtype
        self._array = np.zeros(0, dtype=dtype)

    def array(self) -> np.ndarray:
        if len(self._array) != len(self.items):
            tail = np.array(self.items[len(self._array):], dtype=self.dtype)
            self._array = np.concatenate([self._array, tail])
        return self._array


def shared_counts(c, s, d, i) -> list:
    """``[make_counts(c[u], s[u], d[u], i[u]) for u in ...]`` with one (frozen, shared) object per
    distinct row: a handful of small count tuples repeat across utterances."""
    n = len(c)
    if not n:
        return []
    cols = np.stack([c, s, d, i]).astype(np.int64)
    base = int(cols.max()) + 1
    code = ((cols[0] * base + cols[1]) * base + cols[2]) * base + cols[3]
    if base ** 4 >= 1 << 62:          # cannot overflow for any real utterance; be exact anyway
        return [make_counts(*row) for row in cols.T.tolist()]
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    objs = [make_counts(*row) for row in cols[:, first].T.tolist()]
    return [objs[k] for k in inverse.tolist()]


def padded_ids(flat, first, lengths, width, pad=-1, *, token_major=False) -> np.ndarray:
    """Token ids of a batch of texts as a padded matrix: text ``b`` is ``flat[first[b]:first[b] +
    lengths[b]]``; ``(len(lengths), width)``, or ``(width, len(lengths))`` with ``token_major``
    (the layout a DP that advances one token position at a time wants), ``pad`` elsewhere."""
    B = len(lengths)
    ids = np.full((width, B) if token_major else (B, width), pad, dtype=np.int64)
    total = int(lengths.sum())
    if total:
        text = np.repeat(np.arange(B), lengths)
        pos = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        values = flat[np.repeat(first, lengths) + pos]
        if token_major:
            ids[pos, text] = values
        else:
            ids[text, pos] = values
    return ids


def length_batches(nr: np.ndarray, nh: np.ndarray, batch_cells: int) -> list:
    """Utterance indices in batches for a padded DP: sorted by reference length, then hypothesis
    length, each batch grown while ``size x (longest ref + 1) x (longest hyp + 1)`` stays within
    ``batch_cells`` (a batch has at least one utterance)."""
    n = len(nr)
    order = np.lexsort((nh, nr))
    nr_l, nh_l, order_l = nr.tolist(), nh.tolist(), order.tolist()
    batches = []
    start = 0
    while start < n:
        end, max_m = start, 0
        while end < n:
            u = order_l[end]
            if end > start and (end - start + 1) * (nr_l[u] + 1) * (max(max_m, nh_l[u]) + 1) > batch_cells:
                break
            max_m = max(max_m, nh_l[u])
            end += 1
        batches.append(order[start:end])
        start = end
    return batches
