"""NE-WER (fuzzy, tolerance ceil(n/2)-1) and NE-FNR (exact) on hand-built cases and brute force."""
# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import random

import pytest
from _metrics_helpers import brute_edit_distance, brute_substring_distance

from lattice_tools.metrics.entities import best_substring_match, fuzzy_tolerance, score_entities, score_entity


def test_tolerance_values():
    assert [fuzzy_tolerance(n) for n in range(1, 8)] == [0, 0, 1, 1, 2, 2, 3]


def test_substring_match_equals_brute_force():
    rng = random.Random(3)
    for _ in range(400):
        ent = [rng.choice("abc") for _ in range(rng.randint(1, 4))]
        hyp = [rng.choice("abcd") for _ in range(rng.randint(0, 8))]
        d, s, e = best_substring_match(ent, hyp)
        assert d == brute_substring_distance(ent, hyp)
        assert 0 <= s <= e <= len(hyp)
        assert brute_edit_distance(ent, hyp[s:e]) == d


def test_seed_example_two_wrong_words_of_five_still_match():
    ent = "the united states of america".split()
    hyp = "he lives in the united state off america now".split()
    r = score_entity(ent, hyp)
    assert r.tolerance == 2 and r.distance == 2 and r.span is not None
    assert (r.counts.substitutions, r.counts.deletions, r.counts.insertions) == (2, 0, 0)
    assert not r.exact


@pytest.mark.parametrize("n,wrong,matched", [
    (1, 1, False), (2, 1, False),           # tolerance 0
    (3, 1, True), (3, 2, False),            # tolerance 1
    (4, 1, True), (4, 2, False),
    (5, 2, True), (5, 3, False),            # tolerance 2 (the seed's example)
    (6, 2, True), (6, 3, False),
])
def test_tolerance_edges(n, wrong, matched):
    ent = [f"w{i}" for i in range(n)]
    hyp = ["x"] + [f"z{i}" if i < wrong else w for i, w in enumerate(ent)] + ["y"]
    r = score_entity(ent, hyp)
    assert (r.span is not None) is matched
    if matched:
        assert r.counts.errors == wrong
    else:
        assert r.counts.deletions == n and r.counts.errors == n   # nothing extracted: all deleted


def test_ne_fnr_exact_and_ne_wer_totals():
    total, results = score_entities(["New York", "Barack Obama", "Paris"],
                                    "I flew from new york to paris with barak obama", normalizer=str.lower)
    assert [r.exact for r in results] == [True, False, True]
    assert total.ne_fnr == pytest.approx(1 / 3)
    # "barack obama" vs "barak obama": 2 words, tolerance 0 -> not matched, 2 deletions
    assert total.counts.errors == 2 and total.counts.ref_words == 5
    assert total.ne_wer == pytest.approx(2 / 5)


def test_spaceless_languages_use_characters():
    total, results = score_entities(["北京大学"], "我在北京大学读书", spaceless=True)
    assert results[0].exact and total.ne_fnr == 0.0
    total, results = score_entities(["北京大学"], "我在北经大学读书", spaceless=True)
    # 4 characters: tolerance 1, one wrong character -> fuzzy match with 1 substitution, exact miss
    assert not results[0].exact and results[0].span is not None
    assert total.counts.substitutions == 1 and total.ne_fnr == 1.0


def test_indic_entity():
    total, results = score_entities(["राम प्रसाद"], "कल राम प्रसाद आए")
    assert results[0].exact and total.ne_wer == 0.0


@pytest.mark.parametrize("entity,hyp,exact,errors", [
    ("চেন্নাই এক্সপ্রেস", "আমি চেন্নাই এক্সপ্রেস দেখেছি", True, 0),          # Bengali, exact
    ("চেন্নাই এক্সপ্রেস", "আমি চেন্নাই এক্সপ্রেছ দেখেছি", False, 2),        # 2 words, tolerance 0: missed
    ("சென்னை மத்திய ரயில் நிலையம்", "நான் சென்னை மத்திய ரயில் நிலயம் போனேன்", False, 1),  # Tamil, 4 words, tol 1
    ("തിരുവനന്തപുരം", "ഞാൻ തിരുവനന്തപുരം പോയി", True, 0),                  # Malayalam, 1 word
    ("തിരുവനന്തപുരം", "ഞാൻ തിരുവനന്തപുറം പോയി", False, 1),                 # 1 word, tolerance 0: deleted
])
def test_indic_entities(entity, hyp, exact, errors):
    total, results = score_entities([entity], hyp)
    assert results[0].exact is exact
    assert total.counts.errors == errors


def test_trailing_nul_characters_are_compared_exactly():
    # numpy's fixed-width strings drop trailing NULs; the match must not ("a\0" is not "a")
    assert best_substring_match(["a\0"], ["x", "a\0", "y"]) == (0, 1, 2)
    assert best_substring_match(["a\0"], ["x", "a", "y"])[0] == 1
    assert best_substring_match(["a"], ["x", "a\0"])[0] == 1
