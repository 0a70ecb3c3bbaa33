"""Network-vs-network alignment with sclite's weights and tie rules (and a plain Levenshtein mode).

Semiring / recursion (the one of sclite's ``net_dp.c``, re-implemented, vectorized):
cells are *pairs of arcs* ``(a, b)`` -- ``a`` an arc of the reference network, ``b`` an arc of the
hypothesis network, each network having an extra null "head" arc 0 before its start state.  The
cell value is the minimal cost of aligning a reference path ending with ``a`` against a hypothesis
path ending with ``b``::

    ins(a,b) = min_{b' in pred(b)} D[a][b']  + w(-, b)
    del(a,b) = min_{a' in pred(a)} D[a'][b]  + w(a, -)
    sub(a,b) = min_{a' in pred(a), b' in pred(b)} D[a'][b'] + w(a, b)
    D[a][b]  = sub if sub <= del and sub <= ins  else  del if del < ins  else ins

``pred(x)`` are the in-arcs of the source state of ``x`` in arc (text) order; every ``min`` keeps
the *first* minimum (``first-listed alternative wins``); the final cell is the first minimum over
(in-arcs of the reference final state) x (in-arcs of the hypothesis final state), reference-major.
Costs are IEEE float32 as in sclite, so ties (and near ties from the 0.001 of ``@``) break exactly
as they do there.

sclite weights (``wwd_WORD``; verified against Debian sclite, see tests/test_sclite_crosscheck.py):

=============================  ======  =====================================================
event                          cost    counted as
=============================  ======  =====================================================
correct                        0       C
substitution                   4       S  (also ``@`` against a word)
``@`` against ``@``            1       nothing
insertion / deletion           3       I / D
insertion/deletion of ``@``    0.001   nothing
optional word left out (-D)    2       C (and ``#Wrd`` + 1), on either side
=============================  ======  =====================================================

Note sclite prefers a *substitution* on exact cost ties (the first test above), then a deletion
over an insertion only when strictly cheaper -- not "ins/del beats sub".

Levenshtein mode: correct 0, substitution 1, insertion/deletion 1, ``@`` 0 (the edit distance of
kaldialign/jiwer); optional words are plain words unless ``optional_deletable`` (then cost 0).
Its tie rule is Kaldi's (``compute-wer``/kaldialign): a substitution only when strictly cheaper
than both insertion and deletion, then deletion when strictly cheaper than insertion -- so the
S/D/I breakdown equals kaldialign's, not only the total.

Word equality: exact string equality of the case-folded words; an optional word compares by its
inner text with ``-D`` and as ``(word)`` without it; with ``-F`` a fragment ``pla-`` matches any word
starting with ``pla`` and ``-ing`` any word ending with ``ing`` (sclite's ``equal_WORD2``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..core._budget import check_allocation
from ..core.counts import ErrorCounts
from .network import WordNetwork, linear_network

F32 = np.float32
_BIG = F32(999999999.9)

# sclite costs
SCLITE_COSTS = dict(sub=F32(4.0), insdel=F32(3.0), null=F32(0.001), optdel=F32(2.0), nullsub=F32(1.0))
LEVENSHTEIN_COSTS = dict(sub=F32(1.0), insdel=F32(1.0), null=F32(0.0), optdel=F32(0.0), nullsub=F32(0.0))

OP_SUB, OP_DEL, OP_INS = 0, 1, 2


@dataclass(frozen=True)
class AlignedPair:
    """One column of an alignment.  ``op`` is ``C``, ``S``, ``D`` or ``I``; ``ref``/``hyp`` are the
    words as sclite prints them (``(word)`` for optional words, ``None`` for the empty side);
    ``ref_arc``/``hyp_arc`` index the networks' arcs (-1 for the empty side)."""

    op: str
    ref: str | None
    hyp: str | None
    ref_arc: int = -1
    hyp_arc: int = -1


