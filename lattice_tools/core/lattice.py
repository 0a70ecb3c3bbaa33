"""The word-lattice hub type.

Every reader produces a :class:`Lattice` and every algorithm consumes one (and returns a new one:
nothing here mutates).  The representation is a set of parallel numpy arrays, one entry per arc,
so that algorithms can be vectorized over arcs.

Conventions
-----------
* **States** are numbered ``0 .. num_states-1`` in topological order: every arc has
  ``src < dst``.  This both proves the lattice acyclic and lets forward/backward passes run as
  one sweep over arcs sorted by ``src`` (arcs are stored sorted by ``(src, dst)``, stable).
  The start state is ``0``.
* **Weights are costs** (negative natural-log probabilities), kept separately as
  ``graph_cost`` (LM + pronunciation + transition; Kaldi's "graph cost", k2's ``-lm_scores``,
  HTK ``-l``) and ``acoustic_cost`` (Kaldi's acoustic cost, HTK ``-a``).  The combined cost of an
  arc under scales is ``lm_scale * graph_cost + acoustic_scale * acoustic_cost +
  word_penalty * [word != 0]`` (see :meth:`Lattice.arc_costs`).
* **Final weights** are per-state ``final_graph_cost`` / ``final_acoustic_cost``; ``inf`` means
  the state is not final.
* **Times** are integer frames, ``t0`` (inclusive) to ``t1`` (exclusive); seconds are
  ``frames * frame_shift``.  ``-1`` means unknown (OpenFst text without times).  In a word-aligned
  lattice an arc spans its whole word; in a frame-level lattice (k2, Kaldi raw) an emitting arc
  spans one frame and an input-epsilon arc spans zero frames.
* **Labels**: ``word`` is the output (word) id, 0 = epsilon; ``ilabel`` is the input label
  (token or transition id for frame-level lattices; equal to ``word`` for word lattices).
  ``symbols`` maps word ids to strings (Kaldi/k2 ``words.txt``).
* ``word_aligned`` says whether each arc with a word carries that whole word with its time span
  (SLF, Kaldi CompactLattice) -- as opposed to frame-level lattices, which need
  :func:`lattice_tools.alternatives.word_align` first.
* ``attrs`` holds extra per-arc numpy arrays that readers or converters want to keep
  (e.g. k2 ``tokens``; a pocketsphinx link posterior ``p``), each of length ``num_arcs``.
* **Trimmed.**  :meth:`Lattice.from_arcs`, which every reader builds its lattices with, keeps only the
  arcs on some path from the start to a final state (k2's pruned intersection leaves dead ends; a
  dead-end word would get a whole MBR bin); ``trimmed_arcs`` counts what it dropped.  The plain
  constructor does not trim: :func:`connect` does, and the MBR/sausage engine calls it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._ext import native
from ._budget import check_allocation
from .errors import LatticeError, MissingDependencyError
from .symbols import EPSILON, SymbolTable

INF = float("inf")

_ARC_ARRAYS = ("src", "dst", "word", "ilabel", "t0", "t1", "graph_cost", "acoustic_cost")
#: What :meth:`Lattice.from_arcs` allocates per arc at its peak (renumbering, trimming, the arrays kept), with
#: room to spare: the size the memory budget is asked for before a lattice is built.
_BUILD_BYTES_PER_ARC = 128


class _FrozenAttrs(dict):
    """A lattice's ``attrs``: a dict that refuses changes after construction (an array of another length
    added later would break every arc-indexed use), and still pickles (to worker processes)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("Lattice.attrs is read-only: build a new lattice (Lattice.replace(attrs=...)) instead")

    __setitem__ = __delitem__ = __ior__ = update = pop = popitem = clear = setdefault = _refuse

    def __reduce__(self):
        return (_FrozenAttrs, (dict(self),))


