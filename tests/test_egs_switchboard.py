"""egs/switchboard end to end on the stand-in corpus laid out like LDC2002S09 + LDC2002T43.

All stages (0 data, 1 lattices by decoding the audio, 2 alternatives, 3 scoring ladder + alt-CTM
scores, 4 oracle study + plots, also both ways, 5 keyword search) run with --nj 2 and tiny depths.  Checked: every stage's outputs
exist; lattice oracle <= N-best oracle <= 1-best (and the study's own invariant checks); the oracle
of each stage-2 alt-CTM computed by the study equals what the sclite-exact scorer gives for that
alt-CTM against the STM (two independent code paths), and Debian's NIST sclite agrees with the
scorer; a rerun does no work; stage 0 from lhotse's transcript parser gives the same STM; stage 1
reads a Kaldi decode dir (lat.N.gz + words.txt) and icefall .pt files.
"""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from _recipe_helpers import EGS, have_cli, mtimes, run, sclite_binary

pytestmark = pytest.mark.skipif(not have_cli(), reason="the lattice-tools entry point is not installed")

RUN = EGS / "run.sh"
SMALL = ["--nj", "2", "--nbest-depths", "1 2", "--sausage-depths", "2", "--phrase-depths", "2",
         "--study-ns", "1 2", "--study-opts", "--no-infinity --bootstrap 200", "--study-segment-free", "true"]
KINDS = {"nbest": "nbest", "sausage": "sausage", "phrases": "phrase"}  # stage-2 kind -> study representation


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    pytest.importorskip("pocketsphinx")
    root = tmp_path_factory.mktemp("ldc")
    run(["python3", EGS / "local" / "make_standin_corpus.py", root])
    return root


