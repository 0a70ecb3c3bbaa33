"""The batched pieces of the metrics engine (lattice_tools.metrics.evaluate_batch, unit_tables, align_batch) equal
their per-utterance references on random inputs:

* align_batch.align_many vs kaldialign's alignment (the public ``kaldialign.align``): counts and
  codeswitch.hyp_positions_in_ref, on small alphabets (many tied alignments), empty sides, and
  batches of every shape (int16 and int32 tables);
* unit_tables.script_fidelities vs script.script_fidelity: mixed scripts, Inherited marks, ties
  between scripts (broken by expected script, then name), every threshold side;
* UnitTables.word_ids_many / chars_many / _tags_of_ids vs split(), chars() and the tagger,
  including texts with NUL characters (the batch separator) and whitespace of every kind.
"""
import numpy as np

# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import kaldialign
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.metrics import align_batch, evaluate_batch, unit_tables
from lattice_tools.metrics.codeswitch import ScriptTagger, hyp_positions_in_ref
from lattice_tools.metrics.levenshtein import make_counts
from lattice_tools.metrics.script import script_fidelity


def flatten(seqs):
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in seqs], out=off[1:])
    return np.array([x for s in seqs for x in s], dtype=np.int64), off


seqs = st.lists(st.integers(0, 3), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(seqs, seqs), min_size=1, max_size=8), st.sampled_from([20, 300, align_batch.BATCH_CELLS]),
       st.booleans())
def test_align_many_equals_kaldialign(pairs, batch_cells, force_int32):
    refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
    rf, ro = flatten(refs)
    hf, ho = flatten(hyps)
    int16_limit = 8 if force_int32 else align_batch.INT16_LIMIT
    c, s, d, i, pos = align_batch.align_many(rf, ro, hf, ho, batch_cells, int16_limit=int16_limit)
    for u, (r, h) in enumerate(pairs):
        rs, hs = [f"w{x}" for x in r], [f"w{x}" for x in h]
        if r and h:
            ali = kaldialign.align(rs, hs, "*")
        else:
            ali = [("*", x) for x in hs] if not r else [(x, "*") for x in rs]
        want_c = sum(1 for a, b in ali if a == b)
        want_i = sum(1 for a, _ in ali if a == "*")
        want_d = sum(1 for _, b in ali if b == "*")
        assert (c[u], s[u], d[u], i[u]) == (want_c, len(r) - want_d - want_c, want_d, want_i)
        assert make_counts(*(int(x[u]) for x in (c, s, d, i))).errors == kaldialign.edit_distance(rs, hs)["total"]
        ali = [(None if a == "*" else a, None if b == "*" else b) for a, b in ali]
        assert pos[ho[u]:ho[u + 1]].tolist() == hyp_positions_in_ref(ali)


CHARS = ["a", "b", "Z", "é", "\u0301", "क", "ि", "्", "ष", "д", "ж", "α", "Σ", "東", "ア", "ا", "1", ",", "-",
         "\u200d", "\u0903"]
WORDS = st.text(st.sampled_from(CHARS), min_size=1, max_size=6)
SPACES = [" ", " ", "  ", "\t", "\n", "\u00a0", "\u3000", "\x1c", "\u2028"]


@st.composite
def texts(draw, max_words=8):
    words = draw(st.lists(WORDS, max_size=max_words))
    out = draw(st.sampled_from(["", " "]))
    for w in words:
        out += w + draw(st.sampled_from(SPACES))
    if draw(st.integers(0, 9)) == 0:
        out += draw(st.sampled_from(["\x00", " \x00 ", "a\x00"]))
    return out


SCRIPT_SETS = [frozenset({"Devanagari"}), frozenset({"Latin"}), frozenset({"Devanagari", "Latin"}),
               frozenset({"Cyrillic", "Greek"}), frozenset(), frozenset({"Han", "Katakana"})]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(texts(), st.sampled_from(SCRIPT_SETS)), min_size=1, max_size=8),
       st.sampled_from([0.0, 0.25, 0.5, 0.6, 1.0]))
def test_script_fidelities_equal_script_fidelity(items, threshold):
    tables = unit_tables.UnitTables()
    got = unit_tables.script_fidelities(tables, [t for t, _ in items], [e for _, e in items], threshold)
    want = [script_fidelity(t, scripts=e, threshold=threshold) for t, e in items]
    assert got == want
    # warm tables, other order
    got = unit_tables.script_fidelities(tables, [t for t, _ in items][::-1], [e for _, e in items][::-1], threshold)
    assert got == want[::-1]


def test_script_fidelity_ties():
    tables = unit_tables.UnitTables()
    items = [("ab дж", frozenset({"Cyrillic"})), ("ab дж", frozenset({"Latin"})), ("ab дж", frozenset()),
             ("αβ дж", frozenset()), ("1, -", frozenset({"Latin"})), ("", frozenset({"Latin"}))]
    got = unit_tables.script_fidelities(tables, [t for t, _ in items], [e for _, e in items], 0.5)
    assert [g.dominant for g in got] == ["Cyrillic", "Latin", "Cyrillic", "Cyrillic", None, None]
    assert got == [script_fidelity(t, scripts=e) for t, e in items]


@settings(max_examples=200, deadline=None)
@given(st.lists(texts(), min_size=0, max_size=8))
def test_word_ids_chars_and_tags_by_id(items):
    tables = unit_tables.UnitTables()
    for _ in range(2):                       # cold and warm tables
        flat, off = tables.word_ids_many(items)
        tagger = ScriptTagger(["hi", "en"])
        tag_table: list = []
        chars, starts, whole = tables.chars_many(items, flat, off)
        for k, text in enumerate(items):
            ids = flat[off[k]:off[k + 1]].tolist()
            assert [tables.word_list[i] for i in ids] == text.split()
            assert ids == tables.words(text.split())
            got = whole[k] if k in whole else chars[starts[k]:starts[k + 1]]
            assert got == tables.chars(text, text.split())
            assert evaluate_batch._tags_of_ids(tagger, tag_table, tables.word_list, ids) == \
                [ScriptTagger(["hi", "en"])(w) for w in text.split()]


def _vowel_tagger(pair):
    """A tagger that is not a ScriptTagger (so the fast path tags per token, as the reference)."""
    def tag(word):
        if not any(c.isalpha() for c in word):
            return None
        return pair[0] if word[0] in "aeiouक" else pair[-1]
    return tag


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(texts(), texts(), st.sampled_from([None, "hin-eng", "en-es"]), st.booleans()),
                min_size=1, max_size=8), st.sampled_from([0, 1, 2]), st.booleans())
def test_code_switching_equals_reference(items, tolerance, custom_tagger):
    """CMI and switch points (batched for ScriptTagger pairs, per token for other taggers) equal
    evaluate_system_reference, with uncovered utterances and several pairs in one chunk."""
    from _reference.metrics_evaluate import evaluate_system_reference

    from lattice_tools.metrics.evaluate import EvalConfig, evaluate_system
    from lattice_tools.metrics.io import Annotation

    refs = {f"u{k}": r for k, (r, _, _, _) in enumerate(items)}
    hyps = {f"u{k}": h for k, (_, h, _, covered) in enumerate(items) if covered}
    anns = {f"u{k}": Annotation("hi" if cs else None, (), cs) for k, (_, _, cs, _) in enumerate(items)}
    config = EvalConfig(orthography=False, switch_tolerance=tolerance,
                        **({"tagger_factory": _vowel_tagger} if custom_tagger else {}))
    assert evaluate_system(refs, hyps, anns, config) == evaluate_system_reference(refs, hyps, anns, config)
