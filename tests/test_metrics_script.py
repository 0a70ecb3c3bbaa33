"""Script Fidelity Rate, collapse, taxonomy, CMI, switch points and composite on hand-built cases."""
# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import pytest

from lattice_tools.core.errors import LatticeToolsError
from lattice_tools.metrics.codeswitch import (
    ScriptTagger,
    cmi_bucket,
    code_mixing_index,
    composite,
    match_with_tolerance,
    switch_point_counts,
    switch_points,
)
from lattice_tools.metrics.evaluate import EvalConfig, evaluate_system, summarize
from lattice_tools.metrics.io import Annotation
from lattice_tools.metrics.levenshtein import align
from lattice_tools.metrics.script import char_script, script_counts, script_fidelity


def test_char_script_basics():
    assert char_script("क") == "Devanagari"
    assert char_script("ি") == "Bengali"          # vowel sign: script of its block
    assert char_script("த") == "Tamil"
    assert char_script("മ") == "Malayalam"
    assert char_script("a") == "Latin"
    for c in " 1।,.?!०":                         # space, digits (incl. Devanagari zero), danda, punctuation
        assert char_script(c) is None
    # an Inherited combining mark counts with its base letter
    assert script_counts("e\u0301") == {"Latin": 2}


@pytest.mark.parametrize("hyp,lang,sfr,collapse,dominant", [
    ("मेरा नाम", "hi", 1.0, False, "Devanagari"),                 # 6 Devanagari code points
    ("আমার নাম", "bn", 1.0, False, "Bengali"),
    ("என் பெயர்", "ta", 1.0, False, "Tamil"),
    ("എന്റെ പേര്", "ml", 1.0, False, "Malayalam"),
    ("my name", "en", 1.0, False, "Latin"),
    ("എന്റെ पेर", "ml", 5 / 8, False, "Malayalam"),             # 5 Malayalam + 3 Devanagari code points
    ("एन्टे पेर", "ml", 0.0, True, "Devanagari"),              # Malayalam audio in Devanagari: collapse
    ("mera naam", "hi", 0.0, True, "Latin"),                   # romanized Hindi: collapse
    ("ab मेरा", "hi", 4 / 6, False, "Devanagari"),
    ("abc मे", "hi", 2 / 5, True, "Latin"),                    # SFR < 0.5 and Latin dominates
    ("123 ।", "hi", None, False, None),                        # nothing scripted: undefined, no collapse
])
def test_sfr_hand_cases(hyp, lang, sfr, collapse, dominant):
    f = script_fidelity(hyp, lang)
    assert f.sfr == (pytest.approx(sfr) if sfr is not None else None)
    assert f.collapse is collapse
    assert f.dominant == dominant


def test_sfr_below_half_but_expected_dominant_is_not_collapse():
    # three scripts: expected 40%, two others 30% each -> expected script dominates, no collapse
    f = script_fidelity("कखगघ abc", scripts={"Devanagari"})
    assert f.sfr == pytest.approx(4 / 7)
    f = script_fidelity("कख ab গঘ", scripts={"Devanagari"})
    assert f.sfr == pytest.approx(2 / 6) and f.dominant == "Devanagari" and not f.collapse


def test_unknown_language_raises():
    with pytest.raises(LatticeToolsError, match="no expected script"):
        script_fidelity("abc", "xx-unknown")


def test_cmi_and_buckets():
    tag = ScriptTagger(["hin", "eng"])
    toks = "मैं office जा रहा हूँ".split()
    tags = [tag(t) for t in toks]
    assert tags == ["hin", "eng", "hin", "hin", "hin"]
    assert code_mixing_index(tags) == pytest.approx(20.0)      # 100 * (1 - 4/5)
    assert code_mixing_index(["hin", None, "eng", None]) == pytest.approx(50.0)   # u=2 independent tokens
    assert code_mixing_index([None, None]) == 0.0
    assert code_mixing_index(["eng"] * 3) == 0.0
    assert [cmi_bucket(x) for x in (0, 14.99, 15, 34.99, 35, 50)] == ["low", "low", "mid", "mid", "high", "high"]
    # Tamil-English and Bengali-English taggers
    assert ScriptTagger(["tam", "eng"])("மீட்டிங்") == "tam"
    assert ScriptTagger(["ben", "eng"])("meeting") == "eng"
    assert ScriptTagger(["ben", "eng"])("2024") is None


