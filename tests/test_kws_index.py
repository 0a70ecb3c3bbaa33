"""Term index (lattice_tools.kws.index): exact posteriors against brute-force path enumeration,
the representations against the lattice, and Kaldi's own hits on the bundled lattices."""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from _algo_helpers import lattices as incoherent_lattices
from _alt_helpers import enumerate_paths, lattice_strategy
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives._common import word_labels
from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.kws.index import (
    IndexHit,
    index_alternatives,
    index_lattice,
    lattice_network,
    time_clusters,
)

DATA = Path(__file__).parent / "data" / "kaldi_kws"
LATS = Path(__file__).parent / "data" / "kaldi" / "lats"  # the bundled lattices as a Kaldi archive


def brute_force_hits(lat, max_length, max_silence, acoustic_scale=1.0):
    """Every complete path, every run of consecutive words (silence/fillers skipped) of up to
    ``max_length`` words with gaps <= ``max_silence``: key (words, per-word cluster), summed path
    probability, earliest start, latest end."""
    labels = word_labels(lat)
    cost = lat.arc_costs(acoustic_scale=acoustic_scale)
    final = lat.final_costs(acoustic_scale=acoustic_scale)
    paths = enumerate_paths(lat, labels, cost, final)
    total = -math.inf
    for _, c in paths:
        total = np.logaddexp(total, -c)
    net = lattice_network(lat, acoustic_scale=acoustic_scale)
    clusters = time_clusters(net.word, lat.t0, lat.t1)  # frames
    fs = lat.frame_shift
    hits = {}
    for arcs, c in paths:
        p = math.exp(-c - total)
        if p == 0:
            continue
        wa = [a for a in arcs if labels[a] != 0]
        for i in range(len(wa)):
            for j in range(i + 1, min(len(wa), i + max_length) + 1):
                run = wa[i:j]
                if max_silence is not None and any(
                        (lat.t0[b] - lat.t1[a]) * fs > max_silence + 1e-9 for a, b in zip(run, run[1:], strict=False)):
                    break
                key = tuple((net.words[net.word[a]], int(clusters[a])) for a in run)
                h = hits.setdefault(key, [0.0, math.inf, -math.inf])
                h[0] += p
                h[1] = min(h[1], lat.t0[run[0]] * fs)
                h[2] = max(h[2], lat.t1[run[-1]] * fs)
    return hits


def hits_by_key(lat, hits: list[IndexHit]):
    """Our hits keyed like brute_force_hits (cluster of each word from the hit's own words and
    times is not recoverable, so match on (words, tbeg, tend) sets instead)."""
    out = defaultdict(list)
    for h in hits:
        out[h.words].append((round(h.tbeg, 6), round(h.tbeg + h.dur, 6), h.score))
    return out


def compare(lat, max_length, max_silence):
    ours = hits_by_key(lat, index_lattice(lat, max_length=max_length, max_silence=max_silence))
    ref = defaultdict(list)
    for key, (p, b, e) in brute_force_hits(lat, max_length, max_silence).items():
        # a time-inverted term (incoherent times: the last word ends before the first starts) spans
        # from the earlier to the later of the two times (docs/kws-index.md)
        ref[tuple(w for w, _ in key)].append((round(min(b, e), 6), round(max(b, e), 6), p))
    assert set(ours) == set(ref)
    for words in ref:
        a = sorted(ours[words])
        b = sorted(ref[words])
        assert len(a) == len(b), words
        for (b0, e0, p0), (b1, e1, p1) in zip(a, b, strict=False):
            assert (b0, e0) == (b1, e1), words
            assert p0 == pytest.approx(p1, rel=1e-9, abs=1e-12), words


@settings(max_examples=80, deadline=None)
@given(lattice_strategy(max_states=7, max_arcs=14), st.integers(1, 4), st.sampled_from([None, 0.03, 0.1]))
def test_posteriors_equal_brute_force(lat, max_length, max_silence):
    compare(lat, max_length, max_silence)


@settings(max_examples=60, deadline=None)
@given(incoherent_lattices(max_states=8, max_arcs=14), st.integers(1, 3), st.sampled_from([None, 0.02]))
def test_posteriors_equal_brute_force_incoherent_times(lat, max_length, max_silence):
    """Random lattices whose arcs into one state end at different times (the index must not
    assume a time per state)."""
    compare(lat, max_length, max_silence)


