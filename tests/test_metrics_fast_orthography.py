"""The batched punctuation/case engine (lattice_tools.metrics.orthography_batch, behind
punctuation.score_orthography_many and punctuation.score_orthography) equals the per-pair reference
implementation tests/_reference/orthography.py (tokenize -> extended_align -> orthographic_counts) on random
inputs with punctuation, case changes, compounds (spaced, glued, hyphenated), numbers in words
and digits, currency and percent, contractions, abbreviations, annotations across spaces, NUL
characters and the whitespace characters str.split and the lexer's regex disagree on -- and
each shortcut the engine relies on holds on its own (word-wise tokenization, number-inert words,
the compound pre-filter).
"""
import sys

# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import numpy as np
from _reference.orthography import score_orthography_reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.metrics import orthography_batch as OB
from lattice_tools.metrics import orthography_tokens as T
from lattice_tools.metrics import orthography_vocabulary as V
from lattice_tools.metrics.orthography_rules import find_compounds
from lattice_tools.metrics.punctuation import (
    BATCH_CELLS,
    DEFAULT_NORMALIZERS,
    score_orthography,
    score_orthography_many,
    tokenize,
)

WORDS = [
    # case variants and punctuation, attached and detached
    "Hello", "hello", "HELLO", "hello,", "Hello.", "world", "World!", "world?", ",", ".", "?", "!", ";", ":",
    "।", "॥", "end.", "Yes;", "no:",
    # compounds: spaced, glued, hyphenated, with case changes, and the a long / along false friend
    "ice", "cream", "icecream", "ice-cream", "Ice-Cream", "IceCream", "a", "long", "along", "base", "ball",
    "baseball", "base-ball", "foot", "football", "well-known", "well", "known", "wellknown",
    # numbers in words and digits, ordinals, decimals, currency, percent
    "twenty", "one", "twenty-one", "21", "two", "thousand", "and", "five", "hundred", "2005", "1,000", "1000",
    "3.14", "2nd", "$20", "$", "20", "5%", "%", "€5", "dollars", "percent", "zero", "eleven", "ninety-nine",
    # contractions, abbreviations, spelling, diacritics, interjections, annotations
    "don't", "do", "not", "It's", "it", "is", "can't", "Mr.", "mister", "Dr.", "U.S.", "colour", "color",
    "café", "cafe", "um", "hmm", "[noise]", "[laughs", "loud]", "(uh)", "<unk>",
    # Devanagari (marks are word characters), other scripts, symbols
    "मेरा", "नाम", "राम", "है", "हूँ", "में", "क्ष", "ΟΔΟΣ", "мир", "東京", "&", "@", "/", "#",
    # NUL: the engine's text separator must never be confused with a text's own
    "\x00", "a\x00b",
]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", "\u00a0", "\u3000", "\x1c", "\x1f", "\u2028", " - ", " \"", "' "]


@st.composite
def texts(draw, max_words=10):
    words = draw(st.lists(st.sampled_from(WORDS), max_size=max_words))
    out = draw(st.sampled_from(["", " ", "\""]))
    for w in words:
        out += w + draw(st.sampled_from(SEPARATORS))
    return out


@st.composite
def edited(draw, words):
    """A plausible hypothesis: deletions, substitutions, insertions, glued or hyphenated
    compounds, split words, case changes, punctuation added, dropped or changed."""
    out = []
    for w in words:
        op = draw(st.integers(0, 14))
        if op == 0:
            continue
        if op in (3, 4) and out:
            out[-1] = out[-1] + ("" if op == 3 else "-") + w
            continue
        if op == 5:
            w = w.upper() if w.islower() else w.lower()
        if op == 6:
            w = w.capitalize()
        if op == 7:
            w = w + draw(st.sampled_from([",", ".", "?", " ,", " .", "!"]))
        if op == 8:
            w = w.rstrip(".,?!;:")
        if op == 9 and len(w) > 3:
            k = draw(st.integers(1, len(w) - 1))
            w = w[:k] + draw(st.sampled_from([" ", "-"])) + w[k:]
        out.append(draw(st.sampled_from(WORDS)) if op == 1 else w)
        if op == 2:
            out.append(draw(st.sampled_from(WORDS)))
    return out


