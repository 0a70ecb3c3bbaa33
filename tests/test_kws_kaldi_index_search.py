"""``lattice-tools kws search`` of a Kaldi KWS index (lattice-to-kws-index / kws-index-union output) with
Kaldi's keyword FSTs or a keyword list: the hits equal Kaldi's kws-search (vendored: tests/data/kaldi_kws/
small.index and small.hits.txt, see its PROVENANCE.md; live on the whole bundled set when
$LATTICE_TOOLS_KALDI_BIN is set), and the toolkit's own index of the same lattices gives the same detections
through the same search."""
from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from lattice_tools.cli import main
from lattice_tools.io.keyword_search.kaldi_kws import read_kaldi_results, read_utterance_map
from lattice_tools.io.keyword_search.kwslist import read_kwslist

DATA = Path(__file__).parent / "data" / "kaldi_kws"
LATS = Path(__file__).parent / "data" / "kaldi" / "lats"
WORDS = str(LATS / "bundled.words.txt")
INDEX = str(DATA / "small.index")
FSTS = str(DATA / "kw.fsts")
UMAP = str(DATA / "utter.map")


def run(*args):
    return CliRunner().invoke(main, ["kws", "search", *map(str, args)])


def test_kaldi_index_and_keyword_fsts_equal_kws_search(tmp_path):
    """Every hit, as Kaldi's result lines: exactly the lines kws-search wrote (same frames, same 7 digits)."""
    out = tmp_path / "result.txt"
    r = run(INDEX, "--kwlist", FSTS, "--utter-map", UMAP, "--duptime", 0, "--out-format", "kaldi", "-o", out)
    assert r.exit_code == 0, r.output
    ours = sorted(out.read_text().splitlines())
    kaldi = sorted((DATA / "small.hits.txt").read_text().splitlines())
    assert ours == kaldi and len(ours) == 12


def test_kaldi_index_with_words_to_kwslist(tmp_path):
    """Keywords as words (--words spells the index's word ids): a kwslist whose hits are Kaldi's, in seconds
    (frames x 10 ms) and posteriors (exp(-score)); the keyword FSTs spelled by --words give the same file."""
    umap = {i: u for u, i in read_utterance_map(UMAP).items()}
    kaldi = {(k, umap[u], round(b * 0.01, 6), round((e - b) * 0.01, 6)): math.exp(-s)
             for k, u, b, e, s in read_kaldi_results(str(DATA / "small.hits.txt"))}
    for kwlist in (DATA / "keywords.words.txt", FSTS):
        out = tmp_path / f"{Path(kwlist).stem}.kwslist.xml"
        r = run(INDEX, "--kwlist", kwlist, "--words", WORDS, "--utter-map", UMAP, "--duptime", 0, "-o", out)
        assert r.exit_code == 0, r.output
        got = {(d.kwid, d.file, round(d.tbeg, 6), round(d.dur, 6)): d.score for d in read_kwslist(str(out)).detections}
        assert got.keys() == kaldi.keys()
        for key, p in kaldi.items():
            assert got[key] == pytest.approx(p, abs=1e-6), key     # kwslist scores carry 6 decimals


def test_own_index_and_kaldi_index_give_the_same_detections(tmp_path):
    """One search for both indexes: the toolkit's index of the same lattices (Kaldi's silence rule) and
    Kaldi's index give the same detections (scores within Kaldi's 2^-10 quantization) for their utterances."""
    idx = tmp_path / "own.db"
    r = CliRunner().invoke(main, ["kws", "index", f"ark,t:{LATS / 'bundled.ark.gz'}", "--words", WORDS, "--format",
                                  "kaldi", "--max-length", "2", "--silence-rule", "kaldi", "-o", str(idx)])
    assert r.exit_code == 0, r.output
    results = {}
    for name, index in (("own", idx), ("kaldi", INDEX)):
        out = tmp_path / f"{name}.txt"
        r = run(index, "--kwlist", FSTS, "--words", WORDS, "--utter-map", UMAP, "--duptime", 0, "--out-format",
                "kaldi", "-o", out)
        assert r.exit_code == 0, r.output
        results[name] = {(k, u, b, e): s for k, u, b, e, s in read_kaldi_results(str(out))}
    own = {k: v for k, v in results["own"].items() if k[1] in (2, 3, 4, 5)}   # the small index's utterances
    assert own.keys() == results["kaldi"].keys()
    for key, s in results["kaldi"].items():
        assert own[key] == pytest.approx(s, abs=2 ** -10), key


