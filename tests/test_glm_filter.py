"""GLM filtering equal to csrfilt.sh: NIST golden files byte for byte, Debian csrfilt.sh on random
texts with the RT-03 GLM, the csrfilt error case, and the sclite repairs (checked with Debian sclite)."""
from __future__ import annotations

import os
import random
import subprocess

import pytest
from _nist_helpers import (
    CSRFILT_DATA,
    DEBIAN_SCLITE,
    RT03_GLM,
    glm_vocabulary,
    have_debian_csrfilt,
    random_ctm,
    random_stm,
    random_trn,
    random_txt,
    run_debian_csrfilt,
)
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.core.errors import BudgetExceededError, FormatError
from lattice_tools.io.transcripts.ctm import CtmAltBlock, CtmWord
from lattice_tools.io.transcripts.glm import parse_glm_bytes, read_glm
from lattice_tools.io.transcripts.stm import Stm, read_stm
from lattice_tools.scoring.glm import (
    CompiledGlm,
    GlmFilterOptions,
    OptionalDeletionError,
    apply_glm,
    drop_ctm_words,
    expand_alternation,
    filter_file,
    filter_text,
    glm_word_classes,
    optionalize_words,
    repair_optional_alternations,
)

EXAMPLE_GLM = os.path.join(CSRFILT_DATA, "example.glm")
EXAMPLE_UTM = os.path.join(CSRFILT_DATA, "example.utm")

GOLDEN = [  # the table of tests/data/sctk/README.md
    ("test.stm.in", "stm", True, "test.stm.-dh.out"),
    ("test.stm.in", "stm", False, "test.stm.out"),
    ("test.trn.in", "trn", True, "test.trn.-dh.out"),
    ("test.trn.in", "trn", False, "test.trn.out"),
    ("test.in", "trn", True, "test.out"),  # csrfilt's default -i is trn
    ("test_ctm.in", "ctm", False, "test_ctm.out"),
    ("test_ctm.in", "ctm", True, "test_ctm.-dh.out"),
]


@pytest.mark.parametrize("src, fmt, dh, expected", GOLDEN)
def test_csrfilt_golden_files_byte_identical(src, fmt, dh, expected, tmp_path):
    out = tmp_path / expected
    filter_file(EXAMPLE_GLM, os.path.join(CSRFILT_DATA, src), out, fmt, GlmFilterOptions(delete_hyphens=dh),
                utterance_map=EXAMPLE_UTM)
    assert out.read_bytes() == open(os.path.join(CSRFILT_DATA, expected), "rb").read()


def test_plain_text_input_as_txt():
    # test.in as -i txt (checked against Debian csrfilt.sh): ';;' lines become empty lines and the
    # ids are filtered like words, so '(4NL-C0208)' becomes two optional words
    text = open(os.path.join(CSRFILT_DATA, "test.in")).read()
    out = filter_text(text, EXAMPLE_GLM, "txt", options=GlmFilterOptions(delete_hyphens=True)).splitlines()
    assert out[:4] == ["", "", "", ""]
    assert out[4] == "THE FEMALE PRODUCES A LITTER OF TWO TO FOUR YOUNG IN NOVEMBER AND DECEMBER (4NDA0101)"
    assert out[-1].endswith("THREE EIGHTH (4NL) (C0208)")


def test_csrfilt_error_case_fails_with_its_report(tmp_path):
    out = tmp_path / "never.ctm"
    with pytest.raises(OptionalDeletionError) as err:
        filter_file(EXAMPLE_GLM, os.path.join(CSRFILT_DATA, "test_ctm.errors.in"), out, "ctm",
                    GlmFilterOptions(delete_hyphens=True))
    message = str(err.value)
    assert "test_ctm.errors.in:16" in message and "optional deletion" in message
    golden = open(os.path.join(CSRFILT_DATA, "test_ctm.errors.out")).read().split("\n", 1)[1]
    assert "".join(err.value.report_lines) == golden
    assert not out.exists()