class Alignment:
    """Result of aligning one reference network with one hypothesis network: ``pairs`` (a tuple of
    :class:`AlignedPair`), ``counts`` (:class:`ErrorCounts`), ``cost`` (the DP cost).

    Immutable.  :meth:`deferred` builds one whose pairs are materialized on first access (the fast
    scorer counts errors without building millions of pair objects nobody reads)."""

    __slots__ = ("_pairs", "_make", "counts", "cost")
    _pairs: tuple[AlignedPair, ...] | None
    _make: Callable[[], Iterable[AlignedPair]] | None
    counts: ErrorCounts
    cost: float

    def __init__(self, pairs, counts: ErrorCounts, cost: float):
        object.__setattr__(self, "_pairs", tuple(pairs))
        object.__setattr__(self, "_make", None)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "cost", cost)

    @classmethod
    def deferred(cls, make_pairs, counts: ErrorCounts, cost: float) -> Alignment:
        """``make_pairs()`` returns the pairs tuple when first needed."""
        self = cls.__new__(cls)
        object.__setattr__(self, "_pairs", None)
        object.__setattr__(self, "_make", make_pairs)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "cost", cost)
        return self

    @property
    def pairs(self) -> tuple:
        pairs = self._pairs
        if pairs is None:
            assert self._make is not None, "a deferred alignment has its maker until its pairs are made"
            pairs = tuple(self._make())
            object.__setattr__(self, "_pairs", pairs)
            object.__setattr__(self, "_make", None)
        return pairs

    def __setattr__(self, name, value):
        raise AttributeError(f"Alignment is immutable (cannot set {name!r})")

    def __reduce__(self):
        # pickled (to or from a worker process) with its pairs made: a deferred maker need not pickle
        return (Alignment, (self.pairs, self.counts, self.cost))

    def __eq__(self, other):
        if not isinstance(other, Alignment):
            return NotImplemented
        return (self.pairs, self.counts, self.cost) == (other.pairs, other.counts, other.cost)

    def __hash__(self):
        return hash((self.pairs, self.counts, self.cost))

    def __repr__(self):
        return f"Alignment(pairs={self.pairs!r}, counts={self.counts!r}, cost={self.cost!r})"


@dataclass(frozen=True)
class AlignOptions:
    """``mode``: ``"sclite"`` or ``"levenshtein"``; ``optional_deletable`` is sclite ``-D``;
    ``fragments`` is sclite ``-F``."""

    mode: str = "sclite"
    optional_deletable: bool = False
    fragments: bool = False

    def __post_init__(self):
        if self.mode not in ("sclite", "levenshtein"):
            raise ValueError(f"mode must be 'sclite' or 'levenshtein', not {self.mode!r}")

    @property
    def costs(self):
        return SCLITE_COSTS if self.mode == "sclite" else LEVENSHTEIN_COSTS


# ----------------------------------------------------------------------------------------------
# per-arc attributes under the scoring options
def _arc_keys(net: WordNetwork, opts: AlignOptions):
    """(compare string or None for '@', optionally-deletable flag, sclite fragment flag) per arc."""
    if not opts.fragments and not net.optional.any():  # the common case: the words themselves
        no = [False] * net.num_arcs
        return list(net.words), no, no
    keys: list[str | None] = []
    optdel: list[bool] = []
    frag: list[bool] = []
    for i, w in enumerate(net.words):
        if w is None:
            keys.append(None)
            optdel.append(False)
            frag.append(False)
            continue
        opt = bool(net.optional[i])
        if opt and opts.optional_deletable:
            keys.append(w)
            optdel.append(True)
            frag.append(opts.fragments and len(w) >= 1 and w.endswith("-"))
        elif opt:
            keys.append(f"({w})")
            optdel.append(False)
            frag.append(False)
        else:
            keys.append(w)
            optdel.append(False)
            frag.append(opts.fragments and len(w) > 0 and (w.startswith("-") or w.endswith("-")))
    return keys, optdel, frag


def words_equal(it1: str, frag1: bool, it2: str, frag2: bool) -> bool:
    """sclite's ``equal_WORD2`` (fragment-aware equality) on compare strings."""
    if frag1 or frag2:
        l1, l2 = len(it1), len(it2)
        if it1[:1] == "-" and l1 > 1:
            if l2 < l1 - 1:
                return False
            return it1[1:] == it2[l2 - (l1 - 1):]
        if it1[-1:] == "-" and l1 > 1:
            return it1[:l1 - 1] == it2[:l1 - 1]
        if it2[:1] == "-" and l2 > 1:
            if l1 < l2 - 1:
                return False
            return it1[l1 - (l2 - 1):] == it2[1:]
        if it2[-1:] == "-" and l2 > 1:
            return it1[:l2 - 1] == it2[:l2 - 1]
    return it1 == it2


def _display(net: WordNetwork, i: int) -> str:
    w = net.words[i]
    if w is None:
        return "@"
    return f"({w})" if net.optional[i] else w


