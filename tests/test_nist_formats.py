"""STM / CTM / trn / GLM readers and writers: exact round trips of NIST's own test files,
the RT-03 GLM, ALT blocks (nested ones flattened), and malformed inputs."""
from __future__ import annotations

import dataclasses
import glob
import os

import pytest
from _nist_helpers import CSRFILT_DATA, RT03_GLM, SCLITE_DATA

from lattice_tools.core.errors import BudgetExceededError, FormatError
from lattice_tools.io.transcripts.ctm import (
    CtmAltBlock,
    CtmWord,
    flatten_nested_block,
    parse_ctm_line,
    parse_ctm_lines,
    read_ctm,
    write_ctm,
)
from lattice_tools.io.transcripts.glm import parse_glm_bytes, parse_rule_line, read_glm
from lattice_tools.io.transcripts.stm import Stm, StmSegment, parse_stm_line, read_stm, write_stm
from lattice_tools.io.transcripts.trn import TrnUtterance, read_trn, write_trn


def _encoding(name: str) -> str:
    if name.startswith("mand"):
        return "gb18030"  # NIST's Mandarin files are GB-encoded (sclite -e gb)
    if "utf8-5bytes" in name or "utf8-6bytes" in name:
        return "latin-1"  # obsolete 5/6-byte "UTF-8" sequences: carried byte for byte
    return "utf-8"


SCLITE_FILES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SCLITE_DATA, "*"))
                      if os.path.isfile(p) and p.endswith((".stm", ".ctm", ".ref", ".hyp", ".trn"))
                      or "bytes" in os.path.basename(p))


@pytest.mark.parametrize("name", SCLITE_FILES)
def test_round_trip_is_byte_identical(name, tmp_path):
    src = os.path.join(SCLITE_DATA, name)
    out = tmp_path / name
    enc = _encoding(name)
    if name.endswith(".stm"):
        write_stm(out, read_stm(src, enc), enc)
    elif name.endswith(".ctm"):
        write_ctm(out, read_ctm(src, enc), encoding=enc)
    else:
        write_trn(out, read_trn(src, enc), enc)
    assert out.read_bytes() == open(src, "rb").read()


def test_round_trip_file_list_is_complete():
    # every STM/CTM/trn-like file of the sclite suite is covered (37 at the time of writing)
    assert len(SCLITE_FILES) >= 37


def test_stm_fields_labels_and_comments():
    stm = read_stm(os.path.join(SCLITE_DATA, "lvc_ref.stm"))
    assert stm.header[0] == ';; CATEGORY "0" "" ""'
    assert any(line.startswith(";; LABEL") for line in stm.header)
    seg = stm.segments[0]
    assert (seg.file, seg.channel, seg.speaker, seg.start, seg.end) == ("2347", "a", "2347-a", 1.06, 3.47)
    assert seg.labels == "O,WA" and seg.label_list == ("O", "WA")
    assert seg.text.startswith("i've;tag1 { um;tag1; / uh;;tag2 }")
    empty = [s for s in stm.segments if s.text == ""]
    assert empty and all(s.labels in (None, "O,NA") for s in empty)
    ign = read_stm(os.path.join(SCLITE_DATA, "lvc_refe.stm"))
    assert ign.segments  # parses; IGNORE_TIME_SEGMENT_IN_SCORING kept raw
    line = parse_stm_line("f 1 s 0 1 IGNORE_TIME_SEGMENT_IN_SCORING", "x", 3)
    assert line.is_ignore_time_segment and line.labels is None


def test_stm_modified_segment_is_written_canonically(tmp_path):
    stm = read_stm(os.path.join(SCLITE_DATA, "lvc_ref.stm"))
    changed = dataclasses.replace(stm.segments[0], text="hello world")
    write_stm(tmp_path / "x.stm", Stm((changed,) + stm.segments[1:], stm.header, layout=stm.layout))
    lines = (tmp_path / "x.stm").read_text().splitlines()
    assert "2347 a 2347-a 1.06 3.47 <O,WA> hello world" in lines
    assert len(lines) == len(open(os.path.join(SCLITE_DATA, "lvc_ref.stm")).read().splitlines())
    # plain segment list (no header) gets canonical formatting
    write_stm(tmp_path / "y.stm", [StmSegment("f", "A", "s", 1.5, 2.25, None, "a b")])
    assert (tmp_path / "y.stm").read_text() == "f A s 1.5 2.25 a b\n"