def test_cli_filter_golden_and_error(tmp_path):
    from lattice_tools.cli import main

    runner = CliRunner()
    out = tmp_path / "o.stm"
    res = runner.invoke(main, ["filter", "--glm", EXAMPLE_GLM, "-i", "stm", "-dh", "--utterance-map", EXAMPLE_UTM,
                               os.path.join(CSRFILT_DATA, "test.stm.in"), str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == open(os.path.join(CSRFILT_DATA, "test.stm.-dh.out"), "rb").read()
    res = runner.invoke(main, ["filter", "--glm", EXAMPLE_GLM, "-i", "ctm", "-dh",
                               os.path.join(CSRFILT_DATA, "test_ctm.errors.in"), str(tmp_path / "e.ctm")])
    assert res.exit_code == 2 and "optional deletion" in res.output and "Traceback" not in res.output


def test_apply_glm_on_records():
    stm = read_stm(os.path.join(CSRFILT_DATA, "test.stm.out"))
    again = apply_glm(EXAMPLE_GLM, stm, fmt="stm")
    assert isinstance(again, Stm) and [s.text for s in again.segments] == [s.text for s in stm.segments]
    words = [CtmWord("f", "1", 1.0, 0.4, "s.'s", 0.5), CtmWord("f", "1", 1.4, 0.2, "ok")]
    items = apply_glm(EXAMPLE_GLM, words, fmt="ctm")
    assert isinstance(items[0], CtmAltBlock)
    assert [[w.word for w in alt] for alt in items[0].alternatives] == [["S.'S"], ["S.", "IS"], ["S.", "HAS"]]
    assert items[0].alternatives[1][1].start == pytest.approx(1.2) and items[1].word == "OKAY"
    with pytest.raises(FormatError):
        apply_glm(EXAMPLE_GLM, words, fmt="ctm", utterance_map="/nonexistent.utm")


def test_rfilter1_semantics_small_cases():
    glm = parse_glm_bytes(b";; t\n* case_sensitive = 'F'\nAB => X\nA => Y / [Q] __\nABC => Z\n"
                          b"[B] => [W] / __ [C]\n", "t.glm")
    c = CompiledGlm(glm)
    # first rule in file order wins at a position, contexts look at the input, cursor skips the lhs
    assert c.apply("abc qa ab\n") == "Xc qY X\n"
    assert c.apply("bc\n") == "Wc\n"
    no_copy = parse_glm_bytes(b";; t\n* copy_no_hit = 'F'\nAB => X\n", "t.glm")
    assert CompiledGlm(no_copy).apply("zzABzz\n") == "X"


@pytest.mark.skipif(not have_debian_csrfilt(), reason="needs Debian /usr/lib/sctk/bin/csrfilt.sh")
@pytest.mark.parametrize("seed", [11, 12])
@pytest.mark.parametrize("fmt", ["stm", "ctm", "trn", "txt"])
def test_matches_debian_csrfilt_on_random_texts(seed, fmt):
    rng = random.Random(seed * 100 + len(fmt) + ord(fmt[0]))
    vocab = glm_vocabulary()
    gen = {"stm": random_stm, "ctm": random_ctm, "trn": random_trn, "txt": random_txt}[fmt]
    text = gen(rng, vocab, 120 if fmt == "ctm" else 25)
    glm = read_glm(RT03_GLM)
    for dh in (False, True):
        status, expected = run_debian_csrfilt(RT03_GLM, text.encode(), fmt, dh)
        assert status == 0 and not expected.startswith(b"Error")
        got = filter_text(text, glm, fmt, options=GlmFilterOptions(delete_hyphens=dh)).encode()
        assert got != text.encode()  # rules did fire
        assert got == expected


@pytest.mark.skipif(not have_debian_csrfilt(), reason="needs Debian /usr/lib/sctk/bin/csrfilt.sh")
def test_matches_debian_csrfilt_on_edge_cases():
    text = ("f A s 0 1 <O> x-(y) a--b -c d- ( e f ) g\n"
            "f A s 1 2\n"
            ";; comment stays\n"
            "f A s 2 3 {RECURSIVE/RECUR} s.'s ok \"end-quote /slash\n")
    for fmt in ("stm", "txt"):
        for dh in (False, True):
            status, expected = run_debian_csrfilt(EXAMPLE_GLM, text.encode(), fmt, dh)
            if expected.startswith(b"Error"):
                with pytest.raises(OptionalDeletionError):
                    filter_text(text, EXAMPLE_GLM, fmt, options=GlmFilterOptions(delete_hyphens=dh))
            else:
                assert filter_text(text, EXAMPLE_GLM, fmt, options=GlmFilterOptions(delete_hyphens=dh)).encode() == expected


def test_expand_alternation():
    assert expand_alternation("{RECURSIVE/RECUR {SIVE / SI VE}}") == [["RECURSIVE"], ["RECUR", "SIVE"],
                                                                       ["RECUR", "SI", "VE"]]
    assert expand_alternation("a { b / @ } { c / c }") == [["a", "b", "c"], ["a", "c"]]
    with pytest.raises(FormatError):
        expand_alternation("{ a / b")
    with pytest.raises(BudgetExceededError):
        expand_alternation("{a/b} {c/d} {e/f}", max_alternatives=4)


NESTING_CTM = ("f1 A 0.5 0.2 HELLO\nf1 A * * <ALT_BEGIN>\nf1 A 1.0 0.4 S.'S\nf1 A * * <ALT>\nf1 A 1.0 0.4 SHE\n"
               "f1 A * * <ALT_END>\nf1 A 2.0 0.3 RECURSIVE 0.5\n")


def test_flatten_repairs_csrfilt_ctm_nesting():
    plain = filter_text(NESTING_CTM, EXAMPLE_GLM, "ctm")
    assert plain.count("<ALT_BEGIN>") == 3  # csrfilt nests a block inside the existing one
    assert "2.000 0.150 SI 0.5" in plain  # and splits {RECUR {SIVE / SI VE}} wrongly
    fixed = filter_text(NESTING_CTM, EXAMPLE_GLM, "ctm", options=GlmFilterOptions(flatten_alternations=True))
    assert fixed.count("<ALT_BEGIN>") == 2
    assert "f1 A 2.100 0.100 SI 0.5" in fixed and "f1 A 2.000 0.100 RECUR 0.5" in fixed
    items = apply_glm(EXAMPLE_GLM, NESTING_CTM.splitlines(), fmt="txt")  # txt: plain pass-through of lines
    assert isinstance(items, str)
    with pytest.raises(FormatError):
        apply_glm(EXAMPLE_GLM, [CtmWord("f1", "A", 0.5, 0.2, "HELLO")] + _nesting_items(), fmt="ctm")
    ok = apply_glm(EXAMPLE_GLM, _nesting_items(), fmt="ctm", options=GlmFilterOptions(flatten_alternations=True))
    assert [[w.word for w in a] for a in ok[0].alternatives] == [["S.'S"], ["S.", "IS"], ["S.", "HAS"], ["SHE"]]


def _nesting_items():
    from lattice_tools.io.transcripts.ctm import parse_ctm_lines
    return list(parse_ctm_lines(enumerate(NESTING_CTM.splitlines()[1:6], 1)))


def _sclite_sum(tmp_path, stm_text: str, ctm_text: str, extra=()):
    (tmp_path / "r.stm").write_text(stm_text)
    (tmp_path / "h.ctm").write_text(ctm_text)
    proc = subprocess.run([DEBIAN_SCLITE, "-r", str(tmp_path / "r.stm"), "stm", "-h", str(tmp_path / "h.ctm"), "ctm",
                           *extra, "-o", "sum", "stdout"], capture_output=True, text=True, timeout=60)
    row = [line for line in proc.stdout.splitlines() if "Sum/Avg" in line]
    return proc.returncode, (row[0].replace("|", " ").split()[1:] if row else None)


@pytest.mark.skipif(not os.path.exists(DEBIAN_SCLITE), reason="needs Debian sclite")
def test_flattened_ctm_scores_right_in_sclite(tmp_path):
    ref = "f1 A spk 0.00 5.00 <O> HELLO S. HAS RECUR SI VE\n"
    status, nested = _sclite_sum(tmp_path, ref, filter_text(NESTING_CTM, EXAMPLE_GLM, "ctm"))
    assert status == 0 and nested[2] != "100.0"  # csrfilt's output is mis-scored
    status, flat = _sclite_sum(tmp_path, ref, filter_text(NESTING_CTM, EXAMPLE_GLM, "ctm", options=GlmFilterOptions(flatten_alternations=True)))
    assert status == 0 and flat[1:3] == ["6", "100.0"]


ALT_GLM = b";; t\n* case_sensitive = 'F'\n[I'M] => [{I'M / I AM}] / [ ] __ [ ]\n"


def test_optional_contraction_repair_forms(tmp_path):
    glm_path = tmp_path / "alt.glm"
    glm_path.write_bytes(ALT_GLM)
    stm = "f1 A spk 0.00 5.00 <O> hello (i'm) there\n"
    raw = filter_text(stm, str(glm_path), "stm")
    assert raw == "f1 A spk 0.00 5.00 <O> HELLO ({I'M) (/) (I) (AM}) THERE\n"  # what csrfilt writes
    parens = filter_text(stm, str(glm_path), "stm", options=GlmFilterOptions(repair_optional="parens"))
    assert parens == "f1 A spk 0.00 5.00 <O> HELLO { (I'M) / (I) (AM) } THERE\n"
    at = filter_text(stm, str(glm_path), "stm", options=GlmFilterOptions(repair_optional="at"))
    assert at == "f1 A spk 0.00 5.00 <O> HELLO { I'M / I AM / @ } THERE\n"


@pytest.mark.skipif(not os.path.exists(DEBIAN_SCLITE), reason="needs Debian sclite")
def test_sclite_crashes_on_csrfilt_form_not_on_repairs(tmp_path):
    ref_raw = "f1 A spk 0.00 5.00 <O> HELLO ({I'M) (/) (I) (AM}) THERE\n"
    hyp = "f1 A 1.0 0.5 HELLO\nf1 A 2.0 0.5 I\nf1 A 3.0 0.5 AM\nf1 A 4.0 0.5 THERE\n"
    status, _ = _sclite_sum(tmp_path, ref_raw, hyp, ["-D"])
    assert status != 0  # Debian sclite 2.4.10: segmentation fault
    status, row = _sclite_sum(tmp_path, repair_optional_alternations(ref_raw), hyp, ["-D"])
    assert status == 0 and row[1:4] == ["4", "100.0", "0.0"]
    status, row = _sclite_sum(tmp_path, repair_optional_alternations(ref_raw, "at"), hyp)
    assert status == 0 and row[1:4] == ["4", "100.0", "0.0"]


def test_hesitation_and_backchannel_classes_from_rt03():
    hes, bc = glm_word_classes(RT03_GLM)
    assert hes[0] == "%HESITATION" and {"UH", "UM", "%UH", "ER"} <= set(hes)
    assert {"%BCACK", "%BCNACK", "UH-HUH", "MM-HMM", "UHHUH", "HUH-UH"} <= set(bc)
    assert "YEAH" not in bc and len(bc) == 16


def test_optional_words_and_exclusions(tmp_path):
    hes, bc = glm_word_classes(RT03_GLM)
    stm = "sw1 A sw1_A 0 5 <O> uh-huh yeah um i know { uh / @ } (uh)\n"
    out = filter_text(stm, RT03_GLM, "stm", options=GlmFilterOptions(optional_words=hes + bc))
    assert out == "sw1 A sw1_A 0 5 <O> (%BCACK) YEAH (%HESITATION) I KNOW { %HESITATION / @ } (%HESITATION)\n"
    out = filter_text(stm, RT03_GLM, "stm", options=GlmFilterOptions(optional_words=bc, optional_style="at"))
    assert out.startswith("sw1 A sw1_A 0 5 <O> { %BCACK / @ } YEAH %HESITATION")
    assert optionalize_words("a UH b", ["uh"]) == "a (UH) b"
    ctm = "sw1 A 0.1 0.2 uh-huh\nsw1 A 0.4 0.2 um\nsw1 A 0.7 0.2 yeah 0.9\n"
    out = filter_text(ctm, RT03_GLM, "ctm", options=GlmFilterOptions(exclude_words=hes + bc))
    assert out == "sw1 A 0.700 0.200 YEAH 0.9\n"  # csrfilt rewrites every 6-field record
    block = CtmAltBlock("f", "A", ((CtmWord("f", "A", 0, 1, "UM"),), (CtmWord("f", "A", 0, 1, "I'M"),)))
    dropped = drop_ctm_words([block], ["um"])
    assert dropped[0].alternatives == ((), (CtmWord("f", "A", 0, 1, "I'M"),))


def test_repairs_rejected_for_wrong_format():
    from lattice_tools.core.errors import LatticeToolsError

    with pytest.raises(LatticeToolsError):
        filter_text("f A 0 1 X\n", EXAMPLE_GLM, "ctm", options=GlmFilterOptions(repair_optional="parens"))
    with pytest.raises(LatticeToolsError):
        filter_text("f A s 0 1 X\n", EXAMPLE_GLM, "stm", options=GlmFilterOptions(exclude_words=["X"]))


def test_malformed_records_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.stm"
    bad.write_text("f A s 0 1 ok\nx y\n")  # csrfilt accepts any line with 5 non-blank chars
    with pytest.raises(FormatError) as err:
        filter_file(EXAMPLE_GLM, bad, tmp_path / "o.stm", "stm")
    assert f"{bad}:2" in str(err.value)
    bad_trn = tmp_path / "bad.trn"
    bad_trn.write_text("no id\n")
    with pytest.raises(FormatError) as err:
        filter_file(EXAMPLE_GLM, bad_trn, tmp_path / "o.trn", "trn")
    assert f"{bad_trn}:1" in str(err.value)


def _rfilter1_reference(rules, line: str, case_sensitive: bool, copy_no_hit: bool = True) -> str:
    """Literal transcription of rfilter1's documented algorithm (GLMRules.txt section 2): a cursor,
    rules tried top to bottom at each position; the independent reference for CompiledGlm's trie."""
    fold = (lambda s: s) if case_sensitive else (lambda s: s.upper())
    out, i = [], 0
    while i < len(line):
        for lhs, rhs, left, right in rules:
            if not lhs:
                continue
            if fold(line[i:i + len(lhs)]) != fold(lhs):
                continue
            if left and (i < len(left) or fold(line[i - len(left):i]) != fold(left)):
                continue
            if right and fold(line[i + len(lhs):i + len(lhs) + len(right)]) != fold(right):
                continue
            out.append(rhs)
            i += len(lhs)
            break
        else:
            if copy_no_hit:
                out.append(line[i])
            i += 1
    return "".join(out)


_piece = st.text(alphabet="ab c", max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_piece.filter(bool), st.text(alphabet="XY ", max_size=3), _piece, _piece),
                min_size=1, max_size=8),
       st.text(alphabet="abcAB \n", max_size=30), st.booleans(), st.booleans())
def test_compiled_glm_equals_reference_algorithm(rules, line, case_sensitive, copy_no_hit):
    from lattice_tools.io.transcripts.glm import Glm, GlmRule

    glm = Glm(tuple(GlmRule(lhs, r, lc, rc) for lhs, r, lc, rc in rules), case_sensitive=case_sensitive,
              copy_no_hit=copy_no_hit)
    assert CompiledGlm(glm).apply(line) == _rfilter1_reference(rules, line, case_sensitive, copy_no_hit)
