"""The chain engine of :func:`lattice_tools.scoring.sclite.score_stm_ctm` (same counts, same alignments
as the general engine of :mod:`lattice_tools.scoring.align`).

It applies when every scored reference is a *chain* (no ``{ / }`` alternations; optional words and
``@`` are fine) and neither ``-F`` nor ``single_segment``/``reduce`` is asked for -- the common case;
everything else goes through the general engine of :mod:`lattice_tools.scoring.align`.

Why it is exact.  With a chain reference every reference arc ``a`` has the single predecessor
``a - 1``, so sclite's recursion (see :mod:`lattice_tools.scoring.align`) only ever takes minima
over the *hypothesis* in-arcs of one state ``s`` at one reference row::

    M_s[a]   = first-min over b' in in(s) of D[a][b']        (in-arcs in text order)
    D[a][b]  = pick(sub = M_s[a-1] + w(a,b),  del = D[a-1][b] + w(a,-),  ins = M_s[a] + w(-,b))

with ``s = src(b)``, ``pick`` sclite's tie rule and float32 sums, exactly as the general engine.
The hypothesis network of a CTM is a series of items (a word; an ALT block = parallel chains), so
its arcs are processed level by level (level = longest path from the start to ``src(b)``) with the
whole column ``D[:, b]`` of every arc of that level -- across all segments and all alternatives of
all ALT blocks -- advanced together as a ``[ref_len, n_arcs]`` float32 array.  Whatever the tie
rule, the value ``D[a][b]`` is the minimum of the three candidates, so only the deletion chain runs
row by row (three numpy operations per reference position); the choices (back-pointers, where the
tie rule matters) are then decided on whole matrices from the very same float32 sums.  ``M_s`` of a
block's exit state is a running minimum of the key ``cost bits << 32 | alternative rank`` (costs
are non-negative, so float32 bit patterns order like the floats), i.e. the first listed alternative
wins exact ties, as in sclite.  When every cost of a chunk is an integer (no ``@`` arc in sclite
mode; always in Levenshtein mode) the sums are done in int16 instead: exact in both types, so the
choices are identical.  Jobs are processed in chunks of similar reference length (bounded memory,
little padding); the back-trace runs for all segments of a chunk at once and alignment pairs are
materialized only when asked for.

Chunks are independent and run in threads on large inputs (:mod:`lattice_tools.core._threads`; numpy
releases the GIL); their results are combined in a fixed order, so the thread count changes
nothing.

Caveat: the columns of the DP are ``ref_len + 1`` long, so a chunk's memory is about ten bytes per
(reference position x hypothesis arc); :attr:`EngineTuning.max_cells` bounds a chunk.

Inputs are :class:`~.ctm_items.HypItems`, columns of CTM items built either from ``CtmWord``/``CtmAltBlock``
objects (:func:`~.ctm_items.items_from_objects`) or straight from a CTM file
(:func:`lattice_tools.scoring.ctm_columns.read_ctm_columns`).  A chunk goes through four steps, one
function or class each: :class:`_Keys` (compare keys), :class:`_HypNetwork` (arcs, levels, providers),
:class:`_Forward` (the DP), :func:`_back_trace`, then :func:`_results`.
"""
from __future__ import annotations

import contextlib
import sys

import numpy as np

from ..core._budget import check_allocation
from ..core._threads import num_threads, thread_map
from ..core.counts import ErrorCounts
from .align import LEVENSHTEIN_COSTS, SCLITE_COSTS, AlignedPair, Alignment
from .ctm_items import HypItems
from .network import _clean_token
from .tuning import DEFAULT_TUNING, EngineTuning

OP_SUB, OP_DEL, OP_INS = 0, 1, 2
_START, _ARC, _MULTI = 0, 1, 2


