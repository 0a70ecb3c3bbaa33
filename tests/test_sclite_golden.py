"""NIST SCTK regression tests: our scorer must reproduce sclite's own baselines (base/*.raw, .sys,
.pra) for every STM/CTM and trn test that needs neither -d, -L, -S, -c, -T, -w nor -P."""
from __future__ import annotations

import os

import pytest
from _scoring_helpers import BASE, GOLDEN_CASES, SCTK_DATA, parse_pra, parse_summary

from lattice_tools.io.transcripts.ctm import read_ctm
from lattice_tools.io.transcripts.stm import read_stm
from lattice_tools.io.transcripts.trn import read_trn
from lattice_tools.scoring.reports import alignment_lines, pra_report, sys_report
from lattice_tools.scoring.sclite import score_stm_ctm, score_trn

pytestmark = pytest.mark.skipif(not os.path.isdir(BASE), reason="SCTK test data not available")


def _score(case):
    ref, hyp = os.path.join(SCTK_DATA, case.ref), os.path.join(SCTK_DATA, case.hyp)
    if case.kind == "stm":
        return score_stm_ctm(read_stm(ref), read_ctm(hyp), **case.opts)
    return score_trn(read_trn(ref), read_trn(hyp), **case.opts)


def _row(c):
    return [c.segments, c.ref_words, c.correct, c.substitutions, c.deletions, c.insertions, c.errors,
            c.segment_errors]


def _pct_row(c):
    n = c.ref_words
    return [c.segments, c.ref_words] + [round(100.0 * x / n, 1) for x in
                                        (c.correct, c.substitutions, c.deletions, c.insertions, c.errors)] + \
        [round(100.0 * c.segment_errors / c.segments, 1)]


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[c.name for c in GOLDEN_CASES])
def test_counts_equal_baseline(case):
    result = _score(case)
    raw = os.path.join(BASE, case.name + ".raw")
    if os.path.exists(raw):
        expected = parse_summary(raw)
        assert expected["Sum"] == _row(result.total)
        for spk, counts in result.speakers.items():
            assert expected[spk] == _row(counts), spk
        assert set(expected) - {"Sum"} == set(result.speakers)
    else:  # only the percentage table was written (test3b: -o sum)
        expected = parse_summary(os.path.join(BASE, case.name + ".sys"))
        assert expected["Sum"] == pytest.approx(_pct_row(result.total), abs=0.051)
        for spk, counts in result.speakers.items():
            assert expected[spk] == pytest.approx(_pct_row(counts), abs=0.051), spk


@pytest.mark.parametrize("case", [c for c in GOLDEN_CASES if os.path.exists(os.path.join(BASE, c.name + ".pra"))],
                         ids=[c.name for c in GOLDEN_CASES if os.path.exists(os.path.join(BASE, c.name + ".pra"))])
def test_alignments_equal_baseline_pra(case):
    result = _score(case)
    blocks = {b["id"]: b for b in parse_pra(os.path.join(BASE, case.name + ".pra"))}
    assert len(blocks) == len(result.segments)
    lang = case.opts.get("case_language")
    for seg in result.segments:
        b = blocks[seg.id]
        c = seg.counts
        assert b["Scores:"] == f"Scores: (#C #S #D #I) {c.correct} {c.substitutions} {c.deletions} {c.insertions}"
        expected = [b[k] for k in ("REF:", "HYP:", "Eval:") if k in b]
        assert alignment_lines(seg.alignment, lang) == expected, seg.id
        if seg.file:
            assert b["File:"] == f"File: {seg.file}" and b["Channel:"] == f"Channel: {seg.channel}"
        if seg.labels:
            assert b["Labels:"] == f"Labels: {seg.labels}"


def test_reports_render_baseline_numbers():
    case = next(c for c in GOLDEN_CASES if c.name == "test3")
    result = _score(case)
    sys_rows = parse_summary(os.path.join(BASE, "test3.sys"))
    ours = {}
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".sys", delete=False) as f:
        f.write(sys_report(result))
    ours = parse_summary(f.name)
    os.unlink(f.name)
    assert ours == sys_rows  # every speaker row, Sum/Avg (percentages as sclite rounds them)
    pra = pra_report(result)
    assert "id: (2347-a-000)" in pra and "Labels: <o,wa>" in pra


def test_cli_score_matches_baseline_and_writes_reports(tmp_path):
    import json

    from click.testing import CliRunner

    from lattice_tools.cli import main

    runner = CliRunner()
    res = runner.invoke(main, ["score", "-r", os.path.join(SCTK_DATA, "tests.ref"), "-h",
                               os.path.join(SCTK_DATA, "tests.hyp"), "-D", "-F", "-o", str(tmp_path), "--name", "t7"])
    assert res.exit_code == 0, res.output
    assert "%WER 45.49 [ 121 / 266, 33 ins, 13 del, 75 sub ]" in res.output
    data = json.loads((tmp_path / "t7.json").read_text())
    assert data["overall"]["errors"] == 121 and data["speakers"]["od1"]["ref_words"] == 21
    ours = {b["id"]: b for b in parse_pra(str(tmp_path / "t7.pra"))}
    base = {b["id"]: b for b in parse_pra(os.path.join(BASE, "test7.pra"))}
    assert ours == base
    assert parse_summary(str(tmp_path / "t7.raw")) == parse_summary(os.path.join(BASE, "test7.raw"))
    # STM/CTM with -m, and a bad combination exits 2 with one line naming the file
    res = runner.invoke(main, ["score", "-r", os.path.join(SCTK_DATA, "lvc_refr.stm"), "-h",
                               os.path.join(SCTK_DATA, "lvc_hypr.ctm"), "-m", "ref", "-m", "hyp", "--json", "-"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["overall"]["errors"] == 310
    res = runner.invoke(main, ["score", "-r", os.path.join(SCTK_DATA, "lvc_ref.stm"), "-h",
                               os.path.join(SCTK_DATA, "tests.hyp")])
    assert res.exit_code == 2 and "tests.hyp" in res.output and "Traceback" not in res.output


def _title(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if line.strip().startswith(","):
            return lines[i + 1].strip().strip("|").strip()
    return ""


def _norm(text):
    return [line.rstrip() for line in text.rstrip("\n").split("\n")]


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[c.name for c in GOLDEN_CASES])
def test_summary_tables_equal_baseline_text(case):
    """Our .sys and .raw tables are sclite's, character for character (trailing blanks aside)."""
    import dataclasses

    result = _score(case)
    for kind, raw in (("sys", False), ("raw", True)):
        path = os.path.join(BASE, f"{case.name}.{kind}")
        if not os.path.exists(path):
            continue
        named = dataclasses.replace(result, hyp_name=_title(path))
        with open(path, encoding="utf-8", errors="replace") as f:
            expected = f.read()
        assert _norm(sys_report(named, raw=raw)) == _norm(expected)


@pytest.mark.parametrize("case", [c for c in GOLDEN_CASES if os.path.exists(os.path.join(BASE, c.name + ".pra"))],
                         ids=[c.name for c in GOLDEN_CASES if os.path.exists(os.path.join(BASE, c.name + ".pra"))])
def test_pra_file_equals_baseline_byte_for_byte(case):
    import dataclasses

    path = os.path.join(BASE, case.name + ".pra")
    with open(path, "rb") as f:
        expected = f.read().decode("utf-8", errors="replace")
    name = next(line.split(":", 1)[1].strip() for line in expected.split("\n") if line.startswith("System name:"))
    result = dataclasses.replace(_score(case), hyp_name=name)
    assert pra_report(result) == expected
