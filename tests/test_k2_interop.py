"""k2 as an independent reference (skipped without k2).

* ``from_k2``/``from_k2_batch``/``to_k2`` against the k2-free file reader/writer and round trips;
* our total scores, arc posteriors, best paths (lattice_tools.algorithms), exact N-best
  (lattice_tools.alternatives.nbest) and Levenshtein lattice oracle (lattice_tools.oracle) against
  k2's ``get_tot_scores``, ``get_arc_post``, ``shortest_path``, per-sequence intersection scores and
  ``levenshtein_alignment`` on random and fixture lattices;
* the k2 graph builder against the fixture's HLG.pt and the k2 decoder against hlg_lattice.pt.

k2 has no PyPI wheel for Python 3.11: build it from source (docs/k2-and-ctc.md) to run these.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

k2 = pytest.importorskip("k2", reason="k2 is not installed (no PyPI wheel for Python 3.11; build it from source "
                                      "as in docs/k2-and-ctc.md to run the k2 cross-checks)")
torch = pytest.importorskip("torch")

from _algo_helpers import random_lattice  # noqa: E402

from lattice_tools.algorithms import arc_posteriors, best_path, total_log_prob  # noqa: E402
from lattice_tools.core.errors import MismatchError  # noqa: E402
from lattice_tools.core.lattice import Lattice  # noqa: E402
from lattice_tools.interop.k2 import (  # noqa: E402
    MappedLattice,
    from_k2,
    from_k2_batch,
    from_k2_batch_with_maps,
    from_k2_with_maps,
    load_k2,
    save_k2,
    to_k2,
)
from lattice_tools.io.lattices.k2file import read_k2_lattices, read_k2_lattices_with_maps  # noqa: E402

pytestmark = pytest.mark.k2
FILES = ["hlg_lattice.pt", "ctc_lattice.pt", "word_lattice.pt"]
TOL = 1e-5


@pytest.fixture(scope="module")
def fx(test_data_dir):
    d = test_data_dir / "k2-fixtures"
    if not (d / "expected.json").exists():
        pytest.skip("k2-fixtures not available")
    return d


@pytest.fixture(scope="module")
def expected(fx):
    return json.loads((fx / "expected.json").read_text())["files"]


def _table(fx, name):
    return str(fx / ("tokens.txt" if name == "ctc_lattice.pt" else "words.txt"))


def _load_fsa(path):
    return k2.Fsa.from_dict(torch.load(str(path), weights_only=False))


def _vec(fsa):
    """k2's scores/posteriors/shortest_path need an FsaVec."""
    return k2.create_fsa_vec([fsa]) if len(fsa.shape) == 2 else fsa


def _f32(lat: Lattice) -> Lattice:
    """The lattice with costs rounded as k2 stores them (float32 scores)."""
    return lat.replace(graph_cost=lat.graph_cost.astype(np.float32).astype(np.float64),
                       acoustic_cost=lat.acoustic_cost.astype(np.float32).astype(np.float64))


def _random_lattices(n, seed=0):
    rng = np.random.default_rng(seed)
    return [random_lattice(rng, int(rng.integers(3, 9)), int(rng.integers(4, 16)), key=f"r{i}") for i in range(n)]


# ---------------------------------------------------------------------------------------------
# Conversions
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FILES)
def test_from_k2_equals_k2_free_reader(fx, name):
    fsa = _load_fsa(fx / name)
    ours = from_k2_batch(fsa, words=_table(fx, name))
    ref = read_k2_lattices(fx / name, symbols=_table(fx, name))
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref, strict=False):
        assert a.equals(b) and a.word_aligned == b.word_aligned
        assert set(a.attrs) == set(b.attrs)
        for k in a.attrs:
            np.testing.assert_array_equal(a.attrs[k], b.attrs[k])
    assert [lat.key for lat in load_k2(fx / name, words=_table(fx, name))] == [lat.key for lat in ref]


@pytest.mark.parametrize("name", FILES)
def test_round_trip_k2_hub_k2(fx, name, tmp_path):
    fsa = _load_fsa(fx / name)
    lats = from_k2_batch(fsa, words=_table(fx, name))
    back = to_k2(lats, aux_labels="ragged" if name == "hlg_lattice.pt" else "tensor")
    # same totals as the original k2 object, computed by k2
    for use_log in (True, False):
        np.testing.assert_allclose(_vec(back).get_tot_scores(use_double_scores=True, log_semiring=use_log).numpy(),
                                   _vec(fsa).get_tot_scores(use_double_scores=True, log_semiring=use_log).numpy(),
                                   atol=TOL)
    again = from_k2_batch(back, words=_table(fx, name))
    assert len(again) == len(lats)
    for a, b in zip(again, lats, strict=True):
        assert _equal_but_chain_times(a, b)
    save_k2(lats, tmp_path / "x.pt")
    for a, b in zip(load_k2(tmp_path / "x.pt", words=_table(fx, name)), lats, strict=True):
        assert _equal_but_chain_times(a, b)