@pytest.mark.parametrize("line, expected", [
    ("f 1 s 0.0", "got 4 field"),
    ("f 1 s x 1.0 hi", "number for the start"),
    ("f 1 s 2.0 1.0 hi", "precedes its start"),
    ("f 1 s 0.0 1.0 <O,WA hi", "'>' closing"),
    ("f 1 s 0.0 nan hi", "finite"),
])
def test_stm_malformed_lines(line, expected):
    with pytest.raises(FormatError) as err:
        parse_stm_line(line, "bad.stm", 7)
    assert "bad.stm:7" in str(err.value) and expected in str(err.value)


def test_ctm_words_confidence_and_alt_blocks():
    items = read_ctm(os.path.join(SCLITE_DATA, "lvc_hypc.ctm"))
    first = items[0]
    assert isinstance(first, CtmWord) and first.word == "THEY" and first.confidence == pytest.approx(0.31)
    assert first.start == 0.05 and first.duration == 0.24 and first.end == pytest.approx(0.29)
    blocks = [i for i in read_ctm(os.path.join(SCLITE_DATA, "lvc_hyp.ctm")) if isinstance(i, CtmAltBlock)]
    assert blocks
    b = blocks[0]
    assert [[w.word for w in alt] for alt in b.alternatives] == [["IT"], ["AT"]]
    assert b.start == 76.24 and b.end == pytest.approx(76.58)
    comments = read_ctm(os.path.join(CSRFILT_DATA, "test_ctm.out")).comments
    assert comments == [(0, ";;"), (0, ";;"), (0, ";;  comments lines"), (0, ";;")]
    with pytest.raises(FormatError) as err:  # csrfilt's input has a two-word record sclite rejects
        read_ctm(os.path.join(CSRFILT_DATA, "test_ctm.in"))
    assert "test_ctm.in:10" in str(err.value)


def test_ctm_empty_alternative_and_writer(tmp_path):
    lines = ["f A * * <ALT_BEGIN>", "f A 1.00 0.50 UM", "f A * * <ALT>", "f A * * @", "f A * * <ALT_END>",
             "f A 2.00 0.30 YES 0.9"]
    items = parse_ctm_lines(enumerate(lines, 1), "t.ctm")
    assert items[0].alternatives[1] == ()
    # changed items are written canonically: '*' tag lines, '@' for the empty alternative
    block = dataclasses.replace(items[0], raw=None)
    word = CtmWord("f", "A", 2.0, 0.3, "YES", 0.9)
    write_ctm(tmp_path / "o.ctm", [block, word])
    assert (tmp_path / "o.ctm").read_text().splitlines() == [
        "f A * * <ALT_BEGIN>", "f A 1.00 0.50 UM", "f A * * <ALT>", "f A * * @", "f A * * <ALT_END>",
        "f A 2.00 0.30 YES 0.900"]


NESTED = ["f A * * <ALT_BEGIN>",
          "f A * * <ALT_BEGIN>", "f A 1.0 0.4 S.'S", "f A * * <ALT>", "f A 1.0 0.2 S.", "f A 1.2 0.2 IS",
          "f A * * <ALT_END>", "f A 1.4 0.1 OK",
          "f A * * <ALT>", "f A 1.0 0.4 SHE", "f A 1.4 0.1 OK",
          "f A * * <ALT>", "f A 1.0 0.4 S.'S", "f A 1.4 0.1 OK",
          "f A * * <ALT_END>"]


def test_nested_alt_blocks_are_reported():
    with pytest.raises(FormatError) as err:
        parse_ctm_lines(enumerate(NESTED, 1), "n.ctm")
    assert "n.ctm:2" in str(err.value) and "nested" in str(err.value)


