"""Fast path of :func:`lattice_tools.scoring.sclite.score_stm_ctm` (same counts, same alignments).

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

Chunks are independent and run in threads on large inputs (:mod:`lattice_tools._threads`; numpy
releases the GIL); their results are combined in a fixed order, so the thread count changes
nothing.

Caveat: the columns of the DP are ``ref_len + 1`` long, so a chunk's memory is about ten bytes per
(reference position x hypothesis arc); :data:`MAX_CELLS` bounds a chunk.

Inputs are :class:`HypItems`, columns of CTM items built either from ``CtmWord``/``CtmAltBlock``
objects (:func:`items_from_objects`) or straight from a CTM file
(:func:`lattice_tools.scoring._fast_ctm.read_ctm_columns`).
"""
from __future__ import annotations

import contextlib
import sys

import numpy as np

from .._threads import num_threads, thread_map
from .align import LEVENSHTEIN_COSTS, SCLITE_COSTS, AlignedPair, Alignment
from .counts import ErrorCounts
from .network import _clean_token

OP_SUB, OP_DEL, OP_INS = 0, 1, 2
_START, _ARC, _MULTI = 0, 1, 2


class HypItems:
    """Columns of CTM items in input order.

    Per item: ``chan`` (index into ``chans``, the (file, channel) keys already case folded),
    ``t_sort`` (time the items are sorted by; NaN = none, takes the previous item's), ``mid``
    (midpoint sclite places the item with), ``lineno``, ``n_alts`` (1 for a plain word), ``alt0``
    (index of its first alternative), ``drops_word`` (sclite-divergent empty alternative),
    ``is_block`` (an ALT block, not a plain word).
    Per alternative (items' alternatives in order): ``alt_len`` (>= 1; an empty alternative is one
    null arc), ``alt_arc0`` (its first arc).  Per arc: ``arc_word`` (index into ``vocab``, the raw
    CTM word texts; -1 = the null arc of an empty alternative) and ``arc_conf`` (NaN = none)."""

    __slots__ = ("chans", "chan", "t_sort", "mid", "lineno", "n_alts", "alt0", "drops_word", "alt_len", "alt_arc0",
                 "arc_word", "arc_conf", "vocab", "is_block")

    def __init__(self, chans, chan, t_sort, mid, lineno, n_alts, alt0, drops_word, alt_len, alt_arc0, arc_word,
                 arc_conf, vocab, is_block):
        # (a plain class, not a dataclass: no code generation at import, which every CLI run pays)
        self.chans, self.chan, self.t_sort, self.mid, self.lineno = chans, chan, t_sort, mid, lineno
        self.n_alts, self.alt0, self.drops_word, self.alt_len, self.alt_arc0 = n_alts, alt0, drops_word, alt_len, alt_arc0
        self.arc_word, self.arc_conf, self.vocab, self.is_block = arc_word, arc_conf, vocab, is_block


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


