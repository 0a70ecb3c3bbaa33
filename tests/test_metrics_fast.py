"""The batched fast paths of the metrics equal the per-utterance reference implementation.

evaluate_system (lattice_tools.metrics.evaluate_batch) vs evaluate_system_reference
(tests/_reference/metrics_evaluate.py: evaluate_utterance one at a time), score_orthography_many vs score_orthography, normalize_many vs the normalizer, the
word-cached grapheme/script tables vs graphemes()/script_counts(), the integer kaldialign calls
vs kaldialign's public wrapper -- on random inputs (hypothesis) built to hit the edge cases each
shortcut depends on (marks after spaces, Prepend characters, newlines inside texts, annotations
across spaces, the four characters str.split and regex disagree on, final sigma, compounds,
contractions, number words, entities of every length, uncovered and empty hypotheses).
"""
import sys

# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import kaldialign
import pytest
from _reference.metrics_evaluate import evaluate_system_reference
from _reference.orthography import score_orthography_reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.core.counts import ErrorCounts
from lattice_tools.core.errors import LatticeToolsError
from lattice_tools.metrics import evaluate_batch, unit_tables
from lattice_tools.metrics.evaluate import EvalConfig, evaluate_system, summarize
from lattice_tools.metrics.io import Annotation
from lattice_tools.metrics.levenshtein import make_counts
from lattice_tools.metrics.orthography_tokens import tokenize_for_counts
from lattice_tools.metrics.punctuation import DEFAULT_NORMALIZERS, score_orthography_many, tokenize
from lattice_tools.metrics.script import script_counts
from lattice_tools.metrics.text import GRAPHEME, graphemes, make_normalizer, normalize_many, regex

WORDS = [
    # Devanagari: matras, virama conjuncts, nukta (precomposed and not), danda
    "किताब", "है", "राम", "दिल्ली", "क्ष", "\u095b", "ज\u093c", "कि", "मैं", "।", "॥",
    # Latin: case, compounds, contractions, abbreviations, numbers, spelling, diacritics
    "Ice-cream", "icecream", "ice", "cream", "Mr.", "mr.", "U.S.", "don't", "can't", "It's", "twenty",
    "twenty-one", "one", "two", "thousand", "and", "hundred", "$20", "5%", "$", "colour", "color", "café",
    "cafe", "um", "Hello", "hello", "HELLO", "3.14", "1,000", "2nd", "office", "meeting",
    # punctuation and symbols, annotations (may span spaces)
    ",", ".", "?", "!", ";", "Hello,", "end.", "[noise]", "[laughs", "loud]", "(uh)", "<unk>", "&",
    # Greek final sigma, other scripts, combining marks and joiners at word edges
    "ΟΔΟΣ", "Σ", "ς", "мир", "東京", "\u0301", "x\u0301", "\u0600", "\u0600x", "e\u200d", "\u200d",
    "\u093f", "a\u0903",
    # multi-word pieces: number phrases (normalized across words), compounds, currency before a number
    "twenty one", "two thousand and five", "one hundred", "ice cream", "$ 20", "Mr. Smith",
]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\u00a0", "\u3000", "\n", "\x1c", " \u0301", "\u2028"]


@st.composite
def texts(draw, max_words=8):
    words = draw(st.lists(st.sampled_from(WORDS), max_size=max_words))
    out = draw(st.sampled_from(["", " ", "\u0301"]))
    for w in words:
        out += w + draw(st.sampled_from(SEPARATORS))
    return out


@st.composite
def edited(draw, words):
    """``words`` with a few random deletions, substitutions and insertions (a plausible hypothesis)."""
    out = []
    for w in words:
        op = draw(st.integers(0, 12))
        if op == 0:
            continue
        if op in (3, 4) and out:       # compound: glue to the previous word, or hyphenate
            out[-1] = out[-1] + ("" if op == 3 else "-") + w
            continue
        if op == 5:                    # case change
            w = w.upper() if w.islower() else w.lower()
        if op == 6:                    # punctuation attached or changed
            w = w + draw(st.sampled_from([",", ".", "?", " ,", ""]))
        out.append(draw(st.sampled_from(WORDS)) if op == 1 else w)
        if op == 2:
            out.append(draw(st.sampled_from(WORDS)))
    return out