def test_nested_alt_blocks_flatten_cartesian_first_kept_dedup():
    items = parse_ctm_lines(enumerate(NESTED, 1), "n.ctm", nested="flatten")
    assert len(items) == 1
    alts = [[w.word for w in alt] for alt in items[0].alternatives]
    # inner block expanded in place, first listed first, the duplicate "S.'S OK" dropped
    assert alts == [["S.'S", "OK"], ["S.", "IS", "OK"], ["SHE", "OK"]]
    with pytest.raises(BudgetExceededError):
        parse_ctm_lines(enumerate(NESTED, 1), "n.ctm", nested="flatten", max_alternatives=2)


def test_flatten_matches_brute_force_enumeration():
    # three inner blocks of 2, 3 and 2 alternatives inside one outer alternative -> 12 paths
    def word(w):
        return CtmWord("f", "A", 0.0, 0.1, w)

    inner = [CtmAltBlock("f", "A", tuple((word(f"{k}{j}"),) for j in range(n))) for k, n in enumerate((2, 3, 2))]
    outer = CtmAltBlock("f", "A", ((inner[0], word("mid"), inner[1], inner[2]), (word("x"),)))
    flat = flatten_nested_block(outer)
    got = [tuple(w.word for w in alt) for alt in flat.alternatives]
    expected = [(f"0{a}", "mid", f"1{b}", f"2{c}") for a in range(2) for b in range(3) for c in range(2)] + [("x",)]
    assert got == expected


@pytest.mark.parametrize("lines, expected", [
    (["f A 1.0"], "got 3 fields"),
    (["f A x 0.1 HI"], "start time"),
    (["f A 1.0 0.1 HI abc"], "confidence"),
    (["f A * * <ALT>"], "<ALT> outside"),
    (["f A * * <ALT_END>"], "<ALT_END> outside"),
    (["f A * * <ALT_BEGIN>", "f A 1.0 0.1 HI"], "expected <ALT_END>"),
    (["f A * * <ALT_BEGIN>", "g A 1.0 0.1 HI"], "expected file/channel"),
    (["f A 1.0 0.1 HI 0.5 bogus spk"], "token type"),  # (a bare '@' is sclite's null word: test_sclite_parity)
    (["f A 1.0 0.1 HI 0.5 lex spk extra"], "got 9 fields"),
])
def test_ctm_malformed(lines, expected):
    with pytest.raises(FormatError) as err:
        parse_ctm_lines(enumerate(lines, 1), "bad.ctm")
    assert "bad.ctm" in str(err.value) and expected in str(err.value)


def test_ctm_negative_duration_accepted_like_sclite():
    # NIST's tima_hyp.ctm has '-0.01' durations and sclite scores it
    assert parse_ctm_line("5555  A  101.23  -0.01  AND").duration == -0.01


def test_trn_speaker_and_malformed(tmp_path):
    utts = read_trn(os.path.join(SCLITE_DATA, "demo.ref.txt"))
    assert utts[0].utt_id == "speaker1-utterance1" and utts[0].speaker == "speaker1"
    assert TrnUtterance("4T0C0201", "x").speaker == "4T0C0201"
    bad = tmp_path / "bad.trn"
    bad.write_text("hello world (a)\nno id here\n")
    with pytest.raises(FormatError) as err:
        read_trn(bad)
    assert f"{bad}:2" in str(err.value)


