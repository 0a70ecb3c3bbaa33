"""Text units, normalizers and plain Levenshtein counts against jiwer and kaldialign."""
# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import jiwer
import kaldialign
import pytest
from _metrics_helpers import brute_edit_distance, random_pairs

from lattice_tools.metrics.levenshtein import align, error_counts
from lattice_tools.metrics.text import (
    BasicTextNormalizer,
    IndicNormalizer,
    PlainNormalizer,
    graphemes,
    normalize_language_code,
)


def test_word_counts_equal_jiwer_and_kaldialign():
    n_diff_jiwer = 0
    for ref, hyp in random_pairs(1500, seed=1):
        c = error_counts(ref, hyp)
        k = kaldialign.edit_distance(ref, hyp)
        j = jiwer.process_words(" ".join(ref), " ".join(hyp))
        assert c.errors == k["total"] == j.substitutions + j.deletions + j.insertions == brute_edit_distance(ref, hyp)
        # the S/D/I split is kaldialign's path exactly
        assert (c.substitutions, c.deletions, c.insertions) == (k["sub"], k["del"], k["ins"])
        assert c.correct + c.substitutions + c.deletions == len(ref) == c.ref_words
        n_diff_jiwer += (c.substitutions, c.deletions, c.insertions) != (j.substitutions, j.deletions, j.insertions)
        if (c.substitutions, c.deletions, c.insertions) == (j.substitutions, j.deletions, j.insertions):
            assert c.correct == j.hits
    # jiwer (rapidfuzz) breaks ties between equally short paths differently on some pairs
    assert n_diff_jiwer < 300


def test_char_counts_equal_jiwer_and_kaldialign():
    texts = [("the cat sat on the mat", "the cat sat on a mat"), ("hello world", "helo wurld"),
             ("abc", ""), ("speech recognition", "beach wreck a nation")]
    for ref, hyp in texts:
        r, h = graphemes(ref), graphemes(hyp)
        c = error_counts(r, h)
        assert c.errors == kaldialign.edit_distance(r, h)["total"]
        # jiwer's cer keeps spaces; compare on the same unit sequences (spaces removed)
        j = jiwer.process_words(" ".join(r) if r else "", " ".join(h))
        assert c.errors == j.substitutions + j.deletions + j.insertions
        assert jiwer.cer(ref.replace(" ", ""), hyp.replace(" ", "")) == pytest.approx(c.wer) if hyp else True


def test_graphemes_keep_indic_signs_attached():
    # Devanagari: consonant + vowel sign i is one unit; conjunct with virama stays joined
    assert graphemes("किताब है") == ["कि", "ता", "ब", "है"]
    assert graphemes("क्ष") in (["क्ष"], ["क्", "ष"])   # depends on the Unicode version's conjunct rule
    assert "".join(graphemes("क्षत्रिय")) == "क्षत्रिय"
    # Bengali, Tamil, Malayalam vowel signs attach to their consonant
    assert graphemes("কি") == ["কি"]
    assert graphemes("கா") == ["கா"]
    assert graphemes("കൊ") == ["കൊ"]
    # a wrong matra is one character error, a dropped one too
    assert error_counts(graphemes("किताब"), graphemes("कीताब")).errors == 1
    assert error_counts(graphemes("किताब"), graphemes("कताब")).errors == 1


def test_whisper_basic_normalizer_strips_marks_and_splits_words():
    norm = BasicTextNormalizer()
    assert norm("किताब") == "क त ब"
    assert norm("Hello, World! [noise] (um)") == "hello world"
    assert BasicTextNormalizer(remove_diacritics=True)("café crème") == "cafe creme"
    # marks are kept by the Indic normalizer
    ind = IndicNormalizer("hi")
    assert ind("किताब है।") == "किताब है"
    assert ind("Hello मेरा नाम!") == "hello मेरा नाम"


def test_mark_stripping_hides_errors():
    ref, hyp = "किताब पढ़ो", "कीताब पढो"     # wrong matra, missing nukta-dot vowel sign
    ind = IndicNormalizer("hi")
    basic = BasicTextNormalizer()
    assert error_counts(ind(ref).split(), ind(hyp).split()).errors == 2
    # after stripping marks both words collapse to bare consonants: the errors vanish
    assert error_counts(basic(ref).split(), basic(hyp).split()).errors == 0


def test_plain_normalizer_and_language_codes():
    assert PlainNormalizer()("  A  b,c  ") == "a b c"
    assert normalize_language_code("hi-IN") == "hi"
    assert normalize_language_code("Malayalam") == "ml"
    assert normalize_language_code("tam") == "ta"


def test_align_pairs_cover_both_sides():
    pairs = align(["a", "b", "c"], ["a", "x", "c", "d"])
    assert [r for r, _ in pairs if r is not None] == ["a", "b", "c"]
    assert [h for _, h in pairs if h is not None] == ["a", "x", "c", "d"]
    assert align([], ["a"]) == [(None, "a")]


def test_error_counts_split_equals_alignment_split():
    from lattice_tools.metrics.levenshtein import counts_from_alignment

    for ref, hyp in random_pairs(500, seed=9):
        assert error_counts(ref, hyp) == counts_from_alignment(align(ref, hyp))
