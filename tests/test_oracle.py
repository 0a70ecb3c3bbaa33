"""Exact oracle: brute force on random lattices, kaldialign, k2 fixtures, sclite semantics, invariants."""
from __future__ import annotations

import json

import numpy as np
import pytest
from _oracle_helpers import (
    enumerate_paths,
    network_align_cost,
    random_lattice,
    random_reference,
    word_cost_levenshtein,
    word_cost_sclite,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.oracle import (
    LEVENSHTEIN_ORACLE_COSTS,
    SCLITE_ORACLE_COSTS,
    alternatives_oracle,
    lattice_oracle,
    sequence_oracle,
)


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(2, 7), extra=st.integers(0, 9),
       ref_len=st.integers(0, 5), mode=st.sampled_from(["sclite", "levenshtein"]))
def test_lattice_oracle_equals_brute_force(seed, n_states, extra, ref_len, mode):
    rng = np.random.default_rng(seed)
    lat = random_lattice(rng, n_states, extra)
    net, arcs = random_reference(rng, ref_len)
    cost = word_cost_sclite if mode == "sclite" else word_cost_levenshtein
    costs = SCLITE_ORACLE_COSTS if mode == "sclite" else LEVENSHTEIN_ORACLE_COSTS
    paths = enumerate_paths(lat)
    best = min(network_align_cost(p, net.num_states, arcs, cost) for p in paths)
    res = lattice_oracle(lat, net, mode=mode, optional_deletable=True)
    assert round(res.cost * costs.scale) == best
    # The reported path is a real lattice path whose own alignment cost is the optimum.
    assert tuple(w.lower() for w in res.words) in {tuple(p) for p in paths}
    assert network_align_cost(list(res.words), net.num_states, arcs, cost) == best
    c = res.counts
    assert c.correct + c.substitutions + c.deletions == c.ref_words
    if mode == "levenshtein":
        assert c.errors == best


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_states=st.integers(2, 8), extra=st.integers(0, 10),
       ref_len=st.integers(0, 7))
def test_levenshtein_oracle_equals_kaldialign_minimum(seed, n_states, extra, ref_len):
    kaldialign = pytest.importorskip("kaldialign")
    rng = np.random.default_rng(seed)
    lat = random_lattice(rng, n_states, extra)
    ref = [str(x) for x in rng.choice(["a", "b", "c", "d", "e"], size=ref_len)]
    best = min(kaldialign.edit_distance(ref, list(p))["total"] for p in enumerate_paths(lat))
    res = lattice_oracle(lat, ref, mode="levenshtein")
    assert res.counts.errors == best
    assert res.counts.ref_words == ref_len


def test_k2_fixture_levenshtein_distances(test_data_dir):
    """hlg utt0: plain-Levenshtein distance of each listed top-5 sequence = k2.levenshtein_alignment."""
    exp = json.loads((test_data_dir / "k2-fixtures" / "expected.json").read_text())
    utt = exp["files"]["hlg_lattice.pt"]["utterances"][0]
    ref = utt["levenshtein"]["reference_symbols"]
    seqs = [e["symbols"] for e in utt["nbest"]["entries"]]
    got = [sequence_oracle(s, ref, mode="levenshtein").cost for s in seqs]
    assert got == utt["levenshtein"]["distances"] == [0, 1, 2, 1, 2]
    # The same five as one N-best block: the oracle picks the exact match, and the N=k oracle is
    # the running minimum of the k2 distances.
    alts = Alternatives("utt0", (Slot(0.0, 1.0, tuple(Alternative(tuple(s)) for s in seqs)),), kind="nbest")
    for k in range(1, 6):
        assert alternatives_oracle(alts, ref, n=k, mode="levenshtein").cost == min(utt["levenshtein"]["distances"][:k])


