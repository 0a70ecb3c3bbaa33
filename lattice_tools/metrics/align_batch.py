"""Batched word alignment: kaldialign's ``align`` (Kaldi's ``LevenshteinAlignment``) for many
utterances at once, reduced to what the metrics read of it.

For every utterance, the plain Levenshtein DP (insertion, deletion, substitution cost 1) and the
backtrace of ``LevenshteinAlignment`` from the last cell, with its tie-breaking: the diagonal
(match or substitution) only when strictly cheaper than both deletion and insertion, then
deletion when strictly cheaper than insertion, else insertion; on the first row insertions, on
the first column deletions.  The alignment is the same, so the counts (C, S, D, I) and the
position of each hypothesis word in the reference (``codeswitch.hyp_positions_in_ref``: the
number of reference words aligned before it) are those the per-utterance path reads off
``_kaldialign.align``'s pairs.  Tests compare both on random inputs with many ties.

Semiring: tropical (min, +) over integer costs.  The DP runs on ``E = D - j`` (``j`` = the
hypothesis prefix length, i.e. the insertion chain), so that a row is a prefix minimum; a batch
keeps the utterance axis last so that each step is one vector operation over the batch, and the
backtraces of all utterances walk together, one numpy step per alignment element.
"""
from __future__ import annotations

import numpy as np

from ._columns import INT16_LIMIT, length_batches, padded_ids, prefix_min

BATCH_CELLS = 200_000


def align_many(ref_flat: np.ndarray, ref_off: np.ndarray, hyp_flat: np.ndarray, hyp_off: np.ndarray,
               batch_cells: int = BATCH_CELLS, int16_limit: int = INT16_LIMIT):
    """Alignments of utterances ``u = 0..n-1`` (reference ids ``ref_flat[ref_off[u]:ref_off[u+1]]``,
    hypothesis ids likewise; ids compared for equality only).

    Returns ``(correct, substitutions, deletions, insertions, pos)``: four int arrays of length
    ``n`` and ``pos``, aligned with ``hyp_flat``: for each hypothesis word, the number of
    reference words before it in the alignment.  Tuning: ``batch_cells`` bounds a padded batch's
    DP cells; a batch whose costs can reach ``int16_limit`` uses int32 tables.
    """
    n = len(ref_off) - 1
    nr, nh = np.diff(ref_off), np.diff(hyp_off)
    d_parts: list = []
    size = 0
    d_base = np.zeros(n, dtype=np.int64)
    d_row = np.zeros(n, dtype=np.int64)
    col = np.zeros(n, dtype=np.int64)
    for batch in length_batches(nr, nh, batch_cells):
        B = len(batch)
        bn, bm = nr[batch], nh[batch]
        N, M = int(bn.max()), int(bm.max())
        R = padded_ids(ref_flat, ref_off[batch], bn, max(N, 1), -1, token_major=True)     # (N, B)
        H = padded_ids(hyp_flat, hyp_off[batch], bm, max(M, 1), -2, token_major=True)     # (M, B)
        dtype = np.int16 if N + M + 2 < int16_limit else np.int32
        # substitution cost - 1 (the insertion cost of the column, see the module docstring)
        S1 = (R[:, None, :] != H[None, :M, :]).astype(dtype) - 1
        E = np.empty((N + 1, M + 1, B), dtype=dtype)
        E[0] = 0
        minimum = np.minimum
        for r in range(1, N + 1):
            prev, t = E[r - 1], E[r]
            np.add(prev, 1, out=t)
            minimum(t[1:], prev[:-1] + S1[r - 1], out=t[1:])
            prefix_min(t)
        E += np.arange(M + 1, dtype=dtype)[:, None]
        b_idx = np.arange(B)
        d_base[batch] = size + b_idx
        d_row[batch] = (M + 1) * B
        col[batch] = B
        d_parts.append(E.ravel())
        size += E.size
    Df: np.ndarray = np.concatenate(d_parts) if d_parts else np.zeros(1, dtype=np.int32)

    correct = np.zeros(n, dtype=np.int64)
    subs = np.zeros(n, dtype=np.int64)
    dels = np.zeros(n, dtype=np.int64)
    inss = np.zeros(n, dtype=np.int64)
    pos = np.zeros(len(hyp_flat), dtype=np.int64)
    steps_diag, steps_del, steps_ins = [], [], []
    # trailing sentinels keep the clipped takes valid when a side is empty everywhere
    ref_take, hyp_take = np.append(ref_flat, -1), np.append(hyp_flat, -2)
    a = np.flatnonzero((nr > 0) | (nh > 0))
    i, j = nr[a], nh[a]
    base, row, c, r0, h0 = d_base[a], d_row[a], col[a], ref_off[a], hyp_off[a]
    while len(a):
        lin: np.ndarray = base + i * row + j * c
        both = (i > 0) & (j > 0)
        # (clip: indices of cells outside the table only occur where ``both`` is False)
        same = ref_take.take(r0 + i - 1, mode="clip") == hyp_take.take(h0 + j - 1, mode="clip")
        sub_or_ok = Df.take(lin - row - c, mode="clip") + ~same
        dl = Df.take(lin - row, mode="clip") + 1
        ins = Df.take(lin - c, mode="clip") + 1
        diag = both & (sub_or_ok < np.minimum(dl, ins))
        go_del = ~diag & (i > 0) & ((j == 0) | (dl < ins))
        go_ins = ~diag & ~go_del
        if diag.any():
            steps_diag.append((a[diag], same[diag], h0[diag] + j[diag] - 1, i[diag] - 1))
        if go_del.any():
            steps_del.append(a[go_del])
        if go_ins.any():
            steps_ins.append((a[go_ins], h0[go_ins] + j[go_ins] - 1, i[go_ins]))
        i = i - (diag | go_del)
        j = j - (diag | go_ins)
        live = (i > 0) | (j > 0)
        if not live.all():
            a, i, j, base, row, c, r0, h0 = (x[live] for x in (a, i, j, base, row, c, r0, h0))
    if steps_diag:
        u, same, k, p = (np.concatenate(x) for x in zip(*steps_diag, strict=False))
        correct += np.bincount(u[same], minlength=n)
        subs += np.bincount(u[~same], minlength=n)
        pos[k] = p
    if steps_del:
        dels += np.bincount(np.concatenate(steps_del), minlength=n)
    if steps_ins:
        u, k, p = (np.concatenate(x) for x in zip(*steps_ins, strict=False))
        inss += np.bincount(u, minlength=n)
        pos[k] = p
    return correct, subs, dels, inss, pos
