"""The two inputs of the oracle DP in array form: a reference network and a hypothesis network.

A reference (:class:`RefGraph`) comes from a transcript string, a word sequence or the scorer's
:class:`~lattice_tools.scoring.network.WordNetwork`; a hypothesis (:class:`HypGraph`) from a
:class:`~lattice_tools.core.lattice.Lattice`, an :class:`~lattice_tools.core.alternatives_network.Alternatives`,
a scorer network (an alt-CTM) or a word sequence.  Both are numbered topologically with arcs sorted
by source state, which is what the DP (:mod:`lattice_tools.oracle.dp`) relies on.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import LatticeToolsError
from ..scoring.network import parse_transcript

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


@functools.lru_cache(maxsize=1 << 16)  # a pure function of the word, asked once per word id of every lattice
def is_nonword(word: str) -> bool:
    """Default test for lattice labels that are not words (scored as epsilon, never as insertions).

    The same rule the alternatives algorithms use (:func:`lattice_tools.alternatives._common.is_silence`:
    ``<eps>``, ``!NULL``, ``<s>``, ``</s>``, ``<sil>``, ``[NOISE]``, ``++LAUGH++``, ``#0`` ...),
    so that a lattice and the N-best/phrase alternatives made from it contain the same words;
    plus any ``<...>`` tag other than ``<unk>``.  ``<unk>`` is a word (an error against any
    reference word).
    """
    # Imported here, not at the top: callers passing their own ``nonword`` (lattice-tools oracle-path)
    # never need the alternatives package (tests/test_oracle.py keeps oracle-path's imports that small).
    from ..alternatives._common import is_silence

    return is_silence(word) or _own_is_nonword(word)


def fold_word(word: str, case_sensitive: bool) -> str:
    """The form a word is matched in.  str.lower, not casefold: the scorer
    (:mod:`lattice_tools.scoring.network`) folds with lower()."""
    return word if case_sensitive else word.lower()


# ----------------------------------------------------------------------------------------------
# Reference networks
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

    @property
    def is_chain(self) -> bool:
        """A single chain (a plain transcript): arc ``e`` goes ``e -> e+1``."""
        E = self.num_arcs
        return bool(E == self.num_states - 1 and np.array_equal(self.src, np.arange(E))
                    and np.array_equal(self.dst, self.src + 1))


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
        return ref_graph(parse_transcript(reference, case_sensitive=case_sensitive), case_sensitive=case_sensitive,
                         optional_deletable=optional_deletable, fragments=fragments)
    if hasattr(reference, "words") and hasattr(reference, "src") and hasattr(reference, "dst"):
        words = [None if (w is None or w == "@") else fold_word(str(w), case_sensitive) for w in reference.words]
        shown = [None if (w is None or w == "@") else str(w) for w in reference.words]
        opt = np.asarray(getattr(reference, "optional", np.zeros(len(words), bool)), dtype=bool)
        if not optional_deletable:
            # Without -D sclite keeps the parentheses: "(uh)" is a word that matches nothing but "(uh)".
            words = [f"({w})" if o and w is not None else w for w, o in zip(words, opt, strict=False)]
            shown = [f"({w})" if o and w is not None else w for w, o in zip(shown, opt, strict=False)]
            opt = np.zeros(len(words), dtype=bool)
        frag = np.asarray(getattr(reference, "fragment", np.zeros(len(words), bool)), dtype=bool) & fragments
        return _make_ref(int(reference.num_states), reference.src, reference.dst, words, shown, opt, frag)
    optional: list[bool] = []
    words, shown = [], []
    for w in reference:
        w = str(w)
        o = len(w) > 2 and w[0] == "(" and w[-1] == ")" and optional_deletable
        if o:
            w = w[1:-1]
        words.append(None if w == "@" else fold_word(w, case_sensitive))
        shown.append(None if w == "@" else w)
        optional.append(o)
    n = len(words) + 1
    fragment = [fragments and w is not None and len(w) > 1 and (w.startswith("-") or w.endswith("-")) for w in words]
    return _make_ref(n, list(range(len(words))), list(range(1, len(words) + 1)), words, shown, optional, fragment)


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


def reversed_ref_graph(ref: RefGraph) -> RefGraph:
    """``ref`` with every arc reversed and the states renumbered ``r -> n-1-r`` (still topological)."""
    R = ref.num_states
    return _make_ref(R, R - 1 - ref.dst, R - 1 - ref.src, list(ref.words), list(ref.shown), ref.optional,
                     ref.fragment)


# ----------------------------------------------------------------------------------------------
# Hypothesis networks
# ----------------------------------------------------------------------------------------------
LABEL_EPSILON, LABEL_WORD, LABEL_NULL = 0, 1, 2  # HypGraph.kind values


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


def reversed_hyp_graph(hyp: HypGraph) -> HypGraph:
    """``hyp`` with every arc reversed and the states renumbered ``q -> n-1-q``; needs the last state
    to be the only final one (it becomes the start).  Listed order and origins are dropped."""
    Q = hyp.num_states
    src, dst = Q - 1 - hyp.dst, Q - 1 - hyp.src
    perm = np.lexsort((dst, src))
    return HypGraph(num_states=Q, src=src[perm], dst=dst[perm], label=hyp.label[perm], labels=hyp.labels,
                    shown=hyp.shown, kind=hyp.kind, final=np.eye(1, Q, Q - 1, dtype=bool)[0],
                    start=hyp.start[perm], duration=hyp.duration[perm])


class _LabelTable:
    """Labels of a hypothesis network, one per distinct (kind, folded word)."""

    def __init__(self):
        self.index: dict = {}
        self.labels: list = []
        self.shown: list = []
        self.kinds: list = []

    def intern(self, key: tuple, word) -> int:
        """``key``: ``("w", folded)`` for a word, ``("@",)`` for the NULL word, ``("",)`` for epsilon."""
        idx = self.index.get(key)
        if idx is None:
            idx = self.index[key] = len(self.labels)
            if key[0] == "w":
                self.append(key[1], word, LABEL_WORD)
            elif key[0] == "@":
                self.append(None, "@", LABEL_NULL)
            else:
                self.append(None, None, LABEL_EPSILON)
        return idx

    def append(self, label, shown, kind) -> None:
        self.labels.append(label)
        self.shown.append(shown)
        self.kinds.append(kind)


def hyp_graph_from_lattice(lat, *, nonword: Callable[[str], bool] = is_nonword,
                           case_sensitive: bool = False) -> HypGraph:
    """A :class:`~lattice_tools.core.lattice.Lattice` as a hypothesis network (word ids -> labels).

    Frame-level lattices (k2, Kaldi raw) are fine as they are: arcs without words are epsilon.
    Times are ``t0 .. t1`` frames of the word arc (for frame-level lattices: of the arc that
    carries the word, i.e. not the word's full span -- word-align first if exact times matter).
    """
    ids = np.asarray(lat.word, dtype=np.int64)
    uniq, inv = np.unique(ids, return_inverse=True)
    table = _LabelTable()
    for wid in uniq.tolist():
        w = "" if wid == 0 else lat.symbols.word(wid)
        if wid == 0 or nonword(w):
            table.append(None, None, LABEL_EPSILON)  # one label per word id (not interned)
        elif w == "@":
            table.append(None, "@", LABEL_NULL)
        else:
            table.append(fold_word(w, case_sensitive), w, LABEL_WORD)
    fs = float(lat.frame_shift)
    t0 = np.asarray(lat.t0, dtype=np.float64)
    t1 = np.asarray(lat.t1, dtype=np.float64)
    start = np.where(t0 >= 0, t0 * fs, np.nan)
    duration = np.where((t0 >= 0) & (t1 >= 0), (t1 - t0) * fs, np.nan)
    return HypGraph(num_states=int(lat.num_states), src=np.asarray(lat.src, dtype=np.int64),
                    dst=np.asarray(lat.dst, dtype=np.int64), label=inv.astype(np.int64), labels=tuple(table.labels),
                    shown=tuple(table.shown), kind=np.asarray(table.kinds, dtype=np.int8),
                    final=np.asarray(lat.is_final), start=start, duration=duration)


def hyp_graph_from_alternatives(alts, *, n: int | None = None, null_for_empty: bool = True,
                                nonword: Callable[[str], bool] = is_nonword,
                                case_sensitive: bool = False) -> HypGraph:
    """An :class:`~lattice_tools.core.alternatives_network.Alternatives` as a hypothesis network.

    Slot ``i`` spans states ``s_i -> s_{i+1}``; every alternative (the first ``n`` of each slot) is
    a chain of word arcs between them.  An empty alternative becomes the NULL word ``@`` when
    ``null_for_empty`` (this is how sclite reads an empty branch of an ALT block, and ``@`` has
    sclite's own costs) or an epsilon arc otherwise.  Every path through the network is one choice
    of alternative per slot, so the network oracle is the best joint choice.
    """
    src, dst, lab, starts, durs, origin = [], [], [], [], [], []
    table = _LabelTable()

    def label_of(word):
        key: tuple[str, ...]
        if word is None:
            key = ("@",) if null_for_empty else ("",)
        elif word == "" or nonword(word):
            key = ("",)
        elif word == "@":
            key = ("@",)
        else:
            key = ("w", fold_word(word, case_sensitive))
        return table.intern(key, word)

    num_states = 1
    cur = 0
    for si, slot in enumerate(alts.slots):
        slot_arcs: list[tuple[int, int | None, int, float, float, int]] = []  # chain arcs; None as end state = the slot's end, known once the chains are laid
        chosen = slot.alternatives if n is None else slot.alternatives[:n]
        for ai, alt in enumerate(chosen):
            tag = (si << 24) | ai
            words = alt.words
            if not words:
                # An empty branch of an ALT block is sclite's '@'; a slot whose only alternative
                # is empty writes nothing at all (plain CTM words), so it is a free epsilon.
                empty = label_of(None) if len(chosen) > 1 else label_of("")
                slot_arcs.append((cur, None, empty, math.nan, math.nan, tag))
                continue
            prev = cur
            for j, w in enumerate(words):
                if j == len(words) - 1:
                    slot_arcs.append((prev, None, label_of(w), alt.starts[j], alt.durations[j], tag))
                else:
                    s = num_states
                    num_states += 1
                    slot_arcs.append((prev, s, label_of(w), alt.starts[j], alt.durations[j], tag))
                    prev = s
        end = num_states
        num_states += 1
        for s, d, label, t, du, tag in slot_arcs:
            src.append(s)
            dst.append(end if d is None else d)
            lab.append(label)
            starts.append(t)
            durs.append(du)
            origin.append(tag)
        cur = end
    final = np.zeros(num_states, dtype=bool)
    final[cur] = True
    src_a = np.asarray(src, dtype=np.int64)
    dst_a = np.asarray(dst, dtype=np.int64)
    # States are numbered topologically already: a slot's start < its chain states < its end.
    perm = np.lexsort((dst_a, src_a))
    return HypGraph(num_states=num_states, src=src_a[perm], dst=dst_a[perm], label=np.asarray(lab, dtype=np.int64)[perm],
                    labels=tuple(table.labels), shown=tuple(table.shown), kind=np.asarray(table.kinds, dtype=np.int8),
                    final=final, start=np.asarray(starts, dtype=np.float64)[perm],
                    duration=np.asarray(durs, dtype=np.float64)[perm], rank=perm,
                    origin=np.asarray(origin, dtype=np.int64)[perm])


def hyp_graph_from_network(net, *, case_sensitive: bool = False) -> HypGraph:
    """A scorer :class:`~lattice_tools.scoring.network.WordNetwork` (e.g. the hypothesis network of
    a run of alt-CTM items, :func:`lattice_tools.scoring.network.from_ctm_items`) as a hypothesis
    network; ``None`` words are the NULL word ``@``."""
    table = _LabelTable()
    lab = []
    for w in net.words:
        key = ("@",) if (w is None or w == "@") else ("w", fold_word(str(w), case_sensitive))
        lab.append(table.intern(key, None if key[0] == "@" else str(w)))
    src = np.asarray(net.src, dtype=np.int64)
    dst = np.asarray(net.dst, dtype=np.int64)
    perm = np.lexsort((np.arange(len(src)), src))
    final = np.zeros(int(net.num_states), dtype=bool)
    final[-1] = True
    start = np.asarray(getattr(net, "start", np.full(len(src), np.nan)), dtype=np.float64)
    dur = np.asarray(getattr(net, "duration", np.full(len(src), np.nan)), dtype=np.float64)
    return HypGraph(num_states=int(net.num_states), src=src[perm], dst=dst[perm],
                    label=np.asarray(lab, dtype=np.int64)[perm], labels=tuple(table.labels),
                    shown=tuple(table.shown), kind=np.asarray(table.kinds, dtype=np.int8), final=final,
                    start=start[perm], duration=dur[perm], rank=perm)


def hyp_graph_from_words(words: Sequence[str], *, nonword: Callable[[str], bool] = is_nonword,
                         case_sensitive: bool = False) -> HypGraph:
    """A single word sequence as a (linear) hypothesis network."""
    from ..core.alternatives_network import Alternative, Alternatives, Slot  # lazy: see is_nonword

    alts = Alternatives(key="", slots=(Slot(0.0, 0.0, (Alternative(tuple(words)),)),), kind="1best")
    return hyp_graph_from_alternatives(alts, null_for_empty=False, nonword=nonword, case_sensitive=case_sensitive)