@dataclass(frozen=True, eq=False)
class Lattice:
    """An immutable, acyclic, weighted word lattice (see the module docstring for conventions).

    Build one with :meth:`Lattice.from_arcs` (which sorts states topologically and validates, and never
    shares or freezes the caller's arrays); the plain constructor expects arrays that already follow the
    conventions and validates them.

    What the plain constructor does to the arrays it is given (readers and algorithms build their arrays for
    the lattice, so it adopts them instead of copying):

    * An arc or state array that already has its stored dtype (int32 ids and frames, float64 costs) and is
      C-contiguous is *kept, not copied, and made read-only in place*: ``lat.src is src`` and the caller's
      ``src`` refuses writes afterwards (``ValueError``).  Like k2's ``Fsa`` attributes ("we save a reference
      to value; if you need to change value afterwards, please consider passing a copy of it"), pass a copy
      (``src.copy()``) to keep a writable array.
    * A writable view (a slice of a bigger array, a buffer of a ``bytearray``...) is copied: writing through
      its base would otherwise change the lattice after it was validated.
    * An array of another dtype or layout is converted into a new array; the caller's stays as it was.
    * ``attrs`` arrays are always copied (read-only copies); ``attrs`` itself refuses changes
      (``TypeError``): a lattice's arrays cannot change after :meth:`validate` checked them.
    """

    num_states: int
    src: np.ndarray
    dst: np.ndarray
    word: np.ndarray
    ilabel: np.ndarray
    t0: np.ndarray
    t1: np.ndarray
    graph_cost: np.ndarray
    acoustic_cost: np.ndarray
    final_graph_cost: np.ndarray
    final_acoustic_cost: np.ndarray
    symbols: SymbolTable
    frame_shift: float = 0.01
    key: str = ""
    word_aligned: bool = True
    attrs: Mapping[str, np.ndarray] = field(default_factory=dict)
    #: Arcs dropped when the lattice was built because they lie on no path from the start to a final state
    #: (:meth:`from_arcs`, :func:`connect`); ``lattice-tools info`` shows it.
    trimmed_arcs: int = 0

    def __post_init__(self):
        self._adopt_arrays(copy_attrs=True)

    @classmethod
    def _from_fresh_arrays(cls, **fields) -> Lattice:
        """The constructor for arrays just built for the lattice and held by nobody else (from_arcs):
        the same conversions and checks, without copying ``attrs`` again (on the big Kaldi archive's
        138k arcs: 7.7 MB less to copy)."""
        lat = object.__new__(cls)
        for f in dataclasses.fields(cls):
            object.__setattr__(lat, f.name, fields[f.name])
        lat._adopt_arrays(copy_attrs=False)
        return lat

    def _adopt_arrays(self, copy_attrs: bool) -> None:
        """Arrays in the stored dtypes, read-only; ``attrs`` copied unless they are the lattice's own."""
        conv = {"src": np.int32, "dst": np.int32, "word": np.int32, "ilabel": np.int32, "t0": np.int32,
                "t1": np.int32, "graph_cost": np.float64, "acoustic_cost": np.float64,
                "final_graph_cost": np.float64, "final_acoustic_cost": np.float64}
        for name, dtype in conv.items():
            arr = np.ascontiguousarray(getattr(self, name), dtype=dtype)
            if arr.flags.writeable and not arr.flags.owndata:
                arr = arr.copy()  # a writable view: its base could still change the lattice's arcs
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        attrs = {}
        for name, arr in dict(self.attrs).items():
            arr = np.array(arr, copy=True) if copy_attrs else arr
            arr.setflags(write=False)
            attrs[name] = arr
        object.__setattr__(self, "attrs", _FrozenAttrs(attrs))
        self.validate()

    # ------------------------------------------------------------------------------------------
    @classmethod
    def from_arcs(cls, *, src, dst, word, symbols: SymbolTable, final_graph_cost, final_acoustic_cost=None,
                  num_states: int | None = None, start: int = 0, ilabel=None, t0=None, t1=None,
                  graph_cost=None, acoustic_cost=None, frame_shift: float = 0.01, key: str = "",
                  word_aligned: bool = True, attrs: Mapping[str, ArrayLike] | None = None) -> Lattice:
        """Build a lattice from arcs in any state numbering.

        States are renumbered in topological order with ``start`` first.  The lattice is trimmed to its
        connected part: states not reachable from ``start``, and states from which no final state can be
        reached (dead ends, e.g. the beam-pruned partial paths k2's ``intersect_dense_pruned`` leaves),
        are dropped along with their arcs; :attr:`trimmed_arcs` counts the arcs dropped.  Every reader
        builds its lattices here, so no algorithm sees an arc that lies on no complete path (a dead-end
        word would otherwise take a share of MBR's alignment that no path supports).  A cycle among the
        reachable states raises :class:`LatticeError`, and so does a lattice without any complete path.
        Final costs are given per input state (``inf`` = not final).  :meth:`from_arcs_with_maps` builds
        the same lattice and also says where each input state and arc went.
        """
        return cls.from_arcs_with_maps(
            src=src, dst=dst, word=word, symbols=symbols, final_graph_cost=final_graph_cost,
            final_acoustic_cost=final_acoustic_cost, num_states=num_states, start=start, ilabel=ilabel, t0=t0, t1=t1,
            graph_cost=graph_cost, acoustic_cost=acoustic_cost, frame_shift=frame_shift, key=key,
            word_aligned=word_aligned, attrs=attrs)[0]

    @classmethod
    def from_arcs_with_maps(cls, *, src, dst, word, symbols: SymbolTable, final_graph_cost, final_acoustic_cost=None,
                            num_states: int | None = None, start: int = 0, ilabel=None, t0=None, t1=None,
                            graph_cost=None, acoustic_cost=None, frame_shift: float = 0.01, key: str = "",
                            word_aligned: bool = True, attrs: Mapping[str, ArrayLike] | None = None,
                            ) -> tuple[Lattice, np.ndarray, np.ndarray]:
        """:meth:`from_arcs`, with the maps from the input to the lattice: ``(lattice, state_map, arc_map)``,
        ``state_map`` the new id of each input state (-1 if dropped), ``arc_map`` the input index of each
        of the lattice's arcs (int64 arrays)."""
        (src, dst, word, ilabel, t0, t1, graph_cost, acoustic_cost, final_graph_cost, final_acoustic_cost, attrs,
         num_states) = _arc_arrays(src=src, dst=dst, word=word, final_graph_cost=final_graph_cost,
                                   final_acoustic_cost=final_acoustic_cost, num_states=num_states, start=start,
                                   ilabel=ilabel, t0=t0, t1=t1, graph_cost=graph_cost, acoustic_cost=acoustic_cost,
                                   key=key, attrs=attrs)
        n_arcs = len(src)
        # every reader builds its lattices here: under a memory budget, one that cannot fit is refused before
        # its arrays are built (measured: ~110 bytes per arc at the peak of this method)
        check_allocation(_BUILD_BYTES_PER_ARC * n_arcs + 64 * num_states,
                         f"building the lattice {key!r} ({n_arcs:,} arcs)" if key else
                         f"building a lattice of {n_arcs:,} arcs", key=key or None)
        order = topological_order(num_states, src, dst, start, key=key)
        live = coreachable_mask(num_states, src, dst, np.isfinite(final_graph_cost))
        if not live[start]:
            raise LatticeError("lattice has no final state" if not np.isfinite(final_graph_cost).any() else
                               "lattice has no complete path from the start to a final state", key=key or None)
        live_order = live[order]
        if not live_order.all():
            order = order[live_order]
        state_map = np.full(num_states, -1, dtype=np.int64)
        state_map[order] = np.arange(len(order))
        arc_idx, new_src, new_dst = np.empty(n_arcs, np.int64), np.empty(n_arcs, np.int64), np.empty(n_arcs, np.int64)
        n_kept, unchanged = _order_kernel().arc_order(src, dst, state_map, arc_idx, new_src, new_dst)
        unchanged_numbering = (unchanged and len(order) == num_states
                               and bool(np.all(order == np.arange(num_states))))
        if unchanged_numbering:
            # already numbered and sorted as this would renumber and sort it (a lattice built here and
            # rebuilt): copies instead of gathers (the arrays may be the caller's; a lattice owns its arrays)
            def take(a):
                return a.copy()
        else:
            arc_idx, new_src, new_dst = arc_idx[:n_kept], new_src[:n_kept], new_dst[:n_kept]

            def take(a):  # (np.take: ~8x faster than a[arc_idx] on the 2-D attrs)
                return np.take(a, arc_idx, axis=0)
        lat = cls._from_fresh_arrays(
            num_states=len(order), src=new_src, dst=new_dst, word=take(word), ilabel=take(ilabel), t0=take(t0),
            t1=take(t1), graph_cost=take(graph_cost), acoustic_cost=take(acoustic_cost),
            final_graph_cost=final_graph_cost[order], final_acoustic_cost=final_acoustic_cost[order], symbols=symbols,
            frame_shift=frame_shift, key=key, word_aligned=word_aligned, attrs={k: take(v) for k, v in attrs.items()},
            trimmed_arcs=n_arcs - (n_arcs if unchanged_numbering else int(n_kept)))
        return lat, state_map, arc_idx

    def validate(self) -> None:
        """Check array shapes, the topological numbering, and finite, non-NaN weights."""
        key = self.key or None
        n = len(self.src)
        for name in _ARC_ARRAYS:
            if getattr(self, name).shape != (n,):
                raise LatticeError(f"arc array {name!r} has shape {getattr(self, name).shape}, expected ({n},)", key=key)
        for name, a in self.attrs.items():
            if np.ndim(a) == 0:
                raise LatticeError(f"arc attribute {name!r} is a scalar, expected {n} entries (one per arc)", key=key)
            if len(a) != n:
                raise LatticeError(f"arc attribute {name!r} has {len(a)} entries, expected {n}", key=key)
        if self.num_states < 1:
            raise LatticeError("lattice has no states", key=key)
        for name in ("final_graph_cost", "final_acoustic_cost"):
            if getattr(self, name).shape != (self.num_states,):
                raise LatticeError(f"{name} has shape {getattr(self, name).shape}, expected ({self.num_states},)", key=key)
        if n:
            if self.src.min() < 0 or self.dst.max() >= self.num_states:
                raise LatticeError("arc state id out of range", key=key)
            if np.any(self.src >= self.dst):
                bad = int(np.nonzero(self.src >= self.dst)[0][0])
                raise LatticeError(f"arc {bad} ({self.src[bad]}->{self.dst[bad]}) breaks topological order "
                                   "(self-loop or cycle); build with Lattice.from_arcs", key=key)
            if np.any(np.diff(self.src) < 0):
                raise LatticeError("arcs are not sorted by source state", key=key)
            for name in ("graph_cost", "acoustic_cost"):
                a = getattr(self, name)
                if not np.all(np.isfinite(a)):
                    bad = int(np.nonzero(~np.isfinite(a))[0][0])
                    raise LatticeError(f"arc {bad} has a non-finite {name} ({a[bad]})", key=key)
            if self.word.min() < 0:
                raise LatticeError("negative word id", key=key)
        for name in ("final_graph_cost", "final_acoustic_cost"):
            a = getattr(self, name)
            if np.any(np.isnan(a)) or np.any(a == -INF):
                raise LatticeError(f"{name} has NaN or -inf", key=key)
        if not np.any(np.isfinite(self.final_graph_cost)):
            raise LatticeError("lattice has no final state", key=key)
        if self.frame_shift <= 0:
            raise LatticeError(f"frame_shift must be positive, got {self.frame_shift}", key=key)
        if self.trimmed_arcs < 0:
            raise LatticeError(f"trimmed_arcs must be >= 0, got {self.trimmed_arcs}", key=key)

    # ------------------------------------------------------------------------------------------
    @property
    def num_arcs(self) -> int:
        return len(self.src)

    @property
    def start(self) -> int:
        return 0

    @property
    def is_final(self) -> np.ndarray:
        return np.isfinite(self.final_graph_cost)

    @property
    def final_states(self) -> np.ndarray:
        return np.nonzero(self.is_final)[0]

    @property
    def num_frames(self) -> int:
        """Largest end frame of any arc (0 if no times are known)."""
        return int(max(self.t1.max(initial=0), 0))

    @property
    def duration(self) -> float:
        return self.num_frames * self.frame_shift

    @property
    def has_times(self) -> bool:
        return bool(self.num_arcs == 0 or (self.t0.min() >= 0 and self.t1.min() >= 0))

    def words(self, arcs=None) -> list[str]:
        """The word strings of the given arcs (default: all), epsilon arcs skipped."""
        ids = self.word if arcs is None else self.word[np.asarray(arcs, dtype=np.int64)]
        return [self.symbols.word(i) for i in ids if i != 0]

    def arc_costs(self, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0) -> np.ndarray:
        """Combined cost of each arc: ``lm_scale*graph + acoustic_scale*acoustic + word_penalty*[word>0]``."""
        cost = lm_scale * self.graph_cost + acoustic_scale * self.acoustic_cost
        if word_penalty:
            cost = cost + word_penalty * (self.word > 0)
        return cost

    def final_costs(self, acoustic_scale: float = 1.0, lm_scale: float = 1.0) -> np.ndarray:
        """Combined final cost of each state (``inf`` where not final)."""
        with np.errstate(invalid="ignore"):
            cost = lm_scale * self.final_graph_cost + acoustic_scale * self.final_acoustic_cost
        return np.where(self.is_final, cost, INF)

    def replace(self, **changes) -> Lattice:
        """A copy with some fields replaced (validated again)."""
        return dataclasses.replace(self, **changes)

    def without_attrs(self, names: Iterable[str]) -> Lattice:
        """The same lattice without the ``attrs`` called ``names``, sharing its read-only arrays (nothing to
        validate again): what a job that reads none of them sends to its workers (a Kaldi lattice's
        transition-id strings are more than half of its pickled bytes)."""
        drop = [name for name in names if name in self.attrs]
        if not drop:
            return self
        lat = object.__new__(type(self))
        lat.__dict__.update(self.__dict__)
        object.__setattr__(lat, "attrs", _FrozenAttrs({k: v for k, v in self.attrs.items() if k not in drop}))
        return lat

    def with_key(self, key: str) -> Lattice:
        return self.replace(key=key)

    def with_symbols(self, symbols: SymbolTable) -> Lattice:
        return self.replace(symbols=symbols)

    def subset_arcs(self, keep: np.ndarray) -> Lattice:
        """A copy with only the arcs where ``keep`` is true, then trimmed to states that are both
        reachable from the start and co-reachable to a final state (see :func:`connect`)."""
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (self.num_arcs,):
            raise LatticeError(f"keep mask has shape {keep.shape}, expected ({self.num_arcs},)", key=self.key or None)
        sub = self._select(np.nonzero(keep)[0])
        return connect(sub)

    def _select(self, arc_idx: np.ndarray) -> Lattice:
        arc_idx = np.asarray(arc_idx, dtype=np.int64)
        return Lattice(num_states=self.num_states, src=self.src[arc_idx], dst=self.dst[arc_idx],
                       word=self.word[arc_idx], ilabel=self.ilabel[arc_idx], t0=self.t0[arc_idx],
                       t1=self.t1[arc_idx], graph_cost=self.graph_cost[arc_idx],
                       acoustic_cost=self.acoustic_cost[arc_idx], final_graph_cost=self.final_graph_cost,
                       final_acoustic_cost=self.final_acoustic_cost, symbols=self.symbols,
                       frame_shift=self.frame_shift, key=self.key, word_aligned=self.word_aligned,
                       attrs={k: v[arc_idx] for k, v in self.attrs.items()}, trimmed_arcs=self.trimmed_arcs)

    def out_arc_offsets(self) -> np.ndarray:
        """CSR offsets: arcs leaving state ``s`` are ``offsets[s]:offsets[s+1]``."""
        return np.searchsorted(self.src, np.arange(self.num_states + 1)).astype(np.int64)

    def equals(self, other: Lattice, atol: float = 0.0) -> bool:
        """Structural equality (same numbering, arcs, labels, times; weights within ``atol``)."""
        if not isinstance(other, Lattice) or self.num_states != other.num_states or self.num_arcs != other.num_arcs:
            return False
        for name in ("src", "dst", "word", "ilabel", "t0", "t1"):
            if not np.array_equal(getattr(self, name), getattr(other, name)):
                return False
        for name in ("graph_cost", "acoustic_cost", "final_graph_cost", "final_acoustic_cost"):
            a, b = getattr(self, name), getattr(other, name)
            if not np.array_equal(np.isinf(a), np.isinf(b)):
                return False
            fin = np.isfinite(a)
            if not np.allclose(a[fin], b[fin], atol=atol, rtol=0):
                return False
        return self.symbols == other.symbols and self.frame_shift == other.frame_shift

    def to_networkx(self):
        """The lattice as a ``networkx.MultiDiGraph``, for graph analysis and drawing (lossless).

        networkx is what researchers reach for to analyse and draw graphs (shortest paths, dominators,
        layouts, ``networkx.nx_pydot.write_dot``); lattice-tools' own algorithms run on the numpy arrays
        and never need it.  Layout of the graph:

        * nodes are the state ids (``0`` = start, topological order); final states carry
          ``final_graph_cost`` and ``final_acoustic_cost``;
        * edge keys are arc indices (parallel arcs survive); edge attributes ``word_id``, ``word`` (the
          string, when the symbol table has it), ``ilabel``, ``t0``, ``t1``, ``graph_cost``, ``acoustic_cost`` and every array of
          :attr:`attrs`;
        * graph attributes ``key``, ``frame_shift``, ``word_aligned``, ``start``, ``symbols`` and
          ``attr_layouts`` (dtype and shape of each :attr:`attrs` array, for the way back).

        ``Lattice.from_networkx(lat.to_networkx()).equals(lat)`` holds exactly.  O(states + arcs) Python
        objects: meant for analysing single lattices, not for per-utterance pipelines over archives.
        """
        return _to_networkx(self)

    @classmethod
    def from_networkx(cls, graph, *, symbols: SymbolTable | None = None, key: str | None = None) -> Lattice:
        """A lattice from a networkx ``DiGraph``/``MultiDiGraph`` laid out as :meth:`to_networkx` writes it.

        A graph built by hand needs only ``word`` (or ``word_id``) on its edges and ``final_graph_cost`` on
        at least one node; missing costs are 0 and missing times unknown (-1).  ``symbols`` defaults to
        the graph's ``symbols`` attribute, else a table of the edges' words in edge order.  States are
        renumbered topologically from ``graph.graph["start"]`` (default: node ``0``); a cycle, or an edge
        without a word, raises :class:`~lattice_tools.core.errors.LatticeError`.
        """
        return _from_networkx(graph, symbols, key)

    def __repr__(self) -> str:
        return (f"Lattice(key={self.key!r}, states={self.num_states}, arcs={self.num_arcs}, "
                f"frames={self.num_frames}, word_aligned={self.word_aligned})")


