"""CTC decoding graphs (kaldifst) and the Kaldi lattice decoder, against k2's own graph and values.

References used:
* tests/data/k2-fixtures: tokens/lexicon/words/G of icefall's recipe, k2's HLG.pt (compiled by k2),
  nnet_output.pt and expected.json (k2's totals, best paths).
* brute-force enumeration of graph paths for given frame labellings (tests/_ctc_helpers.py).
* synthetic CTC posteriors that favour a known word sequence.
None of these tests needs k2.
"""
from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from _ctc_helpers import ctc_alignment, enumerate_paths, synthetic_logprobs, unique_parses
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.algorithms import best_path, total_log_prob
from lattice_tools.core.errors import FormatError, LatticeToolsError, MismatchError, SymbolError
from lattice_tools.ctc._fst import fst_to_arrays
from lattice_tools.ctc.decode import decode_ctc
from lattice_tools.ctc.graph import (
    add_disambig_symbols,
    build_graph,
    lexicon_arrays,
    prepare_lang,
    read_grammar,
    read_lexicon,
)
from lattice_tools.ctc.k2_graphs import k2_graph_to_fst_arrays
from lattice_tools.ctc.logprobs import read_logprobs, write_kaldi_text_matrices

SPOKEN = ["SEE THE RED SAND", "A RED SEED", "THE DEAN"]


@pytest.fixture(scope="module")
def fx(test_data_dir):
    d = test_data_dir / "k2-fixtures"
    if not (d / "HLG.pt").exists():
        pytest.skip("k2-fixtures not available")
    return d


@pytest.fixture(scope="module")
def expected(fx):
    return json.loads((fx / "expected.json").read_text())["files"]["hlg_lattice.pt"]["utterances"]


@pytest.fixture(scope="module")
def graph_dir(fx, tmp_path_factory):
    out = tmp_path_factory.mktemp("graph")
    build_graph(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt", lm=fx / "G.fst.txt", out=out)
    return out


@pytest.fixture(scope="module")
def hl_dir(fx, tmp_path_factory):
    out = tmp_path_factory.mktemp("hl")
    build_graph(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt", lm=None, out=out)
    return out


# ---------------------------------------------------------------------------------------------
# Language preparation
# ---------------------------------------------------------------------------------------------
def test_disambiguation_symbols_match_icefall_fixture(fx):
    lex = read_lexicon(fx / "lexicon.txt")
    dis, max_d = add_disambig_symbols(lex)
    assert max_d == 2
    assert dis == read_lexicon(fx / "lexicon_disambig.txt")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABCDEFG"), st.lists(st.sampled_from("xyz"), min_size=1, max_size=4)),
                min_size=1, max_size=12))
def test_disambiguated_lexicon_is_prefix_free(entries):
    lex = [(f"{w}{i}", tuple(p)) for i, (w, p) in enumerate(entries)]
    dis, max_d = add_disambig_symbols(lex)
    prons = [p for _, p in dis]
    assert len(set(prons)) == len(prons)  # homophones are told apart
    for a in prons:
        for b in prons:
            assert a == b or b[:len(a)] != a  # no pronunciation is a prefix of another
    for (w, p), (w2, q) in zip(lex, dis, strict=False):  # only #k suffixes were added, and only where needed
        assert w == w2 and q[:len(p)] == p and all(t.startswith("#") for t in q[len(p):]) and len(q) - len(p) <= 1
    needed = {p for _, p in lex if sum(p == o for _, o in lex) > 1 or any(o[:len(p)] == p and o != p for _, o in lex)}
    assert {p for (_, p), (_, q) in zip(lex, dis, strict=False) if q != p} == needed
    assert max_d == max([int(q[-1][1:]) for _, q in dis if q[-1].startswith("#")] + [0])


def test_build_graph_writes_icefall_tables(fx, graph_dir):
    for name in ("tokens.txt", "words.txt", "lexicon_disambig.txt"):
        assert (graph_dir / name).read_text() == (fx / name).read_text(), name
    assert (graph_dir / "HLG.fst").stat().st_size > 0