# ----------------------------------------------------------------------------------------------
# Straightforward transcription of the recursion (per cell, Python).  Used by the tests as an
# independent second implementation of the vectorized engine below.
def align_reference(ref: WordNetwork, hyp: WordNetwork, options: AlignOptions = AlignOptions()) -> Alignment:
    """Slow, obviously-correct version of :func:`align_networks` (same result, cell by cell)."""
    c = options.costs
    rk, ro, rf = _arc_keys(ref, options)
    hk, ho, hf = _arc_keys(hyp, options)
    NA, NB = ref.num_arcs + 1, hyp.num_arcs + 1
    rin, hin = ref.in_arcs(), hyp.in_arcs()

    def preds(net_in, src_arr, k):
        s = int(src_arr[k - 1])
        return [0] if s == 0 else [x + 1 for x in net_in[s]]

    def wdel(a):
        if rk[a - 1] is None:
            return c["null"]
        return c["optdel"] if ro[a - 1] else c["insdel"]

    def wins(b):
        if hk[b - 1] is None:
            return c["null"]
        return c["optdel"] if ho[b - 1] else c["insdel"]

    def wsub(a, b):
        x, y = rk[a - 1], hk[b - 1]
        if x is None and y is None:
            return c["nullsub"]
        if x is not None and y is not None and words_equal(x, rf[a - 1], y, hf[b - 1]):
            return F32(0.0)
        return c["sub"]

    D = np.zeros((NA, NB), dtype=np.float32)
    BA = np.full((NA, NB), -1, dtype=np.int64)
    BB = np.full((NA, NB), -1, dtype=np.int64)
    # arcs sorted by source state are in topological order (states are topologically numbered)
    order_a = sorted(range(1, NA), key=lambda k: int(ref.src[k - 1]))
    order_b = sorted(range(1, NB), key=lambda k: int(hyp.src[k - 1]))
    for b in order_b:
        best, bi = _BIG, -1
        for bp in preds(hin, hyp.src, b):
            if D[0, bp] < best:
                best, bi = D[0, bp], bp
        D[0, b] = F32(best + wins(b))
        BA[0, b], BB[0, b] = 0, bi
    for a in order_a:
        best, ai = _BIG, -1
        for ap in preds(rin, ref.src, a):
            if D[ap, 0] < best:
                best, ai = D[ap, 0], ap
        D[a, 0] = F32(best + wdel(a))
        BA[a, 0], BB[a, 0] = ai, 0
    for a in order_a:
        pa = preds(rin, ref.src, a)
        for b in order_b:
            pb = preds(hin, hyp.src, b)
            ins, ib = _BIG, -1
            for bp in pb:
                if D[a, bp] < ins:
                    ins, ib = D[a, bp], bp
            dl, ia = _BIG, -1
            for ap in pa:
                if D[ap, b] < dl:
                    dl, ia = D[ap, b], ap
            sb, sa2, sb2 = _BIG, -1, -1
            for ap in pa:
                for bp in pb:
                    if D[ap, bp] < sb:
                        sb, sa2, sb2 = D[ap, bp], ap, bp
            sb = F32(sb + wsub(a, b))
            dl = F32(dl + wdel(a))
            ins = F32(ins + wins(b))
            if (sb < dl and sb < ins) if options.mode == "levenshtein" else (sb <= dl and sb <= ins):
                D[a, b], BA[a, b], BB[a, b] = sb, sa2, sb2
            elif dl < ins:
                D[a, b], BA[a, b], BB[a, b] = dl, ia, b
            else:
                D[a, b], BA[a, b], BB[a, b] = ins, a, ib
    fa = [0] if ref.num_arcs == 0 else [x + 1 for x in rin[ref.final]]
    fb = [0] if hyp.num_arcs == 0 else [x + 1 for x in hin[hyp.final]]
    best, ea, eb = F32(999999.9), -1, -1
    for a in fa:
        for b in fb:
            if best > D[a, b]:
                best, ea, eb = D[a, b], a, b
    return _extract(ref, hyp, options, rk, ro, rf, hk, ho, hf, BA, BB, ea, eb, float(best))


