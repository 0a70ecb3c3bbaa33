"""The scoring ladder (Faria et al., Table 1): GLM-with-alternations conversion, and ladder rows equal to
Debian csrfilt.sh + sclite -D -F run on the same inputs."""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile

import pytest
from _scoring_helpers import SCLITE, SCTK_DATA, TEST_DATA, parse_summary
from click.testing import CliRunner

GLM = str(TEST_DATA / "sctk" / "glm" / "en20030506.glm")
EXAMPLE_GLM = str(TEST_DATA / "sctk" / "csrfilt-testdata" / "example.glm")
STM = os.path.join(SCTK_DATA, "lvc_ref.stm")
CTM = os.path.join(SCTK_DATA, "lvc_hyp.ctm")
SCTK_BIN = os.path.dirname(SCLITE) if SCLITE else None
CSRFILT = os.path.join(SCTK_BIN, "csrfilt.sh") if SCTK_BIN else None


needs_sctk = pytest.mark.skipif(not (CSRFILT and os.path.exists(CSRFILT)), reason="Debian sctk not installed")


def test_alternation_glm_rewrites_contractions_only():
    from lattice_tools.io.transcripts.glm import read_glm
    from lattice_tools.scoring.ladder import alternation_glm

    g = read_glm(GLM)
    a = alternation_glm(g)
    by_lhs = {r.lhs: r for r in a.rules}
    assert by_lhs["I'M"].rhs == "{ I'M / I AM }"
    assert by_lhs["CAN'T"].rhs == "{ CAN'T / CAN NOT / CANNOT }"
    changed = [(r0, r1) for r0, r1 in zip(g.rules, a.rules, strict=False) if r0 != r1]
    assert changed and all("'" in r0.lhs for r0, _ in changed)
    assert all(r0.left_context == r1.left_context and r0.right_context == r1.right_context for r0, r1 in changed)
    assert len(a.rules) == len(g.rules)


def _sclite_wer(stm_text_path, ctm_path, glm_path, tmp):
    env = dict(os.environ, PATH=SCTK_BIN + os.pathsep + os.environ.get("PATH", ""))
    for src, dst, fmt in ((stm_text_path, "r.stm", "stm"), (ctm_path, "h.ctm", "ctm")):
        with open(src, "rb") as fin, open(os.path.join(tmp, dst), "wb") as fout:
            subprocess.run([CSRFILT, "-i", fmt, glm_path], stdin=fin, stdout=fout, check=True, env=env)
    subprocess.run([SCLITE, "-r", os.path.join(tmp, "r.stm"), "stm", "-h", os.path.join(tmp, "h.ctm"), "ctm",
                    "-D", "-F", "-o", "rsum", "-O", tmp, "-n", "out"], check=True, capture_output=True)
    row = parse_summary(os.path.join(tmp, "out.raw"))["Sum"]
    return row[:8]  # #Snt #Wrd Corr Sub Del Ins Err S.Err


def _independent_alternation_glm(src, dst):
    """Second implementation of the conversion, on the GLM text: '[X'Y] => [A B]' -> '[X'Y] => [{X'Y / A B}]'."""
    simple = re.compile(r"^\[([^] ]*'[^] ]*)\] => \[([^]{]* [^]{]*)\](.*)$")
    alt = re.compile(r"^\[([^] ]*'[^] ]*)\] => \[\{([^]]*)\}\](.*)$")
    with open(src, encoding="latin-1") as f, open(dst, "w", encoding="latin-1") as g:
        for line in f:
            m = simple.match(line)
            if m:
                line = f"[{m.group(1)}] => [{{{m.group(1)} / {m.group(2)}}}]{m.group(3)}\n"
            else:
                m = alt.match(line)
                if m and m.group(1).upper() not in [x.strip().upper() for x in m.group(2).split("/")]:
                    line = f"[{m.group(1)}] => [{{{m.group(1)} / {m.group(2)}}}]{m.group(3)}\n"
            g.write(line)


@needs_sctk
def test_ladder_rows_equal_csrfilt_plus_sclite():
    from lattice_tools.scoring.ladder import ladder_markdown, run_ladder

    result = run_ladder(STM, [("lvc", CTM)], [GLM])
    rows = {r["config"]: r for r in result["rows"]}
    with tempfile.TemporaryDirectory() as tmp:
        def ours(label):
            c = rows[label]["counts"]["lvc"]
            return [c[k] for k in ("segments", "ref_words", "correct", "substitutions", "deletions", "insertions",
                                   "errors", "segment_errors")]

        assert ours("STM & en20030506.glm") == _sclite_wer(STM, CTM, GLM, tmp)
        alt_glm = os.path.join(tmp, "alt.glm")
        _independent_alternation_glm(GLM, alt_glm)
        assert ours("+ GLM with alternations") == _sclite_wer(STM, CTM, alt_glm, tmp)
    md = ladder_markdown(result)
    assert md.splitlines()[0] == "| configuration | lvc |"
    assert len(md.splitlines()) == 2 + len(result["rows"])
    names = [r["config"] for r in result["rows"]]
    assert names == ["STM & en20030506.glm", "+ GLM with alternations", "+ Exclude hesitations",
                     "+ Optional backchannels", "+ Exclude backchannels", "+ Single-segment STM"]


def test_ladder_cli_writes_markdown_and_json():
    from lattice_tools.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        out, js = os.path.join(tmp, "ladder.md"), os.path.join(tmp, "ladder.json")
        res = CliRunner().invoke(main, ["ladder", "-r", STM, "-h", f"sys={CTM}", "--glm", GLM, "--glm", EXAMPLE_GLM,
                                        "--reference-segmentation", f"sys={CTM}", "-o", out, "--json", js])
        assert res.exit_code == 0, res.output
        data = json.load(open(js))
        configs = [r["config"] for r in data["rows"]]
        assert configs[1] == "+ example.glm" and configs[-1] == "+ Reference segmentation"
        for r in data["rows"]:
            c = r["counts"]["sys"]
            assert r["wer"]["sys"] == pytest.approx(100.0 * c["errors"] / c["ref_words"], abs=0.005)
        assert open(out).read().startswith("| configuration | sys |")