def _arc_arrays(*, src, dst, word, final_graph_cost, final_acoustic_cost=None, num_states: int | None = None,
                start: int = 0, ilabel=None, t0=None, t1=None, graph_cost=None, acoustic_cost=None, key: str = "",
                attrs: Mapping[str, ArrayLike] | None = None) -> tuple:
    """:meth:`Lattice.from_arcs`' arguments as the arrays it builds from, defaults filled in and checked
    (lengths, state ids, start state; :class:`LatticeError` naming ``key``): ``(src, dst, word, ilabel, t0, t1,
    graph_cost, acoustic_cost, final_graph_cost, final_acoustic_cost, attrs, num_states)``."""
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    n_arcs = len(src)
    final_graph_cost = np.asarray(final_graph_cost, dtype=np.float64)
    if num_states is None:
        num_states = len(final_graph_cost)
    if len(final_graph_cost) != num_states:
        raise LatticeError(f"final_graph_cost has {len(final_graph_cost)} entries, expected {num_states}")
    final_acoustic_cost = (np.zeros(num_states) if final_acoustic_cost is None
                           else np.asarray(final_acoustic_cost, dtype=np.float64))
    final_acoustic_cost = np.where(np.isinf(final_graph_cost), INF, final_acoustic_cost)

    def arr(x, default, dtype):
        return np.full(n_arcs, default, dtype=dtype) if x is None else np.asarray(x, dtype=dtype)

    word = arr(word, 0, np.int64)
    ilabel = word.copy() if ilabel is None else np.asarray(ilabel, dtype=np.int64)
    t0 = arr(t0, -1, np.int64)
    t1 = arr(t1, -1, np.int64)
    graph_cost = arr(graph_cost, 0.0, np.float64)
    acoustic_cost = arr(acoustic_cost, 0.0, np.float64)
    attrs = {k: np.asarray(v) for k, v in (attrs or {}).items()}
    for name, a in [("dst", dst), ("word", word), ("ilabel", ilabel), ("t0", t0), ("t1", t1),
                    ("graph_cost", graph_cost), ("acoustic_cost", acoustic_cost), *attrs.items()]:
        if len(a) != n_arcs:
            raise LatticeError(f"arc array {name!r} has {len(a)} entries, expected {n_arcs}", key=key or None)
    if num_states == 0:
        raise LatticeError("lattice has no states", key=key or None)
    if n_arcs and (src.min() < 0 or dst.min() < 0 or src.max() >= num_states or dst.max() >= num_states):
        raise LatticeError(f"arc state id outside 0..{num_states - 1}", key=key or None)
    if not 0 <= start < num_states:
        raise LatticeError(f"start state {start} outside 0..{num_states - 1}", key=key or None)
    return (src, dst, word, ilabel, t0, t1, graph_cost, acoustic_cost, final_graph_cost, final_acoustic_cost, attrs,
            num_states)