def test_default_words_table_is_icefall_layout(fx):
    lang = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt")
    assert list(lang.words) == list(prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt").words)


def test_lexicon_fst_has_icefall_structure(fx):
    lang = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt")
    L = lexicon_arrays(lang, sil_prob=0.5)
    # start -> loop / sil (cost ln 2 each), sil -SIL-> loop, one #0:#0 self-loop on the loop state
    loops = (L.src == L.dst) & (L.ilabel == lang.tokens.id("#0"))
    assert np.count_nonzero(loops) == 1 and L.src[loops][0] == 1 and L.olabel[loops][0] == lang.words.id("#0")
    # the #0 loop + #1/#2 as last token of AN READ RED SEA SEE (twice each: to the loop and to silence)
    assert np.count_nonzero(L.ilabel >= lang.tokens.id("#0")) == 1 + 2 * 5
    assert sorted(L.weight[L.src == 0].tolist()) == pytest.approx([np.log(2)] * 2)
    assert np.isfinite(L.final).sum() == 1 and L.final[1] == 0.0
    # every word appears exactly once as an output label, on a first-token arc leaving the loop state
    word_arcs = L.olabel > 0
    words = L.olabel[word_arcs & ~loops]
    # one-token words (A) leave twice (to loop and to sil), the others once
    assert sorted(set(words.tolist())) == sorted(lang.words.id(w) for w, _ in lang.lexicon)
    assert np.all(L.src[word_arcs] == 1)


# ---------------------------------------------------------------------------------------------
# The kaldifst graph against k2's HLG.pt (brute force, per frame labelling)
# ---------------------------------------------------------------------------------------------
def test_graph_is_tropically_equivalent_to_k2_hlg(fx, graph_dir):
    """For random CTC labellings of random word sequences (brute-force path enumeration): our HLG
    and k2's HLG.pt have the same best cost, every word sequence of k2's graph is in ours with a
    cost at least as good, and ours has no word sequence k2's lacks except where k2's epsilon
    removal dropped it.

    Two measured differences (see docs/k2-and-ctc.md): (1) k2's ``remove_epsilon`` keeps only the
    best epsilon path between two states even when the paths carry different words, so after
    ``R EH D`` the homophone RED followed by a backoff (#2 #0) is dropped in favour of READ (#1
    #0): k2 has no ``RED DEAN``; (2) OpenFst's epsilon removal merges parallel arcs with the same
    labels and destination (a bigram arc and its backoff twin, tropical sum = min), which k2
    keeps as separate paths; so k2 has more paths and larger log-semiring totals."""
    import kaldifst

    lang = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt")
    ours = fst_to_arrays(kaldifst.StdVectorFst.read(str(graph_dir / "HLG.fst")))
    theirs = k2_graph_to_fst_arrays(fx / "HLG.pt")
    rng = np.random.default_rng(7)
    lex = read_lexicon(fx / "lexicon.txt")
    pron = dict(lex)
    vocab = [w for w, _ in lex]
    extra = 0
    for _ in range(30):
        words = list(rng.choice(vocab, size=int(rng.integers(1, 4))))
        toks = [t for w in words for t in pron[w]]
        frames = ctc_alignment([lang.tokens.id(t) for t in toks], rng, max_rep=1, max_blanks=1)
        labels = [f + 1 for f in frames]  # graph input = token + 1
        a = enumerate_paths(ours, labels)
        b = enumerate_paths(theirs, labels)
        assert a and set(b) <= set(a)
        assert min(min(c) for c in a.values()) == pytest.approx(min(min(c) for c in b.values()), abs=2e-5)
        for seq, costs in b.items():
            assert min(a[seq]) <= min(costs) + 2e-5
        # every word parse of the token string is a path of our graph
        parses = {tuple(lang.words.id(w) for w in p) for p in unique_parses(toks, lex)}
        assert parses == set(a)
        extra += len(set(a) - set(b))
    assert extra > 0  # the k2 epsilon-removal loss does occur on these samples


def test_k2_epsilon_removal_drops_a_homophone_the_kaldifst_graph_keeps(fx, graph_dir):
    import kaldifst

    lang = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt")
    ours = fst_to_arrays(kaldifst.StdVectorFst.read(str(graph_dir / "HLG.fst")))
    theirs = k2_graph_to_fst_arrays(fx / "HLG.pt")
    frames = [0]
    for t in "R EH D D IY N".split():
        frames += [lang.tokens.id(t), 0]
    a = enumerate_paths(ours, [f + 1 for f in frames])
    b = enumerate_paths(theirs, [f + 1 for f in frames])
    read, red, dean = (lang.words.id(w) for w in ("READ", "RED", "DEAN"))
    assert set(a) == {(read, dean), (red, dean)}
    assert set(b) == {(read, dean)}
    # Independent of both graphs: G.fst.txt costs along the backoff paths + 3 optional-silence
    # choices of L (ln 2 each: at the start and after each word).
    sil = 3 * np.log(2)
    red_dean = 0.648976 + 2.890372 + 0.999178 + 3.988984 + 0.510826  # <s> -#0-> RED -#0-> DEAN </s>
    read_dean = 0.648976 + 3.295837 + 0.564893 + 3.988984 + 0.510826  # <s> -#0-> READ -#0-> DEAN </s>
    assert min(a[(red, dean)]) == pytest.approx(red_dean + sil, abs=1e-5)
    assert min(a[(read, dean)]) == pytest.approx(read_dean + sil, abs=1e-5)
    assert min(b[(read, dean)]) == pytest.approx(read_dean + sil, abs=1e-5)
    assert min(a[(read, dean)]) == pytest.approx(min(b[(read, dean)]), abs=2e-5)


def test_hl_graph_without_lm_is_a_free_word_loop(fx, hl_dir):
    import kaldifst

    g = fst_to_arrays(kaldifst.StdVectorFst.read(str(hl_dir / "HL.fst")))
    lang = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt")
    rng = np.random.default_rng(3)
    frames = ctc_alignment([lang.tokens.id(t) for t in "DH EH N T EH N".split()], rng)
    paths = enumerate_paths(g, [f + 1 for f in frames])
    then, ten = lang.words.id("THEN"), lang.words.id("TEN")
    assert (then, ten) in paths
    # no LM: cost = optional-silence choices only (ln 2 per word boundary + start)
    assert min(paths[(then, ten)]) == pytest.approx(3 * np.log(2), abs=1e-6)


# ---------------------------------------------------------------------------------------------
# Decoding the k2 fixtures with the Kaldi decoder
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["ours", "k2_hlg"])
def test_fixture_best_paths_and_tropical_totals(fx, graph_dir, expected, which):
    graph = graph_dir if which == "ours" else fx / "HLG.pt"
    lats = decode_ctc(graph, fx / "nnet_output.pt", words=fx / "words.txt", word_align=False)
    assert [lat.key for lat in lats] == ["nnet_output-0", "nnet_output-1", "nnet_output-2"]
    for lat, spoken, exp in zip(lats, SPOKEN, expected, strict=False):
        assert " ".join(lat.words(best_path(lat))) == spoken == exp["spoken_words"]
        # Both graphs are tropically equivalent to k2's; pruning never removes the best path.
        assert total_log_prob(lat, log_semiring=False) == pytest.approx(exp["tot_score_tropical"], abs=1e-5)
        # every frame is consumed: emitting arcs span 1 frame, the lattice covers T frames
        assert lat.num_frames == exp["num_frames"]


