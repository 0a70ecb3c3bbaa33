"""The alternatives hub type: a linear word network of slots, each a set of weighted word sequences.

* N-best list (utterance level): one slot for the whole utterance, N alternatives.
* Sausage / confusion network (word level): one slot per word position, single-word alternatives
  (or the empty alternative ``()`` written ``@``).
* Phrase alternatives (phrase level): one slot per phrase, alternatives of any length.
* 1-best: every slot has exactly one alternative.

Times are in seconds, absolute within the recording (``file``/``channel``), i.e. already shifted
by the utterance ``offset``.  Alternatives within a slot are ordered most probable first.

A hub type, like :class:`~lattice_tools.core.lattice.Lattice`: it lives below both the algorithms that
make it (:mod:`lattice_tools.alternatives`) and the formats that read and write it
(:mod:`lattice_tools.io.transcripts.altctm`), so that io never imports the alternatives algorithms.
:mod:`lattice_tools.core.alternatives_network` re-exports it.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

#: The CTM channel every command writes unless told otherwise (docs/formats.md, "Channels").
DEFAULT_CHANNEL = "1"


@dataclass(frozen=True)
class Alternative:
    """One word sequence of a slot, with per-word times and its posterior in the slot.

    ``starts``/``durations`` are per word in seconds (NaN when unknown).  ``confidences`` are per
    word; writers use them as CTM confidences (see the alt-CTM docs for which posterior they are).
    """

    words: tuple[str, ...]
    starts: tuple[float, ...] = ()
    durations: tuple[float, ...] = ()
    posterior: float = 1.0
    confidences: tuple[float, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "words", tuple(self.words))
        n = len(self.words)
        for name in ("starts", "durations", "confidences"):
            v = tuple(map(float, getattr(self, name)))
            if not v:
                v = (math.nan,) * n if name != "confidences" else (self.posterior,) * n
            if len(v) != n:
                raise ValueError(f"Alternative.{name} has {len(v)} entries for {n} words")
            object.__setattr__(self, name, v)

    @property
    def is_empty(self) -> bool:
        return not self.words

    def shifted(self, seconds: float) -> Alternative:
        return replace(self, starts=tuple(s + seconds for s in self.starts))


@dataclass(frozen=True)
class Slot:
    """A time span and its alternatives (most probable first).  ``end`` is exclusive."""

    start: float
    end: float
    alternatives: tuple[Alternative, ...]

    def __post_init__(self):
        object.__setattr__(self, "alternatives", tuple(self.alternatives))
        if not self.alternatives:
            raise ValueError("a Slot needs at least one alternative")

    @property
    def depth(self) -> int:
        return len(self.alternatives)

    @property
    def best(self) -> Alternative:
        return self.alternatives[0]

    def truncated(self, n: int | None) -> Slot:
        """The ``n`` most probable alternatives (all when ``n`` is None)."""
        return self if n is None or n >= self.depth else replace(self, alternatives=self.alternatives[:n])


@dataclass(frozen=True)
class Alternatives:
    """The alternatives of one utterance (or one recording side), as ordered slots.

    ``kind`` is one of ``"nbest"``, ``"sausage"``, ``"phrase"``, ``"1best"``, or any label a
    reader found (``"ctm"``).  ``file``/``channel`` say where the words go in a CTM.
    """

    key: str
    slots: tuple[Slot, ...]
    kind: str = "phrase"
    file: str = ""
    channel: str = DEFAULT_CHANNEL
    meta: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "slots", tuple(self.slots))
        if not self.file:
            object.__setattr__(self, "file", self.key)

    def __iter__(self) -> Iterator[Slot]:
        return iter(self.slots)

    def __len__(self) -> int:
        return len(self.slots)

    def truncated(self, n: int | None) -> Alternatives:
        """Every slot cut to its ``n`` most probable alternatives."""
        return replace(self, slots=tuple(s.truncated(n) for s in self.slots))

    def one_best(self) -> list[str]:
        """The concatenation of every slot's most probable alternative."""
        return [w for s in self.slots for w in s.best.words]

    def with_location(self, file: str, channel: str, offset: float = 0.0) -> Alternatives:
        """A copy placed in recording ``file``/``channel`` with all times shifted by ``offset`` s."""
        slots = tuple(Slot(s.start + offset, s.end + offset, tuple(a.shifted(offset) for a in s.alternatives))
                      for s in self.slots)
        return replace(self, file=file, channel=channel, slots=slots)

    @property
    def depths(self) -> list[int]:
        return [s.depth for s in self.slots]


@dataclass(frozen=True, slots=True)
class DepthStatistics:
    """How deep the blocks (slots) of some alternatives are, as Faria et al. report it in Tables 3-6 of "Toward
    Zero Oracle Word Error Rate on the Switchboard Benchmark": the number of ``blocks``, the deepest (``n_max``,
    N_max) and the depth at the 90th percentile (``n_90``, N_.9) and at the median (``n_50``, N_.5); all 0
    without blocks."""

    blocks: int
    n_max: int
    n_90: int
    n_50: int

    def to_dict(self) -> dict:
        """``{"blocks", "N_max", "N_.9", "N_.5"}``: the fields of the statistics JSON and of the study's rows."""
        return {"blocks": self.blocks, "N_max": self.n_max, "N_.9": self.n_90, "N_.5": self.n_50}


def depth_statistics(depths: Sequence[int]) -> DepthStatistics:
    """The :class:`DepthStatistics` of the block depths ``depths``: nearest-rank percentiles over blocks."""
    if not depths:
        return DepthStatistics(0, 0, 0, 0)
    d = sorted(int(x) for x in depths)

    def nearest_rank(p: float) -> int:
        return d[max(0, math.ceil(p * len(d)) - 1)]

    return DepthStatistics(blocks=len(d), n_max=d[-1], n_90=nearest_rank(0.9), n_50=nearest_rank(0.5))