def test_k2_lattice_oracle(test_data_dir):
    """Whole k2 lattices (frame-level, dead ends, 2-word arcs): the spoken words are in every lattice."""
    k2file = pytest.importorskip("lattice_tools.io.lattices.k2file")
    exp = json.loads((test_data_dir / "k2-fixtures" / "expected.json").read_text())
    lats = list(k2file.read_k2_lattices(str(test_data_dir / "k2-fixtures" / "hlg_lattice.pt"),
                                        symbols=str(test_data_dir / "k2-fixtures" / "words.txt")))
    assert len(lats) == 3
    for lat, utt in zip(lats, exp["files"]["hlg_lattice.pt"]["utterances"], strict=False):
        spoken = utt["spoken_words"].split() if isinstance(utt["spoken_words"], str) else utt["spoken_words"]
        res = lattice_oracle(lat, spoken, mode="levenshtein")
        assert res.key == lat.key and res.counts.errors == 0
        assert [w.upper() for w in res.words] == [w.upper() for w in spoken]
        # against a reference that is not in the lattice: at least one error, never more than the 1-best's
        best = utt["best_path"]["symbols"]
        wrong = list(spoken) + ["SEA"]
        assert 1 <= lattice_oracle(lat, wrong, mode="levenshtein").counts.errors <= \
            sequence_oracle(best, wrong, mode="levenshtein").counts.errors


def test_sclite_semantics_alternations_optional_null():
    ref = "{ i'm / i am } going (uh) { to / @ } town"
    r = sequence_oracle("i am going town".split(), ref, optional_deletable=True)
    assert (r.counts.correct, r.counts.errors, r.counts.ref_words) == (5, 0, 5)  # (uh) optionally deleted
    assert r.counts.optional_deleted == 1
    r = sequence_oracle("i'm going to town".split(), ref, optional_deletable=True)
    assert (r.counts.correct, r.counts.errors, r.counts.ref_words) == (5, 0, 5)
    # without -D sclite keeps the parentheses: "(uh)" only matches "(uh)"
    r = sequence_oracle("i'm going uh town".split(), ref, optional_deletable=False)
    assert (r.counts.substitutions, r.counts.errors, r.counts.ref_words) == (1, 1, 4)
    r = sequence_oracle("i'm going town".split(), ref, optional_deletable=False)
    assert (r.counts.deletions, r.counts.ref_words) == (1, 4)
    # sclite weights: 5 insertions (cost 15) beat 4 substitutions (cost 16), Levenshtein the other way.
    x, y = tuple("wxyz"), tuple("abcd") + tuple("vwxyz")
    alts = Alternatives("u", (Slot(0, 1, (Alternative(x), Alternative(y))),), kind="nbest")
    r = alternatives_oracle(alts, list("abcd"), mode="sclite")
    assert (r.words, r.cost, r.counts.insertions, r.counts.errors) == (y, 15.0, 5, 5)
    r = alternatives_oracle(alts, list("abcd"), mode="levenshtein")
    assert (r.words, r.cost, r.counts.substitutions, r.counts.errors) == (x, 4, 4, 4)


def test_case_and_fillers_in_lattices():
    from lattice_tools.core.lattice import Lattice
    from lattice_tools.core.symbols import SymbolTable

    syms = SymbolTable.from_words(["<s>", "</s>", "<sil>", "HELLO", "World", "[NOISE]", "<unk>"])
    ids = [syms.id(w) for w in ["<s>", "HELLO", "<sil>", "[NOISE]", "World", "</s>"]]
    lat = Lattice.from_arcs(src=range(6), dst=range(1, 7), word=ids, symbols=syms,
                            final_graph_cost=[np.inf] * 6 + [0.0], t0=range(0, 60, 10), t1=range(10, 70, 10))
    r = lattice_oracle(lat, "hello world")
    assert r.counts.errors == 0 and r.words == ("HELLO", "World")
    assert r.starts == pytest.approx((0.1, 0.4)) and r.durations == pytest.approx((0.1, 0.1))
    r = lattice_oracle(lat, "hello world", case_sensitive=True)
    assert r.counts.errors == 2


def test_empty_alternative_is_scored_as_null_word():
    """An empty branch of an ALT block is sclite's '@': skipped at 0.001, never paired with a word."""
    alts = Alternatives("u", (Slot(0, 1, (Alternative(("x",)), Alternative(()))),
                              Slot(1, 2, (Alternative(("b",)),))), kind="phrase")
    r = alternatives_oracle(alts, "a b")
    # x/a substitution costs 4; skipping '@' and deleting a costs 3.001: sclite picks the empty branch.
    assert (r.counts.deletions, r.counts.substitutions, r.cost) == (1, 0, 3.001)
    r = alternatives_oracle(alts, "a b", mode="levenshtein")
    assert r.counts.errors == 1