def test_fixture_log_totals_against_k2(fx, graph_dir, expected):
    """Same graph (k2's HLG.pt): the log total differs from k2's only by pruning (measured
    |diff| 4.2e-3, 1.0e-3, 2.6e-4 with beam 20 / lattice-beam 8); with wide beams the Kaldi
    lattice holds more paths than k2's output_beam=8 lattice, so its total is at least k2's.
    Our kaldifst graph has fewer (merged) paths, so its totals are lower."""
    same = decode_ctc(fx / "HLG.pt", fx / "nnet_output.pt", words=fx / "words.txt", word_align=False)
    wide = decode_ctc(fx / "HLG.pt", fx / "nnet_output.pt", words=fx / "words.txt", word_align=False,
                      beam=40.0, lattice_beam=30.0)
    ours_wide = decode_ctc(graph_dir, fx / "nnet_output.pt", word_align=False, beam=40.0, lattice_beam=30.0)
    for lat, lat_w, lat_o, exp in zip(same, wide, ours_wide, expected, strict=False):
        assert total_log_prob(lat) == pytest.approx(exp["tot_score_log"], abs=1e-2)
        assert total_log_prob(lat_w) >= exp["tot_score_log"] - 1e-9
        assert total_log_prob(lat_o) < total_log_prob(lat_w)
        assert total_log_prob(lat_o, log_semiring=False) == pytest.approx(exp["tot_score_tropical"], abs=1e-5)