def test_memory_budget_and_errors(tmp_path):
    r = run(INDEX, "--kwlist", FSTS, "--utter-map", UMAP, "--max-memory", "1M", "-o", tmp_path / "x.txt")
    # one budget for the whole command (its inputs read in turn): refused on one line naming the option
    assert r.exit_code == 2 and "memory budget" in r.output and "--max-memory" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "x.txt").exists()
    from lattice_tools.core.errors import BudgetExceededError
    from lattice_tools.kws.kaldi_index import KaldiIndex
    with pytest.raises(BudgetExceededError, match="small.index"):   # the index reader's own refusal
        KaldiIndex(str(INDEX), {"002": 2}, max_memory=1 << 20)
    r = run(INDEX, "--kwlist", FSTS, "-o", tmp_path / "x.txt")
    assert r.exit_code == 2 and "--utter-map" in r.output
    cut = tmp_path / "cut.index"
    cut.write_bytes((DATA / "small.index").read_bytes()[:5000])
    r = run(cut, "--kwlist", FSTS, "--utter-map", UMAP, "-o", tmp_path / "x.txt")
    assert r.exit_code == 2 and "truncated" in r.output and str(cut) in r.output and "Traceback" not in r.output
    short_map = tmp_path / "utter.map"
    short_map.write_text("002 2\n")
    r = run(INDEX, "--kwlist", FSTS, "--utter-map", short_map, "-o", tmp_path / "x.txt")
    assert r.exit_code == 2 and "not in the utterance map" in r.output
    r = run(INDEX, "--kwlist", DATA / "keywords.words.txt", "--utter-map", UMAP, "--json", "-", "-o", tmp_path / "y.txt")
    assert r.exit_code == 0, r.output     # words searched in an index of word ids without --words: all OOV
    assert len(json.loads(r.stdout)["oov"]) == 20


def test_kaldi_index_of_all_bundled_lattices_equals_kws_search(tmp_path):
    """Kaldi builds the index of the ten bundled lattices here and searches it; our search of that index
    writes the same lines."""
    from _kaldi_helpers import kaldi_env, require_kaldi

    tools = require_kaldi("lattice-to-kws-index", "kws-index-union", "kws-search")
    idx = subprocess.run([tools["lattice-to-kws-index"], "--max-states-scale=4", "--max-silence-frames=50",
                          f"ark:{UMAP}", f"ark:gunzip -c {LATS / 'bundled.ark.gz'}|", "ark:-"],
                         capture_output=True, env=kaldi_env(), check=True).stdout
    subprocess.run([tools["kws-index-union"], "ark:-", f"ark:{tmp_path / 'index'}"], input=idx, capture_output=True,
                   env=kaldi_env(), check=True)
    subprocess.run([tools["kws-search"], "--negative-tolerance=-1", f"ark:{tmp_path / 'index'}", f"ark:{FSTS}",
                    f"ark,t:{tmp_path / 'kaldi.txt'}", f"ark,t:{tmp_path / 'stats.txt'}"], capture_output=True,
                   env=kaldi_env(), check=True)
    r = run(tmp_path / "index", "--kwlist", FSTS, "--utter-map", UMAP, "--duptime", 0, "--out-format", "kaldi",
            "-o", tmp_path / "ours.txt")
    assert r.exit_code == 0, r.output
    ours = sorted((tmp_path / "ours.txt").read_text().splitlines())
    assert ours == sorted((tmp_path / "kaldi.txt").read_text().splitlines()) and len(ours) == 30


def test_frames_are_lattice_frames(tmp_path):
    """Kaldi's index and result lines count lattice frames: --frame-shift x --frame-subsampling-factor seconds
    each (chain models: 0.03 s), both when reading the index and when writing result lines."""
    out = tmp_path / "r.txt"
    r = run(INDEX, "--kwlist", FSTS, "--utter-map", UMAP, "--duptime", 0, "--frame-subsampling-factor", 3,
            "--out-format", "kaldi", "-o", out)
    assert r.exit_code == 0, r.output
    assert sorted(out.read_text().splitlines()) == sorted((DATA / "small.hits.txt").read_text().splitlines())
    xml = tmp_path / "r.kwslist.xml"
    r = run(INDEX, "--kwlist", FSTS, "--utter-map", UMAP, "--duptime", 0, "--frame-subsampling-factor", 3, "-o", xml)
    assert r.exit_code == 0, r.output
    starts = sorted(round(d.tbeg / 0.03) for d in read_kwslist(str(xml)).detections)
    assert starts == sorted(b for _k, _u, b, _e, _s in read_kaldi_results(str(DATA / "small.hits.txt")))


