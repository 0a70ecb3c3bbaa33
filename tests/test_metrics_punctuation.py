"""Punctuation- and case-aware scoring (Kuhn et al., Beyond Levenshtein): lexer, non-destructive normalizers, extended Levenshtein costs, classes, SER/F1."""
# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import functools

import pytest

from lattice_tools.metrics.punctuation import classify, extended_align, f1, lex, score_orthography, ser, tokenize


def _route(ref, hyp, **kw):
    return score_orthography(ref, hyp, **kw)


def test_lexer_keeps_raw_text_and_splits_punctuation():
    toks = lex('"Hello," said Mrs. Jones -- it costs 3.14 dollars [noise] in the U.S.')
    assert "".join(t.prefix + t.raw + t.suffix for t in toks) == '"Hello," said Mrs. Jones -- it costs 3.14 dollars [noise] in the U.S.'
    kinds = [(t.kind, t.raw) for t in toks]
    assert ("punct", ",") in kinds and ("word", "Mrs.") in kinds and ("number", "3.14") in kinds
    assert ("annotation", "[noise]") in kinds and ("word", "U.S.") in kinds
    assert lex("5% of $20")[1].kind == "symbol"


def test_normalizers_record_changes():
    toks = tokenize("Mr. Smith won't pay $2,000 for the colour, um, café [laughs]")
    vals = [t.value for t in toks]
    assert vals[:5] == ["Mister", "Smith", "will", "not", "pay"]
    assert "2000" in vals and "dollars" in vals and "color" in vals and "cafe" in vals
    assert "um" not in vals and not any(t.kind == "annotation" for t in toks)
    names = {n for t in toks for n in t.normalizations}
    assert names == {"abbreviation", "contraction", "number", "currency", "spelling", "diacritics"}
    # raw text is kept
    assert [t.raw for t in toks if "contraction" in t.normalizations] == ["won't", "won't"]
    # number words and digits meet
    assert [t.value for t in tokenize("two thousand dollars")] == ["2000", "dollars"]
    assert [t.value for t in tokenize("twenty five percent")] == ["25", "percent"]
    assert [t.value for t in tokenize("25%")] == ["25", "percent"]
    assert [t.value for t in tokenize("one hundred and five")] == ["105"]


def test_compound_words():
    c, route = _route("I like ice cream", "I like icecream")
    assert [e.op for e in route] == ["ok", "ok", "compound"]
    assert c.words.errors == 0 and c.words.ref_words == 4 and c.cost == 0
    c, route = _route("I like icecream", "I like ice-cream")
    assert route[-1].op == "compound" and c.cost == 0
    c, route = _route("a long way", "along way")          # the seed's false positive
    assert route[0].op == "compound"
    # compounds are not recognised across punctuation
    c, route = _route("ice, cream", "icecream")
    assert all(e.op != "compound" for e in route)


def test_costs_word_punct_substitution_is_two():
    # removing a comma and inserting a word (0.5 + 1) beats substituting the comma (2)
    c, route = _route("a , b", "a x b")
    assert [e.op for e in route] == ["ok", "ins", "del", "ok"] or [e.op for e in route] == ["ok", "del", "ins", "ok"]
    assert c.cost == 1.5
    # with a forced cross substitution the cost is 2 (one ref punct vs one hyp word, nothing else)
    cost, route = extended_align(lex(","), lex("x"))
    assert cost == 1.5   # del 0.5 + ins 1 is still cheaper than sub 2
    cost, route = extended_align(lex(", ,"), lex("x"))
    assert cost == 2.0 and {e.op for e in route} in ({"del", "sub"}, {"del", "ins"})


def test_costs_case_and_punctuation():
    c, route = _route("Hello world", "hello world")
    assert c.cost == 0.5 and route[0].cls == "capitalisation"
    assert c.words.errors == 0                      # case-only is not a word error
    assert (c.capitalisation.deletions, c.capitalisation.correct) == (1, 0)
    c, route = _route("yes.", "yes?")
    assert c.cost == 0.5 and route[1].cls == "punctuation" and c.punctuation.substitutions == 1
    c, route = _route("yes.", "yes")
    assert c.cost == 0.5 and c.punctuation.deletions == 1
    c, route = _route("yes", "yes!")
    assert c.cost == 0.5 and c.punctuation.insertions == 1
    c, route = _route("cat", "dog")
    assert c.cost == 1.0 and c.words.substitutions == 1


def test_every_substitution_class():
    from lattice_tools.metrics.punctuation import Token

    def w(v, kind="word"):
        return Token(kind, v, v)

    assert classify(w("."), w(",", "punct")) == "word_punctuation"
    assert classify(w(".", "punct"), w(",", "punct")) == "punctuation"
    assert classify(w("Paris"), w("paris")) == "capitalisation"
    assert classify(w("ice-cream"), w("icecream")) == "compound"
    assert classify(w("2000", "number"), w("200", "number")) == "number"
    assert classify(w("running"), w("run")) == "prefix"
    assert classify(w("unhappy"), w("happy")) == "suffix"
    assert classify(w("unhappily"), w("happi")) == "affix"
    assert classify(w("studies"), w("studying")) == "stem"
    assert classify(w("there"), w("their")) == "homophone"
    assert classify(w("cat"), w("dog")) == "word"