def test_word_alignment_preserves_words_and_totals(fx, graph_dir):
    frame = decode_ctc(graph_dir, fx / "nnet_output.pt", word_align=False)
    words = decode_ctc(graph_dir, fx / "nnet_output.pt", word_align=True)
    for f, w, spoken in zip(frame, words, SPOKEN, strict=False):
        assert not f.word_aligned and w.word_aligned
        assert " ".join(w.words(best_path(w))) == spoken
        assert total_log_prob(w) == pytest.approx(total_log_prob(f), abs=1e-9)
        bp = best_path(w)
        assert w.t0[bp][0] == 0 and w.t1[bp][-1] == f.num_frames
        assert np.all(w.t1[bp][:-1] == w.t0[bp][1:])


def test_kaldi_frame_lattice_conventions(fx, graph_dir):
    lat = decode_ctc(graph_dir, fx / "nnet_output.pt", word_align=False)[2]
    emitting = lat.ilabel != 0
    assert np.all(lat.t1[emitting] == lat.t0[emitting] + 1)
    assert np.all(lat.t1[~emitting] == lat.t0[~emitting])
    # acoustic cost of an emitting arc is -log_prob of (ilabel - 1) at its frame
    import torch

    lp = torch.load(fx / "nnet_output.pt")["nnet_output"][2, :25].numpy()
    idx = np.nonzero(emitting)[0]
    np.testing.assert_allclose(lat.acoustic_cost[idx], -lp[lat.t0[idx], lat.ilabel[idx] - 1], atol=1e-6)
    assert np.all(lat.acoustic_cost[~emitting] == 0)


def test_binary_lattice_parser_equals_kaldifst_iterator(fx, graph_dir):
    """The numpy parser of Kaldi's binary lattice against kaldifst's own arc iterator."""
    import kaldi_decoder
    import kaldifst
    import torch
    from kaldifst.lib._kaldifst import _ArcIteratorLattice

    from lattice_tools.ctc.decode import _kaldi_lattice_to_raw

    g = kaldifst.StdVectorFst.read(str(graph_dir / "HLG.fst"))
    lp = torch.load(fx / "nnet_output.pt")["nnet_output"][0, :40].numpy()
    dec = kaldi_decoder.LatticeSimpleDecoder(g, kaldi_decoder.LatticeSimpleDecoderConfig(beam=20.0, lattice_beam=8.0))
    dec.decode(kaldi_decoder.DecodableCtc(lp))
    ok, lat = dec.get_raw_lattice(use_final_probs=True)
    assert ok
    raw = _kaldi_lattice_to_raw(lat, "u")
    rows, finals = [], []
    for s in range(lat.num_states):
        f = lat.final(s)
        finals.append((f.value1, f.value2))
        it = _ArcIteratorLattice(lat, s)
        while not it.done:
            a = it.value
            rows.append((s, a.nextstate, a.ilabel, a.olabel, a.weight.value1, a.weight.value2))
            it.next()
    rows = np.array(rows)
    assert raw.num_states == lat.num_states and raw.start == lat.start and len(raw.src) == len(rows) > 100
    for col, arr in enumerate((raw.src, raw.dst, raw.ilabel, raw.olabel, raw.w1, raw.w2)):
        np.testing.assert_array_equal(arr, rows[:, col])
    finals = np.array(finals)
    np.testing.assert_array_equal(raw.final_w1, finals[:, 0])
    np.testing.assert_array_equal(raw.final_w2, np.where(np.isinf(finals[:, 0]), np.inf, finals[:, 1]))