@st.composite
def text_pairs(draw):
    if draw(st.integers(0, 4)) == 0:
        return draw(texts()), draw(texts())
    words = draw(st.lists(st.sampled_from(WORDS), max_size=14))
    return " ".join(words), " ".join(draw(edited(words)))


NORMALIZER_SETS = [DEFAULT_NORMALIZERS, (), ("numbers",), ("numbers", "annotations"), ("spelling", "contractions"),
                   ("annotations", "interjections", "abbreviations", "contractions", "numbers", "diacritics")]


def reference(pairs, normalizers, K):
    return [score_orthography_reference(r, h, normalizers, K)[0] for r, h in pairs]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(text_pairs(), min_size=1, max_size=8), st.sampled_from([None, 1, 2, 3]),
       st.sampled_from(NORMALIZER_SETS), st.sampled_from([60, 400, BATCH_CELLS]))
def test_batched_engine_equals_reference(pairs, K, normalizers, batch_cells):
    want = reference(pairs, normalizers, K)
    refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
    cache: dict = {}
    got = OB.score_many(refs, hyps, normalizers, K, cache, batch_cells)
    assert got == want
    assert [g.as_dict() for g in got] == [w.as_dict() for w in want]
    # warm caches, other normalizers on the same cache, reversed order (other interning order)
    assert OB.score_many(refs, hyps, normalizers, K, cache, batch_cells) == want
    other = NORMALIZER_SETS[(NORMALIZER_SETS.index(normalizers) + 1) % len(NORMALIZER_SETS)]
    assert OB.score_many(hyps[::-1], refs[::-1], other, K, cache, batch_cells) == \
        reference(list(zip(hyps[::-1], refs[::-1], strict=False)), other, K)


@settings(max_examples=100, deadline=None)
@given(st.lists(text_pairs(), min_size=1, max_size=5))
def test_public_function_equals_reference(pairs):
    refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
    assert score_orthography_many(refs, hyps) == reference(pairs, DEFAULT_NORMALIZERS, None)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text_pairs(), st.sampled_from([None, 1, 2]), st.sampled_from(NORMALIZER_SETS))
def test_routes_equal_reference(pair, K, normalizers):
    """score_orthography's route (the batched backtrace, one pair) is the reference's route: the
    same elements, tokens and classes in the same order, and the same counts."""
    ref_text, hyp_text = pair
    assert score_orthography(ref_text, hyp_text, normalizers, K) == \
        score_orthography_reference(ref_text, hyp_text, normalizers, K)


def test_bench_corpus_with_punctuation_and_case_equals_reference():
    sys.path.insert(0, "bench")
    try:
        from bench_metrics import corpus
    finally:
        sys.path.remove("bench")
    refs, hyps, _ = corpus(300, seed=5)
    rng = np.random.default_rng(0)
    pairs = []
    for k in refs:
        r, h = refs[k], hyps[k]
        if rng.random() < 0.5:     # punctuation and case on a copy of the bench texts
            r = r.replace(" ", ", ", 1) + "."
            h = h.capitalize() + " ?"
        pairs.append((r, h))
    pairs += [("Hello, Mr. Smith. I like ice cream!", "hello mister smith, i like icecream"),
              ("It's twenty-one $20 and 5% of 1,000", "it is 21 twenty dollars and five percent of 1000"),
              ("", ""), ("", "a b ."), (". , ?", "")]
    got = score_orthography_many([r for r, _ in pairs], [h for _, h in pairs], cache={})
    assert got == reference(pairs, DEFAULT_NORMALIZERS, None)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts(12), min_size=1, max_size=6), st.sampled_from(NORMALIZER_SETS))
