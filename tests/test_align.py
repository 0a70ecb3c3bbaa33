"""The alignment engine: vectorized batch engine == cell-by-cell transcription of sclite's DP,
Levenshtein mode == kaldialign (totals and S/D/I breakdown) and jiwer (totals), and the documented
cost/tie rules on small hand-made cases (each also checked against Debian sclite when installed)."""
from __future__ import annotations

import os
import random
import subprocess
import tempfile

import numpy as np
import pytest
from _scoring_helpers import SCLITE, random_ref_text
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.core.errors import FormatError
from lattice_tools.scoring.align import (
    AlignOptions,
    align_batch,
    align_networks,
    align_reference,
    align_words,
    words_equal,
)
from lattice_tools.scoring.network import linear_network, lower_case, parse_transcript, upper_case

ALL_OPTIONS = [AlignOptions(), AlignOptions(optional_deletable=True), AlignOptions(fragments=True),
               AlignOptions(optional_deletable=True, fragments=True), AlignOptions(mode="levenshtein"),
               AlignOptions(mode="levenshtein", optional_deletable=True)]


def _ops(ali):
    return [(p.op, p.ref, p.hyp) for p in ali.pairs]


# ---------------------------------------------------------------------------------------- networks
def test_parse_transcript_structure():
    net = parse_transcript("A b { c d / c / @ } (uh) pla- -ing x;tag y* \\;z")
    assert net.words == ("a", "b", "c", "d", "c", None, "uh", "pla-", "-ing", "x", "y", ";z")
    assert net.optional.tolist() == [False] * 6 + [True] + [False] * 5
    assert net.fragment.tolist()[7:9] == [True, True]
    assert np.all(net.src < net.dst) and net.num_states - 1 == net.final
    assert sorted(net.paths()) == sorted([("a", "b", "c", "d", "uh", "pla-", "-ing", "x", "y", ";z"),
                                          ("a", "b", "c", "uh", "pla-", "-ing", "x", "y", ";z"),
                                          ("a", "b", "uh", "pla-", "-ing", "x", "y", ";z")])
    # in-arcs of the join state are in listed order (sclite's tie rule depends on it)
    join = int(net.dst[3])
    assert net.in_arcs()[join] == [3, 4, 5]


def test_nested_alternations_and_empty_alternatives():
    net = parse_transcript("{ a { b / c } / / d } e")
    assert sorted(net.paths()) == [("a", "b", "e"), ("a", "c", "e"), ("d", "e")]
    assert parse_transcript("").num_arcs == 0
    assert parse_transcript("x IGNORE_TIME_SEGMENT_IN_SCORING").ignore
    for bad in ("a { b / c", "a b }", "{ / }", "a{b"):
        with pytest.raises(FormatError):
            parse_transcript(bad, where="ref.stm:3")


def test_case_folding_like_sclite():
    assert lower_case("ĠAB") == "Ġab"                        # default: ASCII only
    assert lower_case("IŞIK İz", "turkish") == "ışık iz"
    assert upper_case("ışık iz", "turkish") == "IŞIK İZ"
    assert lower_case("ЦІ", "ukrainian") == "ці"
    assert parse_transcript("ABC", case_sensitive=True).words == ("ABC",)


def test_network_text_round_trip():
    for text in ("a b { c d / c / @ } e", "{ a { b / c } / d } (x)", "a"):
        net = parse_transcript(text)
        assert sorted(parse_transcript(net.text()).paths()) == sorted(net.paths())


# ------------------------------------------------------------------------------- rules of sclite
def test_fragment_equality():
    assert words_equal("pla-", True, "plane", False)
    assert words_equal("plane", False, "-ane", True)
    assert not words_equal("pla-", True, "plx", False)
    assert not words_equal("-abcd", True, "bcd", False)     # hyp shorter than the fragment
    assert not words_equal("pla-", False, "plane", False)   # without -F: plain strings


def test_substitution_wins_cost_ties():
    # ref "a b", hyp "c": del(a)+sub(b,c) = 7 = sub(a,c)+del(b).  In the last cell (b, c) the
    # substitution (3 + 4) ties the deletion (4 + 3) and sclite takes the substitution.
    ali = align_words(["a", "b"], ["c"])
    assert _ops(ali) == [("D", "a", None), ("S", "b", "c")]
    # Levenshtein mode uses Kaldi's rule instead (substitution only when strictly cheaper)
    ali = align_words(["a", "b"], ["c"], AlignOptions(mode="levenshtein"))
    assert _ops(ali) == [("S", "a", "c"), ("D", "b", None)]


def test_first_listed_alternative_wins():
    # "{ x / y }" against "z": both alternatives cost one substitution; the first is reported
    ali = align_networks(parse_transcript("{ x / y }"), parse_transcript("z"))
    assert _ops(ali) == [("S", "x", "z")]
    ali = align_networks(parse_transcript("{ y / x }"), parse_transcript("z"))
    assert _ops(ali) == [("S", "y", "z")]