def _order_kernel():
    return native("lattice_order")


def reachable_mask(num_states: int, src: np.ndarray, dst: np.ndarray, start: int) -> np.ndarray:
    """Boolean mask of the states reachable from ``start``. O(states + arcs), in C
    (``lattice_tools/_ext/lattice_order.c``)."""
    mask = np.empty(num_states, dtype=bool)
    _order_kernel().reachable(start, _int64(src), _int64(dst), mask)
    return mask


def topological_order(num_states: int, src: np.ndarray, dst: np.ndarray, start: int = 0, key: str = "") -> np.ndarray:
    """States reachable from ``start`` in topological order (Kahn's algorithm; start first).

    The order is Kahn's with a LIFO stack, the heads of a state's arcs pushed in arc order (it numbers
    every lattice, so it shows in outputs); in C (``lattice_tools/_ext/lattice_order.c``).
    Raises :class:`LatticeError` naming a state on a cycle if the reachable part is cyclic.
    """
    order = np.empty(num_states, dtype=np.int64)
    status, value = _order_kernel().topological_order(start, _int64(src), _int64(dst), order)
    if status == 1:
        raise LatticeError(f"the start state {value} is on a cycle", key=key or None)
    if status == 2:
        raise LatticeError(f"lattice has a cycle (through state {value}); lattices must be acyclic", key=key or None)
    return order[:value]