def _extract(ref, hyp, options, rk, ro, rf, hk, ho, hf, BA, BB, a, b, cost, back=None):
    """Back-trace from cell (a, b) following sclite's ``extract_NET_ALIGN_result``."""
    pairs = []
    if back is None:
        def back(x, y):
            return int(BA[x, y]), int(BB[x, y])
    while a > 0 or b > 0:
        pa, pb = back(a, b)
        if a == pa:  # insertion
            j = b - 1
            if hk[j] is not None:
                if ho[j]:
                    pairs.append(AlignedPair("C", "", _display(hyp, j), -1, j))
                else:
                    pairs.append(AlignedPair("I", None, _display(hyp, j), -1, j))
        elif b == pb:  # deletion
            i = a - 1
            if rk[i] is not None:
                if ro[i]:
                    pairs.append(AlignedPair("C", _display(ref, i), "", i, -1))
                else:
                    pairs.append(AlignedPair("D", _display(ref, i), None, i, -1))
        else:
            i, j = a - 1, b - 1
            if not (rk[i] is None and hk[j] is None):
                x, y = rk[i], hk[j]
                same = x is not None and y is not None and words_equal(x, rf[i], y, hf[j])
                pairs.append(AlignedPair("C" if same else "S", _display(ref, i), _display(hyp, j), i, j))
        a, b = pa, pb
    pairs.reverse()
    return Alignment(tuple(pairs), _count(pairs, ref, hyp), cost)


def _count(pairs, ref, hyp) -> ErrorCounts:
    c = s = d = n_ins = oc = od = 0
    for p in pairs:
        if p.op == "C":
            c += 1
            if p.hyp == "" or p.ref == "":
                od += 1 if p.hyp == "" else 0
                oc += 1 if p.ref == "" else 0
            elif p.ref_arc >= 0 and ref.optional[p.ref_arc]:
                oc += 1
        elif p.op == "S":
            s += 1
        elif p.op == "D":
            d += 1
        else:
            n_ins += 1
    err = s + d + n_ins
    return ErrorCounts(correct=c, substitutions=s, deletions=d, insertions=n_ins, ref_words=c + s + d,
                       segments=1, segment_errors=1 if err else 0, optional_correct=oc, optional_deleted=od)


# ----------------------------------------------------------------------------------------------
# Vectorized engine: many alignment problems at once, processed in wavefronts of equal
# level(a) + level(b) (every dependency of a cell has a strictly smaller sum).
class _Side:
    """Concatenated per-arc data of one side (reference or hypothesis) of a batch of problems.
    Arc ``k`` of problem ``p`` (``k = 0`` the head arc, ``k = i + 1`` the network's arc ``i``) is
    global arc ``off[p] + k``; predecessor lists hold local arc numbers."""

    def __init__(self, nets: Sequence[WordNetwork], opts: AlignOptions, vocab: dict):
        c = opts.costs
        P = len(nets)
        self.n = np.fromiter((n.num_arcs + 1 for n in nets), dtype=np.int64, count=P)
        self.off = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(self.n, out=self.off[1:])
        total = int(self.off[-1])
        self.keys: list = []
        self.final_arcs: list = []
        flat_keys: list = []
        flat_optdel: list = []
        flat_frag: list = []
        special = []  # (problem, src, dst, num_states) of networks that are not chains
        for p, net in enumerate(nets):
            keys, optdel, frag = _arc_keys(net, opts)
            self.keys.append(keys)
            m = net.num_arcs
            flat_keys.append(None)
            flat_keys.extend(keys)
            flat_optdel.append(False)
            flat_optdel.extend(optdel)
            flat_frag.append(False)
            flat_frag.extend(frag)
            if m == 0:
                self.final_arcs.append([0])
            elif net.is_linear():
                self.final_arcs.append([m])
            else:
                self.final_arcs.append(None)
                special.append(p)
        get = vocab.setdefault
        self.word_id = np.fromiter((-1 if k is None else get(k, len(vocab)) for k in flat_keys), dtype=np.int64,
                                   count=total)
        self.optdel = np.fromiter(flat_optdel, dtype=bool, count=total)
        self.frag = np.fromiter(flat_frag, dtype=bool, count=total)
        self.any_frag = bool(self.frag.any())
        head = np.zeros(total, dtype=bool)
        head[self.off[:-1]] = True
        cost = np.where(self.word_id < 0, c["null"], np.where(self.optdel, c["optdel"], c["insdel"]))
        self.cost1 = np.where(head, F32(0.0), cost).astype(np.float32)
        # chains: arc k has level k and the single predecessor k - 1
        local = np.arange(total, dtype=np.int64) - np.repeat(self.off[:-1], self.n)
        self.level = local.copy()
        self.pred_cnt = np.where(head, 0, 1).astype(np.int64)
        pieces = {}
        for p in special:
            net = nets[p]
            m = net.num_arcs
            src = net.src.astype(np.int64)
            dst = net.dst.astype(np.int64)
            S = net.num_states
            indeg = np.bincount(dst, minlength=S)
            in_order = np.argsort(dst, kind="stable")      # in-arcs of each state in text order
            in_ptr = np.zeros(S + 1, dtype=np.int64)
            np.cumsum(indeg, out=in_ptr[1:])
            cnt = np.where(src == 0, 1, indeg[src])
            own, rank = _expand(cnt)
            so = src[own]
            plist = np.where(so == 0, 0, in_order[np.minimum(in_ptr[so] + rank, m - 1)] + 1)
            # longest-path level of every state (fixpoint; as many rounds as the depth)
            state_level = np.zeros(S, dtype=np.int64)
            while True:
                new = np.zeros(S, dtype=np.int64)
                np.maximum.at(new, dst, state_level[src] + 1)
                if np.array_equal(new, state_level):
                    break
                state_level = new
            base = int(self.off[p])
            self.level[base + 1: base + m + 1] = state_level[src] + 1
            self.pred_cnt[base + 1: base + m + 1] = cnt
            pieces[p] = plist
            fin = S - 1
            self.final_arcs[p] = (in_order[in_ptr[fin]:in_ptr[fin + 1]] + 1).tolist()
        self.pred_ptr = np.zeros(total, dtype=np.int64)
        np.cumsum(self.pred_cnt[:-1], out=self.pred_ptr[1:])
        n_pred = int(self.pred_cnt.sum())
        self.pred_list = np.zeros(n_pred, dtype=np.int64)
        has = self.pred_cnt > 0
        self.pred_list[self.pred_ptr[has]] = local[has] - 1     # right for chains, overwritten below
        for p, plist in pieces.items():
            start = int(self.pred_ptr[int(self.off[p]) + 1])
            self.pred_list[start:start + len(plist)] = plist
        # first predecessor (the only one for most arcs)
        safe = np.minimum(self.pred_ptr, max(n_pred - 1, 0))
        self.first_pred = self.pred_list[safe] if n_pred else np.zeros(total, np.int64)