@st.composite
def corpora(draw):
    n = draw(st.integers(1, 7))
    refs, hyps, anns = {}, {}, {}
    for u in range(n):
        key = f"u{u}"
        ref_words = draw(st.lists(st.sampled_from(WORDS), max_size=10))
        refs[key] = draw(st.sampled_from(SEPARATORS)).join(ref_words) if draw(st.booleans()) else draw(texts())
        which = draw(st.integers(0, 6))
        if which == 1:                      # 0: no hypothesis (not covered); 1: empty output
            hyps[key] = ""
        elif which in (2, 3):
            hyps[key] = draw(texts())
        elif which:
            hyps[key] = " ".join(draw(edited(ref_words)))
        lang = draw(st.sampled_from([None, "hi", "en", "ja", "hin"]))
        cs = draw(st.sampled_from([None, None, "hin-eng"]))
        ents = []
        for _ in range(draw(st.integers(0, 3))):   # spans of the reference (NE-WER of every length)
            if ref_words and draw(st.booleans()):
                a = draw(st.integers(0, len(ref_words) - 1))
                b = draw(st.integers(a + 1, len(ref_words)))
                ents.append(" ".join(ref_words[a:b]))
            else:
                ents.append(draw(st.sampled_from(["राम", "Ice cream", "twenty one hundred", "", "东京"])))
        anns[key] = Annotation(lang, tuple(ents), cs)
    return refs, hyps, anns


CONFIGS = [EvalConfig(), EvalConfig(orthography=False), EvalConfig(normalizer="none", default_lang="hi"),
           EvalConfig(normalizer="plain", orthography_normalizers=("numbers", "contractions", "spelling")),
           EvalConfig(normalizer="whisper-basic", high_wer=0.2, switch_tolerance=0)]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from(CONFIGS), st.integers(1, 4))
def test_evaluate_system_equals_reference(corpus, config, chunk):
    refs, hyps, anns = corpus
    got = evaluate_batch.evaluate_many(refs, hyps, anns, config, list(refs), chunk_size=chunk)   # chunk boundaries anywhere
    assert got == evaluate_system(refs, hyps, anns, config)
    want = evaluate_system_reference(refs, hyps, anns, config)
    assert got == want
    assert [r.as_dict() for r in got] == [r.as_dict() for r in want]
    assert summarize(got, resamples=50) == summarize(want, resamples=50)


def test_evaluate_system_equals_reference_on_bench_corpus():
    sys.path.insert(0, "bench")
    try:
        from bench_metrics import corpus
    finally:
        sys.path.remove("bench")
    refs, hyps, anns = corpus(600, seed=3)
    for k in list(hyps)[::13]:
        del hyps[k]
    for config in (EvalConfig(), EvalConfig(orthography=False)):
        assert evaluate_system(refs, hyps, anns, config) == evaluate_system_reference(refs, hyps, anns, config)


def test_errors_name_the_same_utterance():
    refs = {"a": "x", "b": "y"}
    hyps = {"a": "x", "b": "y"}
    anns = {"b": Annotation("klingon")}
    with pytest.raises(LatticeToolsError) as fast_err:
        evaluate_system(refs, hyps, anns)
    with pytest.raises(LatticeToolsError) as ref_err:
        evaluate_system_reference(refs, hyps, anns)
    assert (fast_err.value.key, fast_err.value.message) == (ref_err.value.key, ref_err.value.message) != (None, None)
    assert fast_err.value.key == "b"


@st.composite
def text_pairs(draw):
    if draw(st.integers(0, 3)) == 0:
        return draw(texts(12)), draw(texts(12))
    words = draw(st.lists(st.sampled_from(WORDS), max_size=12))
    return " ".join(words), " ".join(draw(edited(words)))


@settings(max_examples=150, deadline=None)
@given(st.lists(text_pairs(), min_size=1, max_size=6), st.sampled_from([None, 1, 2]),
       st.sampled_from([DEFAULT_NORMALIZERS, (), ("numbers", "annotations"), ("spelling", "contractions")]))
def test_score_orthography_many_equals_score_orthography(pairs, K, normalizers):
    refs = [r for r, _ in pairs]
    hyps = [h for _, h in pairs]
    want = [score_orthography_reference(r, h, normalizers, K)[0] for r, h in pairs]
    cache: dict = {}
    assert score_orthography_many(refs, hyps, normalizers, K, cache=cache) == want
    # warm cache, several padded batches of different shapes
    assert score_orthography_many(refs, hyps, normalizers, K, cache=cache, batch_cells=60) == want