def test_time_clusters_follow_kaldi_rule():
    # word 0: spans [0,10) [2,5) [10,20) [8,12) [30,31) [15,15)
    word = np.array([0, 0, 0, 0, 0, 0, -1, 1])
    t0 = np.array([0, 2, 10, 8, 30, 15, 0, 0])
    t1 = np.array([10, 5, 20, 12, 31, 15, 3, 3])
    # heads: [0,10), [10,20), [30,31); [8,12) overlaps head 0 by 2 and head 1 by 2 -> first (0);
    # [15,15) overlaps nothing -> head 0 (Kaldi's cluster 1)
    assert time_clusters(word, t0, t1).tolist() == [0, 0, 1, 0, 2, 0, -1, 0]


def test_time_cluster_ties_are_exact_in_frames():
    """b[25,29) b[25,33) b[29,33) at 10 ms frames: [25,33) overlaps both heads by 4 frames and joins the
    first (in float seconds 0.33 - 0.29 > 0.29 - 0.25 and it went to the second); found by the Kaldi
    cross-check."""

    from lattice_tools.core.lattice import Lattice
    from lattice_tools.core.symbols import SymbolTable

    inf = math.inf
    lat = Lattice.from_arcs(src=[0, 1, 1, 2, 2], dst=[1, 2, 3, 3, 3], word=[0, 1, 1, 0, 1],
                            symbols=SymbolTable.from_words(["b"]), final_graph_cost=[inf, inf, inf, 0.0],
                            t0=[0, 25, 25, 29, 29], t1=[25, 29, 33, 33, 33])
    hits = sorted((round(h.tbeg * 100), round((h.tbeg + h.dur) * 100), round(h.score, 9))
                  for h in index_lattice(lat, max_length=1))
    assert hits == [(25, 33, 1.0), (29, 33, round(1 / 3, 9))]


def _alts_from_sequences(seqs, key="u"):
    """One-slot N-best alternatives from ``[(words, starts, ends, posterior)]``."""
    alts = tuple(Alternative(tuple(w), tuple(s), tuple(e - b for b, e in zip(s, e, strict=False)), p) for w, s, e, p in seqs)
    return Alternatives(key=key, slots=(Slot(0.0, 10.0, alts),), kind="nbest")


def test_alternatives_terms_cross_slots_and_multiply():
    a = Alternative(("x", "y"), (0.0, 1.0), (1.0, 1.0), 0.6)
    b = Alternative(("z",), (0.0,), (2.0,), 0.4)
    c = Alternative(("w",), (2.0,), (1.0,), 0.5)
    e = Alternative((), posterior=0.5)
    d = Alternative(("v",), (3.0,), (1.0,), 1.0)
    alts = Alternatives("u", (Slot(0, 2, (a, b)), Slot(2, 3, (c, e)), Slot(3, 4, (d,))), kind="sausage")
    got = {h.words: h.score for h in index_alternatives(alts, max_length=3, max_silence=None)}
    assert got[("y", "w")] == pytest.approx(0.6 * 0.5)
    assert got[("y", "v")] == pytest.approx(0.6 * 0.5)  # through the empty alternative
    assert got[("x", "y", "w")] == pytest.approx(0.3)
    assert got[("z", "w", "v")] == pytest.approx(0.4 * 0.5)
    assert got[("y",)] == pytest.approx(0.6)
    assert ("x", "z") not in got
    # the silence limit breaks a term across a long pause
    late = Alternatives("u", (Slot(0, 2, (a,)), Slot(5, 6, (Alternative(("w",), (5.0,), (1.0,), 1.0),))), kind="1best")
    assert ("y", "w") not in {h.words for h in index_alternatives(late, max_silence=0.5)}
    assert ("y", "w") in {h.words for h in index_alternatives(late, max_silence=3.0)}


def test_time_inverted_sausage_term_gets_a_nonnegative_span():
    # bin 2's word ends (0.6) before bin 1's word starts (1.0): words of two different paths
    a = Alternative(("a",), (1.0,), (0.5,), 1.0)
    b = Alternative(("b",), (0.4,), (0.2,), 1.0)
    alts = Alternatives("u", (Slot(0, 2, (a,)), Slot(0, 2, (b,))), kind="sausage")
    hit = next(h for h in index_alternatives(alts, max_length=2, max_silence=None) if h.words == ("a", "b"))
    assert (hit.tbeg, hit.dur) == pytest.approx((0.6, 0.4))


def _expected_counts(hits):
    out = defaultdict(float)
    for h in hits:
        out[h.words] += h.score
    return out


