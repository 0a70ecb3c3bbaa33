"""recipes/kws_search.sh: keyword search in a Babel-style kws/ data dir (ecf.xml, kwlist.xml, rttm, utter_id,
keywords.fsts as kws_data_prep.sh writes them) on Kaldi's KWS indexes or on lattices, in place of Kaldi's
local/search_index.sh + write_kwslist.pl.  On the bundled lattices (tests/data/kaldi_kws, tests/data/kaldi):
the result.* lines equal Kaldi's kws-search output with utterance names (its vendored index: exactly; the
toolkit's own index of the lattices: within Kaldi's 2^-10 score quantization), the kwslist and the scores
are those of `lattice-tools kws search` / `kws score` run by hand, and a rerun does no work."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from _recipe_helpers import RECIPES, have_cli, mtimes, run

from lattice_tools.io.keyword_search.ecf import EcfExcerpt, write_ecf
from lattice_tools.io.keyword_search.kaldi_kws import read_utterance_map
from lattice_tools.io.keyword_search.kwlist import KeywordTerm, write_kwlist
from lattice_tools.io.keyword_search.rttm import lexemes_from_ctm, write_rttm

pytestmark = pytest.mark.skipif(not have_cli(), reason="the lattice-tools entry point is not installed")
TESTS = Path(__file__).parent
DATA = TESTS / "data" / "kaldi_kws"
LATS = TESTS / "data" / "kaldi" / "lats"
WORDS = LATS / "bundled.words.txt"
SCRIPT = RECIPES / "kws_search.sh"


def _kws_data_dir(root: Path) -> Path:
    """A Babel kws/ dir for the ten bundled recordings (one utterance each, channel 1)."""
    kws = root / "data" / "kws"
    kws.mkdir(parents=True)
    refs = lexemes_from_ctm(str(TESTS / "data" / "kws_study" / "reference.ctm"))
    write_rttm(str(kws / "rttm"), refs)
    ends: dict[str, float] = {}
    for r in refs:
        ends[r.file] = max(ends.get(r.file, 0.0), r.tbeg + r.dur)
    write_ecf(str(kws / "ecf.xml"), [EcfExcerpt(f"{f}.sph", "1", 0.0, round(e + 1.0, 2)) for f, e in sorted(ends.items())])
    terms = [KeywordTerm(p[0], " ".join(p[1:])) for p in (line.split() for line in
                                                           (DATA / "keywords.words.txt").read_text().splitlines() if line)]
    write_kwlist(str(kws / "kwlist.xml"), terms, ecf_filename="ecf.xml")
    shutil.copy(DATA / "utter.map", kws / "utter_id")
    shutil.copy(DATA / "kw.text.fsts", kws / "keywords.fsts")       # text, as kws_data_prep.sh writes it
    return kws


def _named(lines_path: Path) -> list[str]:
    """Kaldi's kws-search lines with utterance names (what search_index.sh's int2sym.pl -f 2 writes)."""
    names = {i: u for u, i in read_utterance_map(str(DATA / "utter.map")).items()}
    out = []
    for line in lines_path.read_text().splitlines():
        f = line.split()
        out.append(" ".join([f[0], names[int(f[1])], *f[2:]]))
    return sorted(out)


def _twv(score_json: Path) -> dict:
    o = json.loads(score_json.read_text())["overall"]
    return {k: o[k]["twv"] for k in ("atwv", "mtwv", "otwv", "stwv")}


def test_on_kaldi_indexes(tmp_path):
    kws = _kws_data_dir(tmp_path)
    indices = tmp_path / "indices"          # steps/make_index.sh's layout: index.JOB.gz + num_jobs
    indices.mkdir()
    (indices / "index.1.gz").write_bytes(gzip.compress((DATA / "small.index").read_bytes()))
    (indices / "num_jobs").write_text("1\n")
    out = tmp_path / "kws_out"
    proc = run([SCRIPT, kws, indices, out])
    assert sorted((out / "result.1").read_text().splitlines()) == _named(DATA / "small.hits.txt")
    # the kwslist is `kws search` of the index with the stage's settings, by hand
    by_hand = tmp_path / "by_hand.kwslist.xml"
    run(["lattice-tools", "kws", "search", out / "index" / "all.index", "--kwlist", kws / "keywords.fsts",
         "--utter-map", kws / "utter_id", "-o", by_hand, "--kwlist-filename", "kwlist.xml", "--normalization", "kst", "--duration", _ecf_seconds(kws),
         "--duptime", "0.6", "--threshold", "0.5"])
    assert (out / "kwslist.xml").read_text() == by_hand.read_text()
    run(["lattice-tools", "kws", "score", "-e", kws / "ecf.xml", "-t", kws / "kwlist.xml", "-s", by_hand,
         "-r", kws / "rttm", "--json", tmp_path / "by_hand.json"])
    assert _twv(out / "score.json") == _twv(tmp_path / "by_hand.json")
    assert proc.stdout.strip().splitlines()[-1].startswith("ATWV ")
    before = mtimes(out)
    run([SCRIPT, kws, indices, out])
    assert mtimes(out) == before            # every stage done: nothing rewritten


def _ecf_seconds(kws: Path) -> str:
    from lattice_tools.io.keyword_search.ecf import read_ecf

    return f"{sum(e.dur for e in read_ecf(str(kws / 'ecf.xml')).excerpts):.3f}"


def test_on_lattices(tmp_path):
    kws = _kws_data_dir(tmp_path)
    lst = tmp_path / "lats.list"
    lst.write_text(f"ark,t:{LATS / 'bundled.ark.gz'}\n")
    out = tmp_path / "kws_out"
    run([SCRIPT, "--words", WORDS, "--index-opts", "--format kaldi --max-length 2", kws, lst, out])
    ours = {tuple(line.split()[:4]): float(line.split()[4]) for line in (out / "result.1").read_text().splitlines()}
    kaldi = {tuple(line.split()[:4]): float(line.split()[4]) for line in _named(DATA / "hits.txt")}
    assert ours.keys() == kaldi.keys() and len(ours) == 30
    for key, score in kaldi.items():
        assert ours[key] == pytest.approx(score, abs=2 ** -10), key
    search = json.loads((out / "search.json").read_text())
    assert search["detections"] > 0 and search["oov"] == []
    twv = _twv(out / "score.json")
    assert twv["stwv"] >= twv["otwv"] >= twv["mtwv"] >= twv["atwv"] - 1e-12, twv


def test_usage_errors(tmp_path):
    kws = _kws_data_dir(tmp_path)
    (kws / "utter_id").unlink()
    proc = run([SCRIPT, kws, tmp_path / "nothing", tmp_path / "out"], check=False)
    assert proc.returncode == 1 and "utter_id is missing" in proc.stderr
    shutil.copy(DATA / "utter.map", kws / "utter_id")
    (tmp_path / "indices").mkdir()
    proc = run([SCRIPT, kws, tmp_path / "indices", tmp_path / "out"], check=False)
    assert proc.returncode == 1 and "num_jobs" in proc.stderr


def test_two_kaldi_index_jobs_equal_search_index_sh(tmp_path):
    """Kaldi indexes two jobs of the bundled lattices here (steps/make_index.sh's lattice-to-kws-index +
    kws-index-union per job, gzipped); each result.JOB equals what local/search_index.sh writes for that job
    (Kaldi's kws-search, utterance names by utter_id)."""
    import subprocess

    from _kaldi_helpers import kaldi_env, require_kaldi

    tools = require_kaldi("lattice-copy", "lattice-to-kws-index", "kws-index-union", "kws-search")
    kws = _kws_data_dir(tmp_path)
    indices = tmp_path / "indices"
    indices.mkdir()
    names = sorted(read_utterance_map(str(DATA / "utter.map")))
    env = kaldi_env()
    for job, part in ((1, names[:5]), (2, names[5:])):
        (tmp_path / f"utts.{job}").write_text("".join(u + "\n" for u in part))
        lats = subprocess.run([tools["lattice-copy"], f"--include={tmp_path / f'utts.{job}'}",
                               f"ark:gunzip -c {LATS / 'bundled.ark.gz'}|", "ark:-"],
                              capture_output=True, env=env, check=True).stdout
        idx = subprocess.run([tools["lattice-to-kws-index"], "--max-states-scale=4", "--max-silence-frames=50",
                              f"ark:{kws / 'utter_id'}", "ark:-", "ark:-"], input=lats, capture_output=True, env=env,
                             check=True).stdout
        union = subprocess.run([tools["kws-index-union"], "ark:-", "ark:-"], input=idx, capture_output=True, env=env,
                               check=True).stdout
        (indices / f"index.{job}.gz").write_bytes(gzip.compress(union))
        subprocess.run([tools["kws-search"], "--strict=false", "--negative-tolerance=-1",
                        f"ark:gzip -cdf {indices / f'index.{job}.gz'}|", f"ark:{DATA / 'kw.fsts'}",
                        f"ark,t:{tmp_path / f'kaldi.{job}'}"], capture_output=True, env=env, check=True)
    (indices / "num_jobs").write_text("2\n")
    out = tmp_path / "kws_out"
    run([SCRIPT, kws, indices, out])
    total = 0
    for job in (1, 2):
        kaldi = _named(tmp_path / f"kaldi.{job}")
        assert sorted((out / f"result.{job}").read_text().splitlines()) == kaldi
        total += len(kaldi)
    assert total == 30