def test_text_keyword_fsts(tmp_path):
    """Babel's keywords.fsts is a text archive (kws_data_prep.sh writes ark,t:): read as the binary one."""
    from lattice_tools.core.errors import FormatError
    from lattice_tools.io.keyword_search.kaldi_kws import read_kaldi_keyword_fsts

    text = str(DATA / "kw.text.fsts")
    assert read_kaldi_keyword_fsts(text) == read_kaldi_keyword_fsts(FSTS)
    out = tmp_path / "result.txt"
    r = run(INDEX, "--kwlist", text, "--utter-map", UMAP, "--duptime", 0, "--out-format", "kaldi", "-o", out)
    assert r.exit_code == 0, r.output
    assert sorted(out.read_text().splitlines()) == sorted((DATA / "small.hits.txt").read_text().splitlines())
    bad = tmp_path / "bad.fsts"
    bad.write_text("KW-01 \n0\t1\t13\t13\n1\n\nKW-02 \n0\t1\tx\t70\n1\n\n")
    with pytest.raises(FormatError, match="KW-02") as info:
        read_kaldi_keyword_fsts(str(bad))
    assert str(bad) + ":6:" in str(info.value)
    loop = tmp_path / "loop.fsts"     # kws_data_prep.sh --silence-word: optional silence as self-loops
    loop.write_text("KW-01 \n0\t1\t13\t13\n1\t1\t5\t5\n1\t2\t70\t70\n2\n\n")
    with pytest.raises(FormatError, match="not linear"):
        read_kaldi_keyword_fsts(str(loop))


@pytest.mark.parametrize("name", ["small.index", "kw.fsts", "kw.text.fsts"])
def test_mutated_kaldi_files_fail_with_one_error(tmp_path, name):
    """Bit flips, overwritten integers and cuts of Kaldi's index and keyword FSTs: read as before or refused
    with a FormatError naming the file -- never another exception (a crash, a huge allocation, a hang)."""
    import random
    import struct

    from lattice_tools.core.errors import FormatError
    from lattice_tools.io.keyword_search.kaldi_kws import KaldiKwsIndexFile, read_kaldi_keyword_fsts

    data = (DATA / name).read_bytes()
    read = KaldiKwsIndexFile if name == "small.index" else read_kaldi_keyword_fsts
    rng = random.Random(7)
    p = tmp_path / name
    refused = 0
    for _ in range(40):
        b = bytearray(data)
        op = rng.randrange(3)
        if op == 0:
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 1:
            i = rng.randrange(len(b) - 8)
            b[i:i + 8] = struct.pack("<q", rng.choice([-1, 2 ** 31, 2 ** 62, 7, 0]))
        else:
            del b[rng.randrange(len(b)):]
        p.write_bytes(bytes(b))
        try:
            read(str(p))
        except FormatError as exc:
            assert str(p) in str(exc)
            refused += 1
    assert refused > 5


def test_kst_tuning_on_a_kaldi_index(tmp_path):
    """--tune-ecf/--tune-rttm pick KST's ntrue-scale on a Kaldi index too (the dev set is scored against the
    KWlist XML, so the keywords must be given as one: keyword FSTs are refused for tuning)."""
    from lattice_tools.io.keyword_search.ecf import EcfExcerpt, write_ecf
    from lattice_tools.io.keyword_search.kwlist import KeywordTerm, write_kwlist
    from lattice_tools.io.keyword_search.rttm import lexemes_from_ctm, write_rttm

    refs = lexemes_from_ctm(str(Path(__file__).parent / "data" / "kws_study" / "reference.ctm"))
    write_rttm(str(tmp_path / "ref.rttm"), refs)
    ends: dict[str, float] = {}
    for r in refs:
        ends[r.file] = max(ends.get(r.file, 0.0), r.tbeg + r.dur)
    write_ecf(str(tmp_path / "ecf.xml"), [EcfExcerpt(f"{f}.sph", "1", 0.0, round(e + 1, 2)) for f, e in ends.items()])
    terms = [KeywordTerm(p[0], " ".join(p[1:])) for p in (line.split() for line in
                                                           (DATA / "keywords.words.txt").read_text().splitlines())]
    write_kwlist(str(tmp_path / "kwlist.xml"), terms)
    tune = ["--normalization", "kst", "--duration", 30, "--tune-ecf", tmp_path / "ecf.xml", "--tune-rttm",
            tmp_path / "ref.rttm"]
    r = run(INDEX, "--kwlist", tmp_path / "kwlist.xml", "--words", WORDS, "--utter-map", UMAP, *tune,
            "--json", tmp_path / "s.json", "-o", tmp_path / "t.kwslist.xml")
    assert r.exit_code == 0, r.output
    table = json.loads((tmp_path / "s.json").read_text())["tuning"]["atwv_by_scale"]
    assert len(table) == 25
    r = run(INDEX, "--kwlist", FSTS, "--utter-map", UMAP, *tune, "-o", tmp_path / "u.kwslist.xml")
    assert r.exit_code == 2 and "KWlist XML" in r.output