def test_tokenize_ids_equals_tokenize(items, normalizers):
    vocab = V.Vocabulary()
    flat, offsets = V.tokenize_ids(items, tuple(normalizers), vocab, {})
    for k, text in enumerate(items):
        got = [vocab.tokens[t] for t in flat[offsets[k]:offsets[k + 1]].tolist()]
        assert [(t.kind, t.value, t.normalizations) for t in got] == \
            [(t.kind, t.value, t.normalizations) for t in tokenize(text, normalizers)]


INERT_HEAVY = [w for w in WORDS if all(V.number_inert(t) for t in T.lex(w))] + ["twenty", "$", "1,000", "5%"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(INERT_HEAVY), max_size=12))
def test_number_inert_tokens_are_left_alone(words):
    """normalize_numbers is the identity on a token list whose tokens are all number-inert."""
    tokens = [t for w in words for t in T.lex(w)]
    if all(V.number_inert(t) for t in tokens):
        out = T.normalize_numbers(tokens)
        assert len(out) == len(tokens) and all(o is t for o, t in zip(out, tokens, strict=False))


def test_number_inert_is_not_vacuous():
    assert not V.number_inert(T.lex("twenty")[0])
    assert not V.number_inert(T.lex("1,000")[0])
    assert not V.number_inert(T.lex("$")[0]) and not V.number_inert(T.lex("%")[0])
    assert V.number_inert(T.lex("hundred")[0]) and V.number_inert(T.lex("21")[0])


@settings(max_examples=300, deadline=None)
@given(text_pairs(), st.sampled_from([None, 1, 2]))
def test_compound_prefilter_keeps_every_compound(pair, K):
    """_batch_compounds equals orthography_rules.find_compounds on every utterance (it runs it only on the
    utterances its pre-filter passes)."""
    ref_text, hyp_text = pair
    vocab = V.Vocabulary()
    flat, offsets = V.tokenize_ids([ref_text, hyp_text], DEFAULT_NORMALIZERS, vocab, {})
    ref = [vocab.tokens[t] for t in flat[offsets[0]:offsets[1]].tolist()]
    hyp = [vocab.tokens[t] for t in flat[offsets[1]:offsets[2]].tolist()]
    tables = OB._Tables(1, vocab, flat, offsets, K)
    nr, nh = np.array([len(ref)]), np.array([len(hyp)])
    R = OB.padded_ids(flat, offsets[:1], nr, max(len(ref), 1))
    H = OB.padded_ids(flat, offsets[1:2], nh, max(len(hyp), 1))
    got = OB._batch_compounds(np.array([0]), R, H, nr, nh, tables.t_key[R], tables.t_key[H], vocab,
                              tables.filters, K)
    want = find_compounds(ref, hyp, K) if ref and hyp else {}
    assert got.get(0, {}) == want


def test_compounds_and_nul_cases():
    pairs = [("ice cream", "icecream"), ("ice-cream", "Ice cream"), ("a long way", "along way"),
             ("base ball, foot ball.", "baseball football"), ("well-known fact", "well known fact"),
             ("a\x00b c", "a\x00b  c"), ("\x00", "\x00 x"), ("x \x00 y", "x y")]
    for K in (None, 1, 2):
        got = score_orthography_many([r for r, _ in pairs], [h for _, h in pairs], K=K)
        assert got == reference(pairs, DEFAULT_NORMALIZERS, K)
    assert got[0].classes == (("compound", 1),) and got[0].words.wer == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(text_pairs(), min_size=2, max_size=6), st.sampled_from([None, 2]))
def test_int32_tables_equal_int16_tables(pairs, K):
    """Batches too long for int16 DP values use int32 (here forced by a tiny limit, so that
    batches of both widths meet in one call)."""
    refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
    want = reference(pairs, DEFAULT_NORMALIZERS, K)
    # and calls split into parts of 3 utterances
    assert OB.score_many(refs, hyps, DEFAULT_NORMALIZERS, K, {}, 60, call_utterances=3, int16_limit=40) == want