def test_rt03_glm_parses_fully():
    glm = read_glm(RT03_GLM)
    assert glm.name == "en20030506.glm" and glm.max_nrules == 2500
    assert glm.copy_no_hit and not glm.case_sensitive and glm.comment_flag == ";;"
    # 1748 lines contain '=>', 136 of them are commented out
    assert len(glm.rules) == 1612
    assert glm.sections == ((655, "ctm"),)
    assert sum(r.section == "ctm" for r in glm.rules) == 1149  # rule lines after line 655 (grep: 1149)
    assert len(read_glm(RT03_GLM, input_type="stm").rules) == 463
    first = glm.rules[0]
    assert (first.lhs, first.rhs, first.left_context, first.right_context) == ("HUH-UH", "%BCNACK", " ", " ")
    falkner = next(r for r in glm.rules if r.lhs == "FALKNER")
    assert (falkner.left_context, falkner.right_context) == ("WILLIAM ", "")
    im = next(r for r in glm.rules if r.lhs == "IT'S")
    assert im.rhs == "{IT'S / IT IS / IT HAS}"
    # the one rule of the real file that rfilter1 truncates (missing '] / [ ] __ [ ]')
    webster = [r for r in glm.rules if r.warnings]
    assert [r.lineno for r in webster] == [1764] and webster[0].rhs == "[{WEBSTER'S / WEBSTER IS"


def test_glm_quirks_follow_rfilter1():
    g = read_glm(os.path.join(CSRFILT_DATA, "example.glm"))
    by_line = {r.lineno: r for r in g.rules}
    assert by_line[35].lhs == "/SLASH" and by_line[35].rhs == ""  # the '/' is taken as context marker
    assert by_line[120].lhs == " OK " and by_line[120].rhs == " OKAY "  # "..." delimits like [...]
    rec = by_line[123]  # '__A' is skipped as part of the slot token
    assert rec.rhs == "{RECURSIVE/RECUR {SIVE / SI VE}}" and rec.right_context == " "
    assert parse_rule_line("X => { A / B }").rhs == "{ A"


@pytest.mark.parametrize("content, expected, line", [
    (b";; c\nA B C\n", "expected '=>'", 2),
    (b";; c\n  ;; indented comment\n", "blank line", 2),
    (b";; c\n* name = none\n", "quoted value", 2),
    (b";; c\n* max_nrules = '1'\nA => B\nC => D\n", "max_nrules = 1", 4),
    (b";; c\n* format = 'NIST2'\nA => B\n", "NIST1", 3),
])
def test_glm_malformed(content, expected, line):
    with pytest.raises(FormatError) as err:
        parse_glm_bytes(content, "bad.glm")
    assert f"bad.glm:{line}" in str(err.value) and expected in str(err.value)


def test_glm_empty_file():
    with pytest.raises(FormatError):
        parse_glm_bytes(b"", "e.glm")


def test_tokenize_transcript():
    from lattice_tools.io.transcripts.stm import tokenize_transcript

    assert tokenize_transcript("a {I'M / I AM} (uh) b/c { x / @ } pla-") == [
        "a", "{", "I'M", "/", "I", "AM", "}", "(uh)", "b/c", "{", "x", "/", "@", "}", "pla-"]
    assert tokenize_transcript("{RECURSIVE/RECUR {SIVE / SI VE}}") == [
        "{", "RECURSIVE", "/", "RECUR", "{", "SIVE", "/", "SI", "VE", "}", "}"]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_word = st.text(alphabet="ABCXYZabc'-.%", min_size=1, max_size=6)
_time = st.floats(min_value=0, max_value=5000, allow_nan=False).map(lambda x: round(x, 3))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_word, _time, _time, st.none() | st.floats(0, 1).map(lambda x: round(x, 3))),
                min_size=1, max_size=12))
def test_ctm_write_read_property(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("ctm") / "p.ctm"
    words = [CtmWord("f", "A", s, d, w, c) for w, s, d, c in rows]
    write_ctm(path, words, time_format=None, conf_format="%r")
    assert list(read_ctm(path)) == [dataclasses.replace(w, lineno=i) for i, w in enumerate(words, 1)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_time, _time, st.lists(_word, max_size=5), st.sampled_from([None, "O", "O,f0,male"])),
                min_size=1, max_size=8))
def test_stm_write_read_property(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("stm") / "p.stm"
    segs = [StmSegment("f", "A", "spk", min(a, b), max(a, b), lab, " ".join(ws)) for a, b, ws, lab in rows]
    write_stm(path, segs)
    assert read_stm(path).segments == tuple(dataclasses.replace(s, lineno=i) for i, s in enumerate(segs, 1))