def _int64(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int64)


def coreachable_mask(num_states: int, src: np.ndarray, dst: np.ndarray, is_final: np.ndarray) -> np.ndarray:
    """Boolean mask of the states from which a final state (``is_final``) can be reached: the states
    reachable from a virtual state ``num_states`` along the reversed arcs plus one arc from it to every
    final state. O(states + arcs), in C (``lattice_tools/_ext/lattice_order.c``)."""
    finals = np.flatnonzero(is_final).astype(np.int64)
    rsrc = np.concatenate([_int64(dst), np.full(len(finals), num_states, np.int64)])
    rdst = np.concatenate([_int64(src), finals])
    mask = np.empty(num_states + 1, dtype=bool)
    _order_kernel().reachable(num_states, rsrc, rdst, mask)
    return mask[:num_states]


def connect(lat: Lattice) -> Lattice:
    """Keep only states that are reachable from the start and can reach a final state (numbering order
    kept); :attr:`Lattice.trimmed_arcs` grows by the arcs dropped.  Raises :class:`LatticeError` when
    no path leads from the start to a final state.  :func:`connect_with_maps` also says where each state
    and arc went."""
    return connect_with_maps(lat)[0]


def connect_with_maps(lat: Lattice) -> tuple[Lattice, np.ndarray, np.ndarray]:
    """:func:`connect`, with its maps: ``(lattice, state_map, arc_idx)``, ``state_map`` the new id of each
    state (-1 if dropped), ``arc_idx`` the index in ``lat`` of each kept arc (int64 arrays)."""
    src, dst = lat.src, lat.dst
    live = reachable_mask(lat.num_states, src, dst, 0) & coreachable_mask(lat.num_states, src, dst, lat.is_final)
    if not live[0]:
        raise LatticeError("lattice has no complete path from the start to a final state", key=lat.key or None)
    keep_arc = live[src] & live[dst]
    new_id = np.where(live, np.cumsum(live) - 1, -1)
    if live.all() and bool(keep_arc.all()):
        return lat, new_id, np.arange(lat.num_arcs, dtype=np.int64)
    idx = np.nonzero(keep_arc)[0]
    out = Lattice(num_states=int(live.sum()), src=new_id[src[idx]], dst=new_id[dst[idx]], word=lat.word[idx],
                  ilabel=lat.ilabel[idx], t0=lat.t0[idx], t1=lat.t1[idx], graph_cost=lat.graph_cost[idx],
                  acoustic_cost=lat.acoustic_cost[idx], final_graph_cost=lat.final_graph_cost[live],
                  final_acoustic_cost=lat.final_acoustic_cost[live], symbols=lat.symbols,
                  frame_shift=lat.frame_shift, key=lat.key, word_aligned=lat.word_aligned,
                  attrs={k: v[idx] for k, v in lat.attrs.items()},
                  trimmed_arcs=lat.trimmed_arcs + lat.num_arcs - len(idx))
    return out, new_id, idx