@settings(max_examples=60, deadline=None)
@given(lattice_strategy(max_states=7, max_arcs=12), st.integers(1, 3))
def test_nbest_at_infinity_equals_lattice(lat, max_length):
    """The N-best list with every sequence is the lattice's exact distribution over word sequences:
    a term's expected count (sum of its hits) is the lattice's, for every term."""
    from lattice_tools.alternatives.nbest_lists import nbest

    lat_counts = _expected_counts(index_lattice(lat, max_length=max_length, max_silence=None))
    nb_counts = _expected_counts(index_alternatives(nbest(lat, None), max_length=max_length, max_silence=None))
    for words in set(lat_counts) | set(nb_counts):
        assert nb_counts.get(words, 0.0) == pytest.approx(lat_counts.get(words, 0.0), rel=1e-7, abs=1e-9), words


@settings(max_examples=60, deadline=None)
@given(lattice_strategy(max_states=8, max_arcs=14), st.sampled_from([0.05, 0.3, 0.6]))
def test_phrases_at_infinity_equal_lattice_for_single_words(lat, theta):
    """Phrase alternatives at N = infinity: every single-word term lies inside one phrase, and its
    expected count is exactly the lattice's (Faria et al., eq. 6: the phrase marginals are exact)."""
    from lattice_tools.alternatives.phrase_alternatives import phrases

    lat_counts = _expected_counts(index_lattice(lat, max_length=1, max_silence=None))
    ph_counts = _expected_counts(index_alternatives(phrases(lat, None, theta), max_length=1, max_silence=None))
    for words in set(lat_counts) | set(ph_counts):
        assert ph_counts.get(words, 0.0) == pytest.approx(lat_counts.get(words, 0.0), rel=1e-7, abs=1e-9), words


@settings(max_examples=60, deadline=None)
@given(lattice_strategy(max_states=8, max_arcs=14), st.sampled_from([0.0, 0.2, 0.5]))
def test_phrases_at_infinity_equal_lattice_for_terms_inside_one_phrase(lat, theta):
    """Multi-word terms: a term whose every occurrence (on every lattice path) lies inside one phrase
    gets exactly the lattice's expected count from the phrase alternatives at N = infinity."""
    from lattice_tools.algorithms.scores import arc_posteriors
    from lattice_tools.alternatives.phrase_alternatives import arc_phrases, phrase_cuts, phrases

    labels = word_labels(lat)
    phrase_of = arc_phrases(lat, phrase_cuts(lat, arc_posteriors(lat), labels, theta))
    spans = defaultdict(bool)  # words -> some occurrence crosses a phrase boundary
    for arcs, _ in enumerate_paths(lat, labels, lat.arc_costs(), lat.final_costs()):
        wa = [a for a in arcs if labels[a] != 0]
        for i in range(len(wa)):
            for j in range(i + 1, min(len(wa), i + 3) + 1):
                words = tuple(lat.symbols.word(int(labels[a])) for a in wa[i:j])
                spans[words] |= len({int(phrase_of[a]) for a in wa[i:j]}) > 1
    lat_counts = _expected_counts(index_lattice(lat, max_length=3, max_silence=None))
    # the occurrences inside one phrase: each phrase indexed on its own (across phrases the product of
    # the phrase distributions also has combinations no lattice path has: not compared here)
    ph = phrases(lat, None, theta)
    ph_counts = defaultdict(float)
    for slot in ph.slots:
        one = Alternatives(ph.key, (slot,), kind="phrase")
        for words, c in _expected_counts(index_alternatives(one, max_length=3, max_silence=None)).items():
            ph_counts[words] += c
    inside = [w for w, crosses in spans.items() if not crosses]
    for words in inside:
        assert ph_counts.get(words, 0.0) == pytest.approx(lat_counts.get(words, 0.0), rel=1e-7, abs=1e-9), words


def test_sausage_single_words_are_bin_posteriors():
    """A sausage's single-word term score is the bin posterior of the word."""
    from lattice_tools.alternatives.sausages import sausage
    from lattice_tools.io import read_lattices

    lat = next(iter(read_lattices(f"ark,t:{LATS / 'bundled.ark.gz'}", format="kaldi",
                                  symbols=str(LATS / "bundled.words.txt"))))
    saus = sausage(lat)
    hits = index_alternatives(saus, max_length=1)
    expected = defaultdict(float)
    for slot in saus.slots:
        for alt in slot.alternatives:
            if alt.words:
                expected[alt.words] += alt.posterior
    assert _expected_counts(hits) == pytest.approx(dict(expected))


def test_lattice_without_times_is_refused():
    from lattice_tools.core.errors import LatticeError
    from lattice_tools.core.lattice import Lattice
    from lattice_tools.core.symbols import SymbolTable

    lat = Lattice.from_arcs(src=[0], dst=[1], word=[1], symbols=SymbolTable.from_words(["a"]),
                            final_graph_cost=[math.inf, 0.0])
    with pytest.raises(LatticeError, match="times"):
        index_lattice(lat)