@settings(max_examples=150, deadline=None)
@given(texts(12), st.sampled_from([DEFAULT_NORMALIZERS, ("contractions", "numbers", "diacritics")]))
def test_tokenize_for_counts_keeps_kinds_values_normalizations(text, normalizers):
    def key(tokens):
        return [(t.kind, t.value, t.normalizations) for t in tokens]
    assert key(tokenize_for_counts(text, normalizers, {})) == key(tokenize(text, normalizers))


@settings(max_examples=150, deadline=None)
@given(st.lists(texts(), max_size=6), st.sampled_from(["none", "plain", "indic", "whisper-basic"]),
       st.sampled_from(["hi", "bn", "pa", "en"]))
def test_normalize_many_equals_per_text(items, name, lang):
    norm = make_normalizer(name, lang)
    assert normalize_many(norm, items) == [norm(t) for t in items]


def test_normalize_many_final_sigma_and_newlines():
    norm = make_normalizer("plain")
    items = ["ΟΔΟΣ", "Σ", "ΑΣ Β", "a\nb", "x"]
    assert normalize_many(norm, items) == [norm(t) for t in items]
    assert normalize_many(norm, items[:3]) == ["οδος", "σ", "ας β"]


@settings(max_examples=200, deadline=None)
@given(st.lists(texts(), min_size=1, max_size=5))
def test_unit_tables_equal_graphemes_and_script_counts(items):
    tables = unit_tables.UnitTables()
    for text in items:
        ids = tables.chars(text, text.split())
        inverse = {v: k for k, v in tables.grapheme_id.items()}
        assert [inverse[i] for i in ids] == graphemes(text)
        assert tables.script_counts(text) == dict(script_counts(text))


def test_whitespace_assumptions_of_the_word_caches():
    """Every str.isspace character: its own grapheme cluster next to letters, no script, never
    part of a lexer token; and the regex's \\s differs from str.split only on U+001C..U+001F
    (the characters orthography_tokens.NOT_WORDWISE sends to the full-text lexer)."""
    from lattice_tools.metrics.script import char_script
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert len(spaces) > 20
    re_space = regex.compile(r"\s")
    for c in spaces:
        assert len(GRAPHEME.findall("a" + c + "a")) == 3, hex(ord(c))
        assert char_script(c) is None, hex(ord(c))
        assert not regex.match(r"\w", c)
    assert [c for c in spaces if not re_space.match(c)] == ["\x1c", "\x1d", "\x1e", "\x1f"]
    # text.normalize_many collapses whitespace with str.split where the normalizers use re's \s
    import re
    assert [chr(c) for c in range(sys.maxunicode + 1) if re.match(r"\s", chr(c))] == spaces


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abcde"), max_size=14), st.lists(st.sampled_from("abcdef"), max_size=14))
def test_integer_kaldialign_equals_public_wrapper(ref, hyp):
    tables = unit_tables.UnitTables()
    r, h = tables.words(ref), tables.words(hyp)
    pairs, counts = evaluate_batch._word_alignment(r, h)
    inverse = {v: k for k, v in tables.word_id.items()}
    if ref and hyp:
        want = kaldialign.align(ref, hyp, "*")
        assert [(inverse.get(a, "*"), inverse.get(b, "*")) for a, b in pairs] == want
    k = kaldialign.edit_distance(ref, hyp)
    assert counts.errors == k["total"]
    c = evaluate_batch._char_counts(r, h)
    if ref and hyp:
        assert (c.substitutions, c.deletions, c.insertions) == (k["sub"], k["del"], k["ins"])
    assert c.errors == k["total"] and c.ref_words == len(ref)


@given(st.lists(st.tuples(*[st.integers(0, 30)] * 4), max_size=6))
def test_make_counts_and_sum_equal_constructor_and_addition(rows):
    built = [ErrorCounts(correct=c, substitutions=s, deletions=d, insertions=i, ref_words=c + s + d, segments=1,
                         segment_errors=int(s + d + i > 0)) for c, s, d, i in rows]
    fast_built = [make_counts(*row) for row in rows]
    assert fast_built == built and [hash(x) for x in fast_built] == [hash(x) for x in built]
    total = ErrorCounts()
    for c in built:
        total = total + c
    assert ErrorCounts.sum(built) == total == sum(built, ErrorCounts.zero)
    assert ErrorCounts.sum(iter(built)) == total