# -- networkx conversion (Lattice.to_networkx / Lattice.from_networkx) ---------------------------------
_NX_ARC_FIELDS = ("ilabel", "t0", "t1", "graph_cost", "acoustic_cost")


def _networkx():
    try:
        import networkx
    except ImportError as exc:  # it is a declared dependency; a broken environment still gets a clear message
        raise MissingDependencyError(f"Lattice.to_networkx/from_networkx need networkx (pip install networkx) ({exc})") from None
    return networkx


def _to_networkx(lat: Lattice):
    """See :meth:`Lattice.to_networkx`."""
    nx = _networkx()
    graph = nx.MultiDiGraph(key=lat.key, frame_shift=lat.frame_shift, word_aligned=lat.word_aligned,
                            start=lat.start, symbols=lat.symbols)
    for state in range(lat.num_states):
        if lat.is_final[state]:
            graph.add_node(state, final_graph_cost=float(lat.final_graph_cost[state]),
                           final_acoustic_cost=float(lat.final_acoustic_cost[state]))
        else:
            graph.add_node(state)
    columns = {name: getattr(lat, name).tolist() for name in ("src", "dst", "word", *_NX_ARC_FIELDS)}
    # numeric attrs become plain Python values; object arrays (e.g. Kaldi transition-id strings) keep their items
    attrs = {name: list(arr) if arr.dtype == object else arr.tolist() for name, arr in lat.attrs.items()}
    graph.graph["attr_layouts"] = {name: (arr.dtype.str, arr.shape[1:]) for name, arr in lat.attrs.items()}
    for arc in range(lat.num_arcs):
        word_id = columns["word"][arc]
        edge = {"word_id": word_id}
        if word_id in lat.symbols:  # a lattice read without its word table has bare ids only
            edge["word"] = lat.symbols.word(word_id) if word_id else EPSILON
        edge.update((name, columns[name][arc]) for name in _NX_ARC_FIELDS)
        edge.update((name, values[arc]) for name, values in attrs.items())
        graph.add_edge(columns["src"][arc], columns["dst"][arc], key=arc, **edge)
    return graph


