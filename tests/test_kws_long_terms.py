"""Terms longer than the index's max_length: the one-term search of a lattice equals the index built
with max_length = the term's length, and brute-force path enumeration."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from _alt_helpers import lattice_strategy
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kws_index import brute_force_hits

from lattice_tools.kws.index import index_lattice, lattice_term_hits

LATS = Path(__file__).parent / "data" / "kaldi" / "lats"


def _by_place(hits):
    return {(h.tbeg, h.dur): h.score for h in hits}


def _assert_term_search_equals_index(lat, length, max_silence, min_posterior=0.0, max_terms=None):
    full = defaultdict(list)
    for h in index_lattice(lat, max_length=length, max_silence=max_silence, min_posterior=min_posterior):
        if len(h.words) == length:
            full[h.words].append(h)
    for words, hits in list(full.items())[:max_terms]:
        got = lattice_term_hits(lat, words, max_silence=max_silence, min_posterior=min_posterior)
        assert all(h.words == words and h.utterance == lat.key for h in got)
        assert _by_place(got).keys() == _by_place(hits).keys(), words
        assert _by_place(got) == pytest.approx(_by_place(hits), rel=1e-12, abs=1e-300), words
    return len(list(full)[:max_terms])


@settings(max_examples=80, deadline=None)
@given(lattice_strategy(max_states=8, max_arcs=16), st.integers(1, 5), st.sampled_from([None, 0.03, 0.1]))
def test_term_search_equals_brute_force(lat, length, max_silence):
    ref = defaultdict(list)
    for key, (p, b, e) in brute_force_hits(lat, length, max_silence).items():
        if len(key) == length:
            ref[tuple(w for w, _ in key)].append((round(min(b, e), 6), round(max(b, e), 6), p))
    for words, expected in ref.items():
        got = sorted((h.tbeg, round(h.tbeg + h.dur, 6), h.score)
                     for h in lattice_term_hits(lat, words, max_silence=max_silence))
        expected.sort()
        assert [g[:2] for g in got] == [x[:2] for x in expected], words
        assert [g[2] for g in got] == pytest.approx([x[2] for x in expected], rel=1e-9, abs=1e-12), words
    # a sequence the lattice does not read has no hits (a word repeated past its count on any path)
    if ref:
        words = next(iter(ref))
        assert lattice_term_hits(lat, words + ("no-such-word",)) == []


@settings(max_examples=40, deadline=None)
@given(lattice_strategy(max_states=8, max_arcs=16), st.integers(1, 5), st.sampled_from([None, 0.05]),
       st.sampled_from([0.0, 0.01, 0.2]))
def test_term_search_equals_index_of_that_length(lat, length, max_silence, min_posterior):
    _assert_term_search_equals_index(lat, length, max_silence, min_posterior)


def test_term_search_equals_index_on_bundled_lattices():
    """4- and 5-word sequences of real lattices (Kaldi archive of the bundled lattices; 25 per
    lattice and length: each term search recomputes the lattice's network)."""
    from lattice_tools.io import read_lattices

    lats = list(read_lattices(f"ark,t:{LATS / 'bundled.ark.gz'}", format="kaldi",
                              symbols=str(LATS / "bundled.words.txt")))
    checked = 0
    for lat in lats[:2]:
        for length in (4, 5):
            checked += _assert_term_search_equals_index(lat, length, 0.5, max_terms=25)
    assert checked == 100