def _equal_but_chain_times(again: Lattice, lat: Lattice) -> bool:
    """``again.equals(lat)``, except that the later pieces of a multi-word arc span no frame in ``lat``
    (t0 = t1 = the arc's frame + 1) and one frame (their k2 frame attribute) once written back as arcs."""
    chained = (lat.t0 == lat.t1) & (lat.ilabel == 0) & (lat.t0 >= 0)
    if not np.array_equal(again.t0[chained], lat.t0[chained] - 1):
        return False
    return again.equals(lat.replace(t0=np.where(chained, again.t0, lat.t0), t1=np.where(chained, again.t1, lat.t1)))


def test_round_trip_hub_k2_hub_random():
    for lat in _random_lattices(20):
        x = _f32(lat)
        y = from_k2(to_k2(x), words=x.symbols)
        # to_k2 adds k2's super-final state: same totals, and from_k2(to_k2(y)) == y exactly
        assert total_log_prob(y) == pytest.approx(total_log_prob(x), abs=TOL)
        z = from_k2(to_k2(y), words=x.symbols)
        assert z.equals(y)
    fsa_vec = to_k2(_random_lattices(3, seed=5))
    assert fsa_vec.shape[0] == 3 and len(from_k2_batch(fsa_vec)) == 3


def test_each_conversion_returns_one_type(fx):
    """from_k2 gives one Lattice for one Fsa, from_k2_batch a list for any input; the *_with_maps variants give
    (lattice, arc_map) pairs equal to the k2-free reader's."""
    vec = _load_fsa(fx / "hlg_lattice.pt")
    words = _table(fx, "hlg_lattice.pt")
    ref = read_k2_lattices_with_maps(fx / "hlg_lattice.pt", symbols=words, keys=["a", "b", "c"])
    single = from_k2(vec[1], words=words, key="b")
    assert isinstance(single, Lattice) and single.key == "b" and single.equals(ref[1].lattice)
    mapped = from_k2_with_maps(vec[1], words=words, key="b")
    assert isinstance(mapped, MappedLattice) and mapped.lattice.equals(ref[1].lattice)
    np.testing.assert_array_equal(mapped.arc_map, ref[1].arc_map)
    batch = from_k2_batch_with_maps(vec, words=words, keys=["a", "b", "c"])
    assert [m.lattice.key for m in batch] == ["a", "b", "c"]
    for got, want in zip(batch, ref, strict=True):
        assert got.lattice.equals(want.lattice)
        np.testing.assert_array_equal(got.arc_map, want.arc_map)
    listed = from_k2_batch([vec[0], vec[2]], words=words)
    assert [lat.key for lat in listed] == ["0", "1"] and listed[1].equals(ref[2].lattice.replace(key="1"))
    one = from_k2_batch(vec[0], words=words)
    assert isinstance(one, list) and len(one) == 1 and one[0].equals(ref[0].lattice.replace(key="0"))
    for several in (vec, [vec[0], vec[1]]):
        with pytest.raises(TypeError, match="from_k2_batch"):
            from_k2(several, words=words)
    with pytest.raises(TypeError, match="return_arc_maps"):
        from_k2(vec[0], words=words, return_arc_maps=True)  # type: ignore[call-arg]  # the removed flag