def _attr_column(values: list, layout: tuple | None) -> np.ndarray:
    """One ``Lattice.attrs`` array from per-edge values; ``layout`` (dtype, trailing shape) as
    :meth:`Lattice.to_networkx` records it, so that the round trip keeps dtypes and object arrays."""
    if layout is not None and np.dtype(layout[0]) != object:
        return np.array(values, dtype=np.dtype(layout[0])).reshape(len(values), *layout[1])
    if layout is None:
        try:
            column = np.array(values)
        except ValueError:  # ragged items
            column = None
        if column is not None and column.dtype != object:
            return column
    column = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        column[i] = value
    return column


def _from_networkx(graph, symbols: SymbolTable | None, key: str | None) -> Lattice:
    """See :meth:`Lattice.from_networkx`."""
    nodes = list(graph.nodes)
    index = {node: i for i, node in enumerate(nodes)}
    start = graph.graph.get("start", 0)
    if start not in index:
        raise LatticeError(f"the graph has no start node {start!r} (set graph.graph['start'])")
    if graph.is_multigraph():
        edges = list(graph.edges(keys=True, data=True))
        # to_networkx's keys are arc indices: visit arcs in that order (networkx groups them by head state)
        if sorted(k for _, _, k, _ in edges if isinstance(k, int)) == list(range(len(edges))):
            edges.sort(key=lambda edge: edge[2])
    else:
        edges = [(u, v, None, d) for u, v, d in graph.edges(data=True)]
    if isinstance(graph.graph.get("symbols"), SymbolTable) and symbols is None:
        symbols = graph.graph["symbols"]
    if symbols is None:
        symbols = SymbolTable.from_words(d["word"] for *_, d in edges if "word" in d and d["word"] != EPSILON)
    word_ids = []
    for u, v, _, data in edges:
        if "word_id" in data:
            word_ids.append(int(data["word_id"]))
        elif "word" in data:
            word_ids.append(0 if data["word"] == EPSILON else symbols.id(data["word"]))
        else:
            raise LatticeError(f"edge {u!r} -> {v!r} has neither a 'word' nor a 'word_id' attribute")
    defaults = {"ilabel": None, "t0": -1, "t1": -1, "graph_cost": 0.0, "acoustic_cost": 0.0}
    arcs = {"word": np.array(word_ids, dtype=np.int64)}
    for name, default in defaults.items():
        fallback = word_ids if name == "ilabel" else [default] * len(edges)
        arcs[name] = np.array([d.get(name, fallback[i]) for i, (*_, d) in enumerate(edges)])
    extra_names = sorted({name for *_, d in edges for name in d} - {"word", "word_id", *defaults})
    attrs = {}
    for name in extra_names:
        if not all(name in d for *_, d in edges):
            raise LatticeError(f"edge attribute {name!r} is set on some edges only; Lattice.attrs needs it on all")
        attrs[name] = _attr_column([d[name] for *_, d in edges], graph.graph.get("attr_layouts", {}).get(name))
    final_graph = np.full(len(nodes), INF)
    final_acoustic = np.full(len(nodes), INF)  # Lattice's convention: inf on non-final states too
    for node, data in graph.nodes(data=True):
        if "final_graph_cost" in data:
            final_graph[index[node]] = float(data["final_graph_cost"])
            final_acoustic[index[node]] = float(data.get("final_acoustic_cost", 0.0))
    src = np.array([index[u] for u, *_ in edges], dtype=np.int64)
    dst = np.array([index[v] for _, v, *_ in edges], dtype=np.int64)
    fields: dict[str, Any] = dict(symbols=symbols, final_graph_cost=final_graph, final_acoustic_cost=final_acoustic,
                  frame_shift=float(graph.graph.get("frame_shift", 0.01)),
                  key=key if key is not None else str(graph.graph.get("key", "")),
                  word_aligned=bool(graph.graph.get("word_aligned", True)), attrs=attrs, **arcs)
    in_lattice_layout = (index[start] == 0 and nodes == list(range(len(nodes)))
                         and bool(np.all(src < dst)) and bool(np.all(np.diff(src) >= 0)))
    if in_lattice_layout:
        # states already topological and arcs sorted by source (e.g. a graph to_networkx wrote): keep the
        # numbering and arc order exactly; from_arcs would re-sort arcs by (src, dst)
        return connect(Lattice(num_states=len(nodes), src=src, dst=dst, **fields))
    return Lattice.from_arcs(src=src, dst=dst, num_states=len(nodes), start=index[start], **fields)