# ---------------------------------------------------------------------------------------------
# Synthetic posteriors favouring a known word sequence
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_lm", [False, True])
def test_synthetic_posteriors_decode_to_their_words(fx, graph_dir, hl_dir, seed, with_lm):
    lang = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt")
    lex = read_lexicon(fx / "lexicon.txt")
    rng = np.random.default_rng(100 + seed)
    vocab = [w for w, _ in lex]
    pron = dict(lex)
    while True:  # a word sequence whose token string has exactly one parse (no homophones)
        words = tuple(rng.choice(vocab, size=int(rng.integers(2, 6))))
        toks = [t for w in words for t in pron[w]]
        if unique_parses(toks, lex) == {words}:
            break
    frames = ctc_alignment([lang.tokens.id(t) for t in toks], rng)
    lp = synthetic_logprobs(frames, 12, rng, peak=8.0)
    lats = decode_ctc(graph_dir if with_lm else hl_dir, [("utt", lp)])
    lat = lats[0]
    assert lat.key == "utt" and lat.word_aligned
    assert tuple(lat.words(best_path(lat))) == words


# ---------------------------------------------------------------------------------------------
# Log-probability inputs
# ---------------------------------------------------------------------------------------------
def _lp(rng, t, v=12):
    x = rng.normal(size=(t, v))
    return (x - np.log(np.exp(x).sum(1, keepdims=True))).astype(np.float32)


def test_logprob_formats_agree(tmp_path):
    import torch

    rng = np.random.default_rng(0)
    a, b = _lp(rng, 7), _lp(rng, 5)
    batch = np.full((2, 7, 12), -np.inf, dtype=np.float32)
    batch[0], batch[1, :5] = a, b
    np.save(tmp_path / "one.npy", a)
    np.save(tmp_path / "batch.npy", batch)
    np.savez(tmp_path / "many.npz", u1=a, u2=b)
    torch.save({"nnet_output": torch.from_numpy(batch),
                "supervision_segments": torch.tensor([[0, 0, 7], [1, 0, 5]], dtype=torch.int32)}, tmp_path / "d.pt")
    torch.save(torch.from_numpy(a), tmp_path / "t.pt")
    write_kaldi_text_matrices(tmp_path / "m.ark", [("u1", a), ("u2", b)])
    # Kaldi binary matrices: "key \0BFM " + int32 sizes
    with open(tmp_path / "bin.ark", "wb") as f:
        for key, m in (("u1", a), ("u2", b)):
            f.write(key.encode() + b" \0BFM " + struct.pack("<bibi", 4, m.shape[0], 4, m.shape[1]) + m.tobytes())

    def check(items, keys):
        assert [k for k, _ in items] == keys
        for (_, m), ref in zip(items, (a, b), strict=False):
            np.testing.assert_array_equal(m, ref)

    check(read_logprobs(tmp_path / "one.npy"), ["one"])
    check(read_logprobs(tmp_path / "batch.npy", lengths=[7, 5], keys=["u1", "u2"]), ["u1", "u2"])
    check(read_logprobs(tmp_path / "many.npz"), ["u1", "u2"])
    check(read_logprobs(tmp_path / "d.pt"), ["d-0", "d-1"])
    check(read_logprobs(tmp_path / "t.pt"), ["t"])
    check(read_logprobs(f"ark,t:{tmp_path / 'm.ark'}"), ["u1", "u2"])
    check(read_logprobs(f"ark:{tmp_path / 'bin.ark'}"), ["u1", "u2"])
    np.savetxt(tmp_path / "len.txt", [7, 5], fmt="%d")
    check(read_logprobs(tmp_path / "batch.npy", lengths=tmp_path / "len.txt"), ["batch-0", "batch-1"])