def _segmented_first_min(vals: np.ndarray, counts: np.ndarray):
    """For consecutive segments of ``vals`` (lengths ``counts``, all >= 1): the minimum and the
    position (into ``vals``) of its first occurrence."""
    if len(vals) == len(counts):
        return vals, np.arange(len(vals))
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    mins = np.minimum.reduceat(vals, starts)
    hit = np.flatnonzero(vals == np.repeat(mins, counts))
    first = hit[np.searchsorted(hit, starts)]
    return mins, first


def _expand(counts: np.ndarray):
    """(owner index, rank within owner) for ``counts[i]`` repetitions of each owner ``i``."""
    total = int(counts.sum())
    if total == len(counts):
        return np.arange(total), np.zeros(total, dtype=np.int64)
    owner = np.repeat(np.arange(len(counts)), counts)
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    rank = np.arange(total) - np.repeat(starts, counts)
    return owner, rank


#: Peak bytes per DP cell of :func:`_run_batch` (measured: 170 on 1.4M- and 5.8M-cell problems).
CELL_BYTES = 176


def align_batch(refs: Sequence[WordNetwork], hyps: Sequence[WordNetwork],
                options: AlignOptions = AlignOptions(), *, max_cells: int = 1_000_000,
                names: Sequence[str] | None = None) -> list[Alignment]:
    """Align ``refs[i]`` with ``hyps[i]`` for every i (see the module docstring for the recursion).

    Problems are grouped into batches of at most ``max_cells`` DP cells (a single larger problem is
    run alone) and each batch is computed in ``max(level sum)`` vectorized wavefront steps, so the
    Python overhead does not grow with the number of segments.

    A problem whose table the memory budget (:func:`lattice_tools.core._budget.memory_budget`, ``--max-memory``)
    cannot hold is refused before anything is allocated: BudgetExceededError naming it (``names[i]``,
    e.g. the segment's file and line) and its size -- a GLM's alternations or ALT blocks multiply the arcs
    of a network, and the table has reference arcs x hypothesis arcs cells.

    Returns:
      one :class:`Alignment` per pair, in input order.
    """
    if len(refs) != len(hyps):
        raise ValueError("refs and hyps must have the same length")
    out: list = [None] * len(refs)
    sizes = [(r.num_arcs + 1) * (h.num_arcs + 1) for r, h in zip(refs, hyps, strict=False)]
    if sizes:  # a batch holds at most max_cells cells, or one larger problem: the largest decides
        i = max(range(len(sizes)), key=sizes.__getitem__)
        what = names[i] if names is not None else f"problem {i}"
        check_allocation(max(sizes[i], min(max_cells, sum(sizes))) * CELL_BYTES,
                         f"aligning {what} ({refs[i].num_arcs:,} reference x {hyps[i].num_arcs:,} hypothesis arcs: "
                         f"{sizes[i]:,} table cells)",
                         advice=" or split the segment (GLM alternations and ALT blocks multiply the arcs)")
    batch: list[int] = []
    acc = 0
    for i, sz in enumerate(sizes):
        if batch and acc + sz > max_cells:
            _run_batch([refs[k] for k in batch], [hyps[k] for k in batch], options, batch, out)
            batch, acc = [], 0
        batch.append(i)
        acc += sz
    if batch:
        _run_batch([refs[k] for k in batch], [hyps[k] for k in batch], options, batch, out)
    return out