@contextlib.contextmanager
def heap_reuse(enable: bool = True):
    """Keep freed heap memory for reuse while scoring a large input (glibc only; elsewhere a no-op).

    The columnar reader and the DP allocate and free hundreds of arrays of tens of MB.  glibc
    serves each of them with a fresh ``mmap`` and unmaps it on free, so every array costs one page
    fault per 4 KB (measured: 0.6-1.4 s of system time on a 2M-line CTM, more than the DP itself).
    Within this context large blocks come from the heap (``M_MMAP_THRESHOLD`` 32 MB) and freed
    memory is not trimmed; on exit glibc's default thresholds are set again and the heap is
    trimmed, so the process does not keep the memory (the thresholds stay fixed at their default
    values: glibc stops adjusting them dynamically once they have been set)."""
    libc = None
    if enable and sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None)
            if not hasattr(libc, "mallopt") or not hasattr(libc, "malloc_trim"):
                libc = None
        except OSError:
            libc = None
    if libc is not None:
        libc.mallopt(-8, 1)              # M_ARENA_MAX: the worker threads share this one heap too
        libc.mallopt(-3, 32 << 20)       # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 30)        # M_TRIM_THRESHOLD
        libc.mallopt(-2, 64 << 20)       # M_TOP_PAD
    try:
        yield
    finally:
        if libc is not None:
            libc.mallopt(-8, 0)          # glibc's defaults
            libc.mallopt(-3, 128 << 10)
            libc.mallopt(-1, 128 << 10)
            libc.mallopt(-2, 0)
            libc.malloc_trim(0)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` for every (s, c)."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offs = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=offs[1:])
    return np.arange(total, dtype=np.int64) - np.repeat(offs - starts, counts)


class _Costs:
    def __init__(self, mode):
        c = SCLITE_COSTS if mode == "sclite" else LEVENSHTEIN_COSTS
        self.sub, self.insdel, self.null, self.optdel, self.nullsub = (
            c["sub"], c["insdel"], c["null"], c["optdel"], c["nullsub"])
        self.strict = mode == "levenshtein"


def _key_of(word, optional, optional_deletable):
    """(compare key, optionally deletable) like ``align._arc_keys`` without fragments."""
    if word is None:
        return None, False
    if optional and optional_deletable:
        return word, True
    if optional:
        return f"({word})", False
    return word, False


def _job_arcs(job_items: list, hyp: HypItems) -> np.ndarray:
    """Number of hypothesis arcs of every job."""
    n = np.zeros(len(job_items), np.int64)
    if not job_items:
        return n
    items = np.concatenate(job_items).astype(np.int64, copy=False)
    if not len(items):
        return n
    alts = _ranges(hyp.alt0[items], hyp.n_alts[items])
    per_item = np.bincount(np.repeat(np.arange(len(items)), hyp.n_alts[items]), hyp.alt_len[alts],
                           minlength=len(items)).astype(np.int64)
    owner = np.repeat(np.arange(len(job_items)), [len(x) for x in job_items])
    return np.bincount(owner, per_item, minlength=len(job_items)).astype(np.int64)


def score_chain_jobs(ref_tokens: list, job_items: list, hyp: HypItems, *, optional_deletable: bool,
                     case_sensitive: bool, language, mode: str, tuning: EngineTuning = DEFAULT_TUNING):
    """Align every job (chain reference tokens, hypothesis item indices in scoring order).

    Jobs are processed in chunks of similar reference length holding about ``tuning.max_cells`` DP
    cells (bounded memory, little padding).

    Returns:
      (alignments, confidences, counts): one lazy :class:`~lattice_tools.scoring.align.Alignment` per
      job, equal to what the general engine gives; and, when every hypothesis arc of every job has
      a confidence, per job the list of (op, confidence) of its aligned hypothesis words (for
      sclite's NCE), else None; ``counts[j]`` the :class:`ErrorCounts` fields of job ``j``.
    """
    max_cells = tuning.max_cells
    n_jobs = len(ref_tokens)
    n_arcs = _job_arcs(job_items, hyp)
    ref_len = np.fromiter((len(t) for t in ref_tokens), np.int64, count=n_jobs)
    # sclite reports NCE when any word of the CTM has a confidence (a word without one counts as 0)
    with_conf = bool(n_arcs.sum()) and bool((~np.isnan(hyp.arc_conf)).any())
    order = np.argsort(ref_len, kind="stable")
    alignments: list = [None] * n_jobs
    confs: list | None = [None] * n_jobs if with_conf else None
    counts = np.zeros((n_jobs, len(_FIELDS)), np.int64)
    workers = num_threads()
    job_cells = (ref_len + 1) * (n_arcs + 1)
    if workers > 1:
        # enough chunks to keep every thread busy, but not so small that the per-level Python
        # overhead of a chunk dominates
        total = int(job_cells.sum())
        max_cells = min(max_cells, max(-(-total // (2 * workers)), tuning.min_thread_cells))
    chunks = []
    start = 0
    while start < n_jobs:
        stop, cells = start, 0
        while stop < n_jobs:
            c = int(job_cells[order[stop]])
            if stop > start and cells + c > max_cells:
                break
            cells += c
            stop += 1
        chunks.append(order[start:stop].tolist())
        start = stop

    def run(chunk):
        return _score_chunk([ref_tokens[j] for j in chunk], [job_items[j] for j in chunk], hyp,
                            optional_deletable=optional_deletable, case_sensitive=case_sensitive,
                            language=language, mode=mode, with_conf=with_conf)

    # chunks are independent; they are combined in a fixed order whatever the thread count
    for chunk, (alis, conf, matrix) in zip(chunks, thread_map(run, chunks, workers), strict=False):
        counts[chunk] = matrix
        for k, j in enumerate(chunk):
            alignments[j] = alis[k]
            if confs is not None:
                confs[j] = conf[k]
    return alignments, confs, counts


def _score_chunk(ref_tokens: list, job_items: list, hyp: HypItems, *, optional_deletable: bool,
                 case_sensitive: bool, language, mode: str, with_conf: bool):
    """:func:`score_chain_jobs` on one chunk of jobs: (alignments, confidences or None, counts matrix)."""
    costs = _Costs(mode)
    keys = _Keys(hyp.vocab, ref_tokens, optional_deletable, case_sensitive, language)
    net = _HypNetwork(job_items, hyp, keys)
    dp = _Forward(keys, net, costs)
    steps = _back_trace(keys, net, dp)
    return _results(keys, net, dp, steps, with_conf)


class _Keys:
    """Compare keys of the hypothesis vocabulary and the reference tokens of a chunk (each
    distinct text cleaned once): key ids (-1: ``@``), optionally deletable flags, displays."""

    def __init__(self, vocab: list, ref_tokens: list, optional_deletable: bool, case_sensitive: bool, language):
        key_ids: dict = {}
        # hypothesis vocabulary; index -1 = the null arc
        self.hv_key = np.empty(len(vocab) + 1, np.int64)
        self.hv_opt = np.zeros(len(vocab) + 1, bool)
        self.hv_disp = []
        for i, w in enumerate(vocab):
            text, opt, _frag = _clean_token(w, case_sensitive, language)
            key, od = _key_of(text, opt, optional_deletable)
            self.hv_key[i] = -1 if key is None else key_ids.setdefault(key, len(key_ids))
            self.hv_opt[i] = od
            self.hv_disp.append("@" if text is None else (f"({text})" if opt else text))
        self.hv_key[-1] = -1
        self.hv_disp.append("@")
        # references
        n_jobs = len(ref_tokens)
        self.n_jobs = n_jobs
        self.ref_len = np.fromiter((len(t) for t in ref_tokens), np.int64, count=n_jobs)
        flat = [tok for toks in ref_tokens for tok in toks]
        distinct = {tok: i for i, tok in enumerate(dict.fromkeys(flat))}
        d_key = np.empty(len(distinct), np.int64)
        d_od = np.zeros(len(distinct), bool)
        d_opt = np.zeros(len(distinct), bool)
        self.d_disp = []
        for tok, i in distinct.items():
            text, opt, _frag = _clean_token(tok, case_sensitive, language)
            key, od = _key_of(text, opt, optional_deletable)
            d_key[i] = -1 if key is None else key_ids.setdefault(key, len(key_ids))
            d_od[i] = od
            d_opt[i] = opt and text is not None
            self.d_disp.append("@" if text is None else (f"({text})" if opt else text))
        tok_id = np.fromiter(map(distinct.__getitem__, flat), np.int64, count=len(flat))
        self.ref_key, self.ref_od, self.ref_opt = d_key[tok_id], d_od[tok_id], d_opt[tok_id]
        self.ref_off = np.zeros(n_jobs + 1, np.int64)
        np.cumsum(self.ref_len, out=self.ref_off[1:])
        self.tok_id_l = tok_id.tolist()
        self.n_keys = len(key_ids)


class _HypNetwork:
    """The hypothesis arcs of every job of a chunk, in the order ``from_ctm_items`` numbers them, with
    their levels (longest path from the job's start to the arc's source) and the *provider* of each
    arc's source column: the job's head column (``_START``), the previous arc (``_ARC``) or the exit
    state of an ALT block (``_MULTI``)."""

    def __init__(self, job_items: list, hyp: HypItems, keys: _Keys):
        n_jobs = keys.n_jobs
        job_n_items = np.fromiter((len(x) for x in job_items), np.int64, count=n_jobs)
        items = np.concatenate(job_items) if n_jobs else np.zeros(0, np.int64)
        items = items.astype(np.int64, copy=False)
        n_items = len(items)
        item_job = np.repeat(np.arange(n_jobs, dtype=np.int64), job_n_items)
        it_nalt = hyp.n_alts[items]
        alts = _ranges(hyp.alt0[items], it_nalt)                  # global alternative ids, job order
        alt_item = np.repeat(np.arange(n_items, dtype=np.int64), it_nalt)   # position in `items`
        a_len = hyp.alt_len[alts]
        arcs_src = _ranges(hyp.alt_arc0[alts], a_len)             # index into hyp arc columns
        n_arcs = self.n_arcs = len(arcs_src)
        arc_alt = np.repeat(np.arange(len(alts), dtype=np.int64), a_len)   # position in `alts`
        alt_first = np.zeros(len(alts) + 1, np.int64)
        np.cumsum(a_len, out=alt_first[1:])
        arc_pos = np.arange(n_arcs, dtype=np.int64) - alt_first[arc_alt]
        arc_item = alt_item[arc_alt]
        self.arc_job = item_job[arc_item]
        self.hw = hyp.arc_word[arcs_src]
        self.arc_key = keys.hv_key[self.hw]
        self.arc_od = keys.hv_opt[self.hw]
        self.arc_conf = hyp.arc_conf[arcs_src]
        # item depth (longest alternative) and entry level within its job
        depth = np.zeros(n_items, np.int64)
        if len(alts):
            np.maximum.at(depth, alt_item, a_len)
        cum = np.cumsum(depth)
        job_item0 = np.zeros(n_jobs + 1, np.int64)
        np.cumsum(job_n_items, out=job_item0[1:])
        job_cum0 = np.where(job_item0[:-1] > 0, cum[np.maximum(job_item0[:-1] - 1, 0)], 0) if n_items else \
            np.zeros(n_jobs, np.int64)
        entry_level = cum - depth - job_cum0[item_job] if n_items else np.zeros(0, np.int64)
        self.arc_level = entry_level[arc_item] + arc_pos
        # exit provider of each item: its arc (one alternative) or a multi state (several)
        it_alt0 = np.zeros(n_items + 1, np.int64)
        np.cumsum(it_nalt, out=it_alt0[1:])
        is_multi = it_nalt > 1
        self.multi_of_item = np.cumsum(is_multi) - 1
        self.n_multi = int(is_multi.sum())
        exit_kind = np.where(is_multi, _MULTI, _ARC)
        exit_ref = np.where(is_multi, self.multi_of_item, alt_first[it_alt0[:-1]] + a_len[it_alt0[:-1]] - 1
                            if len(alts) else 0)
        multi_item = np.flatnonzero(is_multi)
        self.multi_alt0 = it_alt0[:-1][multi_item]               # rank k -> alternative multi_alt0 + k
        self.multi_level = entry_level[multi_item] + depth[multi_item]
        self.alt_last_arc = alt_first[1:] - 1
        self._providers(item_job, exit_kind, exit_ref, arc_pos, arc_item)
        # arcs entering a multi state: rank = alternative index within its item
        last_of_alt = arc_pos == a_len[arc_alt] - 1
        self.into_multi = last_of_alt & is_multi[arc_item]
        self.arc_item = arc_item
        self.arc_rank = arc_alt - it_alt0[:-1][arc_item]
        # final provider of each job
        last_item = job_item0[1:] - 1
        job_has_items = job_n_items > 0
        self.fin_kind = np.where(job_has_items, exit_kind[np.maximum(last_item, 0)] if n_items else _START, _START)
        self.fin_ref = np.where(job_has_items, exit_ref[np.maximum(last_item, 0)] if n_items else 0,
                                np.arange(n_jobs))

    def _providers(self, item_job, exit_kind, exit_ref, arc_pos, arc_item):
        """``prov_kind``/``prov_ref``: the provider of each arc's source column."""
        n_items = len(item_job)
        prev_item_same_job = np.zeros(n_items, bool)
        if n_items:
            prev_item_same_job[1:] = item_job[1:] == item_job[:-1]
        self.prov_kind = np.empty(self.n_arcs, np.int64)
        self.prov_ref = np.empty(self.n_arcs, np.int64)
        inner = arc_pos > 0
        self.prov_kind[inner] = _ARC
        self.prov_ref[inner] = np.flatnonzero(inner) - 1
        first = ~inner
        fi = arc_item[first]
        has_prev = prev_item_same_job[fi]
        self.prov_kind[first] = np.where(has_prev, exit_kind[np.maximum(fi - 1, 0)], _START)
        self.prov_ref[first] = np.where(has_prev, exit_ref[np.maximum(fi - 1, 0)], self.arc_job[first])


class _Forward:
    """The DP of a chunk, level by level.  Column storage ``C``: [head columns of jobs | arc columns
    (laid out level by level) | multi-state columns]; ``code[a, p]``: the operation chosen at row
    ``a`` of the arc at position ``p``; ``marg[a, m]``: the winning alternative of exit state ``m``."""

    def __init__(self, keys: _Keys, net: _HypNetwork, costs: _Costs):
        n_jobs, n_arcs = keys.n_jobs, net.n_arcs
        self.NA = NA = int(keys.ref_len.max()) + 1 if n_jobs else 1
        self.col_arc, self.col_multi = n_jobs, n_jobs + n_arcs
        self.max_level = max_level = int(net.arc_level.max()) + 1 if n_arcs else 0
        # Integer costs (no '@' arc in sclite mode; always in Levenshtein mode) are computed in int16:
        # the sums are exact in both types, so the choices are the same, at half the memory traffic.
        integral = costs.strict or not (bool((keys.ref_key < 0).any()) or bool((net.arc_key < 0).any()))
        self.VT = np.int16 if integral and 4 * (NA + max_level + 2) < 30000 else np.float32
        # the tables below are reference rows x hypothesis arcs: refused before they are allocated when the
        # memory budget cannot hold them (a GLM's alternations or ALT blocks multiply the arcs)
        check_allocation(NA * ((n_jobs + n_arcs + net.n_multi) * np.dtype(self.VT).itemsize + max(n_arcs, 1)
                               + 16 * net.n_multi),
                         f"scoring {n_jobs} segment(s) ({NA - 1:,} reference words x {n_arcs:,} hypothesis arcs)",
                         advice=" or split the segments (GLM alternations and ALT blocks multiply the arcs)")
        self.C = np.empty((NA, n_jobs + n_arcs + net.n_multi), self.VT)
        self.code = np.zeros((NA, max(n_arcs, 1)), np.int8)       # (one dummy column when no arcs)
        self._reference_rows(keys, costs)
        # arc columns are laid out level by level, so a level's results are one contiguous slice
        # (16-bit keys: numpy's stable sort is then a radix sort)
        lvl_order = np.argsort(net.arc_level.astype(np.int16) if max_level < (1 << 15) else net.arc_level,
                               kind="stable")
        self.lvl_bounds = np.searchsorted(net.arc_level[lvl_order], np.arange(max_level + 1))
        self.pos_of_arc = np.empty(n_arcs, np.int64)
        self.pos_of_arc[lvl_order] = np.arange(n_arcs)
        self.col_of = np.where(net.prov_kind == _START, net.prov_ref,
                               np.where(net.prov_kind == _ARC,
                                        self.col_arc + self.pos_of_arc[np.minimum(net.prov_ref, max(n_arcs - 1, 0))],
                                        self.col_multi + net.prov_ref))[lvl_order]
        arc_wins = np.where(net.arc_key < 0, costs.null, np.where(net.arc_od, costs.optdel, costs.insdel))
        self.lv_wins = arc_wins.astype(self.VT)[lvl_order]
        self.lv_job = net.arc_job[lvl_order]
        self.lv_key = np.where(net.arc_key < 0, -3, net.arc_key).astype(self.KT)[lvl_order]
        self.lv_multi = np.where(net.into_multi, net.multi_of_item[net.arc_item], -1)[lvl_order]
        self.lv_rank = net.arc_rank[lvl_order]
        self.mkey = np.full((net.n_multi, NA), np.iinfo(np.int64).max, np.int64)
        self.marg = np.zeros((NA, net.n_multi), np.int64)         # winning rank per row
        self.m_order = np.argsort(net.multi_level, kind="stable")
        self.m_bounds = np.searchsorted(net.multi_level[self.m_order], np.arange(max_level + 2))
        for level in range(max_level + 1):
            self._complete_exit_states(level)
            if level < max_level:
                self._advance_level(level, costs)

    def _reference_rows(self, keys: _Keys, costs: _Costs):
        """Reference key ``RW`` and deletion cost ``WD`` per row and job (padded rows: a word that
        matches nothing, deletion cost insdel), and the head columns (deletions of the reference
        prefix, accumulated in the DP's type)."""
        NA, n_jobs, VT = self.NA, keys.n_jobs, self.VT
        rows = np.arange(1, NA)[:, None]
        valid = rows <= keys.ref_len[None, :]
        ridx = np.minimum(keys.ref_off[:-1][None, :] + rows - 1, max(len(keys.ref_key) - 1, 0))
        # key ids: reference '@' -1, padding -2, hypothesis '@' -3 (so that equality means "same word")
        self.KT = np.int16 if keys.n_keys < 32000 else np.int32
        self.RW = np.full((NA, n_jobs), -2, self.KT)
        self.WD = np.full((NA, n_jobs), costs.insdel, VT)
        if len(keys.ref_key):
            ref_key = keys.ref_key[ridx]
            self.RW[1:] = np.where(valid, ref_key, -2)
            self.WD[1:] = np.where(valid, np.where(ref_key < 0, costs.null,
                                                   np.where(keys.ref_od[ridx], costs.optdel, costs.insdel)),
                                   costs.insdel)
        self.ref_has_null = bool((self.RW == -1).any())
        self.uniform_wd = bool((self.WD[1:] == costs.insdel).all())
        C = self.C
        C[0, :n_jobs] = 0.0
        for a in range(1, NA):
            C[a, :n_jobs] = C[a - 1, :n_jobs] + self.WD[a]

    def _complete_exit_states(self, level: int):
        """The columns of the ALT blocks' exit states that are complete at ``level``."""
        ms = self.m_order[self.m_bounds[level]:self.m_bounds[level + 1]]
        if len(ms):
            k = self.mkey[ms].T                                   # [NA, n]
            self.C[:, self.col_multi + ms] = (k >> 32).astype(self.VT) if self.VT is np.int16 else \
                (k >> 32).astype(np.uint32).view(np.float32)
            self.marg[:, ms] = k & 0xFFFFFFFF

    def _advance_level(self, level: int, costs: _Costs):
        """The columns of every arc of ``level`` (all jobs, all alternatives at once)."""
        lo, hi = int(self.lvl_bounds[level]), int(self.lvl_bounds[level + 1])
        if hi == lo:
            return
        VT, NA = self.VT, self.NA
        M = np.take(self.C, self.col_of[lo:hi], axis=1)           # C-ordered (C[:, idx] is not)
        jobs = self.lv_job[lo:hi]
        hk = self.lv_key[lo:hi]
        # Whatever the tie rule, the chosen value is the minimum of the three candidates, so only
        # the deletion chain runs row by row; the choices (back-pointers) are decided afterwards on
        # whole matrices from the very same float32 sums.
        INS = M + self.lv_wins[lo:hi][None, :]
        SUB = M[:-1]
        RWj = np.take(self.RW[1:], jobs, axis=1)                 # (take: C-ordered and faster)
        sub_c = VT(costs.sub)
        if self.ref_has_null:
            WS = np.where(RWj == hk[None, :], VT(0), sub_c)
            WS[(RWj == -1) & (hk == -3)[None, :]] = VT(costs.nullsub)
            SUB += WS
        else:
            # a match costs 0 (the value stays M exactly), anything else is a substitution
            np.add(SUB, sub_c, out=SUB, where=RWj != hk[None, :])
        D = self.C[:, self.col_arc + lo:self.col_arc + hi]
        T = np.empty((NA - 1, hi - lo), VT)                       # min(deletion, insertion) per row
        D[0] = INS[0]
        insdel_v = VT(costs.insdel)
        WDj = None if self.uniform_wd else self.WD[:, jobs]
        for a in range(1, NA):
            t = T[a - 1]
            np.add(D[a - 1], insdel_v if WDj is None else WDj[a], out=t)
            np.minimum(t, INS[a], out=t)
            np.minimum(t, SUB[a - 1], out=D[a])
        cs = (SUB < T) if costs.strict else (SUB <= T)
        K = self.code[:, lo:hi]
        K[0] = OP_INS
        K1 = K[1:]
        np.subtract(OP_INS, T < INS[1:], out=K1, casting="unsafe")    # deletion only when strictly cheaper
        np.multiply(K1, ~cs, out=K1)                                  # substitution (OP_SUB == 0)
        sel = np.flatnonzero(self.lv_multi[lo:hi] >= 0)
        if len(sel):
            bits = D[:, sel].astype(np.int64) if VT is np.int16 else D[:, sel].view(np.uint32).astype(np.int64)
            keys = (bits << 32) | self.lv_rank[lo + sel][None, :]
            # arcs of one level entering the same exit state are adjacent (arc order within a level)
            ids = self.lv_multi[lo + sel]
            heads = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
            red = np.minimum.reduceat(keys, heads, axis=1).T
            uid = ids[heads]
            self.mkey[uid] = np.minimum(self.mkey[uid], red)


def _back_trace(keys: _Keys, net: _HypNetwork, dp: _Forward):
    """The back-trace of all jobs at once: (job, operation, reference row - 1, arc) of every step, each
    job's steps last to first; and the best cost of every job."""
    n_jobs, n_arcs = keys.n_jobs, net.n_arcs

    def resolve(kind, ref, row):
        """Arc (global) whose column a provider stands for at reference row ``row``; -1 = head."""
        out = np.where(kind == _ARC, ref, -1)
        mm = kind == _MULTI
        if mm.any():
            m = ref[mm]
            out[mm] = net.alt_last_arc[net.multi_alt0[m] + dp.marg[row[mm], m]]
        return out

    a = keys.ref_len.copy()
    b = resolve(net.fin_kind, net.fin_ref, a)
    best = dp.C[a, np.where(b >= 0, dp.col_arc + dp.pos_of_arc[np.maximum(b, 0)] if n_arcs else 0,
                            np.arange(n_jobs))]
    steps_job, steps_op, steps_a, steps_b = [], [], [], []
    active = np.flatnonzero((a > 0) | (b >= 0))
    while len(active):
        aa, bb = a[active], b[active]
        head = bb < 0
        op = np.where(head, OP_DEL, dp.code[aa, dp.pos_of_arc[np.maximum(bb, 0)] if n_arcs else 0])
        steps_job.append(active)
        steps_op.append(op)
        steps_a.append(aa - 1)
        steps_b.append(bb)
        na = np.where(op == OP_INS, aa, aa - 1)
        move_b = op != OP_DEL
        nb = bb.copy()
        if move_b.any():
            s = np.flatnonzero(move_b)
            arc = bb[s]
            nb[s] = resolve(net.prov_kind[arc], net.prov_ref[arc], na[s])
        a[active] = na
        b[active] = nb
        keep = (na > 0) | (nb >= 0)
        active = active[keep]
    if not steps_job:
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(0, np.int8), empty, empty, best
    return (np.concatenate(steps_job), np.concatenate(steps_op).astype(np.int8), np.concatenate(steps_a),
            np.concatenate(steps_b), best)


def _results(keys: _Keys, net: _HypNetwork, dp: _Forward, steps, with_conf: bool):
    """Counts, lazy alignments and NCE confidences of the jobs of a chunk from their back-trace
    steps (pair classification as ``align._extract``)."""
    s_job, s_op, s_a, s_b, best = steps
    n_jobs, n_arcs = keys.n_jobs, net.n_arcs
    ref_key = keys.ref_key
    g_ref = keys.ref_off[s_job] + np.maximum(s_a, 0)
    g_ref = np.minimum(g_ref, max(len(ref_key) - 1, 0))
    rk = ref_key[g_ref] if len(ref_key) else np.zeros(len(s_job), np.int64)
    r_od = keys.ref_od[g_ref] if len(ref_key) else np.zeros(len(s_job), bool)
    r_opt = keys.ref_opt[g_ref] if len(ref_key) else np.zeros(len(s_job), bool)
    hk = net.arc_key[np.maximum(s_b, 0)] if n_arcs else np.zeros(len(s_job), np.int64)
    h_od = net.arc_od[np.maximum(s_b, 0)] if n_arcs else np.zeros(len(s_job), bool)
    is_sub, is_del, is_ins = s_op == OP_SUB, s_op == OP_DEL, s_op == OP_INS
    sub_pair = is_sub & ~((rk < 0) & (hk < 0))
    sub_same = sub_pair & (rk >= 0) & (rk == hk)
    del_pair = is_del & (rk >= 0)
    ins_pair = is_ins & (hk >= 0)
    n_c = np.bincount(s_job, sub_same | (del_pair & r_od) | (ins_pair & h_od), minlength=n_jobs).astype(np.int64)
    n_s = np.bincount(s_job, sub_pair & ~sub_same, minlength=n_jobs).astype(np.int64)
    n_d = np.bincount(s_job, del_pair & ~r_od, minlength=n_jobs).astype(np.int64)
    n_i = np.bincount(s_job, ins_pair & ~h_od, minlength=n_jobs).astype(np.int64)
    n_oc = np.bincount(s_job, (sub_same & r_opt) | (ins_pair & h_od), minlength=n_jobs).astype(np.int64)
    n_od = np.bincount(s_job, del_pair & r_od, minlength=n_jobs).astype(np.int64)
    pair = sub_pair | del_pair | ins_pair
    # per job, its pairs in alignment order (the trace runs backwards: reverse within each job)
    order = np.lexsort((-np.arange(len(s_job)), s_job))
    order = order[pair[order]]
    p_bounds = np.searchsorted(s_job[order], np.arange(n_jobs + 1))
    kind = np.where(sub_same, 0, np.where(sub_pair, 1, np.where(del_pair, np.where(r_od, 2, 3),
                                                                   np.where(h_od, 4, 5))))[order]
    pairs = _PairMaker(keys, net, kind, s_a[order], s_b[order], s_job[order], p_bounds)
    err = n_s + n_d + n_i
    matrix = np.stack([n_c, n_s, n_d, n_i, n_c + n_s + n_d, np.ones(n_jobs, np.int64), (err > 0).astype(np.int64),
                       n_oc, n_od], axis=1)
    cols = [x.tolist() for x in (n_c, n_s, n_d, n_i, n_c + n_s + n_d, (err > 0).astype(np.int64), n_oc, n_od)]
    best_l = best.astype(np.float64).tolist()
    alignments = []
    new = ErrorCounts.__new__
    for j in range(n_jobs):
        # validated by construction: skip ErrorCounts.__post_init__ (one call per segment)
        counts = new(ErrorCounts)
        counts.__dict__.update(correct=cols[0][j], substitutions=cols[1][j], deletions=cols[2][j],
                               insertions=cols[3][j], ref_words=cols[4][j], segments=1,
                               segment_errors=cols[5][j], optional_correct=cols[6][j],
                               optional_deleted=cols[7][j])
        alignments.append(Alignment.deferred(_Deferred(pairs, j), counts, best_l[j]))
    conf = None
    if with_conf:
        # (sclite leaves null words out of the NCE; a word without confidence counts as 0)
        has_hyp = ((kind == 0) | (kind == 1) | (kind == 4) | (kind == 5)) & (hk[order] >= 0)
        conf_l = np.where(has_hyp, np.nan_to_num(net.arc_conf[np.maximum(s_b[order], 0)], nan=0.0) if n_arcs
                          else 0.0, 0.0).tolist()
        op_l = np.where((kind == 0) | (kind == 4), "C", "S").tolist()
        hh = has_hyp.tolist()
        bounds_l = p_bounds.tolist()
        conf = [[(op_l[k], conf_l[k]) for k in range(bounds_l[j], bounds_l[j + 1]) if hh[k]] for j in range(n_jobs)]
    return alignments, conf, matrix


class _PairMaker:
    """The alignment pairs of job ``j`` of a chunk, made when asked for (``pair_maker(j)``)."""

    def __init__(self, keys: _Keys, net: _HypNetwork, kind, p_a, p_b_global, p_job, p_bounds):
        arc0 = np.searchsorted(net.arc_job, np.arange(keys.n_jobs)) if net.n_arcs else np.zeros(keys.n_jobs, np.int64)
        p_b = np.where(p_b_global >= 0, p_b_global - arc0[p_job], -1)
        p_hw = np.where(p_b_global >= 0, net.hw[np.maximum(p_b_global, 0)] if net.n_arcs else -1, -1)
        self.kind, self.a, self.b, self.hw = kind.tolist(), p_a.tolist(), p_b.tolist(), p_hw.tolist()
        self.bounds = p_bounds.tolist()
        self.ref_off, self.tok_id, self.d_disp, self.hv_disp = keys.ref_off.tolist(), keys.tok_id_l, keys.d_disp, \
            keys.hv_disp

    def __call__(self, j: int) -> tuple:
        r0 = self.ref_off[j]
        disp = [self.d_disp[t] for t in self.tok_id[r0:self.ref_off[j + 1]]]
        kind_l, a_l, b_l, hw_l, hv_disp = self.kind, self.a, self.b, self.hw, self.hv_disp
        out = []
        for k in range(self.bounds[j], self.bounds[j + 1]):
            t = kind_l[k]
            if t <= 1:
                out.append(AlignedPair("C" if t == 0 else "S", disp[a_l[k]], hv_disp[hw_l[k]], a_l[k], b_l[k]))
            elif t == 2:
                out.append(AlignedPair("C", disp[a_l[k]], "", a_l[k], -1))
            elif t == 3:
                out.append(AlignedPair("D", disp[a_l[k]], None, a_l[k], -1))
            elif t == 4:
                out.append(AlignedPair("C", "", hv_disp[hw_l[k]], -1, b_l[k]))
            else:
                out.append(AlignedPair("I", None, hv_disp[hw_l[k]], -1, b_l[k]))
        return tuple(out)


_FIELDS = ("correct", "substitutions", "deletions", "insertions", "ref_words", "segments", "segment_errors",
           "optional_correct", "optional_deleted")


class _Deferred:
    __slots__ = ("make", "j")

    def __init__(self, make, j):
        self.make, self.j = make, j

    def __call__(self):
        return self.make(self.j)
