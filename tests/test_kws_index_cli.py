"""``lattice-tools kws index|merge|search`` on the bundled lattices (tests/data/kaldi_kws)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lattice_tools.cli import main

DATA = Path(__file__).parent / "data" / "kaldi_kws"
LATS = Path(__file__).parent / "data" / "kaldi" / "lats"  # the bundled lattices as a Kaldi archive
ARK = f"ark,t:{LATS / 'bundled.ark.gz'}"
WORDS = str(LATS / "bundled.words.txt")
KW = str(DATA / "keywords.words.txt")


def run(*args):
    return CliRunner().invoke(main, ["kws", *map(str, args)])


def test_index_search_round_trip(tmp_path):
    """The counts and hits of index + search against Kaldi's: the utterances of Kaldi's utter.map, and the
    30 hits Kaldi's lattice-to-kws-index + kws-search found for the same keywords (tests/data/kaldi_kws/hits.txt):
    the same keyword, utterance and frames, the score within Kaldi's quantization (2^-10 in -log)."""
    umap = dict(line.split() for line in (DATA / "utter.map").read_text().splitlines() if line.strip())
    kaldi = {}
    for line in (DATA / "hits.txt").read_text().splitlines():
        kw, utt, b, e, cost = line.split()
        kaldi[(kw, utt, int(b), int(e))] = float(cost)
    idx = tmp_path / "idx.db"
    r = run("index", ARK, "--words", WORDS, "-o", idx, "--json", tmp_path / "i.json")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "i.json").read_text())["utterances"] == len(umap)
    out = tmp_path / "hits.tsv"
    r = run("search", idx, "--kwlist", KW, "-o", out, "--json", "-")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["detections"] == len(kaldi) and summary["oov"] == [] and summary["no_hits"] == []
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert len(rows) == len(kaldi) and {r[6] for r in rows} == {"YES", "NO"}
    assert summary["yes"] == sum(r[6] == "YES" for r in rows)
    ours = {(kw, umap[utt], round(float(tbeg) * 100), round((float(tbeg) + float(dur)) * 100)): float(score)
            for kw, utt, _chan, tbeg, dur, score, _decision in rows}
    assert ours.keys() == kaldi.keys()
    for hit, cost in kaldi.items():
        assert -math.log(ours[hit]) == pytest.approx(cost, abs=2 ** -10 + 1e-5), hit
    assert all(float(r[5]) >= 0.5 for r in rows if r[6] == "YES")


def test_shards_merge_and_append(tmp_path):
    a, b, m = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "m.db"
    # a lattice index and a phrase index are built with different settings: they must not merge
    assert run("index", ARK, "--words", WORDS, "-o", a).exit_code == 0
    r = run("index", ARK, "--words", WORDS, "--from", "phrase", "-n", "10", "-o", b)
    assert r.exit_code == 0, r.output
    r = run("merge", a, b, "-o", m)
    assert r.exit_code == 2 and "representation" in r.output and not m.exists()
    r = run("index", ARK, "--words", WORDS, "-o", a, "--append")
    assert r.exit_code == 2 and "already in the index" in r.output


def test_alt_ctm_index(tmp_path):
    idx = tmp_path / "ctm.db"
    r = run("index", DATA / "bundled.decode.ctm", "--from", "1best", "--words", WORDS, "-o", idx)
    assert r.exit_code == 0, r.output
    r = run("search", idx, "--kwlist", KW, "-o", tmp_path / "h.tsv", "--json", "-")
    summary = json.loads(r.stdout)
    assert summary["oov"] == []  # the recognizer's vocabulary (--words), not the 1-best's words
    assert summary["no_hits"]  # e.g. 'mister': the 1-best says 'mr'
    r = run("index", DATA / "bundled.decode.ctm", "-o", tmp_path / "x.db")
    assert r.exit_code == 2 and "--from" in r.output


def test_bad_inputs_exit_2_without_output(tmp_path):
    idx = tmp_path / "idx.db"
    assert run("index", ARK, "--words", WORDS, "-o", idx).exit_code == 0
    bad = tmp_path / "kw.txt"
    bad.write_text("KW-1 clubs\nKW-1 five\n")
    r = run("search", idx, "--kwlist", bad, "-o", tmp_path / "o.tsv")
    assert r.exit_code == 2 and "duplicate keyword id" in r.output and not (tmp_path / "o.tsv").exists()
    bad.write_text("KW-1\n")
    r = run("search", idx, "--kwlist", bad, "-o", tmp_path / "o.tsv")
    assert r.exit_code == 2 and "kw.txt:1" in r.output
    notidx = tmp_path / "n.db"
    notidx.write_bytes(b"garbage" * 200)
    r = run("search", notidx, "--kwlist", KW, "-o", tmp_path / "o.tsv")
    assert r.exit_code == 2 and "n.db" in r.output
    r = run("search", idx, "--kwlist", KW, "-o", tmp_path / "o.tsv", "--normalization", "kst")
    assert r.exit_code == 2 and "--duration" in r.output


