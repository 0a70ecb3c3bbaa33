"""The GLM filter (stages memoized per distinct line, rfilter1 per piece, direct CTM records, object
rendering shortcuts) against the reference transcription in tests/_reference/glm_csrfilt.py:
byte-identical text, equal objects (``raw`` fields included), same errors.

Inputs: random STM/CTM/trn/txt built from the real RT-03 GLM's vocabulary, hypothesis-generated
CTM/STM lines full of the shapes the shortcuts must refuse (odd blanks, latin-1 bytes Python
takes for blanks, braces, ';', bad numbers, missing/extra fields), and GLMs that make a stage
merge lines (``copy_no_hit = F``, a rule writing '(' at the end of a line)."""
from __future__ import annotations

import dataclasses
import os
import random

import pytest
from _glm_reference_helpers import apply_both, filter_both
from _nist_helpers import CSRFILT_DATA, RT03_GLM, glm_vocabulary, random_ctm, random_stm, random_trn, random_txt
from _reference.glm_csrfilt import reference_filter_text
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.io.transcripts.ctm import CtmWord, parse_ctm_lines
from lattice_tools.io.transcripts.glm import parse_glm_bytes, read_glm
from lattice_tools.io.transcripts.stm import read_stm
from lattice_tools.io.transcripts.trn import read_trn
from lattice_tools.scoring.glm import CompiledGlm, filter_text
from lattice_tools.scoring.glm.rfilter import PiecewiseRewriter

VOCAB = glm_vocabulary()
GENERATORS = {"stm": random_stm, "ctm": random_ctm, "trn": random_trn, "txt": random_txt}


@pytest.mark.parametrize("fmt", ["stm", "ctm", "trn", "txt"])
@pytest.mark.parametrize("seed", range(4))
def test_random_rt03_text_identical(fmt, seed):
    rng = random.Random(1000 * seed + len(fmt))
    text = GENERATORS[fmt](rng, VOCAB, 150 if fmt == "ctm" else 40)
    for dh in (False, True):
        for upcase in (True, False):
            fast, ref = filter_both(text, RT03_GLM, fmt, delete_hyphens=dh, upcase=upcase)
            assert fast == ref
    assert fast[0] == "ok"  # the generator makes well-formed input (the comparison is not vacuous)


@pytest.mark.parametrize("fmt", ["stm", "ctm", "trn"])
@pytest.mark.parametrize("seed", range(3))
def test_random_rt03_objects_identical(fmt, seed, tmp_path):
    rng = random.Random(77 + seed)
    text = GENERATORS[fmt](rng, VOCAB, 200 if fmt == "ctm" else 50)
    path = tmp_path / f"in.{fmt}"
    path.write_text(text)
    items = {"stm": read_stm, "ctm": lambda p: parse_ctm_lines(enumerate(open(p).read().split("\n"), 1), str(p)),
             "trn": read_trn}[fmt](str(path))
    for purpose in ("ref", "hyp"):
        fast, ref = apply_both(RT03_GLM, items, fmt, purpose=purpose)
        assert fast == ref and fast[0] == "ok"
        fast, ref = apply_both(RT03_GLM, path, fmt, purpose=purpose, delete_hyphens=True)
        assert fast == ref and fast[0] == "ok"


def test_ctm_objects_with_stale_raw_lines_identical():
    # objects changed after reading keep a raw line that no longer describes them: the renderer
    # must then write the canonical line, as format_ctm_item does
    items = parse_ctm_lines(enumerate(["f A 0.10 0.20 it's 0.9", "f A 0.30 0.20 um", "f A 0.50 0.2 uh-huh",
                                       "f A 1e0 0.25 gonna", "f A -0 0.1 x", "f A 2.5 0.1 wanna 1"], 1), "x.ctm")
    changed = [dataclasses.replace(items[0], start=0.11), dataclasses.replace(items[1], word="i'm"),
               dataclasses.replace(items[2], confidence=0.5), items[3], dataclasses.replace(items[4], start=0.0),
               dataclasses.replace(items[5], confidence=None), CtmWord("f", "A", 3.0, 0.1, "doin'", None, 0),
               CtmWord("f", "A", 0.1 + 0.2, 1 / 3, "y'all", 1e-7, 9)]
    for dh in (False, True):
        fast, ref = apply_both(RT03_GLM, changed, "ctm", delete_hyphens=dh)
        assert fast == ref and fast[0] == "ok"