def test_logprob_errors(tmp_path):
    rng = np.random.default_rng(1)
    a = _lp(rng, 4)
    bad = a.copy()
    bad[2, 3] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    with pytest.raises(FormatError, match="NaN"):
        read_logprobs(tmp_path / "nan.npy")
    np.save(tmp_path / "b.npy", np.stack([a, a]))
    with pytest.raises(MismatchError, match="3 lengths for a batch of 2"):
        read_logprobs(tmp_path / "b.npy", lengths=[4, 4, 4])
    with pytest.raises(FormatError, match="length 9 outside 1..4"):
        read_logprobs(tmp_path / "b.npy", lengths=[4, 9])
    with pytest.raises(FormatError, match="no such file"):
        read_logprobs(tmp_path / "missing.npy")
    (tmp_path / "x.ark").write_text("u1  [\n 1 2\n 3\n ]\n")
    with pytest.raises(FormatError, match=r"x.ark \[u1\]: row 1 has 1 values, expected 2"):
        read_logprobs(f"ark,t:{tmp_path / 'x.ark'}")
    (tmp_path / "x.csv").write_text("1,2\n")
    with pytest.raises(FormatError, match="unknown log-probability format"):
        read_logprobs(tmp_path / "x.csv")


def test_too_few_logprob_columns_is_a_mismatch(graph_dir):
    rng = np.random.default_rng(2)
    with pytest.raises(MismatchError, match="needs at least 12 columns"):
        decode_ctc(graph_dir, [("u", _lp(rng, 10, v=8))])


# ---------------------------------------------------------------------------------------------
# Bad language inputs and grammars
# ---------------------------------------------------------------------------------------------
def test_lexicon_and_grammar_errors(fx, tmp_path):
    (tmp_path / "lex.txt").write_text("A AH\nBAD ZZ\n")
    with pytest.raises(SymbolError, match="token 'ZZ'"):
        prepare_lang(fx / "tokens.txt", tmp_path / "lex.txt")
    (tmp_path / "lex2.txt").write_text("A AH\nLONELY\n")
    with pytest.raises(FormatError, match=r"lex2.txt:2: expected 'word token"):
        read_lexicon(tmp_path / "lex2.txt")
    words = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt").words
    (tmp_path / "g.txt").write_text("0 1 A A 1.0\n1 2 NOPE NOPE\n2\n")
    with pytest.raises(SymbolError, match=r"g.txt:2: label 'NOPE'"):
        read_grammar(tmp_path / "g.txt", words)
    (tmp_path / "g2.txt").write_text("0 1 1 1 1.0\n1 2 3\n")
    with pytest.raises(FormatError, match=r"g2.txt:2: expected 'src dst ilabel olabel \[cost\]'"):
        read_grammar(tmp_path / "g2.txt", words)
    (tmp_path / "g3.txt").write_text("0 1 1 1 x\n1\n")
    with pytest.raises(FormatError, match=r"g3.txt:1: expected a cost"):
        read_grammar(tmp_path / "g3.txt", words)
    with pytest.raises(LatticeToolsError, match="unknown graph backend"):
        build_graph(fx / "tokens.txt", fx / "lexicon.txt", out=tmp_path / "o", backend="openfst")


