"""The KWS recipe stage (recipes/kws.sh) and egs/kws_synth: espeak-ng speech,
pocketsphinx lattices, references by forced alignment, keyword list, index shards + merge, search,
F4DE-exact scores.

The default suite runs a slice (3 sentences, --nj 2, 2-word terms); the whole 6.7-minute set is
slow-marked.  Checked: every stage's outputs; the references are the synthesized text; --nj 1 and
--nj 2 give the same index rows; a rerun does no work; the scores are those of `lattice-tools kws
score` on the stage's files; a missing reference option is an error.
"""
from __future__ import annotations

import json
import shutil

import pytest
from _recipe_helpers import RECIPES, REPO, have_cli, mtimes, run

pytestmark = [pytest.mark.skipif(not have_cli(), reason="the lattice-tools entry point is not installed"),
              pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None,
                                 reason="espeak-ng and sox are needed to synthesize the corpus")]
RUN = REPO / "egs" / "kws_synth" / "run.sh"
SLICE = ["--max-utts", "3", "--num-terms", "12", "--index-opts", "--max-length 2"]


def _rows(db) -> list:
    from lattice_tools.kws.store import TermIndex

    with TermIndex(str(db)) as idx:
        return sorted((" ".join(h.words), h.utterance, h.file, h.tbeg, h.dur, h.score)
                      for term in idx.terms() for h in idx.lookup(term.split()))


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    pytest.importorskip("pocketsphinx")
    out = tmp_path_factory.mktemp("kws_synth") / "exp"
    proc = run([RUN, "--exp", out, "--nj", "2", *SLICE], timeout=1800)
    (out.parent / "run.out").write_text(proc.stdout)
    return out


def test_every_stage_writes_its_outputs(exp):
    data, kws = exp / "data", exp / "kws"
    assert len((data / "wav.list").read_text().split()) == 3 and (data / ".done").is_file()
    assert (exp / "lattices" / ".done").is_file()
    for name in ("ref/ref.ctm", "ref/ref.rttm", "ref/ecf.xml", "ref/.done", "kwlist.xml", "index.db", "index.json",
                 "kwslist.xml", "search.json", "score/sum.txt", "score/bsum.txt", "score.json"):
        assert (kws / name).is_file(), name
    # the references are the synthesized text, word for word
    text = {line.split()[0]: line.split()[1:] for line in (data / "text").read_text().splitlines()}
    ref: dict = {}
    for line in (kws / "ref" / "ref.ctm").read_text().splitlines():
        f = line.split()
        ref.setdefault(f[0], []).append(f[4])
    assert ref == text
    index = json.loads((kws / "index.json").read_text())
    assert index["utterances"] == 3 and index["hits"] > 0
    score = json.loads((kws / "score.json").read_text())["overall"]
    twv = {k: score[k]["twv"] for k in ("atwv", "mtwv", "otwv", "stwv")}
    assert twv["stwv"] >= twv["otwv"] >= twv["mtwv"] >= twv["atwv"] - 1e-12, twv


def test_scores_are_kws_score_of_the_stage_files(exp, tmp_path):
    kws = exp / "kws"
    proc = run(["lattice-tools", "kws", "score", "-e", kws / "ref" / "ecf.xml", "-t", kws / "kwlist.xml",
                "-s", kws / "kwslist.xml", "-r", kws / "ref" / "ref.rttm", "--json", "-"])
    assert json.loads(proc.stdout) == json.loads((kws / "score.json").read_text())


def test_nj_does_not_change_the_index(exp, tmp_path):
    lat_list = exp / "lattices" / "lattices.list"
    out = tmp_path / "kws1"
    run([RECIPES / "kws.sh", "--nj", "1", "--rttm", exp / "kws" / "ref" / "ref.rttm", "--ecf", exp / "kws" / "ref" / "ecf.xml",
         "--kwlist", exp / "kws" / "kwlist.xml", "--index-opts", "--max-length 2", lat_list, out])
    assert _rows(out / "index.db") == _rows(exp / "kws" / "index.db")
    assert (out / "kwslist.xml").read_bytes() == (exp / "kws" / "kwslist.xml").read_bytes()


def test_rerun_does_no_work(exp):
    before = mtimes(exp)
    proc = run([RUN, "--exp", exp, "--nj", "2", *SLICE], timeout=600)
    assert proc.stdout.count("is done, skipping") == 7, proc.stdout
    assert mtimes(exp) == before


def test_missing_reference_is_an_error(exp, tmp_path):
    proc = run([RECIPES / "kws.sh", exp / "lattices" / "lattices.list", tmp_path / "x"], check=False)
    assert proc.returncode == 1 and "--wav-list and --transcript" in proc.stderr


@pytest.mark.slow
def test_whole_synthetic_set(tmp_path):
    """The whole set (47 sentences, 6.7 min, six voices) with the recipe's defaults (3-word terms)."""
    pytest.importorskip("pocketsphinx")
    out = tmp_path / "exp"
    run([RUN, "--exp", out, "--nj", "2"], timeout=7200)
    index = json.loads((out / "kws" / "index.json").read_text())
    assert index["utterances"] == 47
    score = json.loads((out / "kws" / "score.json").read_text())["overall"]
    assert score["stwv"]["twv"] > 0.5 and score["mtwv"]["twv"] > 0
