"""``kws search --out-format kaldi``: Kaldi's kws-search result lines, checked against the lines Kaldi's
kws-search wrote for the bundled lattices (tests/data/kaldi_kws/hits.txt, see its PROVENANCE.md)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from lattice_tools.cli import main
from lattice_tools.core.errors import FormatError, MismatchError
from lattice_tools.io.keyword_search.kaldi_kws import kaldi_result_lines, read_kaldi_results, read_utterance_map
from lattice_tools.io.keyword_search.kwslist import Detection

DATA = Path(__file__).parent / "data" / "kaldi_kws"
LATS = Path(__file__).parent / "data" / "kaldi" / "lats"
ARK = f"ark,t:{LATS / 'bundled.ark.gz'}"
WORDS = str(LATS / "bundled.words.txt")
KALDI_LINE = re.compile(r"^\S+ \d+ \d+ \d+ [0-9.e+-]+ $")


def run(*args):
    return CliRunner().invoke(main, ["kws", *map(str, args)])


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    out = tmp_path_factory.mktemp("kaldi_format") / "index.db"
    # Kaldi's index was made with --max-silence-frames=50 (0.5 s at 10 ms frames), the default here
    res = run("index", ARK, "--format", "kaldi", "--words", WORDS, "--max-length", 2, "-o", out)
    assert res.exit_code == 0, res.output
    return out


def test_kaldi_lines_equal_kws_search(index, tmp_path):
    """Every line of Kaldi's kws-search output is ours: same keyword, utterance integer (through utter.map)
    and frames, a score within Kaldi's quantization (multiples of 2^-10), and the same line shape."""
    out = tmp_path / "hits.txt"
    res = run("search", index, "--kwlist", DATA / "keywords.words.txt", "-o", out, "--out-format", "kaldi",
              "--utter-map", DATA / "utter.map", "--duptime", 0)
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert all(KALDI_LINE.match(line) for line in text.splitlines(keepends=False) if line), text
    assert all(KALDI_LINE.match(line) for line in (DATA / "hits.txt").read_text().splitlines())
    ours = {(k, u, b, e): s for k, u, b, e, s in read_kaldi_results(str(out))}
    kaldi = {(k, u, b, e): s for k, u, b, e, s in read_kaldi_results(str(DATA / "hits.txt"))}
    assert len(kaldi) == 30
    assert set(ours) == set(kaldi)
    for key, score in kaldi.items():
        assert ours[key] == pytest.approx(score, abs=2 ** -10), key


def test_kaldi_lines_need_the_utterance_map(index, tmp_path):
    res = run("search", index, "--kwlist", DATA / "keywords.words.txt", "-o", tmp_path / "h.txt",
              "--out-format", "kaldi")
    assert res.exit_code == 2 and "--utter-map" in res.output
    partial = tmp_path / "partial.map"
    partial.write_text("".join(line + "\n" for line in (DATA / "utter.map").read_text().splitlines()[:-1]))
    res = run("search", index, "--kwlist", DATA / "keywords.words.txt", "-o", tmp_path / "h.txt",
              "--out-format", "kaldi", "--utter-map", partial, "--duptime", 0)
    assert res.exit_code == 2 and "not in the utterance map" in res.output
    assert not (tmp_path / "h.txt").exists()


def test_segments_offsets_give_frames_from_the_utterance_start():
    d = Detection("KW-1", "rec", "1", 12.5, 0.3, 0.5, True, utterance="u1")
    assert kaldi_result_lines([d], {"u1": 7}, offsets={"u1": 10.0}) == [f"KW-1 7 250 280 {math.log(2):.7g} \n"]
    with pytest.raises(MismatchError, match="segments"):
        kaldi_result_lines([d], {"u1": 7})
    # posterior 1 and above: score 0 (kws-search clamps at 0)
    d1 = Detection("KW-1", "u1", "1", 0.0, 0.1, 1.0, True, utterance="u1")
    assert kaldi_result_lines([d1], {"u1": 3}) == ["KW-1 3 0 10 0 \n"]


@pytest.mark.parametrize("text, message", [
    ("a 1\nb\n", "1 fields"), ("a x\n", "not an integer"), ("a 1\na 2\n", "twice"), ("a 1\nb 1\n", "both"),
    ("a -1\n", "not an integer"), ("a 4294967296\n", "int32")])
def test_bad_utterance_map(tmp_path, text, message):
    p = tmp_path / "utter.map"
    p.write_text(text)
    with pytest.raises(FormatError, match=message) as info:
        read_utterance_map(str(p))
    assert str(p) in str(info.value)


def test_utterance_map_fixture():
    m = read_utterance_map(str(DATA / "utter.map"))
    assert len(m) == 10 and sorted(m.values()) == list(range(1, 11))