def test_keys_travel_with_the_fsas_through_k2(tmp_path):
    """A file written by save_k2 (or write_k2_lattice) names its FSAs: k2 loads it, and the keys follow the FSAs
    through k2's indexing and reordering (they are read through each arc's key_index, not by position)."""
    lats = [_f32(lat) for lat in _random_lattices(3, seed=9)]
    save_k2(lats, tmp_path / "x.pt")
    assert [lat.key for lat in load_k2(tmp_path / "x.pt", words=lats[0].symbols)] == ["r0", "r1", "r2"]
    vec = _load_fsa(tmp_path / "x.pt")
    assert from_k2(vec[1], words=lats[0].symbols).key == "r1"
    assert from_k2(vec[1], words=lats[0].symbols, key="mine").key == "mine"
    picked = k2.index_fsa(vec, torch.tensor([2, 0], dtype=torch.int32))
    assert [lat.key for lat in from_k2_batch(picked, words=lats[0].symbols)] == ["r2", "r0"]
    assert [lat.key for lat in from_k2_batch([vec[2], vec[1]], words=lats[0].symbols)] == ["r2", "r1"]
    # to_k2 gives FSAs without keys, so k2 puts FSAs of different lattices into one FsaVec
    joined = k2.create_fsa_vec([to_k2(lats[0]), to_k2(lats[2])])
    assert [lat.key for lat in from_k2_batch(joined)] == ["0", "1"]
    # FSAs of two files: k2.create_fsa_vec refuses them (different keys lists); from_k2_batch keeps each key and
    # gives the lattices one word table
    save_k2([lats[2]], tmp_path / "y.pt")
    other = _load_fsa(tmp_path / "y.pt")
    with pytest.raises(AssertionError):
        k2.create_fsa_vec([vec[0], other[0]])
    mixed = from_k2_batch([vec[0], other[0]])
    assert [lat.key for lat in mixed] == ["r0", "r2"] and mixed[0].symbols is mixed[1].symbols
    ids = {int(w) for lat in mixed for w in lat.word if w}
    assert dict(mixed[0].symbols) == {"<eps>": 0, **{str(w): w for w in ids}}
    with pytest.raises(TypeError, match="list of single Fsas"):
        from_k2_batch([vec, other])
    with pytest.raises(MismatchError, match="FSAs 0 and 1 of the list have the same key 'r1'"):
        from_k2_batch([vec[1], vec[1]])
    assert [lat.key for lat in from_k2_batch([vec[1], vec[1]], keys=["a", "b"])] == ["a", "b"]


def test_subsampling_scales_frame_shift(fx):
    fsa = _load_fsa(fx / "ctc_lattice.pt")
    (lat,) = from_k2_batch(fsa, frame_shift=0.01, subsampling=4)
    assert lat.frame_shift == pytest.approx(0.04)
    assert lat.duration == pytest.approx(26 * 0.04)


# ---------------------------------------------------------------------------------------------
# Algorithms against k2
# ---------------------------------------------------------------------------------------------
def _hub_and_k2():
    """(hub lattice, k2 Fsa of the same lattice, hub arc -> k2 arc map) for random lattices."""
    out = []
    for lat in _random_lattices(25, seed=11):
        fsa = to_k2(_f32(lat))
        hub, amap = from_k2_with_maps(fsa, words=lat.symbols)
        out.append((hub, _vec(fsa), amap))
    return out


def _fixture_hub_and_k2(fx):
    out = []
    for name in FILES:
        fsa = _load_fsa(fx / name)
        for i, (lat, m) in enumerate(from_k2_batch_with_maps(fsa, words=_table(fx, name))):
            out.append((lat, _vec(fsa[i] if len(fsa.shape) == 3 else fsa), m))
    return out


@pytest.mark.parametrize("source", ["random", "fixtures"])
def test_totals_posteriors_best_paths_match_k2(fx, source):
    cases = _hub_and_k2() if source == "random" else _fixture_hub_and_k2(fx)
    for hub, fsa, amap in cases:
        for use_log in (True, False):
            k2_tot = float(fsa.get_tot_scores(use_double_scores=True, log_semiring=use_log))
            assert total_log_prob(hub, log_semiring=use_log) == pytest.approx(k2_tot, abs=TOL)
        k2_post = np.exp(fsa.get_arc_post(use_double_scores=True, log_semiring=True).numpy())
        np.testing.assert_allclose(arc_posteriors(hub), k2_post[amap], atol=TOL)
        sp = k2.shortest_path(fsa, use_double_scores=True)
        k2_best = float(sp.get_tot_scores(use_double_scores=True, log_semiring=False))
        ours = best_path(hub)
        score = -float(hub.arc_costs()[ours].sum() + hub.final_costs()[hub.dst[ours[-1]] if len(ours) else 0])
        assert score == pytest.approx(k2_best, abs=TOL)
        # same word sequence (continuous random costs have no ties)
        if hasattr(sp, "aux_labels"):
            aux = sp.aux_labels
            k2_words = (aux.values if isinstance(aux, k2.RaggedTensor) else aux).tolist()
        else:
            k2_words = sp.labels.tolist()
        assert [w for w in k2_words if w > 0] == [int(w) for w in hub.word[ours] if w > 0]