def align_networks(ref: WordNetwork, hyp: WordNetwork, options: AlignOptions = AlignOptions()) -> Alignment:
    """Align one reference network with one hypothesis network (sclite's DP).  See module doc."""
    return align_batch([ref], [hyp], options)[0]


def align_words(ref: Sequence[str], hyp: Sequence[str], options: AlignOptions = AlignOptions()) -> Alignment:
    """Align two word sequences (no alternations); ``(word)`` is optional, ``@`` null."""
    return align_networks(linear_network(ref), linear_network(hyp), options)


def _sub_weights(A, B, gac, gbc, c, P_keys):
    """Substitution cost per cell (float32): 0 correct, 1 '@' vs '@', else the substitution cost;
    fragment-aware equality is evaluated in Python only for cells involving a fragment."""
    wa, wb = A.word_id[gac], B.word_id[gbc]
    both_null = (wa < 0) & (wb < 0)
    same = (wa == wb) & (wa >= 0)
    if A.any_frag or B.any_frag:
        fr = np.flatnonzero((A.frag[gac] | B.frag[gbc]) & (wa >= 0) & (wb >= 0) & ~same)
        for j in fr.tolist():
            same[j] = P_keys(int(gac[j]), int(gbc[j]))
    return np.where(both_null, c["nullsub"], np.where(same, F32(0.0), c["sub"])).astype(np.float32)


