"""Exact oracle error of a whole hypothesis network (lattice or alternatives) against a reference network.

The oracle is the path through the hypothesis network whose alignment against *some* path through
the reference network has the lowest total cost.  It is computed exactly -- never sampled -- by one
shortest-path dynamic programme over the product ``hypothesis states x reference states``:

* ``(q, r) -> (q', r')`` along a hypothesis arc ``q->q'`` and a reference arc ``r->r'``:
  correct or substitution (cost of the word pair);
* ``(q, r) -> (q', r)`` along a hypothesis arc alone: insertion (epsilon arcs of a lattice cost 0);
* ``(q, r) -> (q, r')`` along a reference arc alone: deletion (an optional word with ``-D``
  and the NULL word ``@`` of a GLM alternation have their own, smaller costs).

Semiring: tropical (min, +) over integer costs, so ties are exact.  Two cost models are provided
(:data:`SCLITE_COSTS`, :data:`LEVENSHTEIN_COSTS`): sclite's ``wwd_WORD`` weights (correct 0,
insertion/deletion 3, optional deletion 2, substitution 4, ``@`` skipped 0.001), scaled by 1000 to
integers; and plain Levenshtein (1/1/1, optional deletions and ``@`` free), whose cost *is* the
number of errors.  ``wwd_WORD`` also prices a word against ``@`` at 1, but sclite's network DP
never makes that pair (measured against Debian sclite: it skips the ``@`` even at a higher total),
so neither model allows it.

Unlike Kaldi's ``lattice-oracle`` or k2's Levenshtein graphs the reference side is a network, so
GLM alternations ``{ I'M / I AM }``, ``@`` and optionally deletable words are handled exactly.

Vectorization: hypothesis states are processed level by level (level = longest arc distance from
the start); all states of a level depend only on earlier levels, so one level is a handful of
numpy operations over ``(arcs of the level) x (reference states)``.  Deletions inside one
hypothesis state are a shortest-path closure over the (small, acyclic) reference network: a
running minimum for a linear reference, else a min-plus product with the all-pairs deletion
costs (short references) or one vectorized update per reference arc (long ones).  Arg-minimums
pack ``cost * k + index`` into one int64 so that a single reduction gives value and position.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import LatticeError, LatticeToolsError
from ..scoring.counts import ErrorCounts

# "Infinite" integer cost.  2^40 leaves room to pack (cost, index) pairs into one int64 key
# (cost * 2^20 + index) for single-pass arg-minimums; real totals stay far below it.
BIG = np.int64(1) << 40


@dataclass(frozen=True)
class CostModel:
    """Integer edit costs of one scoring convention (see the module docstring).

    ``null_skip``: inserting or deleting the NULL word ``@``; ``null_pair``: a word against ``@``
    (or ``@`` against ``@``), ``None`` = never paired.  ``opt_del``: deleting an optionally
    deletable reference word.
    ``scale``: divide a total by it to get the convention's own units (sclite: 1000).
    """

    name: str
    sub: int
    ins: int
    dele: int
    opt_del: int
    null_skip: int
    null_pair: int | None
    scale: int = 1


SCLITE_COSTS = CostModel("sclite", sub=4000, ins=3000, dele=3000, opt_del=2000, null_skip=1, null_pair=None, scale=1000)
LEVENSHTEIN_COSTS = CostModel("levenshtein", sub=1, ins=1, dele=1, opt_del=0, null_skip=0, null_pair=None, scale=1)


def cost_model(mode: str | CostModel) -> CostModel:
    """``"sclite"`` or ``"levenshtein"`` (or a :class:`CostModel`) -> :class:`CostModel`."""
    if isinstance(mode, CostModel):
        return mode
    if mode == "sclite":
        return SCLITE_COSTS
    if mode in ("levenshtein", "plain"):
        return LEVENSHTEIN_COSTS
    raise LatticeToolsError(f"unknown oracle mode {mode!r}; expected 'sclite' or 'levenshtein'")


# ----------------------------------------------------------------------------------------------
# Word classes
# ----------------------------------------------------------------------------------------------
_NONWORDS = {"", "<eps>", "!null", "!sent_start", "!sent_end", "<s>", "</s>", "<sil>", "sil", "<silence>"}


def _own_is_nonword(word: str) -> bool:
    w = word.lower()
    if w in _NONWORDS:
        return True
    return len(w) >= 2 and ((w[0] == "<" and w[-1] == ">" and w != "<unk>") or (w[0] == "[" and w[-1] == "]")
                            or (w.startswith("++") and w.endswith("++")))


def is_nonword(word: str) -> bool:
    """Default test for lattice labels that are not words (scored as epsilon, never as insertions).

    The same rule the alternatives algorithms use (:func:`lattice_tools.alternatives._common.is_silence`:
    ``<eps>``, ``!NULL``, ``<s>``, ``</s>``, ``<sil>``, ``[NOISE]``, ``++LAUGH++``, ``#0`` ...),
    so that a lattice and the N-best/phrase alternatives made from it contain the same words;
    plus any ``<...>`` tag other than ``<unk>``.  ``<unk>`` is a word (an error against any
    reference word).
    """
    try:
        from ..alternatives._common import is_silence
    except ImportError:  # pragma: no cover - the alternatives package is part of the toolkit
        return _own_is_nonword(word)
    return is_silence(word) or _own_is_nonword(word)


# ----------------------------------------------------------------------------------------------
# Graphs (internal, array form)
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RefGraph:
    """A reference word network in array form: states ``0..n-1`` topological, start 0, final n-1.

    ``words[e]`` is the (case-folded unless ``case_sensitive``) word of arc ``e`` or ``None`` for ``@``.
    ``shown[e]`` is the word as written (for alignments).
    """

    num_states: int
    src: np.ndarray
    dst: np.ndarray
    words: tuple
    shown: tuple
    optional: np.ndarray
    fragment: np.ndarray
    rank: np.ndarray  # position of each arc in the listed (text) order: first-listed wins ties

    @property
    def num_arcs(self) -> int:
        return len(self.src)


def _fold(word: str, case_sensitive: bool) -> str:
    # str.lower, not casefold: the scorer (lattice_tools.scoring.network) folds with lower().
    return word if case_sensitive else word.lower()


def ref_graph(reference, *, case_sensitive: bool = False, optional_deletable: bool = False,
              fragments: bool = False) -> RefGraph:
    """Convert a reference to :class:`RefGraph`.

    Accepts a :class:`RefGraph`; a scorer :class:`~lattice_tools.scoring.network.WordNetwork`
    (arrays ``src, dst, words, optional, fragment``; arcs in text order); a transcript string
    (parsed with :func:`lattice_tools.scoring.network.parse_transcript`: alternations, ``@``,
    ``(optional)`` words, ``frag-`` fragments); or a sequence of words (a linear network; ``(w)``
    marks an optional word, ``@`` the null word).

    ``optional_deletable`` is sclite's ``-D`` (parenthesised words may be deleted at the reduced
    cost and count as correct); without it they are ordinary words.  ``fragments`` is ``-F``.
    """
    if isinstance(reference, RefGraph):
        return reference
    if isinstance(reference, str):
        try:
            from ..scoring.network import parse_transcript
        except ImportError:  # pragma: no cover - the scorer is part of the package
            parse_transcript = None
        if parse_transcript is not None:
            return ref_graph(parse_transcript(reference, case_sensitive=case_sensitive), case_sensitive=case_sensitive,
                             optional_deletable=optional_deletable, fragments=fragments)
        reference = reference.split()
    if hasattr(reference, "words") and hasattr(reference, "src") and hasattr(reference, "dst"):
        words = [None if (w is None or w == "@") else _fold(str(w), case_sensitive) for w in reference.words]
        shown = [None if (w is None or w == "@") else str(w) for w in reference.words]
        opt = np.asarray(getattr(reference, "optional", np.zeros(len(words), bool)), dtype=bool)
        if not optional_deletable:
            # Without -D sclite keeps the parentheses: "(uh)" is a word that matches nothing but "(uh)".
            words = [f"({w})" if o and w is not None else w for w, o in zip(words, opt, strict=False)]
            shown = [f"({w})" if o and w is not None else w for w, o in zip(shown, opt, strict=False)]
            opt = np.zeros(len(words), dtype=bool)
        frag = np.asarray(getattr(reference, "fragment", np.zeros(len(words), bool)), dtype=bool) & fragments
        return _make_ref(int(reference.num_states), reference.src, reference.dst, words, shown, opt, frag)
    words, shown, opt = [], [], []
    for w in reference:
        w = str(w)
        o = len(w) > 2 and w[0] == "(" and w[-1] == ")" and optional_deletable
        if o:
            w = w[1:-1]
        words.append(None if w == "@" else _fold(w, case_sensitive))
        shown.append(None if w == "@" else w)
        opt.append(o)
    n = len(words) + 1
    frag = [fragments and w is not None and len(w) > 1 and (w.startswith("-") or w.endswith("-")) for w in words]
    return _make_ref(n, list(range(len(words))), list(range(1, len(words) + 1)), words, shown, opt, frag)


def _make_ref(n, src, dst, words, shown, opt, frag) -> RefGraph:
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if len(src) and (np.any(src >= dst) or src.min() < 0 or dst.max() >= n):
        raise LatticeToolsError("reference network must be numbered topologically (every arc src < dst) "
                                f"with states 0..{n - 1}")
    order = np.argsort(src, kind="stable")  # sorted by src; ``rank`` keeps the listed (text) order
    rank = np.empty(len(src), dtype=np.int64)
    rank[:] = order
    return RefGraph(num_states=n, src=src[order], dst=dst[order], words=tuple(words[i] for i in order),
                    shown=tuple(shown[i] for i in order), optional=np.asarray(opt, dtype=bool)[order],
                    fragment=np.asarray(frag, dtype=bool)[order], rank=rank)


@dataclass(frozen=True)
class HypGraph:
    """A hypothesis network in array form (states topological, start 0, arcs sorted by src).

    ``label[a]`` indexes ``labels``; label kinds: 0 epsilon (free), 1 word, 2 NULL ``@``.
    ``start``/``duration`` are per-arc seconds (NaN unknown); ``arc_id`` maps back to the source
    (lattice arc index, or ``(slot, alternative, word)`` flattened by the caller).
    """

    num_states: int
    src: np.ndarray
    dst: np.ndarray
    label: np.ndarray
    labels: tuple          # folded strings used for matching (None for eps / @)
    shown: tuple           # as written
    kind: np.ndarray       # per label
    final: np.ndarray      # bool per state
    start: np.ndarray
    duration: np.ndarray
    rank: np.ndarray | None = None  # listed order of each arc (alternatives: first listed wins ties)
    origin: np.ndarray | None = None  # alternatives: (slot index << 24) | alternative index, per arc


def hyp_graph_from_lattice(lat, *, nonword: Callable[[str], bool] = is_nonword,
                           case_sensitive: bool = False) -> HypGraph:
    """A :class:`~lattice_tools.lattice.Lattice` as a hypothesis network (word ids -> labels).

    Frame-level lattices (k2, Kaldi raw) are fine as they are: arcs without words are epsilon.
    Times are ``t0 .. t1`` frames of the word arc (for frame-level lattices: of the arc that
    carries the word, i.e. not the word's full span -- word-align first if exact times matter).
    """
    ids = np.asarray(lat.word, dtype=np.int64)
    uniq, inv = np.unique(ids, return_inverse=True)
    labels, shown, kinds = [], [], []
    for wid in uniq.tolist():
        w = "" if wid == 0 else lat.symbols.word(wid)
        if wid == 0 or nonword(w):
            labels.append(None); shown.append(None); kinds.append(0)
        elif w == "@":
            labels.append(None); shown.append("@"); kinds.append(2)
        else:
            labels.append(_fold(w, case_sensitive)); shown.append(w); kinds.append(1)
    fs = float(lat.frame_shift)
    t0 = np.asarray(lat.t0, dtype=np.float64)
    t1 = np.asarray(lat.t1, dtype=np.float64)
    start = np.where(t0 >= 0, t0 * fs, np.nan)
    duration = np.where((t0 >= 0) & (t1 >= 0), (t1 - t0) * fs, np.nan)
    return HypGraph(num_states=int(lat.num_states), src=np.asarray(lat.src, dtype=np.int64),
                    dst=np.asarray(lat.dst, dtype=np.int64), label=inv.astype(np.int64), labels=tuple(labels),
                    shown=tuple(shown), kind=np.asarray(kinds, dtype=np.int8), final=np.asarray(lat.is_final),
                    start=start, duration=duration)


def hyp_graph_from_alternatives(alts, *, n: int | None = None, null_for_empty: bool = True,
                                nonword: Callable[[str], bool] = is_nonword,
                                case_sensitive: bool = False) -> HypGraph:
    """An :class:`~lattice_tools.alternatives.network.Alternatives` as a hypothesis network.

    Slot ``i`` spans states ``s_i -> s_{i+1}``; every alternative (the first ``n`` of each slot) is
    a chain of word arcs between them.  An empty alternative becomes the NULL word ``@`` when
    ``null_for_empty`` (this is how sclite reads an empty branch of an ALT block, and ``@`` has
    sclite's own costs) or an epsilon arc otherwise.  Every path through the network is one choice
    of alternative per slot, so the network oracle is the best joint choice.
    """
    src, dst, lab, starts, durs, origin = [], [], [], [], [], []
    label_index: dict = {}
    labels, shown, kinds = [], [], []

    def label_of(word):
        if word is None:
            key = ("@",) if null_for_empty else ("",)
        elif word == "" or nonword(word):
            key = ("",)
        elif word == "@":
            key = ("@",)
        else:
            key = ("w", _fold(word, case_sensitive))
        idx = label_index.get(key)
        if idx is None:
            idx = label_index[key] = len(labels)
            if key[0] == "w":
                labels.append(key[1]); shown.append(word); kinds.append(1)
            elif key[0] == "@":
                labels.append(None); shown.append("@"); kinds.append(2)
            else:
                labels.append(None); shown.append(None); kinds.append(0)
        return idx

    num_states = 1
    cur = 0
    for si, slot in enumerate(alts.slots):
        nxt_fresh = []  # chain arcs, their end state resolved once the slot's end state is known
        chosen = slot.alternatives if n is None else slot.alternatives[:n]
        for ai, alt in enumerate(chosen):
            tag = (si << 24) | ai
            words = alt.words
            if not words:
                # An empty branch of an ALT block is sclite's '@'; a slot whose only alternative
                # is empty writes nothing at all (plain CTM words), so it is a free epsilon.
                nxt_fresh.append((cur, None, label_of(None) if len(chosen) > 1 else label_of(""), math.nan, math.nan,
                                  tag))
                continue
            prev = cur
            for j, w in enumerate(words):
                last = j == len(words) - 1
                if last:
                    nxt_fresh.append((prev, None, label_of(w), alt.starts[j], alt.durations[j], tag))
                else:
                    s = num_states
                    num_states += 1
                    nxt_fresh.append((prev, s, label_of(w), alt.starts[j], alt.durations[j], tag))
                    prev = s
        end = num_states
        num_states += 1
        for s, d, l, t, du, tag in nxt_fresh:
            src.append(s); dst.append(end if d is None else d); lab.append(l); starts.append(t); durs.append(du)
            origin.append(tag)
        cur = end
    final = np.zeros(num_states, dtype=bool)
    final[cur] = True
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    # States are numbered topologically already: a slot's start < its chain states < its end.
    perm = np.lexsort((dst, src))
    return HypGraph(num_states=num_states, src=src[perm], dst=dst[perm], label=np.asarray(lab, dtype=np.int64)[perm],
                    labels=tuple(labels), shown=tuple(shown), kind=np.asarray(kinds, dtype=np.int8), final=final,
                    start=np.asarray(starts, dtype=np.float64)[perm], duration=np.asarray(durs, dtype=np.float64)[perm],
                    rank=perm, origin=np.asarray(origin, dtype=np.int64)[perm])


def hyp_graph_from_network(net, *, case_sensitive: bool = False) -> HypGraph:
    """A scorer :class:`~lattice_tools.scoring.network.WordNetwork` (e.g. the hypothesis network of
    a run of alt-CTM items, :func:`lattice_tools.scoring.network.from_ctm_items`) as a hypothesis
    network; ``None`` words are the NULL word ``@``."""
    label_index: dict = {}
    labels, shown, kinds, lab = [], [], [], []
    for w in net.words:
        key = ("@",) if (w is None or w == "@") else ("w", _fold(str(w), case_sensitive))
        idx = label_index.get(key)
        if idx is None:
            idx = label_index[key] = len(labels)
            labels.append(None if key[0] == "@" else key[1])
            shown.append("@" if key[0] == "@" else str(w))
            kinds.append(2 if key[0] == "@" else 1)
        lab.append(idx)
    src = np.asarray(net.src, dtype=np.int64)
    dst = np.asarray(net.dst, dtype=np.int64)
    perm = np.lexsort((np.arange(len(src)), src))
    final = np.zeros(int(net.num_states), dtype=bool)
    final[-1] = True
    start = np.asarray(getattr(net, "start", np.full(len(src), np.nan)), dtype=np.float64)
    dur = np.asarray(getattr(net, "duration", np.full(len(src), np.nan)), dtype=np.float64)
    return HypGraph(num_states=int(net.num_states), src=src[perm], dst=dst[perm],
                    label=np.asarray(lab, dtype=np.int64)[perm], labels=tuple(labels), shown=tuple(shown),
                    kind=np.asarray(kinds, dtype=np.int8), final=final, start=start[perm], duration=dur[perm],
                    rank=perm)


def hyp_graph_from_words(words: Sequence[str], *, nonword: Callable[[str], bool] = is_nonword,
                         case_sensitive: bool = False) -> HypGraph:
    """A single word sequence as a (linear) hypothesis network."""
    from ..alternatives.network import Alternative, Alternatives, Slot

    alts = Alternatives(key="", slots=(Slot(0.0, 0.0, (Alternative(tuple(words)),)),), kind="1best")
    return hyp_graph_from_alternatives(alts, null_for_empty=False, nonword=nonword, case_sensitive=case_sensitive)


# ----------------------------------------------------------------------------------------------
# Result types
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AlignedPair:
    """One step of the oracle alignment: ``op`` is ``C``, ``S``, ``D``, ``I`` (or ``N`` for a
    NULL ``@`` skipped, which is no error).  ``ref``/``hyp`` are the words as written (None where
    absent); ``start``/``duration`` the hypothesis word's time (NaN unknown); ``hyp_arc`` the index
    of the hypothesis arc (-1 for deletions)."""

    op: str
    ref: str | None
    hyp: str | None
    start: float = math.nan
    duration: float = math.nan
    hyp_arc: int = -1
    optional: bool = False


@dataclass(frozen=True)
class OracleResult:
    """The oracle path of one utterance.

    ``counts``: C/S/D/I and #Wrd of the oracle alignment (``segments=1``, ``segment_errors`` 0/1).
    ``cost``: its total cost in the mode's units (sclite weights or errors).  ``words``/``starts``/
    ``durations``: the oracle word sequence with times.  ``alignment``: the :class:`AlignedPair` steps.
    """

    key: str
    mode: str
    counts: ErrorCounts
    cost: float
    words: tuple
    starts: tuple
    durations: tuple
    alignment: tuple = field(repr=False, default=())


# ----------------------------------------------------------------------------------------------
# The dynamic programme
# ----------------------------------------------------------------------------------------------
def _levels(num_states: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Longest-path depth of every state (arcs sorted by src, states topological)."""
    level = np.zeros(num_states, dtype=np.int64)
    if len(src) == 0:
        return level
    # Vectorized relaxation per source-state block would still need a sequential order; a plain
    # loop over Python ints is ~10 ms per 100k arcs, negligible next to the DP itself.
    lv = [0] * num_states
    for s, d in zip(src.tolist(), dst.tolist(), strict=False):
        v = lv[s] + 1
        if v > lv[d]:
            lv[d] = v
    level[:] = lv
    return level


def _pair_costs(hyp: HypGraph, ref: RefGraph, costs: CostModel) -> tuple[np.ndarray, np.ndarray]:
    """``pair[h, e]``: cost of hypothesis label ``h`` against reference arc ``e``; ``op[h, e]``:
    0 correct, 1 substitution, 2 word vs @ (insertion), 3 @ vs word (deletion), 4 @ vs @."""
    H, E = len(hyp.labels), ref.num_arcs
    pair = np.full((H, E), BIG, dtype=np.int64)
    op = np.full((H, E), -1, dtype=np.int8)
    kinds = hyp.kind
    word_rows = np.nonzero(kinds == 1)[0]
    null_rows = np.nonzero(kinds == 2)[0]
    ref_is_null = np.array([w is None for w in ref.words], dtype=bool)
    ref_word_cols = np.nonzero(~ref_is_null)[0]
    ref_null_cols = np.nonzero(ref_is_null)[0]
    null_pair = BIG if costs.null_pair is None else costs.null_pair
    if len(word_rows):
        pair[np.ix_(word_rows, ref_word_cols)] = costs.sub
        op[np.ix_(word_rows, ref_word_cols)] = 1
        pair[np.ix_(word_rows, ref_null_cols)] = null_pair
        op[np.ix_(word_rows, ref_null_cols)] = 2
        row_of = {hyp.labels[h]: h for h in word_rows.tolist()}
        for e in ref_word_cols.tolist():
            w = ref.words[e]
            h = row_of.get(w)
            if h is not None:
                pair[h, e] = 0
                op[h, e] = 0
            if ref.fragment[e]:
                for h2 in word_rows.tolist():
                    if _fragment_match(w, hyp.labels[h2]):
                        pair[h2, e] = 0
                        op[h2, e] = 0
    if len(null_rows):
        pair[np.ix_(null_rows, ref_word_cols)] = null_pair
        op[np.ix_(null_rows, ref_word_cols)] = 3
        pair[np.ix_(null_rows, ref_null_cols)] = null_pair
        op[np.ix_(null_rows, ref_null_cols)] = 4
    return pair, op


def _fragment_match(frag: str, word: str) -> bool:
    """sclite ``-F``: ``pla-`` matches any word starting ``pla``, ``-tion`` any word ending ``tion``."""
    if len(frag) > 1 and frag.endswith("-"):
        return word.startswith(frag[:-1])
    if len(frag) > 1 and frag.startswith("-"):
        return word.endswith(frag[1:])
    return frag == word


def oracle_graph(hyp: HypGraph, reference, *, mode: str | CostModel = "sclite", key: str = "",
                 case_sensitive: bool = False, optional_deletable: bool = False,
                 fragments: bool = False, _tables: bool = False):
    """Exact oracle of a hypothesis network against a reference network (see module docstring).

    Args:
      hyp: a :class:`HypGraph` (:func:`hyp_graph_from_lattice`, :func:`hyp_graph_from_alternatives`).
      reference: anything :func:`ref_graph` accepts.
      mode: ``"sclite"`` (sclite weights; the oracle is what sclite would pick from an ALT network)
        or ``"levenshtein"`` (fewest errors).
    Returns:
      :class:`OracleResult`.  Among equal-cost paths, earlier hypothesis arcs, insertions before
      matches, and first-listed reference alternatives win (deterministic, not sclite's exact
      tie order; counts of tied paths can differ only in sclite mode).
    Caveats:
      Memory is ``O(num_hyp_states x num_ref_states)`` for back-pointers.
    """
    costs = cost_model(mode)
    ref = ref_graph(reference, case_sensitive=case_sensitive, optional_deletable=optional_deletable,
                    fragments=fragments)
    R, E = ref.num_states, ref.num_arcs
    Q = hyp.num_states
    if Q == 0 or not hyp.final.any():
        raise LatticeError("hypothesis network has no final state", key=key or None)
    pair, pair_op = _pair_costs(hyp, ref, costs)
    kind = hyp.kind
    ins_by_label = np.where(kind == 0, 0, np.where(kind == 2, costs.null_skip, costs.ins)).astype(np.int64)
    ref_is_null = np.array([w is None for w in ref.words], dtype=bool)
    del_by_arc = np.where(ref_is_null, costs.null_skip, np.where(ref.optional, costs.opt_del, costs.dele)).astype(np.int64)

    # Per hypothesis state: best cost at every reference state (after the deletion closure), and
    # back-pointers: the deletion arc taken into (q, r) (-1 none); else the hypothesis arc and the
    # reference arc it was paired with (-1 = insertion, r unchanged).
    D = np.full((Q, R), BIG, dtype=np.int64)
    bp_del = np.full((Q, R), -1, dtype=np.int32)
    bp_arc = np.full((Q, R), -1, dtype=np.int64)
    bp_ref = np.full((Q, R), -1, dtype=np.int32)

    ref_src, ref_dst = ref.src, ref.dst
    # Reference arcs grouped by destination (stable: listed order kept), for a segmented min.
    by_dst = np.lexsort((ref.rank, ref_dst))
    dst_sorted = ref_dst[by_dst]
    dst_starts = np.flatnonzero(np.concatenate(([True], dst_sorted[1:] != dst_sorted[:-1]))) if E else np.zeros(0, np.int64)
    dst_cols = dst_sorted[dst_starts] if E else np.zeros(0, np.int64)

    # All-pairs cheapest deletion paths inside the reference network (it is small and acyclic):
    # del_star[r, r'] and the last arc of that path, del_last[r, r'] (-1 when r == r').
    del_star = np.full((R, R), BIG, dtype=np.int64)
    np.fill_diagonal(del_star, 0)
    del_last = np.full((R, R), -1, dtype=np.int32)
    for e in range(E):  # arcs sorted by src: column src(e) is final when it is used
        c = del_star[:, ref_src[e]] + del_by_arc[e]
        better = c < del_star[:, ref_dst[e]]
        del_star[better, ref_dst[e]] = c[better]
        del_last[better, ref_dst[e]] = e
    matrix_chunk = max(1, (1 << 22) // max(1, R * R))

    def closure(block: np.ndarray, bdel: np.ndarray) -> None:
        """In-place deletion closure over the reference network (rows = hypothesis states).

        Records in ``bdel`` the last deletion arc into each reference state (-1: none).  Either a
        dense min-plus product with ``del_star`` (S x R x R; cheap for short references) or one
        vectorized update per reference arc in topological order (long references)."""
        S = block.shape[0]
        if S * R * R <= E * (S + 2000) * 4:
            for lo in range(0, S, matrix_chunk):
                sub = block[lo:lo + matrix_chunk]
                tot = sub[:, :, None] + del_star[None, :, :]          # (s, r_from, r_to)
                frm = np.argmin(tot, axis=1)                           # first (lowest) r_from wins ties
                new = np.take_along_axis(tot, frm[:, None, :], axis=1)[:, 0, :]
                moved = new < sub
                block[lo:lo + matrix_chunk] = np.where(moved, new, sub)
                bdel[lo:lo + matrix_chunk] = np.where(moved, del_last[frm, np.arange(R)[None, :]], -1)
            return
        for e in range(E):  # arcs sorted by src, states topological: src column is final when used
            cand = block[:, ref_src[e]] + del_by_arc[e]
            col = ref_dst[e]
            better = cand < block[:, col]
            if better.any():
                block[better, col] = cand[better]
                bdel[better, col] = e

    row0 = np.full((1, R), BIG, dtype=np.int64)
    row0[0, 0] = 0
    bd0 = np.full((1, R), -1, dtype=np.int32)
    closure(row0, bd0)
    D[0], bp_del[0] = row0[0], bd0[0]

    level = _levels(Q, hyp.src, hyp.dst)
    arc_level = level[hyp.dst]
    rank = np.arange(len(hyp.src)) if hyp.rank is None else hyp.rank
    arc_order = np.lexsort((rank, hyp.dst, arc_level))  # by level, then dst, then listed order
    lv_sorted = arc_level[arc_order]
    bounds = np.flatnonzero(np.concatenate(([True], lv_sorted[1:] != lv_sorted[:-1], [True]))) if len(arc_order) else [0]
    # A single chain (plain transcript) is the common reference: arc e goes e -> e+1, so pairing
    # is a column shift and the deletion closure a running minimum (no segmented reductions).
    linear = bool(E == R - 1 and np.array_equal(ref_src, np.arange(E)) and np.array_equal(ref_dst, ref_src + 1))
    if linear:
        cum_del = np.concatenate(([0], np.cumsum(del_by_arc))).astype(np.int64)     # (R,)
        rev_r = (R - 1 - np.arange(R)).astype(np.int64)

        def closure(block: np.ndarray, bdel: np.ndarray) -> None:  # noqa: F811 - linear variant
            # D'[r'] = min_{r <= r'} D[r] + cum[r'] - cum[r]; key ties to the largest r (fewest deletions)
            packed = (np.minimum(block, BIG) - cum_del) * R + rev_r
            acc = np.minimum.accumulate(packed, axis=1)
            frm = (R - 1) - (acc % R)
            block[:] = acc // R + cum_del
            moved = frm < np.arange(R)
            bdel[:] = np.where(moved, np.arange(R) - 1, -1)

        block0 = np.full((1, R), BIG, dtype=np.int64)
        block0[0, 0] = 0
        bd0 = np.full((1, R), -1, dtype=np.int32)
        closure(block0, bd0)
        D[0], bp_del[0] = block0[0], bd0[0]

    for b in range(len(bounds) - 1):
        arcs = arc_order[bounds[b]:bounds[b + 1]]
        A = len(arcs)
        srcs = hyp.src[arcs]
        labs = hyp.label[arcs]
        Dsrc = D[srcs]                                   # (A, R)
        cand = Dsrc + ins_by_label[labs][:, None]        # insertion: reference state unchanged
        cand_ref = np.full((A, R), -1, dtype=np.int32)
        if E and linear:
            pc = Dsrc[:, :-1] + pair[labs]               # (A, E): pair with arc e = r -> r+1
            better = pc < cand[:, 1:]
            cand[:, 1:] = np.where(better, pc, cand[:, 1:])
            cand_ref[:, 1:] = np.where(better, np.arange(E, dtype=np.int32)[None, :], -1)
        elif E:
            pc = Dsrc[:, ref_src] + pair[labs]           # (A, E)
            pc = np.minimum(pc[:, by_dst], BIG)
            # first reference arc (listed order) achieving the minimum, in one packed reduction
            packed = pc * (E + 1) + np.arange(E)[None, :]
            kmin = np.minimum.reduceat(packed, dst_starts, axis=1)          # (A, U)
            mins = kmin // (E + 1)
            arg = by_dst[kmin % (E + 1)]                                  # (A, U) reference arc ids
            cur = cand[:, dst_cols]
            better = mins < cur
            cand[:, dst_cols] = np.where(better, mins, cur)
            cand_ref[:, dst_cols] = np.where(better, arg, cand_ref[:, dst_cols])
        # Segmented min over the arcs entering the same hypothesis state; ties -> first arc in
        # (listed) order, packed as cost * (A + 1) + position in one reduction.
        dsts = hyp.dst[arcs]
        starts = np.flatnonzero(np.concatenate(([True], dsts[1:] != dsts[:-1])))
        states = dsts[starts]
        packed = np.minimum(cand, BIG) * (A + 1) + np.arange(A, dtype=np.int64)[:, None]
        kmin = np.minimum.reduceat(packed, starts, axis=0)                  # (S, R)
        block = kmin // (A + 1)
        which = kmin % (A + 1)                                           # (S, R) row index into arcs
        cols = np.arange(R)[None, :]
        bdel = np.full(block.shape, -1, dtype=np.int32)
        closure(block, bdel)
        D[states] = block
        bp_del[states] = bdel
        bp_arc[states] = arcs[which]
        bp_ref[states] = cand_ref[which, cols]

    finals = np.nonzero(hyp.final)[0]
    end_costs = D[finals, R - 1]
    k = int(np.argmin(end_costs))
    total = int(end_costs[k])
    if total >= BIG:
        raise LatticeError("no complete path through the hypothesis network", key=key or None)
    res = _traceback(hyp, ref, D, bp_del, bp_arc, bp_ref, pair_op, int(finals[k]), total, costs, key)
    if _tables:
        return res, D, ref, pair, ins_by_label
    return res


def optimal_arcs(hyp: HypGraph, reference, *, mode: str | CostModel = "sclite", case_sensitive: bool = False,
                 optional_deletable: bool = False, fragments: bool = False) -> tuple[OracleResult, np.ndarray]:
    """The oracle and a mask of the hypothesis arcs that lie on *some* optimal path.

    Forward costs ``F[q, r]`` come from :func:`oracle_graph`; backward costs ``B[q, r]`` from the
    same DP on both networks reversed.  Arc ``q -> q'`` is on an optimal path iff
    ``min_r F[q, r] + ins + B[q', r]`` or ``min_e F[q, src e] + pair(e) + B[q', dst e]`` equals the
    optimum.  Needs a single final hypothesis state (true for alternatives networks).
    """
    costs = cost_model(mode)
    opts = dict(mode=costs, case_sensitive=case_sensitive, optional_deletable=optional_deletable, fragments=fragments)
    res, F, ref, pair, ins = oracle_graph(hyp, reference, _tables=True, **opts)
    finals = np.nonzero(hyp.final)[0]
    Q, R = hyp.num_states, ref.num_states
    if len(finals) != 1 or finals[0] != Q - 1:
        raise LatticeError("optimal_arcs needs the last state to be the only final state")
    rev_hyp = HypGraph(num_states=Q, src=Q - 1 - hyp.dst, dst=Q - 1 - hyp.src, label=hyp.label, labels=hyp.labels,
                       shown=hyp.shown, kind=hyp.kind, final=np.eye(1, Q, Q - 1, dtype=bool)[0],
                       start=hyp.start, duration=hyp.duration, rank=None, origin=None)
    perm = np.lexsort((rev_hyp.dst, rev_hyp.src))
    rev_hyp = HypGraph(num_states=Q, src=rev_hyp.src[perm], dst=rev_hyp.dst[perm], label=hyp.label[perm],
                       labels=hyp.labels, shown=hyp.shown, kind=hyp.kind, final=rev_hyp.final,
                       start=hyp.start[perm], duration=hyp.duration[perm])
    rev_ref = RefGraph(num_states=R, src=R - 1 - ref.dst, dst=R - 1 - ref.src, words=ref.words, shown=ref.shown,
                       optional=ref.optional, fragment=ref.fragment, rank=ref.rank)
    rev_ref = _make_ref(R, rev_ref.src, rev_ref.dst, list(ref.words), list(ref.shown), ref.optional, ref.fragment)
    _, Brev, _, _, _ = oracle_graph(rev_hyp, rev_ref, _tables=True, **opts)
    B = Brev[::-1, ::-1]
    total = round(res.cost * costs.scale)
    mask = np.zeros(len(hyp.src), dtype=bool)
    chunk = max(1, (1 << 22) // max(1, R + ref.num_arcs))
    for lo in range(0, len(hyp.src), chunk):
        a = np.arange(lo, min(lo + chunk, len(hyp.src)))
        fs, bd, lab = F[hyp.src[a]], B[hyp.dst[a]], hyp.label[a]
        best = (fs + bd).min(axis=1) + ins[lab]
        if ref.num_arcs:
            via = (fs[:, ref.src] + pair[lab] + bd[:, ref.dst]).min(axis=1)
            best = np.minimum(best, via)
        mask[a] = best == total
    return res, mask


def _traceback(hyp, ref, D, bp_del, bp_arc, bp_ref, pair_op, q, total, costs, key) -> OracleResult:
    steps: list[AlignedPair] = []
    r = ref.num_states - 1
    while q != 0 or r != 0:
        e = int(bp_del[q, r])
        if e >= 0:  # deletion of reference arc e, hypothesis state unchanged
            if ref.words[e] is None:
                steps.append(AlignedPair("N", "@", None))
            else:
                steps.append(AlignedPair("D", ref.shown[e], None, optional=bool(ref.optional[e])))
            r = int(ref.src[e])
            continue
        a = int(bp_arc[q, r])
        if a < 0:
            raise AssertionError(f"oracle traceback broke at ({q}, {r})")  # pragma: no cover
        lab = int(hyp.label[a])
        t, du = float(hyp.start[a]), float(hyp.duration[a])
        e = int(bp_ref[q, r])
        hk = int(hyp.kind[lab])
        if e < 0:
            if hk == 1:
                steps.append(AlignedPair("I", None, hyp.shown[lab], t, du, a))
            elif hk == 2:
                steps.append(AlignedPair("N", None, "@", t, du, a))
            # epsilon: nothing to record
        else:
            o = int(pair_op[lab, e])
            opt = bool(ref.optional[e])
            if o == 0:
                steps.append(AlignedPair("C", ref.shown[e], hyp.shown[lab], t, du, a, opt))
            elif o == 1:
                steps.append(AlignedPair("S", ref.shown[e], hyp.shown[lab], t, du, a, opt))
            elif o == 2:
                steps.append(AlignedPair("I", "@", hyp.shown[lab], t, du, a))
            elif o == 3:
                steps.append(AlignedPair("D", ref.shown[e], "@", t, du, a, opt))
            else:
                steps.append(AlignedPair("N", "@", "@", t, du, a))
            r = int(ref.src[e])
        q = int(hyp.src[a])
    steps.reverse()
    counts = counts_of_alignment(steps, costs)
    words = tuple(s.hyp for s in steps if s.hyp is not None and s.hyp != "@")
    starts = tuple(s.start for s in steps if s.hyp is not None and s.hyp != "@")
    durs = tuple(s.duration for s in steps if s.hyp is not None and s.hyp != "@")
    return OracleResult(key=key, mode=costs.name, counts=counts, cost=total / costs.scale, words=words,
                        starts=starts, durations=durs, alignment=tuple(steps))


def counts_of_alignment(steps: Iterable[AlignedPair], costs: CostModel = SCLITE_COSTS) -> ErrorCounts:
    """C/S/D/I and #Wrd of an alignment.  An optional reference word that is deleted counts as
    correct (sclite ``-D``: it is in #Wrd and is no error); ``@`` steps count nothing."""
    c = s = d = i = oc = od = 0
    for st in steps:
        if st.op == "C":
            c += 1
            oc += st.optional
        elif st.op == "S":
            s += 1
        elif st.op == "D":
            if st.optional:
                c += 1
                od += 1
            else:
                d += 1
        elif st.op == "I":
            i += 1
    return ErrorCounts(correct=c, substitutions=s, deletions=d, insertions=i, ref_words=c + s + d, segments=1,
                       segment_errors=int(s + d + i > 0), optional_correct=oc, optional_deleted=od)


# ----------------------------------------------------------------------------------------------
# sclite tie rules: the scorer's own network alignment on the chosen network
# ----------------------------------------------------------------------------------------------
def _scorer_network(reference, case_sensitive: bool):
    """The reference as a scorer WordNetwork, or None when it is only available as a RefGraph."""
    from ..scoring.network import WordNetwork, linear_network, parse_transcript

    if isinstance(reference, WordNetwork):
        return reference
    if isinstance(reference, str):
        return parse_transcript(reference, case_sensitive=case_sensitive)
    if isinstance(reference, (list, tuple)):
        return linear_network([str(w) for w in reference], case_sensitive=case_sensitive)
    return None


def _with_sclite_ties(result: OracleResult, ref_net, hyp_net, optional_deletable: bool, fragments: bool,
                      shown_words: Sequence[str] | None = None) -> OracleResult:
    """Counts, words and alignment of ``hyp_net`` against ``ref_net`` by the scorer's re-implementation
    of sclite's ``net_dp`` (its tie rules: first-listed alternative, substitution before deletion
    before insertion).  The optimal cost is the same as the exact DP's (checked in the tests); only
    the choice among equal-cost alignments -- and hence C/S/D/I -- can differ."""
    from ..scoring.align import AlignOptions, align_networks

    a = align_networks(ref_net, hyp_net, AlignOptions(mode="sclite", optional_deletable=optional_deletable,
                                                       fragments=fragments))
    steps = []
    for p in a.pairs:
        t = du = math.nan
        if p.hyp_arc >= 0:
            t = float(hyp_net.start[p.hyp_arc])
            du = float(hyp_net.duration[p.hyp_arc])
        hyp = p.hyp if (shown_words is None or p.hyp_arc < 0) else shown_words[p.hyp_arc]
        steps.append(AlignedPair(p.op, p.ref, hyp, t, du, int(p.hyp_arc)))
    words = tuple(st.hyp for st in steps if st.hyp is not None and st.hyp != "@")
    starts = tuple(st.start for st in steps if st.hyp is not None and st.hyp != "@")
    durs = tuple(st.duration for st in steps if st.hyp is not None and st.hyp != "@")
    counts = a.counts
    if counts.segments == 0:
        counts = counts + ErrorCounts(segments=1, segment_errors=int(counts.errors > 0))
    return OracleResult(key=result.key, mode=result.mode, counts=counts, cost=result.cost, words=words,
                        starts=starts, durations=durs, alignment=tuple(steps))


def _alternatives_network(alts, n: int | None, case_sensitive: bool, blocks: set | None = None):
    """An Alternatives as the scorer's hypothesis WordNetwork (what sclite builds from its alt-CTM).
    ``blocks``: slot indices written as an ALT block even with one alternative (a multi-alternative
    slot cut down to its empty branch must stay sclite's ``@``, which costs 0.001)."""
    from ..io.ctm import CtmAltBlock, CtmWord
    from ..scoring.network import from_ctm_items

    items = []
    for si, slot in enumerate(alts.slots):
        chosen = slot.alternatives if n is None else slot.alternatives[:n]
        seqs = []
        for alt in chosen:
            seqs.append(tuple(CtmWord(alts.file, alts.channel, None if math.isnan(t) else t,
                                      None if math.isnan(d) else d, w)
                              for w, t, d in zip(alt.words, alt.starts, alt.durations, strict=False)))
        if len(seqs) == 1 and not (blocks and si in blocks and not seqs[0]):
            items.extend(seqs[0])
        else:
            items.append(CtmAltBlock(alts.file, alts.channel, tuple(seqs)))
    return from_ctm_items(items, case_sensitive=case_sensitive)


# ----------------------------------------------------------------------------------------------
# Public entry points
# ----------------------------------------------------------------------------------------------
def lattice_oracle(lat, reference, *, mode: str | CostModel = "sclite", nonword: Callable[[str], bool] = is_nonword,
                   case_sensitive: bool = False, optional_deletable: bool = False,
                   fragments: bool = False, sclite_ties: bool = True) -> OracleResult:
    """Exact full-lattice oracle: the lattice path with the lowest alignment cost against ``reference``.

    Args:
      lat: a :class:`~lattice_tools.lattice.Lattice` (word-aligned or frame-level: arcs whose word
        is 0 or a filler per ``nonword`` are epsilon).  Arc weights are ignored: every path counts.
      reference: a reference network or transcript (see :func:`ref_graph`).
      mode: ``"sclite"`` or ``"levenshtein"``.
      sclite_ties: in sclite mode, report the counts the scorer (sclite's tie rules) gives for the
        oracle word sequence -- "what scoring the oracle path says".  The cost is unchanged.
    Returns:
      :class:`OracleResult` with the oracle words and times (seconds, from the word arcs).
    """
    hyp = hyp_graph_from_lattice(lat, nonword=nonword, case_sensitive=case_sensitive)
    res = oracle_graph(hyp, reference, mode=mode, key=lat.key, case_sensitive=case_sensitive,
                       optional_deletable=optional_deletable, fragments=fragments)
    if sclite_ties and cost_model(mode).name == "sclite":
        ref_net = _scorer_network(reference, case_sensitive)
        if ref_net is not None:
            from ..scoring.network import linear_network
            hyp_net = linear_network(list(res.words), starts=list(res.starts), durations=list(res.durations),
                                     case_sensitive=case_sensitive)
            res = _with_sclite_ties(res, ref_net, hyp_net, optional_deletable, fragments, shown_words=res.words)
    return res


def alternatives_oracle(alts, reference, *, n: int | None = None, mode: str | CostModel = "sclite",
                        nonword: Callable[[str], bool] = is_nonword, case_sensitive: bool = False,
                        optional_deletable: bool = False, fragments: bool = False) -> OracleResult:
    """Oracle over an :class:`~lattice_tools.alternatives.network.Alternatives` (N-best, sausage,
    phrase or 1-best): the best choice of one alternative per slot jointly with the alignment --
    what sclite computes for an alt-CTM.  ``n`` keeps the first ``n`` alternatives of every slot.

    In sclite mode the counts and the chosen alternatives are those of the scorer's sclite-exact
    network alignment (same optimal cost as the exact DP, sclite's choice among ties), so they
    equal what Debian sclite reports for the alt-CTM of ``alts`` (tested on random files).
    N-best lists against linear references take the batched fast path
    (:func:`lattice_tools.oracle.batch.alternatives_oracle_many`), which gives the same result.
    """
    if n is not None:
        alts = alts.truncated(n)
    if fragments:
        return network_alternatives_oracle(alts, reference, mode=mode, nonword=nonword, case_sensitive=case_sensitive,
                                           optional_deletable=optional_deletable, fragments=fragments)
    from .batch import alternatives_oracle_many

    return alternatives_oracle_many([alts], [reference], mode=mode, optional_deletable=optional_deletable,
                                    case_sensitive=case_sensitive, nonword=nonword)[0]


def network_alternatives_oracle(alts, reference, *, n: int | None = None, mode: str | CostModel = "sclite",
                                nonword: Callable[[str], bool] = is_nonword, case_sensitive: bool = False,
                                optional_deletable: bool = False, fragments: bool = False,
                                sclite_ties: bool = True) -> OracleResult:
    """:func:`alternatives_oracle` by the network DP alone (any number of multi-alternative slots).

    In sclite mode the scorer's sclite-exact DP makes the final choice among equal-cost paths.  On
    a large network it runs on the network cut to the alternatives that lie on some optimal path
    (:func:`optimal_arcs`): a branch on no optimal path never wins a cell of the chosen alignment,
    so removing it cannot change sclite's choice, and the scorer then sees a handful of branches.
    """
    if n is not None:
        alts = alts.truncated(n)
    hyp = hyp_graph_from_alternatives(alts, null_for_empty=True, nonword=nonword, case_sensitive=case_sensitive)
    opts = dict(mode=mode, case_sensitive=case_sensitive, optional_deletable=optional_deletable, fragments=fragments)
    ref_net = _scorer_network(reference, case_sensitive) if sclite_ties and cost_model(mode).name == "sclite" else None
    if ref_net is None:
        return oracle_graph(hyp, reference, key=alts.key, **opts)
    if len(hyp.src) <= _SCORER_DIRECT_ARCS:
        res = oracle_graph(hyp, reference, key=alts.key, **opts)
        return _with_sclite_ties(res, ref_net, _alternatives_network(alts, None, case_sensitive),
                                 optional_deletable, fragments)
    res, on_opt = optimal_arcs(hyp, reference, **opts)
    res = OracleResult(alts.key, res.mode, res.counts, res.cost, res.words, res.starts, res.durations, res.alignment)
    # an alternative is kept when every one of its arcs is on an optimal path
    tags = hyp.origin
    bad = np.unique(tags[~on_opt])
    keep_tags = np.setdiff1d(np.unique(tags), bad)
    keep: dict = {}
    for t in keep_tags.tolist():
        keep.setdefault(t >> 24, set()).add(t & ((1 << 24) - 1))
    from dataclasses import replace as dc_replace

    slots = []
    for si, slot in enumerate(alts.slots):
        chosen = tuple(a for ai, a in enumerate(slot.alternatives) if ai in keep.get(si, ()))
        slots.append(dc_replace(slot, alternatives=chosen or slot.alternatives))
    reduced = dc_replace(alts, slots=tuple(slots))
    multi = {si for si, slot in enumerate(alts.slots) if slot.depth > 1}
    return _with_sclite_ties(res, ref_net, _alternatives_network(reduced, None, case_sensitive, blocks=multi),
                             optional_deletable, fragments)


# Networks up to this many arcs go to the scorer whole; larger ones are cut to their optimal branches.
_SCORER_DIRECT_ARCS = 2000


def sequence_oracle(words: Sequence[str], reference, *, mode: str | CostModel = "sclite",
                    case_sensitive: bool = False, optional_deletable: bool = False,
                    fragments: bool = False) -> OracleResult:
    """Align one word sequence against a reference network (the alignment of a 1-best)."""
    return oracle_graph(hyp_graph_from_words(words, case_sensitive=case_sensitive), reference, mode=mode,
                        case_sensitive=case_sensitive, optional_deletable=optional_deletable, fragments=fragments)