def _k2_sequence_scores(fsa):
    """Every distinct word sequence of a k2 lattice with its exact log-semiring score (icefall's
    Nbest approach: intersect with the linear FSA of the sequence)."""
    # Work on a single Fsa: k2.determinize of an FsaVec segfaults in our CPU build (single FSAs are fine).
    fsa = fsa[0] if len(fsa.shape) == 3 else fsa
    A = k2.invert(fsa) if hasattr(fsa, "aux_labels") else fsa
    A = k2.arc_sort(k2.connect(k2.Fsa(A.arcs)))  # labels (word ids) and scores only
    det = k2.determinize(k2.connect(k2.remove_epsilon(A)))
    seqs = _paths(det)
    out = {}
    for seq in seqs:
        lin = k2.add_epsilon_self_loops(k2.linear_fsa(list(seq)))
        inter = k2.intersect(A, k2.arc_sort(lin), treat_epsilons_specially=False)
        inter = k2.top_sort(k2.connect(inter))
        out[seq] = float(_vec(inter).get_tot_scores(use_double_scores=True, log_semiring=True))
    return out


def _paths(fsa):
    arcs = fsa.arcs.values()[:, :3].tolist()
    by_src = {}
    for s, d, lab in arcs:
        by_src.setdefault(s, []).append((d, lab))
    res = []

    def rec(s, seq):
        for d, lab in by_src.get(s, []):
            if lab == -1:
                res.append(tuple(seq))
            else:
                rec(d, seq + ([lab] if lab > 0 else []))

    rec(0, [])
    return set(res)


@pytest.mark.parametrize("source", ["random", "fixtures"])
def test_nbest_matches_k2_sequence_scores(fx, source):
    """Our exact N-best (word-aligning frame-level lattices first) against k2: every distinct
    sequence scored by intersection; top-5 order, sequences and posteriors."""
    from lattice_tools.alternatives.nbest_lists import nbest

    if source == "random":
        cases = [(hub, fsa) for hub, fsa, _ in _hub_and_k2()]
    else:  # utterances 1 and 2 (32 and 17 sequences; utt0 has 1142, too slow to score one by one here)
        cases = [(hub, fsa) for hub, fsa, _ in _fixture_hub_and_k2(fx)][1:3]
    for hub, fsa in cases:
        exact = _k2_sequence_scores(fsa)
        total = float(fsa.get_tot_scores(use_double_scores=True, log_semiring=True))
        assert float(np.logaddexp.reduce(list(exact.values()))) == pytest.approx(total, abs=TOL)
        k = min(5, len(exact))
        alts = nbest(hub, k, silence_words=()).slots[0].alternatives
        assert len(alts) == k
        ranked = sorted(exact.values(), reverse=True)
        for alt, ref_score in zip(alts, ranked, strict=False):
            seq = tuple(hub.symbols.id(w) for w in alt.words)
            assert alt.posterior == pytest.approx(math.exp(exact[seq] - total), abs=TOL)
            assert alt.posterior == pytest.approx(math.exp(ref_score - total), abs=TOL)


def test_levenshtein_oracle_matches_k2(fx):
    from lattice_tools.oracle import lattice_oracle

    rng = np.random.default_rng(3)
    for hub, fsa, _ in _hub_and_k2():
        seqs = sorted(_k2_sequence_scores(fsa))
        for _ in range(3):
            ref_ids = rng.integers(1, 5, size=int(rng.integers(0, 5))).tolist()
            refs = k2.levenshtein_graph([ref_ids])
            hyps = k2.levenshtein_graph([list(s) for s in seqs])
            ali = k2.levenshtein_alignment(refs=refs, hyps=hyps, hyp_to_ref_map=torch.zeros(len(seqs), dtype=torch.int32),
                                           sorted_match_ref=True)
            k2_dist = min(round(-float(x)) for x in ali.get_tot_scores(use_double_scores=True, log_semiring=False))
            ref_words = [hub.symbols.word(i) for i in ref_ids]
            ours = lattice_oracle(hub, ref_words, mode="levenshtein", nonword=lambda w: w == "<eps>")
            assert ours.cost == k2_dist