# Tokens and separators for adversarial records: every shortcut must hand these to the reference.
_BLANKS = st.sampled_from([" ", "  ", "\t", " \t ", "\x0b", "\x0c", "\r", "\xa0", "\x85", "\x1c"])
_TOKENS = st.sampled_from(["f", "A", "0.5", "1", "-0", "1e3", "*", "nan", "inf", "abc", ".", "-", "0.25",
                           "it's", "UM", "uh-huh", "(uh)", "(a", "b)", "{", "}", "{a/b}", "a/b", "/", "@",
                           ";;", ";x", "x;", "\xe9t\xe9", "\xa0", "gonna", "<ALT_BEGIN>", "<ALT>", "<ALT_END>",
                           "%HESITATION", "(", ")", "wanna", "i'm", "-re", "pla-"])


@st.composite
def _records(draw, max_fields=8):
    n = draw(st.integers(0, max_fields))
    parts = [draw(_BLANKS) if draw(st.booleans()) else ""]
    for k in range(n):
        if k:
            parts.append(draw(_BLANKS))
        parts.append(draw(_TOKENS))
    if draw(st.booleans()):
        parts.append(draw(_BLANKS))
    return "".join(parts)


_BLANK_LINES = st.sampled_from(["", " ", "\t", "  ", " \t", "\r"])
_CTM_FIELDS = st.sampled_from(["sw_1", "A", "a\xa0b", "a\x85", "\x1cA", "{f", "f}", ";f", "f;", "0.5", "*", "1e1", "x"])
_CTM_SHAPES = st.one_of(
    _records(), _BLANK_LINES,
    st.builds(lambda f, c, s, d, w, conf, sep: sep.join([f, c, s, d, w] + ([conf] if conf else [])),
              _CTM_FIELDS, _CTM_FIELDS, _CTM_FIELDS, _CTM_FIELDS, _TOKENS,
              st.sampled_from(["", "0.5", "-", "1.", "x", "\xa0"]), st.sampled_from([" ", "\t", "  "])),
    st.builds(lambda w, c, t: f"sw_1 A {t} 0.30 {w}{c}", _TOKENS,
              st.sampled_from(["", " 0.5", " 1", " -", " .", " x", " *"]), st.sampled_from(["0.10", "1", "*", "x"])))


# A GLM whose rules see blanks, write parentheses, braces, '@', several words, nothing, and span
# words (case-insensitive, copy_no_hit = T).
NASTY_GLM = parse_glm_bytes(
    b";;\n* case_sensitive = 'F'\n[  ] => [ Q ]\nUM => [{UM / @}] / __\nGONNA => [GOING TO]\n"
    b"WANNA => [(WANT) TO]\nUH => [ ] / [ ] __ [ ]\nA B => [{AB / A B}] / [ ] __ [ ]\n"
    b"IT'S => [{IT'S / IT IS / {IT / IT'S} HAS}] / __\nX => [(]\nY => [)] / [ ] __\nF => [{G/}] / __\n"
    b"- => [ - ]\n0 => [ZERO] / __ [.]\nSW => sw\n")
_GLMS = st.sampled_from([RT03_GLM, NASTY_GLM])


@settings(max_examples=400, deadline=None)
@given(st.lists(_CTM_SHAPES, max_size=12), st.booleans(), st.booleans(), st.booleans(), _GLMS)
def test_adversarial_ctm_identical(lines, dh, upcase, flatten, glm):
    text = "".join(line + "\n" for line in lines)
    fast, ref = filter_both(text, glm, "ctm", delete_hyphens=dh, upcase=upcase, encoding="latin-1",
                            flatten_alternations=flatten)
    assert fast == ref


_STM_SHAPES = st.one_of(
    _records(10), _BLANK_LINES,
    st.builds(lambda a, b: f"f A s 0.0 1.0 <o> {a} {b}", _TOKENS, _TOKENS),
    st.builds(lambda a, b: f"f A s 0.0 1.0 {a}\t{b}", _TOKENS, _TOKENS))


@settings(max_examples=400, deadline=None)
@given(st.lists(_STM_SHAPES, max_size=8), st.sampled_from(["stm", "trn", "txt"]), st.booleans(), _GLMS)
def test_adversarial_transcripts_identical(lines, fmt, dh, glm):
    if fmt == "trn":
        lines = [line + " (u1)" if i % 2 else line for i, line in enumerate(lines)]
    text = "".join(line + "\n" for line in lines)
    fast, ref = filter_both(text, glm, fmt, delete_hyphens=dh, encoding="latin-1")
    assert fast == ref