def test_symbolic_grammar_equals_numeric(fx, tmp_path):
    words = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt").words
    lines = []
    for line in (fx / "G.fst.txt").read_text().splitlines():
        p = line.split()
        if len(p) == 5:
            p[2], p[3] = words.word(int(p[2])), words.word(int(p[3]))
        lines.append(" ".join(p))
    (tmp_path / "Gsym.txt").write_text("\n".join(lines) + "\n")
    a, b = read_grammar(fx / "G.fst.txt", words), read_grammar(tmp_path / "Gsym.txt", words)
    for name in ("src", "dst", "ilabel", "olabel", "weight", "final"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_arpa_lm_through_kaldilm(fx, tmp_path):
    pytest.importorskip("kaldilm", reason="kaldilm (PyPI) converts ARPA LMs")
    arpa = """\\data\\
ngram 1=6
ngram 2=3

\\1-grams:
-0.30103 </s>
-99 <s> -0.30103
-0.60206 THE -0.17609
-0.60206 DEAN -0.30103
-0.90309 RED -0.30103
-0.90309 SAND -0.30103

\\2-grams:
-0.09691 <s> THE
-0.04576 THE DEAN
-0.30103 RED SAND

\\end\\
"""
    (tmp_path / "lm.arpa").write_text(arpa)
    words = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt").words
    g = read_grammar(tmp_path / "lm.arpa", words)
    dean = words.id("DEAN")
    # the bigram THE DEAN costs -ln(10^-0.04576)
    arc = np.nonzero((g.ilabel == dean) & (g.olabel == dean) & (np.abs(g.weight - 0.04576 * np.log(10)) < 1e-5))[0]
    assert len(arc) == 1
    assert np.any(g.ilabel == words.id("#0")) and not np.any(g.olabel == words.id("#0"))
    out = build_graph(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt", lm=tmp_path / "lm.arpa",
                      out=tmp_path / "g")
    lp = __import__("torch").load(fx / "nnet_output.pt")["nnet_output"][2, :25].numpy()
    lat = decode_ctc(out.parent, [("u", lp)])[0]
    assert lat.words(best_path(lat)) == ["THE", "DEAN"]


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def test_cli_build_graph_and_decode(fx, tmp_path):
    from lattice_tools.cli import main
    from lattice_tools.io import read_lattices

    runner = CliRunner()
    r = runner.invoke(main, ["build-graph", "--tokens", str(fx / "tokens.txt"), "--lexicon", str(fx / "lexicon.txt"),
                             "--words", str(fx / "words.txt"), "--lm", str(fx / "G.fst.txt"), "-o", str(tmp_path / "g")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["decode-ctc", "--graph", str(tmp_path / "g"), "--logprobs", str(fx / "nnet_output.pt"),
                             "-o", f"ark,t:{tmp_path / 'lats.ark'}"])
    assert r.exit_code == 0, r.output
    lats = list(read_lattices(f"ark:{tmp_path / 'lats.ark'}", symbols=tmp_path / "g" / "words.txt"))
    assert [" ".join(lat.words(best_path(lat))) for lat in lats] == SPOKEN
    r = runner.invoke(main, ["decode-ctc", "--graph", str(tmp_path / "g"), "--logprobs", str(tmp_path / "nope.npy"),
                             "-o", f"ark,t:{tmp_path / 'x.ark'}"])
    assert r.exit_code == 2 and "nope.npy: no such file" in r.output and "Traceback" not in r.output
    r = runner.invoke(main, ["decode-ctc", "--graph", str(tmp_path / "g"), "--logprobs", str(fx / "nnet_output.pt"),
                             "--max-active", "7", "-o", f"ark,t:{tmp_path / 'x.ark'}"])
    assert r.exit_code == 2 and "max-active" in r.output


def test_k2_backend_without_k2_is_a_clear_error(fx, monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "k2", None)
    from lattice_tools.core.errors import MissingDependencyError

    with pytest.raises(MissingDependencyError, match="k2"):
        decode_ctc(fx / "HLG.pt", fx / "nnet_output.pt", backend="k2", words=fx / "words.txt")
    with pytest.raises(MissingDependencyError, match="k2"):
        build_graph(fx / "tokens.txt", fx / "lexicon.txt", out=tmp_path / "g", backend="k2")
    from lattice_tools.interop.k2 import from_k2, to_k2

    with pytest.raises(MissingDependencyError, match="docs/k2-and-ctc.md"):
        from_k2(object())
    with pytest.raises(MissingDependencyError, match="k2"):
        to_k2([])