def test_levenshtein_oracle_matches_k2_on_fixture_lattices(fx, expected):
    from lattice_tools.oracle import lattice_oracle

    rng = np.random.default_rng(9)
    cases = _fixture_hub_and_k2(fx)[1:3]  # hlg utterances 1 and 2 (32 and 17 sequences)
    for (hub, fsa, _), spoken in zip(cases, ["A RED SEED", "THE DEAN"], strict=False):
        seqs = sorted(_k2_sequence_scores(fsa))
        vocab = [hub.symbols.word(i) for i in range(1, 18)]
        refs = [spoken.split()] + [list(rng.choice(vocab, size=int(rng.integers(1, 5)))) for _ in range(4)]
        for ref in refs:
            ref_ids = [hub.symbols.id(w) for w in ref]
            ali = k2.levenshtein_alignment(refs=k2.levenshtein_graph([ref_ids]),
                                           hyps=k2.levenshtein_graph([list(x) for x in seqs]),
                                           hyp_to_ref_map=torch.zeros(len(seqs), dtype=torch.int32),
                                           sorted_match_ref=True)
            k2_dist = min(round(-float(x)) for x in ali.get_tot_scores(use_double_scores=True, log_semiring=False))
            assert lattice_oracle(hub, ref, mode="levenshtein").cost == k2_dist
    # utterance 0: k2's recorded distances of its top-5 sequences against the spoken words
    from lattice_tools.oracle import sequence_oracle

    lev = expected["hlg_lattice.pt"]["utterances"][0]["levenshtein"]
    top5 = expected["hlg_lattice.pt"]["utterances"][0]["nbest"]["entries"]
    got = [sequence_oracle(e["symbols"], "SEE THE RED SAND".split(), mode="levenshtein").cost for e in top5]
    assert got == lev["distances"] == [0, 1, 2, 1, 2]


# ---------------------------------------------------------------------------------------------
# Graph building and decoding with k2
# ---------------------------------------------------------------------------------------------
def test_k2_graph_builder_reproduces_fixture_hlg(fx, tmp_path):
    from lattice_tools.ctc.graph import build_graph

    path = build_graph(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt", lm=fx / "G.fst.txt", out=tmp_path,
                       backend="k2")
    ours = _load_fsa(path)
    ref = _load_fsa(fx / "HLG.pt")
    assert (ours.shape[0], ours.num_arcs) == (143, 772) == (ref.shape[0], ref.num_arcs)
    assert torch.equal(ours.arcs.values()[:, :3], ref.arcs.values()[:, :3])
    np.testing.assert_allclose(ours.scores.numpy(), ref.scores.numpy(), atol=1e-6)
    assert k2.is_rand_equivalent(ours, ref, log_semiring=False)


def test_k2_decoder_reproduces_fixture_lattices(fx, expected):
    from lattice_tools.ctc.decode import decode_ctc

    lats = decode_ctc(fx / "HLG.pt", fx / "nnet_output.pt", backend="k2", words=fx / "words.txt", word_align=False)
    kal = decode_ctc(fx / "HLG.pt", fx / "nnet_output.pt", backend="kaldi", words=fx / "words.txt", word_align=False)
    ref = read_k2_lattices(fx / "hlg_lattice.pt", symbols=fx / "words.txt")
    for lat, lk, r, exp in zip(lats, kal, ref, expected["hlg_lattice.pt"]["utterances"], strict=False):
        assert lat.num_arcs == r.num_arcs
        assert total_log_prob(lat) == pytest.approx(exp["tot_score_log"], abs=TOL)
        assert total_log_prob(lat, log_semiring=False) == pytest.approx(exp["tot_score_tropical"], abs=TOL)
        assert " ".join(lat.words(best_path(lat))) == exp["spoken_words"] == " ".join(lk.words(best_path(lk)))


def test_k2_decoder_on_kaldifst_graph(fx, tmp_path):
    """The kaldifst HLG.fst converted for k2 (input epsilons removed by k2) decodes like the Kaldi decoder."""
    from lattice_tools.ctc.decode import decode_ctc
    from lattice_tools.ctc.graph import build_graph

    build_graph(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt", lm=fx / "G.fst.txt", out=tmp_path)
    a = decode_ctc(tmp_path / "HLG.fst", fx / "nnet_output.pt", backend="k2", word_align=False)
    b = decode_ctc(tmp_path / "HLG.fst", fx / "nnet_output.pt", backend="kaldi", word_align=False)
    for x, y, spoken in zip(a, b, ["SEE THE RED SAND", "A RED SEED", "THE DEAN"], strict=False):
        assert " ".join(x.words(best_path(x))) == " ".join(y.words(best_path(y))) == spoken
        # the best path's score: identical graph semantics, pruning never removes the best path
        assert total_log_prob(x, log_semiring=False) == pytest.approx(total_log_prob(y, log_semiring=False), abs=1e-5)
        assert math.isfinite(total_log_prob(x))