def _run_batch(refs, hyps, opts: AlignOptions, index: list[int], out: list) -> None:
    """One batch.  Cells are stored in wavefront order (key = level(a) + level(b), then category),
    so each wavefront is a contiguous slice: reading its predecessors is a gather, writing it a
    slice assignment.  Categories: 0 inner cell whose arcs have one predecessor each, 1 first row
    (a = 0), 2 first column (b = 0), 3 cells with several predecessors (alternations)."""
    c = opts.costs
    strict = opts.mode == "levenshtein"
    vocab: dict = {}
    A = _Side(refs, opts, vocab)
    B = _Side(hyps, opts, vocab)
    P = len(refs)
    NA, NB = A.n, B.n
    sizes = NA * NB
    cell_off = np.zeros(P + 1, dtype=np.int64)
    np.cumsum(sizes, out=cell_off[1:])
    total = int(cell_off[-1])
    # every cell (a, b) of every problem has the id cell_off[p] + a * NB[p] + b
    prob = np.repeat(np.arange(P, dtype=np.int64), sizes)
    cell = np.arange(total, dtype=np.int64)
    nbp = NB[prob]
    a_loc = cell - cell_off[prob]
    b_loc = a_loc % nbp
    a_loc //= nbp
    gA = A.off[prob] + a_loc
    gB = B.off[prob] + b_loc
    del prob
    complex_ = (A.pred_cnt[gA] > 1) | (B.pred_cnt[gB] > 1)
    cat = np.where(complex_, 3, np.where(a_loc == 0, 1, np.where(b_loc == 0, 2, 0))).astype(np.int64)
    sortkey = (A.level[gA] + B.level[gB]) * 4 + cat
    del cat
    if total and sortkey.max() < 65536:
        sortkey = sortkey.astype(np.uint16)  # numpy's stable sort is a radix sort for 16-bit keys
    order = np.argsort(sortkey, kind="stable")
    n_keys = int(sortkey.max()) // 4 + 1 if total else 1
    bounds = np.searchsorted(sortkey[order], np.arange(4 * n_keys + 1))
    del sortkey
    pos_of = np.empty(total, dtype=np.int64)
    pos_of[order] = np.arange(total, dtype=np.int64)
    # per position: predecessor positions of the three moves (only where the move exists)
    ao, bo, no = a_loc[order], b_loc[order], nbp[order]
    a1 = A.first_pred[gA[order]]
    b1 = B.first_pred[gB[order]]
    has_a, has_b = ao > 0, bo > 0
    p_ins = pos_of[np.where(has_b, order - bo + b1, order)]
    p_del = pos_of[np.where(has_a, order + (a1 - ao) * no, order)]
    p_sub = pos_of[np.where(has_a & has_b, order + (a1 - ao) * no - bo + b1, order)]
    del a1, b1, has_a, has_b, no
    cost_ins = B.cost1[gB[order]]
    cost_del = A.cost1[gA[order]]

    def frag_equal(ga_, gb_):
        p = int(np.searchsorted(A.off, ga_, side="right") - 1)
        i1, i2 = ga_ - int(A.off[p]) - 1, gb_ - int(B.off[p]) - 1
        return words_equal(A.keys[p][i1], bool(A.frag[ga_]), B.keys[p][i2], bool(B.frag[gb_]))

    inner = (ao > 0) & (bo > 0)
    w_sub = np.full(total, np.inf, dtype=np.float32)
    if inner.any():
        j = np.flatnonzero(inner)
        w_sub[j] = _sub_weights(A, B, gA[order[j]], gB[order[j]], c, frag_equal)
    del inner
    V = np.full(total, np.inf, dtype=np.float32)
    code = np.zeros(total, dtype=np.int8)          # 0 sub, 1 del, 2 ins, 3 stored back-pointer
    V[pos_of[cell_off[:-1]]] = 0.0
    # back-pointers of the cells with several predecessors (category 3), allocated when the first one comes
    BA = BB = np.empty(0, dtype=np.int64)
    for k in range(1, n_keys):
        lo, hi = int(bounds[4 * k]), int(bounds[4 * k + 1])          # category 0
        if hi > lo:
            ins = V[p_ins[lo:hi]] + cost_ins[lo:hi]
            dl = V[p_del[lo:hi]] + cost_del[lo:hi]
            sub = V[p_sub[lo:hi]] + w_sub[lo:hi]
            if strict:
                cs = (sub < dl) & (sub < ins)
            else:
                cs = (sub <= dl) & (sub <= ins)
            cd = ~cs & (dl < ins)
            V[lo:hi] = np.where(cs, sub, np.where(cd, dl, ins))
            code[lo:hi] = np.where(cs, 0, np.where(cd, 1, 2))
        lo, hi = hi, int(bounds[4 * k + 2])                          # category 1: first row
        if hi > lo:
            V[lo:hi] = V[p_ins[lo:hi]] + cost_ins[lo:hi]
            code[lo:hi] = 2
        lo, hi = hi, int(bounds[4 * k + 3])                          # category 2: first column
        if hi > lo:
            V[lo:hi] = V[p_del[lo:hi]] + cost_del[lo:hi]
            code[lo:hi] = 1
        lo, hi = hi, int(bounds[4 * k + 4])                          # category 3: several predecessors
        if hi > lo:
            if BA.size == 0:
                BA = np.full(total, -1, dtype=np.int64)
                BB = np.full(total, -1, dtype=np.int64)
            _complex_cells(lo, hi, order, pos_of, A, B, V, BA, BB, ao, bo, nbp, gA, gB, cost_ins, cost_del,
                           w_sub, strict)
            code[lo:hi] = 3
    for p in range(P):
        ref, hyp = refs[p], hyps[p]
        base, nb = int(cell_off[p]), int(NB[p])
        oa, ob = int(A.off[p]), int(B.off[p])
        best, ea, eb = F32(999999.9), -1, -1
        for a in A.final_arcs[p]:
            for b in B.final_arcs[p]:
                v = V[pos_of[base + a * nb + b]]
                if best > v:
                    best, ea, eb = v, a, b
        ro = A.optdel[oa + 1: oa + 1 + ref.num_arcs].tolist()
        rf = A.frag[oa + 1: oa + 1 + ref.num_arcs].tolist()
        ho = B.optdel[ob + 1: ob + 1 + hyp.num_arcs].tolist()
        hf = B.frag[ob + 1: ob + 1 + hyp.num_arcs].tolist()

        def back(x, y, base=base, nb=nb, oa=oa, ob=ob):
            i = int(pos_of[base + x * nb + y])
            op = code[i]
            if op == 3:
                return int(BA[i]), int(BB[i])
            if op == 0:
                return int(A.first_pred[oa + x]), int(B.first_pred[ob + y])
            if op == 1:
                return int(A.first_pred[oa + x]), y
            return x, int(B.first_pred[ob + y])

        out[index[p]] = _extract(ref, hyp, opts, A.keys[p], ro, rf, B.keys[p], ho, hf, None, None, ea, eb,
                                 float(best), back=back)