def test_ser_and_f1_formulas():
    from lattice_tools.core.counts import ErrorCounts

    c = ErrorCounts(correct=6, substitutions=1, deletions=2, insertions=3, ref_words=9)
    assert ser(c) == pytest.approx((1 + 2 + 3) / 9)
    assert f1(c) == pytest.approx(12 / (12 + 2 + 2 + 3))
    assert ser(ErrorCounts()) is None and f1(ErrorCounts()) is None


def test_full_example_counts():
    c, route = _route("Hello, Mr. Smith. I like ice cream!", "hello mister smith, i like icecream")
    # words: all correct (case-only, abbreviation, compound)
    assert c.words.errors == 0
    # punctuation: ref , . ! ; hyp ,  -> the hyp comma aligns to one ref mark
    assert c.punctuation.ref_words == 3
    assert c.punctuation.errors == 3 - c.punctuation.correct + c.punctuation.insertions
    # capitalisation: Hello, Mister, Smith, I all lower-cased
    assert c.capitalisation.deletions == 4 and c.capitalisation.correct == 0
    assert dict(c.normalizations)["abbreviation"] == 1
    total = c + c
    assert total.words.ref_words == 2 * c.words.ref_words


def _brute_cost(ref, hyp):
    """Kuhn et al. (Beyond Levenshtein), eq. (1)-(3) evaluated literally (all compound slices x, y; K = infinity)."""

    P = set(".,!?;:")

    def c1(t):
        return 0.5 if t.value in P else 1.0

    def c2(a, b):
        if (a.value in P) != (b.value in P):
            return 2.0
        if a.value in P and b.value in P:
            return 0.5
        if a.value.lower() == b.value.lower():
            return 0.5
        return 1.0

    def key(ts):
        if any(t.kind not in ("word", "number") for t in ts):
            return None
        return "".join(t.value.replace("-", "") for t in ts)

    @functools.cache
    def d(i, j):
        if i == 0 and j == 0:
            return 0.0
        best = float("inf")
        if i > 0 and j > 0:
            best = min(best, d(i - 1, j - 1) + (0.0 if ref[i - 1].value == hyp[j - 1].value else c2(ref[i - 1], hyp[j - 1])))
            for x in range(1, i + 1):
                for y in range(1, j + 1):
                    kr, kh = key(ref[i - x:i]), key(hyp[j - y:j])
                    if kr is not None and kr == kh:
                        best = min(best, d(i - x, j - y))
        if i > 0:
            best = min(best, d(i - 1, j) + c1(ref[i - 1]))
        if j > 0:
            best = min(best, d(i, j - 1) + c1(hyp[j - 1]))
        return best

    return d(len(ref), len(hyp))


def test_extended_levenshtein_equals_literal_recursion():
    import random

    rng = random.Random(11)
    vocab = ["ice", "cream", "icecream", "ice-cream", "a", "long", "along", "Ice", ",", ".", "?", "b", "ab", "B"]
    for _ in range(250):
        r = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 6)))
        h = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 6)))
        ref, hyp = lex(r), lex(h)
        cost, route = extended_align(ref, hyp)
        assert cost == _brute_cost(tuple(ref), tuple(hyp)), (r, h)
        # the route consumes both sides in order
        assert [t for e in route for t in e.ref] == ref and [t for e in route for t in e.hyp] == hyp


def test_substitution_cost_table():
    import numpy as np
    from _reference.orthography import _sub_costs

    from lattice_tools.metrics.orthography_rules import SUB_CASE, SUB_CROSS, SUB_PUNCT, SUB_WORD

    hyp = lex("x , Word word")
    vals = np.array([t.value for t in hyp], dtype=object)
    low = np.array([t.value.lower() for t in hyp], dtype=object)
    punct = np.array([t.is_punct for t in hyp])
    # doubled units: word 1 -> 2, case-only 0.5 -> 1, punct-punct 0.5 -> 1, word<->punct 2 -> 4
    assert list(_sub_costs(lex("word")[0], vals, low, punct)) == [SUB_WORD, SUB_CROSS, SUB_CASE, 0]
    assert list(_sub_costs(lex(".")[0], vals, low, punct)) == [SUB_CROSS, SUB_PUNCT, SUB_CROSS, SUB_CROSS]
    assert (SUB_WORD, SUB_CASE, SUB_PUNCT, SUB_CROSS) == (2, 1, 1, 4)


def test_indic_words_keep_their_marks_and_danda_is_punctuation():
    toks = lex("किताब पढ़ो। தமிழ் മലയാളം")
    assert [(t.kind, t.raw) for t in toks] == [("word", "किताब"), ("word", "पढ़ो"), ("punct", "।"),
                                               ("word", "தமிழ்"), ("word", "മലയാളം")]
    c, route = score_orthography("मैं किताब पढ़ रहा हूँ।", "मैं कीताब पढ रहा हूँ")
    assert (c.words.substitutions, c.words.ref_words) == (2, 5)
    assert c.punctuation.deletions == 1
    # "no." at a sentence end is not the abbreviation of "number"
    assert [t.value for t in tokenize("I said no.")] == ["I", "said", "no", "."]