@pytest.mark.sclite
@pytest.mark.parametrize("optional_deletable", [False, True])
def test_altctm_oracle_equals_debian_sclite(tmp_path, optional_deletable):
    """Random STM + alt-CTM files (ALT blocks with empty branches, optional words, 3 segments):
    the oracle totals equal Debian sclite's, and the exact DP's optimum equals the cost of the
    sclite-tie alignment the counts come from."""
    from _oracle_helpers import random_stm_altctm, run_sclite
    from conftest import SCLITE

    from lattice_tools.core.counts import ErrorCounts
    from lattice_tools.io.transcripts.ctm import read_ctm
    from lattice_tools.oracle.dp import oracle_graph
    from lattice_tools.oracle.graphs import hyp_graph_from_network
    from lattice_tools.oracle.representations import ctm_oracle
    from lattice_tools.scoring.align import AlignOptions, align_networks
    from lattice_tools.scoring.network import from_ctm_items, parse_transcript

    if SCLITE is None:
        pytest.skip("Debian sclite is not installed")
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        stm, ctm = random_stm_altctm(rng, 3)
        (tmp_path / "r.stm").write_text(stm)
        (tmp_path / "h.ctm").write_text(ctm)
        want = run_sclite(SCLITE, str(tmp_path / "r.stm"), str(tmp_path / "h.ctm"), optional_deletable)
        got = ErrorCounts.sum(r.counts for r in ctm_oracle(str(tmp_path / "h.ctm"), str(tmp_path / "r.stm"),
                                                            optional_deletable=optional_deletable))
        assert (got.ref_words, got.correct, got.substitutions, got.deletions, got.insertions) == want, seed
    # Optimal costs: exact integer DP == sclite-style float32 DP of the scorer, segment by segment
    # (the last file of the loop; all of its CTM items against each segment's reference).
    items = read_ctm(str(tmp_path / "h.ctm"))
    for line in stm.splitlines():
        text = line.split(None, 5)[5]
        ref = parse_transcript(text)
        net = from_ctm_items(list(items))
        mine = oracle_graph(hyp_graph_from_network(net), ref, optional_deletable=optional_deletable).cost
        theirs = align_networks(ref, net, AlignOptions("sclite", optional_deletable=optional_deletable)).cost
        assert mine == pytest.approx(theirs, abs=1e-3)