def test_switch_points_and_tolerance():
    assert switch_points(["hi", "en", "en", None, "hi"]) == [1, 4]
    assert match_with_tolerance([1, 4], [2, 4]) == 2
    assert match_with_tolerance([1, 4], [3]) == 1            # 3 is within 1 of 4
    assert match_with_tolerance([1], [3]) == 0               # two tokens away: no match
    assert match_with_tolerance([1, 2], [2]) == 1            # one-to-one


def test_switch_point_f1_through_alignment():
    ref = ["a", "B", "c", "d"]
    tags = lambda toks: ["en" if t.isupper() else "hi" for t in toks]  # noqa: E731
    # identical: both switch points found
    hyp = list(ref)
    c = switch_point_counts(tags(ref), tags(hyp), align(ref, hyp))
    assert (c.tp, c.ref, c.hyp, c.f1) == (2, 2, 2, 1.0)
    # a deleted first word shifts hypothesis indices; the alignment maps them back
    hyp = ["B", "c", "d"]
    c = switch_point_counts(tags(ref), tags(hyp), align(ref, hyp))
    assert (c.tp, c.ref, c.hyp) == (1, 2, 1) and c.f1 == pytest.approx(2 / 3)
    # the English word one token late: ref switches at 1, 2; hyp at 2, 3.  Tolerance 1 matches
    # both (1-2, 2-3); tolerance 0 only the shared boundary 2
    hyp = ["a", "b", "C", "d"]
    assert switch_point_counts(tags(ref), tags(hyp), align(ref, hyp), 1).tp == 2
    assert switch_point_counts(tags(ref), tags(hyp), align(ref, hyp), 0).tp == 1
    # two tokens late: only within tolerance 2
    hyp = ["a", "b", "c", "D"]
    assert switch_point_counts(tags(ref), tags(hyp), align(ref, hyp), 1).tp == 1   # 2 vs 3
    assert switch_point_counts(tags(ref), tags(hyp), align(ref, hyp), 0).tp == 0


def test_composite():
    assert composite(0.277, 0.964, 0.323) == pytest.approx(0.723 * 0.964 * 0.677)
    assert composite(1.3, 0.5, 0.2) == 0.0                    # WER > 1 clipped
    assert 0.47 < composite(0.277, 0.964, 0.323) < 0.48      # Lin, BharatVoice-Bench, Table 1, Scribe-v2: 0.472


def test_taxonomy_and_coverage():
    refs = {"ok": "मेरा नाम राम है", "high": "मेरा नाम राम है", "col": "എന്റെ പേര് രാമൻ", "none": "मेरा नाम",
            "empty": "मेरा नाम"}
    hyps = {"ok": "मेरा नाम राम हैं", "high": "तेरा काम श्याम है", "col": "एन्टे पेर रामन", "empty": ""}
    anns = {k: Annotation("ml" if k == "col" else "hi") for k in refs}
    res = {r.key: r for r in evaluate_system(refs, hyps, anns, EvalConfig(orthography=False))}
    assert res["ok"].category == "ok"
    assert res["high"].category == "high_wer"
    assert res["col"].category == "script_collapse"
    assert res["none"].category == "no_output" and not res["none"].covered
    # an empty output is an output: scored as all deletions, not "no output"
    assert res["empty"].covered and res["empty"].word.deletions == 2 and res["empty"].category == "high_wer"
    s = summarize(list(res.values()), resamples=200)
    assert s.coverage == pytest.approx(4 / 5)
    assert s.taxonomy == {"ok": 1, "high_wer": 2, "script_collapse": 1, "no_output": 1}
    # the missing utterance is not in WER: 4 covered utterances, 4+4+3+2 reference words
    assert s.word_counts is not None and s.word_counts.ref_words == 13
    assert s.script_dominant is not None and s.script_dominant["Devanagari"] == 3


def test_code_switched_sfr_accepts_both_scripts():
    refs = {"u": "मैं office जा रहा हूँ"}
    res = evaluate_system(refs, {"u": "मैं office जा रहा हूँ"}, {"u": Annotation("hi", (), "hin-eng")},
                          EvalConfig(orthography=False))[0]
    assert res.sfr.sfr == 1.0 and res.cmi == pytest.approx(20.0) and res.switch.f1 == 1.0