def _glm(tmp_path, body: str, *, copy_no_hit="T") -> str:
    path = tmp_path / "g.glm"
    path.write_text(";;\n* name 'g'\n* copy_no_hit = '" + copy_no_hit + "'\n* case_sensitive = 'F'\n" + body)
    return str(path)


def test_stage_that_merges_lines_falls_back(tmp_path):
    # copy_no_hit = F drops the newline: rfilter1's output runs records together
    glm = _glm(tmp_path, "UH => %HESITATION / [ ] __ [ ]\nA => B\n", copy_no_hit="F")
    for fmt, text in (("txt", "a uh\nuh b\n"), ("ctm", "f A 0 1 uh\nf A 1 1 a 0.5\n"),
                      ("stm", "f A s 0 1 uh a\nf A s 1 2 a\n"), ("trn", "uh a (u1)\na (u2)\n")):
        fast, ref = filter_both(text, glm, fmt)
        assert fast == ref
    # a rule writing '(' at the end: s/\(\s+/(/ then eats the newline
    glm = _glm(tmp_path, "ZZ => (\nQ => (Q\n")
    for fmt, text in (("txt", "a zz\nb c\nq\nd\n"), ("stm", "f A s 0 1 a zz\nf A s 1 2 b\n"),
                      ("ctm", "f A 0 1 zz\nf A 1 1 b\nf A 2 1 q 0.5\n")):
        fast, ref = filter_both(text, glm, fmt)
        assert fast == ref


def test_blank_runs_and_empty_lines_identical():
    # a rule that matches two blanks sees exactly the blanks csrfilt's clean-up leaves
    glm = parse_glm_bytes(b";;\n[  ] => [ Q ]\n[ \t] => [ T ]\n")
    text = "\n\na\n a\na \n\ta  b\n;; c\n"
    for fmt in ("txt", "trn", "stm", "ctm"):
        fast, ref = filter_both(text, glm, fmt)
        assert fast == ref
    assert filter_both(text, glm, "txt")[0][1].startswith("Q\nQ\n")


def test_errors_identical():
    # unbalanced parentheses (csrfilt's report), unparsable STM/trn, empty CTM alternative
    cases = [("ctm", "f A 0 1 (uh\nf A 1 1 a\nf A 2 1 b)\n"), ("stm", "f A s 0 1 (a (b) c)\nf A\n"),
             ("stm", "f A\nf A s 0 1 (a\n"), ("trn", "no id here\n"), ("ctm", "f A 0 1 a\nf A 0.5 1 {/x}\n"),
             ("ctm", "f A 0 1 (a\nf A 0.5 1 {/x}\n")]
    for fmt, text in cases:
        fast, ref = filter_both(text, RT03_GLM, fmt)
        assert fast == ref and fast[0] == "error", (fmt, text, fast)
    # objects: the filtered CTM is read back (a '*' confidence, an ALT block nested by a rule)
    items = parse_ctm_lines(enumerate(["f A 0 1 a 0.5", "f A * * <ALT_BEGIN>", "f A 1 1 it's", "f A * * <ALT>",
                                       "f A 1 1 b", "f A * * <ALT_END>"], 1), "x.ctm")
    fast, ref = apply_both(RT03_GLM, items, "ctm")
    assert fast == ref and fast[0] == "error" and "nested" in fast[2]
    fast, ref = apply_both(RT03_GLM, items, "ctm", flatten_alternations=True)
    assert fast == ref and fast[0] == "ok"
    text = open(os.path.join(CSRFILT_DATA, "test_ctm.errors.in")).read()
    fast, ref = filter_both(text, os.path.join(CSRFILT_DATA, "example.glm"), "ctm", delete_hyphens=True)
    assert fast == ref and fast[1] == "OptionalDeletionError"


def test_csrfilt_golden_inputs_identical():
    glm = os.path.join(CSRFILT_DATA, "example.glm")
    for name, fmt in (("test.stm.in", "stm"), ("test.trn.in", "trn"), ("test.in", "trn"), ("test_ctm.in", "ctm"),
                      ("test.in", "txt")):
        text = open(os.path.join(CSRFILT_DATA, name), encoding="latin-1").read()
        for dh in (False, True):
            fast, ref = filter_both(text, glm, fmt, delete_hyphens=dh, encoding="latin-1")
            assert fast == ref and fast[0] == "ok"


