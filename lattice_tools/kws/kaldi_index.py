"""A Kaldi KWS index searched like the toolkit's own term index, so that both go through one search
(:func:`lattice_tools.kws.search.search`: duplicate removal, normalization, decisions) and one writer.

Kaldi's index (``lattice-to-kws-index`` and ``kws-index-union`` output) names utterances by the integers of
its ``utter.map``, words by the integer ids of the lattices' ``words.txt``, and times in lattice frames from
the utterance's start; its scores are ``-log posterior``.  :class:`KaldiIndex` turns each hit into an
:class:`~lattice_tools.kws.index.IndexHit`: the utterance named by ``utter.map``, placed in its recording by
a Kaldi ``segments`` file (without one, an utterance is its own recording, offset 0), times
``offset + frame * frame_time`` seconds, score ``exp(-score)``.  Words are spelled by ``words.txt`` when
one is given, else as their decimal ids (which Kaldi's keyword FSTs also give).  The index holds every word
sequence of the lattices, so no term is too long for it.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence

from ..core._budget import DEFAULT_MAX_MEMORY, memory_budget
from ..core.errors import MismatchError
from ..io.keyword_search.kaldi_kws import KaldiKwsIndexFile
from .index import IndexHit


class KaldiIndex:
    """A Kaldi KWS index with the look-up of :class:`~lattice_tools.kws.store.TermIndex` that the search uses
    (``max_length``, ``in_vocabulary``, ``lookup``, ``close``).

    Args:
      path: the index archive (binary, KwsLexicographic arcs).
      utterance_ids: ``utter.map`` as read by :func:`~lattice_tools.io.keyword_search.kaldi_kws.read_utterance_map`.
      segments: ``{utterance: (file, channel, offset seconds)}`` (Kaldi ``segments``); None: an utterance is
        recording ``utterance``, channel ``channel``, offset 0.
      words: ``{word: id}`` (``words.txt``): words are spelled as it spells them; None: as decimal ids.
      frame_time: seconds per index frame (the lattices' frame shift x frame subsampling factor).
      max_memory: memory budget (bytes of resident memory; None: none) of reading the index into memory.
    Raises FormatError for a malformed archive, BudgetExceededError when it does not fit the budget."""

    max_length = sys.maxsize

    def __init__(self, path: str, utterance_ids: Mapping[str, int], *,
                 segments: Mapping[str, tuple[str, str, float]] | None = None, channel: str = "1",
                 words: Mapping[str, int] | None = None, frame_time: float = 0.01,
                 max_memory: int | None = DEFAULT_MAX_MEMORY):
        if not (frame_time > 0 and math.isfinite(frame_time)):
            raise ValueError(f"frame_time must be a finite number > 0, got {frame_time}")
        self.path = path
        with memory_budget(max_memory):
            self._index: KaldiKwsIndexFile | None = KaldiKwsIndexFile(path)
        self._utterances = {i: u for u, i in utterance_ids.items()}
        self._segments = segments
        self._channel = channel
        self._frame_time = frame_time
        if words is None:
            self._ids = None
            self._vocabulary = {str(i) for i in self._index.vocabulary}
        else:
            self._ids = dict(words)
            self._vocabulary = set(self._ids)

    def in_vocabulary(self, word: str) -> bool:
        return word in self._vocabulary

    def _word_id(self, word: str) -> int:
        return int(word) if self._ids is None else self._ids[word]

    def lookup(self, words: Sequence[str]) -> list[IndexHit]:
        """Every hit of the word sequence ``words`` (in-vocabulary words), placed in its recording."""
        term = tuple(words)
        out = []
        if self._index is None:
            raise ValueError(f"{self.path}: the index is closed")
        for utt_id, start, end, score in self._index.term_hits([self._word_id(w) for w in term]):
            utt = self._utterances.get(utt_id)
            if utt is None:
                raise MismatchError(f"{self.path}: utterance integer {utt_id} of the index is not in the utterance "
                                    "map (give the utter.map the index was built with)", key=str(utt_id))
            if self._segments is None:
                file, channel, offset = utt, self._channel, 0.0
            else:
                place = self._segments.get(utt)
                if place is None:
                    raise MismatchError(f"{self.path}: utterance {utt!r} of the index is not in the segments",
                                        key=utt)
                file, channel, offset = place
            out.append(IndexHit(term, utt, file, channel, offset + start * self._frame_time,
                                (end - start) * self._frame_time, math.exp(-score)))
        return out

    def close(self) -> None:
        self._index = None


__all__ = ["KaldiIndex"]
