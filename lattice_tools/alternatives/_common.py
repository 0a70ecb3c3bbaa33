"""Shared conventions of the alternatives algorithms (internal helper).

* **Silence and fillers are epsilons** of the word language: alternatives are sequences of real
  words.  :func:`is_silence` decides which lattice words those are (overridable everywhere with
  ``silence_words=``).
* Costs are combined with the usual scales (``Lattice.arc_costs``).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..core.lattice import Lattice

#: Words that are never part of an alternative (HTK/pocketsphinx/Kaldi/k2 conventions).
DEFAULT_SILENCE_WORDS = frozenset({
    "<eps>", "<epsilon>", "!NULL", "<s>", "</s>", "!SENT_START", "!SENT_END", "<sil>", "<SIL>", "sil", "SIL",
    "!SIL", "[SIL]", "<silence>", "SIL_B", "<noise>", "<NOISE>", "<spoken_noise>", "<SPOKEN_NOISE>", "#0",
})


def is_silence(word: str, silence_words: Iterable[str] | None = None) -> bool:
    """True for epsilon, silence, sentence markers and fillers.

    Default rule (``silence_words=None``): a word of :data:`DEFAULT_SILENCE_WORDS`, a bracketed
    filler ``[NOISE]``, ``++LAUGH++``, or a disambiguation symbol ``#n``.  ``<unk>`` is a word.
    With an explicit ``silence_words`` set, exactly those words (plus ``<eps>``) are silence.
    """
    if silence_words is not None:
        return word in silence_words or word == "<eps>"
    if word in DEFAULT_SILENCE_WORDS:
        return True
    if len(word) > 1 and word[0] == "[" and word[-1] == "]":
        return True
    if len(word) > 4 and word.startswith("++") and word.endswith("++"):
        return True
    return len(word) > 1 and word[0] == "#" and word[1:].isdigit()


def word_labels(lat: Lattice, silence_words: Iterable[str] | None = None) -> np.ndarray:
    """Per-arc word label with every silence/filler word mapped to 0 (epsilon)."""
    if silence_words is not None:
        silence_words = frozenset(silence_words)
    ids = dense_codes(lat.word)[0]
    sil = [int(i) for i in ids if i != 0 and is_silence(lat.symbols.word(int(i)) if int(i) in lat.symbols
                                                         else str(int(i)), silence_words)]
    labels = lat.word.astype(np.int64)
    if sil:
        labels = np.where(np.isin(labels, sil), 0, labels)
    return labels


def prepare(lat: Lattice, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
            silence_words: Iterable[str] | None = None):
    """(labels, arc costs, final costs): silence mapped to epsilon, costs scaled, and the word
    penalty added to real-word arcs only."""
    labels = word_labels(lat, silence_words)
    cost = lat.arc_costs(acoustic_scale, lm_scale, 0.0)
    if word_penalty:
        cost = cost + word_penalty * (labels > 0)
    return labels, cost, lat.final_costs(acoustic_scale, lm_scale)


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for non-negative integers, with a counting table
    instead of a sort when their range is small (word ids)."""
    if len(values) and int(values.max()) < 4 * len(values) + (1 << 16) and int(values.min()) >= 0:
        present = np.zeros(int(values.max()) + 1, dtype=bool)
        present[values] = True
        uniq = np.flatnonzero(present)
        code = np.cumsum(present) - 1
        return uniq, code[values]
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, inv.reshape(-1)


def adjacency(src, dst, labels, cost, arc_ids=None):
    """Per-state Python adjacency lists ``(out_eps, out_word)``
    dicts keyed by source state (arc ids default to the arc index)."""
    out_eps: dict = {}
    out_word: dict = {}
    n = len(src)
    ids = range(n) if arc_ids is None else np.asarray(arc_ids).tolist()
    for s, d, w, c, a in zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), np.asarray(labels).tolist(),
                             np.asarray(cost).tolist(), ids, strict=False):
        if w == 0:
            out_eps.setdefault(s, []).append((d, c, a))
        else:
            out_word.setdefault(s, []).append((w, d, c, a))
    return out_eps, out_word


def seconds(frames: int, frame_shift: float) -> float:
    return math.nan if frames < 0 else round(frames * frame_shift, 6)