@pytest.mark.sclite
def test_alternatives_written_as_altctm_score_like_sclite(tmp_path):
    """Alternatives -> alt-CTM (the toolkit's writer) -> Debian sclite equals alternatives_oracle."""
    from _oracle_helpers import run_sclite
    from conftest import SCLITE

    if SCLITE is None:
        pytest.skip("Debian sclite is not installed")
    altctm = pytest.importorskip("lattice_tools.io.transcripts.altctm")
    rng = np.random.default_rng(7)
    words = ["a", "b", "c", "d", "e"]
    alts_list, stm_lines = [], []
    for u in range(12):
        slots = []
        t = 10.0 * u + 0.5
        for _ in range(int(rng.integers(1, 5))):
            k = int(rng.integers(1, 4))
            alts = []
            for _ in range(k):
                m = int(rng.integers(0 if k > 1 else 1, 4))
                seq = tuple(words[int(rng.integers(0, 5))] for _ in range(m))
                alts.append(Alternative(seq, tuple(t + 0.3 * i for i in range(m)), (0.2,) * m, 1.0 / k))
            slots.append(Slot(t, t + 1.0, tuple(alts)))
            t += 1.5
        alts_list.append(Alternatives(f"u{u}", tuple(slots), kind="phrase", file="f1", channel="A"))
        ref = " ".join(words[int(rng.integers(0, 5))] for _ in range(int(rng.integers(1, 6))))
        stm_lines.append(f"f1 A spk {10.0 * u:.2f} {10.0 * u + 10:.2f} {ref}")
    (tmp_path / "r.stm").write_text("\n".join(stm_lines) + "\n")
    altctm.write_alternatives_ctm(str(tmp_path / "h.ctm"), alts_list)
    want = run_sclite(SCLITE, str(tmp_path / "r.stm"), str(tmp_path / "h.ctm"))
    from lattice_tools.core.counts import ErrorCounts
    got = ErrorCounts.sum(alternatives_oracle(a, line.split(None, 5)[5], optional_deletable=False).counts
                          for a, line in zip(alts_list, stm_lines, strict=False))
    assert (got.ref_words, got.correct, got.substitutions, got.deletions, got.insertions) == want


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), mode=st.sampled_from(["sclite", "levenshtein"]), D=st.booleans())
def test_batched_nbest_path_equals_network_dp(seed, mode, D):
    """The vectorized N-best path (linear references, one multi-alternative slot) gives the network
    DP's optimal cost and -- in sclite mode, where both use sclite's tie rules -- the same counts."""
    from lattice_tools.oracle.api import alternatives_oracle_many, network_alternatives_oracle

    rng = np.random.default_rng(seed)
    V = list("abcdef")
    alts_list, refs = [], []
    for u in range(8):
        def alt(m):
            return Alternative(tuple(V[int(rng.integers(0, 6))] for _ in range(m)))
        pre = [Slot(0, 1, (alt(1),)) for _ in range(int(rng.integers(0, 3)))]
        blk = Slot(1, 2, tuple(alt(int(rng.integers(0, 5))) for _ in range(int(rng.integers(1, 7)))))
        post = [Slot(2, 3, (alt(1),)) for _ in range(int(rng.integers(0, 3)))]
        alts_list.append(Alternatives(f"u{u}", tuple(pre + [blk] + post), kind="nbest"))
        refs.append(" ".join(f"({w})" if rng.random() < 0.2 else w
                             for w in (V[int(rng.integers(0, 6))] for _ in range(int(rng.integers(0, 6))))))
    many = alternatives_oracle_many(alts_list, refs, mode=mode, optional_deletable=D)
    for a, r, m in zip(alts_list, refs, many, strict=False):
        net = network_alternatives_oracle(a, r, mode=mode, optional_deletable=D)
        assert m.key == a.key and m.cost == pytest.approx(net.cost)
        if mode == "sclite":
            assert m.counts == net.counts


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), D=st.booleans())
def test_cutting_large_networks_to_optimal_branches_keeps_sclite_choice(seed, D):
    """Large alternatives networks are cut to the branches on some optimal path before the
    sclite-exact scorer picks among ties: same counts as scoring the whole network."""
    from lattice_tools.oracle.api import network_alternatives_oracle

    rng = np.random.default_rng(seed)
    V = list("abcde")
    slots = []
    for k in range(int(rng.integers(1, 5))):
        m = int(rng.integers(1, 5))
        slots.append(Slot(k, k + 1, tuple(Alternative(tuple(V[int(rng.integers(0, 5))]
                                                            for _ in range(int(rng.integers(0 if m > 1 else 1, 4)))))
                                          for _ in range(m))))
    alts = Alternatives("u", tuple(slots), kind="phrase")
    ref = " ".join(f"({w})" if rng.random() < 0.2 else w
                   for w in (V[int(rng.integers(0, 5))] for _ in range(int(rng.integers(0, 7)))))
    if rng.random() < 0.3:
        ref = "{ a b / c / @ } " + ref
    whole = network_alternatives_oracle(alts, ref, optional_deletable=D, scorer_direct_arcs=10**9)
    cut = network_alternatives_oracle(alts, ref, optional_deletable=D, scorer_direct_arcs=0)
    assert cut.counts == whole.counts and cut.cost == pytest.approx(whole.cost)


def test_package_exports_are_static_and_distinct_from_the_scorers():
    """Every name of the literal ``__all__`` resolves; no submodule is shadowed by the function
    ``lattice_oracle``; the oracle's cost models and alignment steps do not reuse the scorer's
    names (``scoring.align.SCLITE_COSTS`` / ``AlignedPair`` are different types)."""
    import importlib
    import subprocess
    import sys

    import lattice_tools.oracle as oracle

    for name in oracle.__all__:
        assert getattr(oracle, name) is not None, name
    assert callable(oracle.lattice_oracle)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("lattice_tools.oracle.lattice_oracle")
    assert not hasattr(oracle, "AlignedPair") and not hasattr(oracle, "SCLITE_COSTS")
    assert oracle.SCLITE_ORACLE_COSTS.scale == 1000 and isinstance(oracle.SCLITE_ORACLE_COSTS, oracle.OracleCosts)
    # the oracle's import stays clear of the alternatives package: oracle-path imports what it runs
    code = ("import sys; from lattice_tools.oracle import lattice_oracle; "
            "print(sorted(m for m in sys.modules if m.startswith('lattice_tools.alternatives')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