def test_null_and_optional_costs():
    # '@' costs 0.001 and is never counted
    ali = align_networks(parse_transcript("a { b / @ } c"), parse_transcript("a c"))
    assert ali.counts.errors == 0 and ali.counts.ref_words == 2 and ali.cost == pytest.approx(0.001, abs=1e-6)
    # -D: an optional ref word left out is correct and stays in #Wrd
    od = AlignOptions(optional_deletable=True)
    ali = align_words(["b", "(c)", "d"], ["b", "d"], od)
    assert ali.counts.correct == 3 and ali.counts.ref_words == 3 and ali.counts.optional_deleted == 1
    # -D: an optional hyp word with nothing against it is correct and adds one to #Wrd
    ali = align_words(["b", "d"], ["b", "(c)", "d"], od)
    assert ali.counts.correct == 3 and ali.counts.ref_words == 3 and ali.counts.insertions == 0
    # without -D "(c)" is the literal word "(c)"
    ali = align_words(["b", "(c)", "d"], ["b", "c", "d"])
    assert _ops(ali)[1] == ("S", "(c)", "c")


def test_counts_invariants_random():
    rng = random.Random(3)
    for _ in range(200):
        r = parse_transcript(random_ref_text(rng, rng.randint(0, 8)))
        h = parse_transcript(random_ref_text(rng, rng.randint(0, 8)))
        for o in ALL_OPTIONS:
            c = align_networks(r, h, o).counts
            assert c.correct + c.substitutions + c.deletions == c.ref_words
            assert c.segments == 1 and c.segment_errors == (1 if c.errors else 0)


# ------------------------------------------------------------- vectorized engine == transcription
texts = st.builds(lambda seed, n: random_ref_text(random.Random(seed), n), st.integers(0, 10 ** 6), st.integers(0, 7))


@settings(max_examples=150, deadline=None)
@given(texts, texts, st.sampled_from(ALL_OPTIONS))
def test_vectorized_equals_reference(ref_text, hyp_text, options):
    r, h = parse_transcript(ref_text), parse_transcript(hyp_text)
    fast = align_networks(r, h, options)
    slow = align_reference(r, h, options)
    assert fast.pairs == slow.pairs
    assert fast.counts == slow.counts
    assert np.float32(fast.cost) == np.float32(slow.cost)


def test_batch_equals_one_by_one():
    rng = random.Random(11)
    refs = [parse_transcript(random_ref_text(rng, rng.randint(0, 12))) for _ in range(60)]
    hyps = [parse_transcript(random_ref_text(rng, rng.randint(0, 12))) for _ in range(60)]
    o = AlignOptions(optional_deletable=True, fragments=True)
    batched = align_batch(refs, hyps, o, max_cells=500)   # forces many small batches
    single = [align_networks(r, h, o) for r, h in zip(refs, hyps, strict=False)]
    assert [b.pairs for b in batched] == [s.pairs for s in single]


# ------------------------------------------------------------------------ Levenshtein == kaldialign
def test_levenshtein_equals_kaldialign_and_jiwer():
    kaldialign = pytest.importorskip("kaldialign")
    jiwer = pytest.importorskip("jiwer")
    rng = random.Random(5)
    o = AlignOptions(mode="levenshtein")
    for _ in range(1500):
        ref = [rng.choice("abcde") for _ in range(rng.randint(0, 10))]
        hyp = [rng.choice("abcde") for _ in range(rng.randint(0, 10))]
        c = align_words(ref, hyp, o).counts
        k = kaldialign.edit_distance(ref, hyp)
        assert (c.insertions, c.deletions, c.substitutions) == (k["ins"], k["del"], k["sub"])
        if ref:
            j = jiwer.process_words(" ".join(ref), " ".join(hyp))
            assert c.errors == j.insertions + j.deletions + j.substitutions
    assert linear_network(["a", "@", "b"]).words == ("a", None, "b")


# ------------------------------------------------------------------- hand cases vs Debian sclite
HAND_CASES = [("a b", "c"), ("{ x / y }", "z"), ("{ y / x }", "z"), ("a { b / @ } c", "a c"),
              ("b (c) d", "b d"), ("b d", "b (c) d"), ("b (c) d", "b c d"), ("pla- -ing", "plane going"),
              ("{ a b / a } c", "a c c"), ("a b c d", "b c d e")]


@pytest.mark.skipif(SCLITE is None, reason="Debian sclite not installed")
@pytest.mark.parametrize("flags", [[], ["-D"], ["-D", "-F"]])
def test_hand_cases_equal_sclite(flags):
    from _scoring_helpers import parse_pra

    from lattice_tools.scoring.reports import alignment_lines

    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "r.trn"), "w") as f:
            f.write("".join(f"{r} (s-{i})\n" for i, (r, _) in enumerate(HAND_CASES)))
        with open(os.path.join(tmp, "h.trn"), "w") as f:
            f.write("".join(f"{h} (s-{i})\n" for i, (_, h) in enumerate(HAND_CASES)))
        subprocess.run([SCLITE, "-r", f"{tmp}/r.trn", "trn", "-h", f"{tmp}/h.trn", "trn", "-i", "spu_id",
                        "-o", "pra", "-O", tmp, "-n", "out", *flags], check=True, capture_output=True)
        blocks = parse_pra(os.path.join(tmp, "out.pra"))
        o = AlignOptions(optional_deletable="-D" in flags, fragments="-F" in flags)
        for (r, h), b in zip(HAND_CASES, blocks, strict=False):
            ali = align_networks(parse_transcript(r), parse_transcript(h), o)
            assert alignment_lines(ali) == [b[k] for k in ("REF:", "HYP:", "Eval:")], (r, h)