@pytest.fixture(scope="module")
def exp(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("swb") / "exp"
    proc = run([RUN, "--corpus", corpus, "--exp", out, *SMALL], timeout=1200)
    (out.parent / "run.out").write_text(proc.stdout)
    return out


def _wer_line(text: str) -> tuple[float, int, int, int, int]:
    m = re.search(r"%WER ([\d.]+) \[ (\d+) / (\d+), (\d+) ins, (\d+) del, (\d+) sub \]", text)
    assert m, text
    wer, err, ref, ins, dele, sub = m.groups()
    return float(wer), int(ref), int(sub), int(dele), int(ins)


def test_corpus_layout(corpus):
    assert sorted(p.name for p in (corpus / "LDC2002S09" / "hub5e_00" / "english").glob("*.sph")) == \
        ["sw_4390.sph", "sw_4484.sph"]
    ref = corpus / "LDC2002T43" / "reference"
    assert (ref / "hub5e00.english.000405.stm").is_file() and (ref / "en20000405_hub5.glm").is_file()
    assert sorted(p.name for p in (ref / "english").glob("*.txt")) == ["sw_4390.txt", "sw_4484.txt"]


def test_every_stage_writes_its_outputs(exp):
    data = exp / "data"
    for name in ("stm", "glm", "glms", "segments", "wav.scp", "reco2file_and_channel", "text", "utt2spk", ".done"):
        assert (data / name).is_file(), name
    utts = [line.split()[0] for line in (data / "segments").read_text().splitlines()]
    assert len(utts) == 8
    # stage 1: one lattice per segment, in segments order, and the decoder's 1-best
    lats = (exp / "lattices" / "lattices.list").read_text().split()
    assert [Path(p).name for p in lats] == [f"{u}.lat" for u in utts]
    assert all(Path(p).is_file() for p in lats)
    assert (exp / "lattices" / ".done").is_file() and (exp / "lattices" / "1best.ctm").is_file()
    # stage 2
    for kind, depths in (("nbest", (1, 2)), ("sausage", (2,)), ("phrases", (2,))):
        for n in depths:
            d = exp / "alternatives" / f"{kind}.n{n}"
            assert (d / ".done").is_file() and (d / "alt.ctm.gz").is_file(), d
            stats = json.loads((d / "stats.json").read_text())
            assert stats["utterances"] == 8 and stats["N"] == n and stats["kind"] == kind
    # stage 3
    ladder = json.loads((exp / "ladder" / "ladder.json").read_text())
    assert ladder["systems"] == ["pocketsphinx"] and ladder["rows"]
    assert (exp / "ladder" / "ladder.md").read_text().startswith("| configuration |")
    summary = (exp / "scores" / "summary.txt").read_text().splitlines()
    assert sorted(line.split()[0] for line in summary) == ["nbest.n1", "nbest.n2", "phrases.n2", "sausage.n2"]
    # stage 4
    for name in ("study.md", "study.csv", "study.json", "oracle_vs_n.png", "oracle_vs_mb.png", ".done"):
        assert (exp / "study" / name).is_file(), name
    assert (exp / "study" / "oracle_vs_n.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_stage5_keyword_search(exp):
    """Stage 5: references by forced alignment of the decoded segments, a keyword list, the index of the
    stage-1 lattices, search and F4DE-exact scores."""
    kws = exp / "kws"
    for name in ("ref/ref.rttm", "ref/ecf.xml", "kwlist.xml", "index.db", "kwslist.xml", "score/sum.txt", "score.json"):
        assert (kws / name).is_file(), name
    utts = [line.split()[0] for line in (exp / "data" / "segments").read_text().splitlines()]
    aligned = {line.split()[1] for line in (kws / "ref" / "ref.rttm").read_text().splitlines()}
    assert aligned == set(utts)
    assert json.loads((kws / "index.json").read_text())["utterances"] == 8
    score = json.loads((kws / "score.json").read_text())["overall"]
    assert score["stwv"]["twv"] >= score["mtwv"]["twv"] and score["stwv"]["twv"] > 0


def test_alt_ctms_use_the_stm_ids_and_times(exp):
    segs = {}
    for line in (exp / "data" / "stm").read_text().splitlines():
        if line.startswith(";;"):
            continue
        f = line.split()
        segs.setdefault((f[0], f[1]), []).append((float(f[3]), float(f[4])))
    for ctm in sorted((exp / "alternatives").glob("*/alt.ctm.gz")):
        for line in gzip.decompress(ctm.read_bytes()).decode().splitlines():
            f = line.split()
            assert (f[0], f[1]) in segs, (ctm, line)
            if f[2] != "*":
                start, end = float(f[2]), float(f[2]) + float(f[3])
                # every timed word lies inside one of the STM segments of its side (decoded per segment)
                assert any(a - 0.011 <= start and end <= b + 0.011 for a, b in segs[(f[0], f[1])]), (ctm, line)


def test_oracle_invariants(exp):
    study = json.loads((exp / "study" / "study.json").read_text())
    assert study["invariants"] and all(inv["holds"] for inv in study["invariants"]), study["invariants"]
    rows = {(r["representation"], str(r["N"])): r for r in study["rows"] if r.get("wer") is not None}
    lattice, one_best = rows[("lattice", "inf")], rows[("1best", "1")]
    nbest = {int(n): r for (rep, n), r in rows.items() if rep == "nbest"}
    assert set(nbest) == {1, 2}
    # lattice oracle <= N-best oracle <= 1-best (N-best N=1 is the top of the list: the 1-best of the list)
    for r in nbest.values():
        assert lattice["cost"] <= r["cost"] <= nbest[1]["cost"]
        assert lattice["wer"] <= r["wer"] <= nbest[1]["wer"]
    assert lattice["cost"] <= one_best["cost"] and lattice["wer"] <= one_best["wer"]
    for rep in ("sausage", "phrase"):
        assert lattice["wer"] <= rows[(rep, "2")]["wer"] <= rows[(rep, "1")]["wer"]


def test_study_oracle_equals_scoring_the_alt_ctm(exp):
    """The study's exact oracle (lattices vs per-utterance text) and the sclite-exact scorer (stage-2
    alt-CTM vs the multi-segment STM) are independent implementations: they must agree."""
    study = json.loads((exp / "study" / "study.json").read_text())
    rows = {(r["representation"], str(r["N"])): r for r in study["rows"] if r.get("wer") is not None}
    checked = 0
    for d in sorted((exp / "alternatives").glob("*.n*")):
        kind, n = d.name.split(".n")
        proc = run(["lattice-tools", "score", "-r", exp / "data" / "stm", "--ref-format", "stm",
                    "-h", d / "alt.ctm.gz", "--hyp-format", "ctm", "-D"])
        wer, ref, sub, dele, ins = _wer_line(proc.stdout)
        row = rows[(KINDS[kind], n)]
        assert (ref, sub, dele, ins) == (row["ref_words"], row["S"], row["D"], row["I"]), (d.name, proc.stdout[-200:])
        assert wer == pytest.approx(row["wer"], abs=0.005)
        checked += 1
    assert checked == 4


def test_study_both_ways_equals_scoring_the_alt_ctm_both_ways(exp):
    """--study-segment-free: each cell of exp/study-both-ways is the stage-2 alt-CTM of the same lattices scored
    against the STM by `score -D` (segmented) and `score -D --segment-free`; its invariants hold."""
    both = json.loads((exp / "study-both-ways" / "study.json").read_text())
    assert both["invariants"] and all(i["holds"] for i in both["invariants"]), both["invariants"]
    rows = {(r["representation"], str(r["N"])): r for r in both["rows"]}
    checked = 0
    for d in sorted((exp / "alternatives").glob("*.n*")):
        kind, n = d.name.split(".n")
        row = rows[(KINDS[kind], n)]
        for how, extra in (("seg", []), ("free", ["--segment-free"])):
            proc = run(["lattice-tools", "score", "-r", exp / "data" / "stm", "--ref-format", "stm",
                        "-h", d / "alt.ctm.gz", "--hyp-format", "ctm", "-D", *extra])
            _wer, ref, sub, dele, ins = _wer_line(proc.stdout)
            assert (ref, sub, dele, ins) == (row["ref_words"], row[f"{how}_S"], row[f"{how}_D"], row[f"{how}_I"]), \
                (d.name, how, proc.stdout[-200:])
        checked += 1
    assert checked == 4


def _sum_avg(report: str) -> list[str]:
    """The numbers of the Sum/Avg row of an sclite ``sum`` report (%Corr %Sub %Del %Ins %Err %S.Err)."""
    for line in report.splitlines():
        if "Sum/Avg" in line:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            return cells[2].split()
    raise AssertionError(f"no Sum/Avg row in:\n{report[-1500:]}")


def test_alt_ctms_score_the_same_with_nist_sclite(exp, tmp_path):
    """The stage-2 alt-CTMs (file/channel ids and times from convert-ctm) are valid sclite input, and
    Debian's sclite gives the same Sum/Avg row as `lattice-tools score`."""
    sclite = sclite_binary()
    if sclite is None:
        pytest.skip("Debian sctk (sclite) is not installed")
    for d in sorted((exp / "alternatives").glob("*.n*")):
        ctm = tmp_path / f"{d.name}.ctm"
        ctm.write_bytes(gzip.decompress((d / "alt.ctm.gz").read_bytes()))
        ref = run([sclite, "-r", exp / "data" / "stm", "stm", "-h", ctm, "ctm", "-D", "-o", "sum", "stdout"],
                  check=False)
        ours = run(["lattice-tools", "score", "-r", exp / "data" / "stm", "--ref-format", "stm", "-h", ctm, "-D"])
        assert _sum_avg(ref.stdout) == _sum_avg(ours.stdout), (d.name, ref.stdout[-800:], ref.stderr[-800:])


def test_rerun_does_no_work(corpus, exp):
    before = mtimes(exp)
    proc = run([RUN, "--corpus", corpus, "--exp", exp, *SMALL], timeout=600)
    for stage_dir in ("data", "lattices", "ladder", "study", "study-both-ways"):
        assert f"{stage_dir} is done, skipping" in proc.stdout, proc.stdout
    # stages (the study both ways too) + the 4 alt-CTMs (scores skip silently) + the 5 steps of the KWS stage
    assert proc.stdout.count("is done, skipping") == 5 + 4 + 5, proc.stdout
    assert mtimes(exp) == before  # nothing rewritten, including the 4 skipped scores


def test_stage0_from_lhotse_gives_the_same_stm(corpus, exp, tmp_path):
    pytest.importorskip("lhotse")
    run([RUN, "--corpus", corpus, "--exp", tmp_path / "exp", "--stop-stage", "0", "--stm-source", "lhotse"])
    assert (tmp_path / "exp" / "data" / "stm").read_bytes() == (exp / "data" / "stm").read_bytes()
    assert (tmp_path / "exp" / "data" / "segments").read_bytes() == (exp / "data" / "segments").read_bytes()


def test_stage1_from_a_kaldi_decode_dir(exp, tmp_path):
    """Lattices as a Kaldi decode dir (lat.1.gz, lat.2.gz, num_jobs) + words.txt, made with
    `lattice-tools convert` from the stage-1 lattices; stages 1-2 read them back."""
    kdir = tmp_path / "decode"
    kdir.mkdir()
    lats = (exp / "lattices" / "lattices.list").read_text().split()
    words = kdir / "words.txt"
    # one symbol table for both archives (Kaldi ids must agree across the jobs of a decode dir); SLF
    # inputs are given as directories, whose lattices share one growing table
    halves = []
    for i, part in enumerate((lats[:4], lats[4:]), 1):
        (tmp_path / f"half{i}").mkdir()
        for p in part:
            (tmp_path / f"half{i}" / Path(p).name).symlink_to(p)
        halves.append(tmp_path / f"half{i}")
    run(["lattice-tools", "convert", Path(lats[0]).parent, f"ark:| gzip -c > {tmp_path}/all.gz", "--write-words", words])
    for i, half in enumerate(halves, 1):
        run(["lattice-tools", "convert", half, f"ark:| gzip -c > {kdir}/lat.{i}.gz", "--words", words])
    (kdir / "num_jobs").write_text("2\n")
    exp2 = tmp_path / "exp"
    proc = run([RUN, "--exp", exp2, "--data", exp / "data", "--stage", "1", "--stop-stage", "2", "--nj", "2",
                "--lattices", f"kaldi:{kdir}", "--words", words, "--nbest-depths", "1", "--sausage-depths", "2",
                "--phrase-depths", ""])
    assert "stage 1: lattices (kaldi:" in proc.stdout
    assert [Path(p).name for p in (exp2 / "lattices" / "lattices.list").read_text().split()] == \
        [Path(p).name for p in lats]
    assert (exp2 / "lattices" / "log" / "convert.2.log").is_file()
    # the same words and best paths as the original lattices
    info_a = run(["lattice-tools", "info", "--json", "-", *lats]).stdout
    info_b = run(["lattice-tools", "info", "--json", "-", *(exp2 / "lattices" / "lattices.list").read_text().split()]).stdout
    best = lambda s: [(r["key"], r["best_path"]) for r in json.loads(s)["lattices"]]  # noqa: E731
    assert best(info_a) == best(info_b)
    for d in ("nbest.n1", "sausage.n2"):
        text = gzip.decompress((exp2 / "alternatives" / d / "alt.ctm.gz").read_bytes()).decode()
        assert text and {line.split()[0] for line in text.splitlines()} <= {"sw_4390", "sw_4484"}


def test_stage1_from_icefall_pt_files(exp, tmp_path):
    """icefall lattices (torch.save(lattice.as_dict())), written with `lattice-tools convert --out-format k2`:
    three single-utterance files named <utt>.pt and one batch of five with its .keys file."""
    lats = (exp / "lattices" / "lattices.list").read_text().split()
    src = tmp_path / "icefall"
    src.mkdir()
    words = src / "words.txt"
    run(["lattice-tools", "convert", Path(lats[0]).parent, tmp_path / "all.pt", "--write-words", words])
    for p in lats[:3]:
        run(["lattice-tools", "convert", p, src / (Path(p).stem + ".pt"), "--words", words])
    batch = tmp_path / "batch"
    batch.mkdir()
    for p in lats[3:]:
        (batch / Path(p).name).symlink_to(p)
    run(["lattice-tools", "convert", batch, src / "batch-0.pt", "--words", words])
    (src / "batch-0.pt.keys").write_text("".join(Path(p).stem + "\n" for p in lats[3:]))
    exp2 = tmp_path / "exp"
    run([RUN, "--exp", exp2, "--data", exp / "data", "--stage", "1", "--stop-stage", "1", "--nj", "2",
         "--lattices", f"icefall:{src}", "--words", words])
    got = (exp2 / "lattices" / "lattices.list").read_text().split()
    assert [Path(p).name for p in got] == [Path(p).name for p in lats]
    assert len(list((exp2 / "lattices" / "log").glob("convert.*.log"))) == 4  # one job per .pt file
    best = lambda specs: [(r["key"], r["best_path"])  # noqa: E731
                          for r in json.loads(run(["lattice-tools", "info", "--json", "-", *specs]).stdout)["lattices"]]
    assert best(got) == best(lats)
    # a batch without its .keys file cannot be named: the stage fails and says why
    (src / "batch-0.pt.keys").unlink()
    proc = run([RUN, "--exp", tmp_path / "exp3", "--data", exp / "data", "--stage", "1", "--stop-stage", "1",
                "--lattices", f"icefall:{src}", "--words", words], check=False)
    assert proc.returncode != 0
    logs = "".join(p.read_text() for p in (tmp_path / "exp3" / "lattices" / "log").glob("convert.*.log"))
    assert "5 lattices but no batch-0.pt.keys naming their utterances" in logs
    assert not (tmp_path / "exp3" / "lattices" / ".done").exists()
