"""Kaldi N-best archives (``lattice-to-nbest``) as N-best lists.

``lattice-to-nbest --n=N`` writes a (Compact)Lattice archive in which each utterance ``utt`` becomes
the linear lattices ``utt-1``, ``utt-2``, ... (best first; an utterance with fewer distinct paths
has fewer).  Each is one path: its words (word ids, mapped through ``words.txt``), its graph and
acoustic costs and, when alignments are kept, each word's frames.  This reader reads the archive
with the project's Kaldi reader and groups the consecutive ``utt-<n>`` keys back into one list per
utterance, ranked by ``n``.

The score of a path is the cost ``graph + acoustic_scale * acoustic`` (Kaldi's convention: the
archive holds unscaled costs; ``lattice-to-nbest`` undoes its ``--acoustic-scale`` before writing),
so posteriors are ``softmax(-score_scale * cost)``.  Word times are the arcs' frames times the
frame shift (none when the archive has no alignments).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from ...core.alternatives_network import Alternatives
from ...core.errors import FormatError
from ...core.lattice import Lattice
from ...core.symbols import SymbolTable
from ..lattices.lattice_files import kaldi_specifier, read_lattices
from .nbest import NbestHypothesis, group_by_key, make_nbest

__all__ = ["read_kaldi_nbest"]

_NBEST_KEY = re.compile(r"^(.+)-([1-9][0-9]*)$")


def _linear_path(lat: Lattice, acoustic_scale: float, spec: str) -> NbestHypothesis:
    rank_key = _NBEST_KEY.match(lat.key)
    assert rank_key is not None
    state, arcs = 0, []
    offsets = lat.out_arc_offsets()
    while True:
        lo, hi = int(offsets[state]), int(offsets[state + 1])
        if hi - lo > 1:
            raise FormatError("not a linear lattice (a state with several arcs): not an N-best entry",
                              path=spec, key=lat.key)
        if hi == lo:
            break
        arcs.append(lo)
        state = int(lat.dst[lo])
    if not np.isfinite(lat.final_graph_cost[state]):
        raise FormatError("the path does not end in a final state", path=spec, key=lat.key)
    idx = np.asarray(arcs, dtype=np.int64)
    cost = (float(lat.graph_cost[idx].sum()) + float(lat.final_graph_cost[state])
            + acoustic_scale * (float(lat.acoustic_cost[idx].sum()) + float(lat.final_acoustic_cost[state])))
    words_idx = idx[lat.word[idx] != 0]
    words = tuple(lat.words(words_idx))
    starts: tuple[float, ...] = ()
    ends: tuple[float, ...] = ()
    if len(words_idx) and lat.has_times and bool(np.all(lat.t0[words_idx] >= 0)):
        starts = tuple(float(t) * lat.frame_shift for t in lat.t0[words_idx])
        ends = tuple(float(t) * lat.frame_shift for t in lat.t1[words_idx])
    return NbestHypothesis(words, cost, int(rank_key.group(2)), starts, ends, spec, None)


def read_kaldi_nbest(spec: str, symbols: SymbolTable | str | None = None, *, acoustic_scale: float = 1.0,
                     score_scale: float = 1.0, frame_shift: float = 0.01) -> Iterator[Alternatives]:
    """N-best lists of a ``lattice-to-nbest`` archive (module docstring), one per utterance.

    ``spec`` is a path or Kaldi rspecifier; ``symbols`` the ``words.txt`` (None: ids as words).
    Keys not of the form ``<utt>-<n>`` raise FormatError.
    """
    rspec = kaldi_specifier(spec)

    def items():
        for lat in read_lattices(rspec, "kaldi", symbols, frame_shift):
            match = _NBEST_KEY.match(lat.key)
            if match is None:
                raise FormatError("key is not <utterance>-<n> (is this the output of lattice-to-nbest?)",
                                  path=spec, key=lat.key)
            utt = match.group(1)
            yield utt, _linear_path(lat, acoustic_scale, spec)

    for utt, hyps in group_by_key(items(), spec):
        yield make_nbest(utt, hyps, "cost", score_scale=score_scale, source="kaldi")