def _complex_cells(lo, hi, order, pos_of, A, B, V, BA, BB, ao, bo, nbp, gA, gB, cost_ins, cost_del, w_sub,
                   strict):
    """Positions ``lo:hi`` (cells where an arc has several predecessors: alternations, ALT blocks):
    candidate lists expanded in predecessor order, first minimum kept (sclite's strict ``<`` scan)."""
    n = hi - lo
    cells = order[lo:hi]
    al, bl = ao[lo:hi], bo[lo:hi]
    nb = nbp[cells]
    gac, gbc = gA[cells], gB[cells]
    has_a, has_b = al > 0, bl > 0
    inf = np.float32(np.inf)
    ins_val = np.full(n, inf, dtype=np.float32)
    ins_b = np.zeros(n, dtype=np.int64)
    sel = np.flatnonzero(has_b)
    if len(sel):
        cnt = B.pred_cnt[gbc[sel]]
        own, rank = _expand(cnt)
        bprime = B.pred_list[B.pred_ptr[gbc[sel]][own] + rank]
        vals = V[pos_of[cells[sel][own] - bl[sel][own] + bprime]]
        mins, first = _segmented_first_min(vals, cnt)
        ins_val[sel] = mins + cost_ins[lo:hi][sel]
        ins_b[sel] = bprime[first]
    del_val = np.full(n, inf, dtype=np.float32)
    del_a = np.zeros(n, dtype=np.int64)
    sel = np.flatnonzero(has_a)
    if len(sel):
        cnt = A.pred_cnt[gac[sel]]
        own, rank = _expand(cnt)
        aprime = A.pred_list[A.pred_ptr[gac[sel]][own] + rank]
        vals = V[pos_of[cells[sel][own] + (aprime - al[sel][own]) * nb[sel][own]]]
        mins, first = _segmented_first_min(vals, cnt)
        del_val[sel] = mins + cost_del[lo:hi][sel]
        del_a[sel] = aprime[first]
    sub_val = np.full(n, inf, dtype=np.float32)
    sub_a = np.zeros(n, dtype=np.int64)
    sub_b = np.zeros(n, dtype=np.int64)
    sel = np.flatnonzero(has_a & has_b)
    if len(sel):
        ca = A.pred_cnt[gac[sel]]
        cb = B.pred_cnt[gbc[sel]]
        cnt = ca * cb
        own, rank = _expand(cnt)
        cbo = cb[own]
        ia = rank // cbo
        ib = rank - ia * cbo
        aprime = A.pred_list[A.pred_ptr[gac[sel]][own] + ia]
        bprime = B.pred_list[B.pred_ptr[gbc[sel]][own] + ib]
        co = cells[sel][own]
        vals = V[pos_of[co + (aprime - al[sel][own]) * nb[sel][own] - bl[sel][own] + bprime]]
        mins, first = _segmented_first_min(vals, cnt)
        sub_val[sel] = mins + w_sub[lo:hi][sel]
        sub_a[sel] = aprime[first]
        sub_b[sel] = bprime[first]
    if strict:
        choose_sub = (sub_val < del_val) & (sub_val < ins_val)
    else:
        choose_sub = (sub_val <= del_val) & (sub_val <= ins_val)
    choose_del = ~choose_sub & (del_val < ins_val)
    V[lo:hi] = np.where(choose_sub, sub_val, np.where(choose_del, del_val, ins_val))
    BA[lo:hi] = np.where(choose_sub, sub_a, np.where(choose_del, del_a, al))
    BB[lo:hi] = np.where(choose_sub, sub_b, np.where(choose_del, bl, ins_b))