def test_glm_cache_follows_the_file_and_the_selection(tmp_path):
    glm = _glm(tmp_path, "UH => %HESITATION / [ ] __ [ ]\n;; INPUT_DEPENDENT_APPLICATION = \"ctm\"\nA => B\n")
    assert filter_text("a uh\n", glm, "txt") == "A %HESITATION\n"
    assert filter_text("f A 0 1 a\n", glm, "ctm") == "f A 0 1 B\n"  # same file, other section kept
    assert filter_text("a uh\n", glm, "txt") == "A %HESITATION\n"
    os.utime(glm, ns=(1, 1))
    with open(glm, "a") as f:  # new size and mtime: read again
        f.write("UH => UHH\n")
    assert filter_text("a uh\n", glm, "txt") == "A %HESITATION\n"  # the first matching rule still wins
    with open(glm, "w") as f:
        f.write(";;\n* case_sensitive = 'F'\nUH => ER\n")
    assert filter_text("a uh\n", glm, "txt") == "A ER\n"
    # a Glm object is cached by identity, not by content
    g1 = parse_glm_bytes(b";;\nX => Y\n")
    g2 = parse_glm_bytes(b";;\nX => Z\n")
    assert filter_text("x\n", g1, "txt") == "Y\n" and filter_text("x\n", g2, "txt") == "Z\n"
    assert filter_text("x\n", g1, "txt") == "Y\n"
    # an unknown format is still reported by csrfilt_text, not by the compiler
    fast, ref = filter_both("x\n", glm, "sgml")
    assert fast == ref and fast[0] == "error"


def test_real_rt03_glm_is_selected_per_input_type():
    # the ctm-only section of en20030506.glm (contractions -> alternations) must not leak into
    # the STM selection through the cache
    stm = "f A s 0 1 it's\n"
    ctm = "f A 0 1 it's\n"
    assert filter_text(ctm, RT03_GLM, "ctm") == reference_filter_text(ctm, RT03_GLM, "ctm")
    assert "<ALT_BEGIN>" in filter_text(ctm, RT03_GLM, "ctm")
    assert filter_text(stm, RT03_GLM, "stm") == reference_filter_text(stm, RT03_GLM, "stm") == "f A s 0 1 IT'S\n"
    assert read_glm(RT03_GLM, input_type="stm").rules != read_glm(RT03_GLM, input_type="ctm").rules


_glm_piece = st.text(alphabet="ab c", max_size=3)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_glm_piece.filter(bool), st.text(alphabet="XY ", max_size=3), _glm_piece, _glm_piece),
                min_size=1, max_size=8),
       st.lists(st.text(alphabet="abcAB \t\n", max_size=30), min_size=1, max_size=5), st.booleans(), st.booleans())
def test_piecewise_rewriting_equals_whole_line_rewriting(rules, lines, case_sensitive, copy_no_hit):
    # rules with and without spaces in the left-hand side and the contexts: the piece-by-piece
    # rewriting (memoized per piece) must equal rfilter1 on the whole line
    from lattice_tools.io.transcripts.glm import Glm, GlmRule

    glm = Glm(tuple(GlmRule(lhs, rhs, left, right) for lhs, rhs, left, right in rules),
              case_sensitive=case_sensitive, copy_no_hit=copy_no_hit)
    compiled = CompiledGlm(glm)
    piecewise = PiecewiseRewriter(compiled)
    for line in lines + lines:  # the second round is answered from the memo
        assert piecewise(line) == compiled.apply(line)
        assert piecewise(" " + line + " \n") == compiled.apply(" " + line + " \n")


def test_glm_reader_ascii_shortcut_equals_full_decoding():
    # io.glm skips decoding ASCII rule lines for ASCII-compatible codecs; 'utf-8-sig' is not in
    # its list, so it takes the full decoding path: both must give the same rules
    for path in (RT03_GLM, os.path.join(CSRFILT_DATA, "example.glm")):
        data = open(path, "rb").read()
        for input_type in (None, "stm", "ctm"):
            fast = parse_glm_bytes(data, path, encoding="utf-8", input_type=input_type)
            full = parse_glm_bytes(data, path, encoding="utf-8-sig", input_type=input_type)
            assert [(r, r.text, r.warnings) for r in fast.rules] == [(r, r.text, r.warnings) for r in full.rules]
            assert dataclasses.replace(fast, encoding="x") == dataclasses.replace(full, encoding="x")
    data = ";;\n* case_sensitive = 'F'\nÉTÉ => SUMMER\nA => À / [ ] __ [ ]\n".encode()
    assert [r.lhs for r in parse_glm_bytes(data, encoding="utf-8").rules] == ["ÉTÉ", "A"]
    assert parse_glm_bytes(data, encoding="utf-8").rules[1].rhs == "À"
