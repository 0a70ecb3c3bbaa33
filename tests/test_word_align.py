"""Word alignment of frame-level lattices: exact weighted word language, icefall times."""
from __future__ import annotations

import json

import pytest
from _alt_helpers import K2, k2_frame_lattices, lattice_strategy, ps_lattice
from hypothesis import given, settings

from lattice_tools.alternatives.nbest_lists import nbest_sequences
from lattice_tools.alternatives.word_alignment import word_align


def _language(lat):
    res, total, _ = nbest_sequences(lat, None, silence_words=set())
    return {r.labels: r.cost for r in res}, total


@settings(max_examples=150, deadline=None)
@given(lattice_strategy())
def test_random_frame_lattice_language_preserved(lat):
    frame = lat.replace(word_aligned=False)
    wa = word_align(frame)
    assert wa.word_aligned
    a, ta = _language(frame)
    b, tb = _language(wa)
    assert set(a) == set(b)
    assert tb == pytest.approx(ta, abs=1e-9)
    for s in a:
        assert b[s] == pytest.approx(a[s], abs=1e-9)
    # a word arc starts where its word id was
    assert set(wa.t0[wa.word > 0].tolist()) <= set(frame.t0[frame.word > 0].tolist())


def test_k2_lattices():
    expected = json.load(open(K2 / "expected.json"))["files"]["hlg_lattice.pt"]["utterances"]
    for frame, exp in zip(k2_frame_lattices(), expected, strict=False):
        wa = word_align(frame)
        assert wa.num_arcs and not (wa.word == 0).all()
        a, ta = _language(frame)
        b, tb = _language(wa)
        assert len(b) == exp["nbest"]["num_distinct_sequences"] == len(a)
        assert tb == pytest.approx(-exp["tot_score_log"], abs=1e-9)
        for s in a:
            assert b[s] == pytest.approx(a[s], abs=1e-9)
        # the best path of the word-aligned lattice has k2's start frames and words
        res, _, labels = nbest_sequences(wa, 1, silence_words=set())
        arcs = [x for x in res[0].best_arcs if labels[x]]
        assert [wa.symbols.word(int(wa.word[x])) for x in arcs] == exp["best_path"]["symbols"]
        assert [int(wa.t0[x]) for x in arcs] == exp["best_path"]["start_frames"]
        # trailing frames belong to the preceding word: word arcs tile the time axis
        assert all(int(wa.t1[x]) == int(wa.t0[y]) for x, y in zip(arcs, arcs[1:], strict=False))


def test_word_aligned_passes_through():
    lat = ps_lattice()
    assert word_align(lat) is lat