def test_console_script_reports_oov_on_stderr(tmp_path):
    idx = tmp_path / "idx.db"
    assert run("index", ARK, "--words", WORDS, "-o", idx, "--max-length", "1").exit_code == 0
    kw = tmp_path / "kw.txt"
    kw.write_text("KW-A clubs\nKW-B qwertyuiop\nKW-C of clubs\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    p = subprocess.run([sys.executable, "-m", "lattice_tools.cli", "kws", "search", str(idx), "--kwlist", str(kw),
                        "-o", str(tmp_path / "o.tsv")], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "1 keyword(s) out of vocabulary: KW-B" in p.stderr
    assert "1 keyword(s) longer than the index's max length: KW-C" in p.stderr


def test_kwlist_xml_in_kwslist_xml_out_and_kst_tuning(tmp_path):
    """A NIST KWlist in, a kwslist out (read back by lattice_tools.io.keyword_search.kwslist), and KST's ntrue-scale
    tuned on a dev set (ECF + reference CTM; here the 1-best CTM as a stand-in reference)."""
    from lattice_tools.io.keyword_search.ecf import EcfExcerpt, write_ecf
    from lattice_tools.io.keyword_search.kwslist import read_kwslist
    from lattice_tools.io.transcripts.ctm import read_ctm

    idx = tmp_path / "idx.db"
    assert run("index", ARK, "--words", WORDS, "-o", idx, "--max-length", "2").exit_code == 0
    kw = tmp_path / "kw.xml"
    kw.write_text('<kwlist ecf_filename="dev.ecf.xml" language="english" encoding="UTF-8" compareNormalize="" '
                  'version="1">\n<kw kwid="KW-1"><kwtext>of clubs</kwtext></kw>\n'
                  '<kw kwid="KW-2"><kwtext>five</kwtext></kw>\n<kw kwid="KW-3"><kwtext>zzyzx</kwtext></kw>\n</kwlist>\n')
    out = tmp_path / "out.xml"
    r = run("search", idx, "--kwlist", kw, "-o", out, "--json", "-")
    assert r.exit_code == 0, r.output
    kws = read_kwslist(str(out))
    assert {d.kwid for d in kws.detections} == {"KW-1", "KW-2"}
    assert json.loads(r.stdout)["oov"] == ["KW-3"]
    ends = {}
    for w in read_ctm(str(DATA / "bundled.decode.ctm")):
        ends[w.file] = max(ends.get(w.file, 0.0), w.start + w.duration)
    ecf = tmp_path / "dev.ecf.xml"
    write_ecf(str(ecf), [EcfExcerpt(f"{f}.wav", "1", 0.0, round(e + 0.5, 2)) for f, e in sorted(ends.items())],
              language="english")
    ref = tmp_path / "ref.ctm"
    ref.write_text("".join(" ".join([p[0], "1", *p[2:5]]) + "\n"
                           for p in (line.split() for line in (DATA / "bundled.decode.ctm").read_text().splitlines())))
    r = run("search", idx, "--kwlist", kw, "-o", tmp_path / "t.xml", "--normalization", "kst", "--duration", "37",
            "--tune-ecf", ecf, "--tune-ctm", ref, "--json", "-")
    assert r.exit_code == 0, r.output
    tuning = json.loads(r.stdout[r.stdout.index("{"):])["tuning"]
    assert len(tuning["atwv_by_scale"]) == 25
    best = max(a for _, a in tuning["atwv_by_scale"])
    assert dict(map(tuple, tuning["atwv_by_scale"]))[tuning["ntrue_scale"]] == best
    r = run("search", idx, "--kwlist", kw, "-o", tmp_path / "t.xml", "--tune-ecf", ecf)
    assert r.exit_code == 2 and "tuning needs" in r.output


def test_max_memory_stops_the_build_on_one_line(tmp_path):
    out = tmp_path / "x.db"
    r = subprocess.run([sys.executable, "-m", "lattice_tools", "kws", "index", ARK, "--words", WORDS, "-o", str(out),
                        "--max-memory", "1M"], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "memory budget" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and sorted(os.listdir(tmp_path)) == []