def test_keyword_fsts_are_the_keywords():
    """Kaldi's binary keyword FSTs (transcripts-to-fsts of keywords.txt) read back as keywords.txt."""
    from lattice_tools.io.keyword_search.kaldi_kws import read_kaldi_keyword_fsts

    fsts = read_kaldi_keyword_fsts(str(DATA / "kw.fsts"))
    text = {p[0]: tuple(map(int, p[1:])) for p in (line.split() for line in (DATA / "keywords.txt").read_text()
                                                   .splitlines() if line)}
    assert fsts == text and len(fsts) == 20


@pytest.mark.parametrize("cut", [1, 7, 40, 100, 300])
def test_truncated_keyword_fsts_are_refused(tmp_path, cut):
    from lattice_tools.io.keyword_search.kaldi_kws import read_kaldi_keyword_fsts

    data = (DATA / "kw.fsts").read_bytes()
    p = tmp_path / "kw.fsts"
    p.write_bytes(data[:-cut])
    with pytest.raises(FormatError) as info:
        read_kaldi_keyword_fsts(str(p))
    assert str(p) in str(info.value)


def test_kaldi_index_hits_equal_kws_search(tmp_path):
    """Kaldi's binary KWS index of the bundled lattices (made here by Kaldi's lattice-to-kws-index and
    kws-index-union with the fixture's options) read into hits: exactly the lines kws-search wrote
    (tests/data/kaldi_kws/hits.txt), scores to Kaldi's 7 printed digits."""
    import subprocess

    from _kaldi_helpers import kaldi_env, require_kaldi

    from lattice_tools.io.keyword_search.kaldi_kws import read_kaldi_index_hits, read_kaldi_keyword_fsts

    tools = require_kaldi("lattice-to-kws-index", "kws-index-union")
    idx = subprocess.run([tools["lattice-to-kws-index"], "--max-states-scale=4", "--max-silence-frames=50",
                          f"ark:{DATA / 'utter.map'}", f"ark:gunzip -c {LATS / 'bundled.ark.gz'}|", "ark:-"],
                         capture_output=True, env=kaldi_env(), check=True).stdout
    subprocess.run([tools["kws-index-union"], "ark:-", f"ark:{tmp_path / 'index'}"], input=idx, capture_output=True,
                   env=kaldi_env(), check=True)
    hits = read_kaldi_index_hits(str(tmp_path / "index"), read_kaldi_keyword_fsts(str(DATA / "kw.fsts")))
    ours = sorted((k, u, b, e, float(f"{s:.7g}")) for k, u, b, e, s in hits)
    assert ours == sorted(read_kaldi_results(str(DATA / "hits.txt")))


def test_recipe_writes_kaldi_result_lines(tmp_path):
    """recipes/kws.sh --utter-map: stage 3 also writes result.txt, Kaldi's kws-search lines (every hit, raw
    scores), here the 30 lines of Kaldi's own kws-search on the bundled lattices (scores within 2^-10)."""
    from _recipe_helpers import RECIPES, have_cli, run

    from lattice_tools.io.keyword_search.kwlist import KeywordTerm, write_kwlist

    if not have_cli():
        pytest.skip("the lattice-tools entry point is not installed")
    terms = [KeywordTerm(p[0], " ".join(p[1:])) for p in (line.split() for line in
                                                           (DATA / "keywords.words.txt").read_text().splitlines() if line)]
    write_kwlist(str(tmp_path / "kwlist.xml"), terms)
    (tmp_path / "lats.list").write_text(f"{ARK}\n")
    # stages 2-3 do not read the reference: stage 0 only copies these two
    (tmp_path / "ref.rttm").write_text("")
    (tmp_path / "ecf.xml").write_text("")
    out = tmp_path / "kws"
    run([RECIPES / "kws.sh", "--rttm", tmp_path / "ref.rttm", "--ecf", tmp_path / "ecf.xml", "--kwlist",
         tmp_path / "kwlist.xml", "--stop-stage", "3", "--utter-map", DATA / "utter.map",
         "--index-opts", f"--format kaldi --words {WORDS} --max-length 2", tmp_path / "lats.list", out])
    ours = {(k, u, b, e): s for k, u, b, e, s in read_kaldi_results(str(out / "result.txt"))}
    kaldi = {(k, u, b, e): s for k, u, b, e, s in read_kaldi_results(str(DATA / "hits.txt"))}
    assert set(ours) == set(kaldi)
    for key, score in kaldi.items():
        assert ours[key] == pytest.approx(score, abs=2 ** -10), key
    assert (out / "kwslist.xml").is_file()
    missing = run([RECIPES / "kws.sh", "--rttm", tmp_path / "ref.rttm", "--ecf", tmp_path / "ecf.xml",
                   "--utter-map", tmp_path / "nope", tmp_path / "lats.list", tmp_path / "x"], check=False)
    assert missing.returncode == 1 and "no such utterance map" in missing.stderr