def items_from_objects(ctm_items, fold) -> HypItems:
    """:class:`HypItems` of ``CtmWord``/``CtmAltBlock`` objects (times as in ``sclite.py``)."""
    from ..io.ctm import CtmAltBlock
    from .sclite import _block_times, _item_mid, _sclite_drops_a_word

    chan_ids: dict = {}
    chan, t_sort, mid, lineno, n_alts, alt0, drops, is_block = [], [], [], [], [], [], [], []
    alt_len, alt_arc0, arc_word, arc_conf = [], [], [], []
    vocab_ids: dict = {}
    nan = float("nan")
    for item in ctm_items:
        key = (fold(item.file), fold(item.channel))
        chan.append(chan_ids.setdefault(key, len(chan_ids)))
        lineno.append(item.lineno)
        alt0.append(len(alt_len))
        is_block.append(isinstance(item, CtmAltBlock))
        if is_block[-1]:
            times = _block_times(item)
            t_sort.append(min(t1 for t1, _ in times) if times else nan)
            mid.append(_item_mid(item))
            drops.append(_sclite_drops_a_word(item))
            n_alts.append(len(item.alternatives))
            for alt in item.alternatives:
                alt_arc0.append(len(arc_word))
                if not alt:
                    alt_len.append(1)
                    arc_word.append(-1)
                    arc_conf.append(nan)
                    continue
                alt_len.append(len(alt))
                for w in alt:
                    arc_word.append(vocab_ids.setdefault(w.word, len(vocab_ids)))
                    arc_conf.append(nan if w.confidence is None else w.confidence)
        else:
            t_sort.append(nan if item.start is None else item.start)
            mid.append((item.start or 0.0) + (item.duration or 0.0) / 2.0)
            drops.append(False)
            n_alts.append(1)
            alt_arc0.append(len(arc_word))
            alt_len.append(1)
            arc_word.append(vocab_ids.setdefault(item.word, len(vocab_ids)))
            arc_conf.append(nan if item.confidence is None else item.confidence)
    return HypItems(list(chan_ids), np.asarray(chan, np.int64), np.asarray(t_sort, np.float64),
                    np.asarray(mid, np.float64), np.asarray(lineno, np.int64), np.asarray(n_alts, np.int64),
                    np.asarray(alt0, np.int64), np.asarray(drops, bool), np.asarray(alt_len, np.int64),
                    np.asarray(alt_arc0, np.int64), np.asarray(arc_word, np.int64),
                    np.asarray(arc_conf, np.float64), list(vocab_ids), np.asarray(is_block, bool))


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` for every (s, c)."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offs = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=offs[1:])
    return np.arange(total, dtype=np.int64) - np.repeat(offs - starts, counts)


def sorted_item_order(hyp: HypItems) -> list:
    """Per channel (in order of first appearance): its items, stably sorted by time, an item
    without time taking the time of the item before it; in file order when the channel has an
    ALT block (``sclite._sort_items``)."""
    n = len(hyp.chan)
    out = []
    if n == 0:
        return [np.zeros(0, np.int64) for _ in hyp.chans]
    by_chan = np.argsort(hyp.chan, kind="stable")
    bounds = np.searchsorted(hyp.chan[by_chan], np.arange(len(hyp.chans) + 1))
    for c in range(len(hyp.chans)):
        idx = by_chan[bounds[c]:bounds[c + 1]]
        if hyp.is_block[idx].any():
            out.append(idx)
            continue
        t = hyp.t_sort[idx]
        if np.isnan(t).any():
            t = t.copy()
            last = float("-inf")
            for k in range(len(t)):       # forward fill (rare: times written as '*')
                if np.isnan(t[k]):
                    t[k] = last
                last = t[k]
        out.append(idx[np.argsort(t, kind="stable")])
    return out


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


MAX_CELLS = 1 << 22     # DP cells per chunk of jobs (memory: about 10 bytes per cell)
MIN_THREAD_CELLS = 1 << 19   # smallest chunk worth a thread of its own


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
                     case_sensitive: bool, language, mode: str, max_cells: int | None = None):
    """Align every job (chain reference tokens, hypothesis item indices in scoring order).

    Jobs are processed in chunks of similar reference length holding about ``max_cells`` DP cells
    (bounded memory, little padding).

    Returns:
      (alignments, confidences, counts): one lazy :class:`~lattice_tools.scoring.align.Alignment` per
      job, equal to what the general engine gives; and, when every hypothesis arc of every job has
      a confidence, per job the list of (op, confidence) of its aligned hypothesis words (for
      sclite's NCE), else None; ``counts[j]`` the :class:`ErrorCounts` fields of job ``j``.
    """
    if max_cells is None:
        max_cells = MAX_CELLS
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
        max_cells = min(max_cells, max(-(-total // (2 * workers)), MIN_THREAD_CELLS))
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
    """:func:`score_chain_jobs` on one chunk of jobs."""
    costs = _Costs(mode)
    n_jobs = len(ref_tokens)
    key_ids: dict = {}

    # --- hypothesis vocabulary -> (key id, optdel, display)
    hv_key = np.empty(len(hyp.vocab) + 1, np.int64)       # index -1 = the null arc
    hv_opt = np.zeros(len(hyp.vocab) + 1, bool)
    hv_disp = []
    for i, w in enumerate(hyp.vocab):
        text, opt, _frag = _clean_token(w, case_sensitive, language)
        key, od = _key_of(text, opt, optional_deletable)
        hv_key[i] = -1 if key is None else key_ids.setdefault(key, len(key_ids))
        hv_opt[i] = od
        hv_disp.append("@" if text is None else (f"({text})" if opt else text))
    hv_key[-1] = -1
    hv_disp.append("@")

    # --- references: key ids, optdel/optional flags, displays
    ref_len = np.fromiter((len(t) for t in ref_tokens), np.int64, count=n_jobs)
    flat = [tok for toks in ref_tokens for tok in toks]
    distinct = {tok: i for i, tok in enumerate(dict.fromkeys(flat))}   # each distinct token cleaned once
    d_key = np.empty(len(distinct), np.int64)
    d_od = np.zeros(len(distinct), bool)
    d_opt = np.zeros(len(distinct), bool)
    d_disp = []
    for tok, i in distinct.items():
        text, opt, _frag = _clean_token(tok, case_sensitive, language)
        key, od = _key_of(text, opt, optional_deletable)
        d_key[i] = -1 if key is None else key_ids.setdefault(key, len(key_ids))
        d_od[i] = od
        d_opt[i] = opt and text is not None
        d_disp.append("@" if text is None else (f"({text})" if opt else text))
    tok_id = np.fromiter(map(distinct.__getitem__, flat), np.int64, count=len(flat))
    ref_key, ref_od, ref_opt = d_key[tok_id], d_od[tok_id], d_opt[tok_id]
    ref_off = np.zeros(n_jobs + 1, np.int64)
    np.cumsum(ref_len, out=ref_off[1:])
    ref_off_l = ref_off.tolist()
    tok_id_l = tok_id.tolist()

    # --- hypothesis arcs of every job, in the order from_ctm_items numbers them
    job_n_items = np.fromiter((len(x) for x in job_items), np.int64, count=n_jobs)
    items = np.concatenate(job_items) if n_jobs else np.zeros(0, np.int64)
    items = items.astype(np.int64, copy=False)
    item_job = np.repeat(np.arange(n_jobs, dtype=np.int64), job_n_items)
    it_nalt = hyp.n_alts[items]
    alts = _ranges(hyp.alt0[items], it_nalt)                  # global alternative ids, job order
    alt_item = np.repeat(np.arange(len(items), dtype=np.int64), it_nalt)   # position in `items`
    a_len = hyp.alt_len[alts]
    arcs_src = _ranges(hyp.alt_arc0[alts], a_len)             # index into hyp arc columns
    n_arcs = len(arcs_src)
    arc_alt = np.repeat(np.arange(len(alts), dtype=np.int64), a_len)   # position in `alts`
    alt_first = np.zeros(len(alts) + 1, np.int64)
    np.cumsum(a_len, out=alt_first[1:])
    arc_pos = np.arange(n_arcs, dtype=np.int64) - alt_first[arc_alt]
    arc_item = alt_item[arc_alt]
    arc_job = item_job[arc_item]
    hw = hyp.arc_word[arcs_src]
    arc_key = hv_key[hw]
    arc_od = hv_opt[hw]
    arc_conf = hyp.arc_conf[arcs_src]
    # item depth (longest alternative) and entry level within its job
    depth = np.zeros(len(items), np.int64)
    if len(alts):
        np.maximum.at(depth, alt_item, a_len)
    cum = np.cumsum(depth)
    job_item0 = np.zeros(n_jobs + 1, np.int64)
    np.cumsum(job_n_items, out=job_item0[1:])
    job_cum0 = np.where(job_item0[:-1] > 0, cum[np.maximum(job_item0[:-1] - 1, 0)], 0) if len(items) else \
        np.zeros(n_jobs, np.int64)
    entry_level = cum - depth - job_cum0[item_job] if len(items) else np.zeros(0, np.int64)
    arc_level = entry_level[arc_item] + arc_pos
    # exit provider of each item: its arc (one alternative) or a multi state (several)
    it_alt0 = np.zeros(len(items) + 1, np.int64)
    np.cumsum(it_nalt, out=it_alt0[1:])
    is_multi = it_nalt > 1
    multi_of_item = np.cumsum(is_multi) - 1
    n_multi = int(is_multi.sum())
    exit_kind = np.where(is_multi, _MULTI, _ARC)
    exit_ref = np.where(is_multi, multi_of_item, alt_first[it_alt0[:-1]] + a_len[it_alt0[:-1]] - 1 if len(alts)
                        else 0)
    multi_item = np.flatnonzero(is_multi)
    multi_alt0 = it_alt0[:-1][multi_item]                     # rank k -> alternative multi_alt0 + k
    multi_level = entry_level[multi_item] + depth[multi_item]
    alt_last_arc = alt_first[1:] - 1
    # provider of each arc's source column
    prev_item_same_job = np.zeros(len(items), bool)
    if len(items):
        prev_item_same_job[1:] = item_job[1:] == item_job[:-1]
    prov_kind = np.empty(n_arcs, np.int64)
    prov_ref = np.empty(n_arcs, np.int64)
    inner = arc_pos > 0
    prov_kind[inner] = _ARC
    prov_ref[inner] = np.flatnonzero(inner) - 1
    first = ~inner
    fi = arc_item[first]
    has_prev = prev_item_same_job[fi]
    pk = np.where(has_prev, exit_kind[np.maximum(fi - 1, 0)], _START)
    pr = np.where(has_prev, exit_ref[np.maximum(fi - 1, 0)], arc_job[first])
    prov_kind[first] = pk
    prov_ref[first] = pr
    # arcs entering a multi state: rank = alternative index within its item
    last_of_alt = arc_pos == a_len[arc_alt] - 1
    into_multi = last_of_alt & is_multi[arc_item]
    arc_rank = arc_alt - it_alt0[:-1][arc_item]
    # final provider of each job
    last_item = job_item0[1:] - 1
    job_has_items = job_n_items > 0
    fin_kind = np.where(job_has_items, exit_kind[np.maximum(last_item, 0)] if len(items) else _START, _START)
    fin_ref = np.where(job_has_items, exit_ref[np.maximum(last_item, 0)] if len(items) else 0,
                       np.arange(n_jobs))

    # --- column storage: [head columns of jobs | arc columns | multi-state columns]
    NA = int(ref_len.max()) + 1 if n_jobs else 1
    col_start, col_arc, col_multi = 0, n_jobs, n_jobs + n_arcs
    n_cols = n_jobs + n_arcs + n_multi
    # Integer costs (no '@' arc in sclite mode; always in Levenshtein mode) are computed in int16:
    # the sums are exact in both types, so the choices are the same, at half the memory traffic.
    max_level = int(arc_level.max()) + 1 if n_arcs else 0
    integral = costs.strict or not (bool((ref_key < 0).any()) or bool((arc_key < 0).any()))
    VT = np.int16 if integral and 4 * (NA + max_level + 2) < 30000 else np.float32
    C = np.empty((NA, n_cols), VT)
    code = np.zeros((NA, max(n_arcs, 1)), np.int8)          # (one dummy column when no arcs)
    # reference rows (padded rows: a word that matches nothing, deletion cost insdel)
    rows = np.arange(1, NA)[:, None]
    valid = rows <= ref_len[None, :]
    ridx = np.minimum(ref_off[:-1][None, :] + rows - 1, max(len(ref_key) - 1, 0))
    # key ids: reference '@' -1, padding -2, hypothesis '@' -3 (so that equality means "same word")
    KT = np.int16 if len(key_ids) < 32000 else np.int32     # key ids (and -1, -2, -3)
    RW = np.full((NA, n_jobs), -2, KT)
    WD = np.full((NA, n_jobs), costs.insdel, VT)
    if len(ref_key):
        RW[1:] = np.where(valid, ref_key[ridx], -2)
        WD[1:] = np.where(valid, np.where(ref_key[ridx] < 0, costs.null,
                                          np.where(ref_od[ridx], costs.optdel, costs.insdel)), costs.insdel)
    ref_has_null = bool((RW == -1).any())
    uniform_wd = bool((WD[1:] == costs.insdel).all())
    # head columns: deletions of the reference prefix, accumulated in float32
    C[0, :n_jobs] = 0.0
    for a in range(1, NA):
        C[a, :n_jobs] = C[a - 1, :n_jobs] + WD[a]
    # arc columns are laid out level by level, so a level's results are one contiguous slice
    # (16-bit keys: numpy's stable sort is then a radix sort)
    lvl_order = np.argsort(arc_level.astype(np.int16) if max_level < (1 << 15) else arc_level, kind="stable")
    lvl_bounds = np.searchsorted(arc_level[lvl_order], np.arange(max_level + 1))
    pos_of_arc = np.empty(n_arcs, np.int64)
    pos_of_arc[lvl_order] = np.arange(n_arcs)
    col_of = np.where(prov_kind == _START, col_start + prov_ref,
                      np.where(prov_kind == _ARC, col_arc + pos_of_arc[np.minimum(prov_ref, max(n_arcs - 1, 0))],
                               col_multi + prov_ref))[lvl_order]
    arc_wins = np.where(arc_key < 0, costs.null, np.where(arc_od, costs.optdel, costs.insdel)).astype(VT)
    lv_wins = arc_wins[lvl_order]
    lv_job = arc_job[lvl_order]
    lv_key = np.where(arc_key < 0, -3, arc_key).astype(KT)[lvl_order]
    lv_multi = np.where(into_multi, multi_of_item[arc_item], -1)[lvl_order]
    lv_rank = arc_rank[lvl_order]
    mkey = np.full((n_multi, NA), np.iinfo(np.int64).max, np.int64)
    marg = np.zeros((NA, n_multi), np.int64)                  # winning rank per row
    m_order = np.argsort(multi_level, kind="stable")
    m_bounds = np.searchsorted(multi_level[m_order], np.arange(max_level + 2))
    sub_c, null_c, zero, insdel_v = VT(costs.sub), VT(costs.nullsub), VT(0), VT(costs.insdel)
    RW1 = RW[1:]
    for L in range(max_level + 1):
        ms = m_order[m_bounds[L]:m_bounds[L + 1]]
        if len(ms):                                           # exit states complete at this level
            k = mkey[ms].T                                    # [NA, n]
            C[:, col_multi + ms] = (k >> 32).astype(VT) if VT is np.int16 else \
                (k >> 32).astype(np.uint32).view(np.float32)
            marg[:, ms] = k & 0xFFFFFFFF
        if L == max_level:
            break
        lo, hi = int(lvl_bounds[L]), int(lvl_bounds[L + 1])
        if hi == lo:
            continue
        M = np.take(C, col_of[lo:hi], axis=1)                 # C-ordered (C[:, idx] is not)
        jobs = lv_job[lo:hi]
        hk = lv_key[lo:hi]
        wins = lv_wins[lo:hi]
        # Whatever the tie rule, the chosen value is the minimum of the three candidates, so only
        # the deletion chain runs row by row; the choices (back-pointers) are decided afterwards on
        # whole matrices from the very same float32 sums.
        INS = M + wins[None, :]
        SUB = M[:-1]
        RWj = np.take(RW1, jobs, axis=1)                     # (take: C-ordered and faster)
        if ref_has_null:
            WS = np.where(RWj == hk[None, :], zero, sub_c)
            WS[(RWj == -1) & (hk == -3)[None, :]] = null_c
            SUB += WS
        else:
            # a match costs 0 (the value stays M exactly), anything else is a substitution
            np.add(SUB, sub_c, out=SUB, where=RWj != hk[None, :])
        D = C[:, col_arc + lo:col_arc + hi]
        T = np.empty((NA - 1, hi - lo), VT)                   # min(deletion, insertion) per row
        D[0] = INS[0]
        WDj = None if uniform_wd else WD[:, jobs]
        for a in range(1, NA):
            t = T[a - 1]
            np.add(D[a - 1], insdel_v if uniform_wd else WDj[a], out=t)
            np.minimum(t, INS[a], out=t)
            np.minimum(t, SUB[a - 1], out=D[a])
        INS1 = INS[1:]
        cs = (SUB < T) if costs.strict else (SUB <= T)
        K = code[:, lo:hi]
        K[0] = OP_INS
        K1 = K[1:]
        np.subtract(OP_INS, T < INS1, out=K1, casting="unsafe")      # deletion only when strictly cheaper
        np.multiply(K1, ~cs, out=K1)                                  # substitution (OP_SUB == 0)
        sel = np.flatnonzero(lv_multi[lo:hi] >= 0)
        if len(sel):
            bits = D[:, sel].astype(np.int64) if VT is np.int16 else D[:, sel].view(np.uint32).astype(np.int64)
            keys = (bits << 32) | lv_rank[lo + sel][None, :]
            # arcs of one level entering the same exit state are adjacent (arc order within a level)
            ids = lv_multi[lo + sel]
            heads = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
            red = np.minimum.reduceat(keys, heads, axis=1).T
            uid = ids[heads]
            mkey[uid] = np.minimum(mkey[uid], red)

    # --- back-trace of all jobs at once
    def resolve(kind, ref, row):
        """Arc (global) whose column a provider stands for at reference row ``row``; -1 = head."""
        out = np.where(kind == _ARC, ref, -1)
        mm = kind == _MULTI
        if mm.any():
            m = ref[mm]
            out[mm] = alt_last_arc[multi_alt0[m] + marg[row[mm], m]]
        return out

    a = ref_len.copy()
    b = resolve(fin_kind, fin_ref, a)
    best = C[a, np.where(b >= 0, col_arc + pos_of_arc[np.maximum(b, 0)] if n_arcs else 0, np.arange(n_jobs))]
    steps_job, steps_op, steps_a, steps_b = [], [], [], []
    active = np.flatnonzero((a > 0) | (b >= 0))
    while len(active):
        aa, bb = a[active], b[active]
        head = bb < 0
        op = np.where(head, OP_DEL, code[aa, pos_of_arc[np.maximum(bb, 0)] if n_arcs else 0])
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
            nb[s] = resolve(prov_kind[arc], prov_ref[arc], na[s])
        a[active] = na
        b[active] = nb
        keep = (na > 0) | (nb >= 0)
        active = active[keep]
    if steps_job:
        s_job = np.concatenate(steps_job)
        s_op = np.concatenate(steps_op).astype(np.int8)
        s_a = np.concatenate(steps_a)
        s_b = np.concatenate(steps_b)
    else:
        s_job = s_a = s_b = np.zeros(0, np.int64)
        s_op = np.zeros(0, np.int8)
    # pair classification (align._extract): 0 none, C, S, D, I; optional C flavours counted apart
    g_ref = ref_off[s_job] + np.maximum(s_a, 0)
    g_ref = np.minimum(g_ref, max(len(ref_key) - 1, 0))
    rk = ref_key[g_ref] if len(ref_key) else np.zeros(len(s_job), np.int64)
    r_od = ref_od[g_ref] if len(ref_key) else np.zeros(len(s_job), bool)
    r_opt = ref_opt[g_ref] if len(ref_key) else np.zeros(len(s_job), bool)
    hk = arc_key[np.maximum(s_b, 0)] if n_arcs else np.zeros(len(s_job), np.int64)
    h_od = arc_od[np.maximum(s_b, 0)] if n_arcs else np.zeros(len(s_job), bool)
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
    p_job = s_job[order]
    p_bounds = np.searchsorted(p_job, np.arange(n_jobs + 1))
    kind = np.where(sub_same, 0, np.where(sub_pair, 1, np.where(del_pair, np.where(r_od, 2, 3),
                                                                   np.where(h_od, 4, 5))))[order]
    p_a = s_a[order]
    arc0 = np.zeros(n_jobs, np.int64)
    if n_arcs:
        first_arc = np.searchsorted(arc_job, np.arange(n_jobs))
        arc0 = first_arc
    p_b = np.where(s_b[order] >= 0, s_b[order] - arc0[p_job], -1)
    p_hw = np.where(s_b[order] >= 0, hw[np.maximum(s_b[order], 0)] if n_arcs else -1, -1)
    kind_l, a_l, b_l, hw_l = kind.tolist(), p_a.tolist(), p_b.tolist(), p_hw.tolist()
    bounds_l = p_bounds.tolist()

    def make_pairs(j):
        r0 = ref_off_l[j]
        disp = [d_disp[t] for t in tok_id_l[r0:ref_off_l[j + 1]]]
        out = []
        for k in range(bounds_l[j], bounds_l[j + 1]):
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
        alignments.append(Alignment.deferred(_Deferred(make_pairs, j), counts, best_l[j]))
    conf = None
    if with_conf:
        # (sclite leaves null words out of the NCE; a word without confidence counts as 0)
        has_hyp = ((kind == 0) | (kind == 1) | (kind == 4) | (kind == 5)) & (hk[order] >= 0)
        conf_l = np.where(has_hyp, np.nan_to_num(arc_conf[np.maximum(s_b[order], 0)], nan=0.0) if n_arcs else 0.0,
                          0.0).tolist()
        op_l = np.where((kind == 0) | (kind == 4), "C", "S").tolist()
        hh = has_hyp.tolist()
        conf = [[(op_l[k], conf_l[k]) for k in range(bounds_l[j], bounds_l[j + 1]) if hh[k]] for j in range(n_jobs)]
    return alignments, conf, matrix


_FIELDS = ("correct", "substitutions", "deletions", "insertions", "ref_words", "segments", "segment_errors",
           "optional_correct", "optional_deleted")


class _Deferred:
    __slots__ = ("make", "j")

    def __init__(self, make, j):
        self.make, self.j = make, j

    def __call__(self):
        return self.make(self.j)