def test_alternatives_without_times_are_refused():
    from lattice_tools.core.errors import FormatError

    alts = Alternatives("u", (Slot(0, 1, (Alternative(("a",), posterior=1.0),)),))
    with pytest.raises(FormatError, match="time"):
        index_alternatives(alts)


def test_min_posterior_prunes_but_keeps_strong_hits():
    from lattice_tools.io import read_lattices

    lat = next(iter(read_lattices(f"ark,t:{LATS / 'bundled.ark.gz'}", format="kaldi",
                                  symbols=str(LATS / "bundled.words.txt"))))
    full = index_lattice(lat)
    pruned = index_lattice(lat, min_posterior=0.01)
    assert pruned and len(pruned) < len(full)
    by_words = defaultdict(list)
    for h in full:
        by_words[h.words].append(h)
    for h in pruned:
        assert h.score >= 0.01
        # a pruned hit keeps part of one full hit's occurrences: inside its span, at most its score
        assert any(f.tbeg <= h.tbeg + 1e-9 and h.tbeg + h.dur <= f.tbeg + f.dur + 1e-9 and h.score <= f.score + 1e-12
                   for f in by_words[h.words]), h
    # single words are never pruned inside (their mass is not the sum of extensions): exact
    strong = {(h.words, h.tbeg, h.dur): h.score for h in full if len(h.words) == 1 and h.score >= 0.01}
    got = {(h.words, h.tbeg, h.dur): h.score for h in pruned if len(h.words) == 1}
    assert got == pytest.approx(strong, rel=1e-12)


@pytest.mark.parametrize("max_candidates", [300, 20_000])
def test_chunked_extension_gives_the_same_hits(max_candidates):
    """A level with more candidates than max_candidates is extended in chunks (1 = one partial term per
    chunk): the hits (1..4 words, every bundled lattice) are those of one pass, up to float summation
    order."""
    from lattice_tools.io import read_lattices

    checked = 0
    lats = list(read_lattices(f"ark,t:{LATS / 'bundled.ark.gz'}", format="kaldi", symbols=str(LATS / "bundled.words.txt")))
    for lat in lats[:3] + lats[-1:]:  # three cards and one LibriVox clip
        whole = index_lattice(lat, max_length=3)
        chunked = index_lattice(lat, max_length=3, max_candidates=max_candidates)
        key = lambda hs: sorted((h.words, h.tbeg, h.dur) for h in hs)  # noqa: E731
        assert key(chunked) == key(whole)
        assert {(h.words, h.tbeg, h.dur): h.score for h in chunked} == pytest.approx(
            {(h.words, h.tbeg, h.dur): h.score for h in whole}, rel=1e-12, abs=1e-300)
        checked += len(whole)
    assert checked > 1000


def test_kaldi_hits_on_bundled_lattices():
    """Kaldi's lattice-to-kws-index + kws-search on the bundled lattices (tests/data/kaldi_kws): every
    one of its 30 hits is ours with the same utterance and frames, and a score within Kaldi's
    quantization (its index is minimized with delta 1/1024: scores are multiples of 2^-10)."""
    from lattice_tools.io import read_lattices

    umap = dict(line.split() for line in (DATA / "utter.map").read_text().split("\n") if line.strip())
    terms = {line.split()[0]: tuple(line.split()[1:]) for line in (DATA / "keywords.words.txt").read_text().splitlines()
             if line.strip()}
    ours = defaultdict(list)
    for lat in read_lattices(f"ark,t:{LATS / 'bundled.ark.gz'}", format="kaldi", symbols=str(LATS / "bundled.words.txt")):
        for h in index_lattice(lat, max_length=2):
            ours[h.words].append((umap[h.utterance], round(h.tbeg * 100), round((h.tbeg + h.dur) * 100), h.score))
    kaldi = defaultdict(list)
    for line in (DATA / "hits.txt").read_text().splitlines():
        kw, utt, b, e, score = line.split()
        kaldi[kw].append((utt, int(b), int(e), float(score)))
    assert sum(map(len, kaldi.values())) == 30
    for kw, hits in kaldi.items():
        mine = {(u, b, e): s for u, b, e, s in ours[terms[kw]]}
        assert len(mine) == len(hits), kw
        for utt, b, e, score in hits:
            assert (utt, b, e) in mine, (kw, utt, b, e)
            assert -math.log(mine[(utt, b, e)]) == pytest.approx(score, abs=2 ** -10), (kw, utt)
