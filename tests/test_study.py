"""The density-vs-oracle study on real speech (small scale), the bootstrap, and the CLI."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from lattice_tools.core.counts import ErrorCounts
from lattice_tools.core.errors import MismatchError

CLIPS = ("sense_and_sensibility_01_austen_64kb-0880", "sense_and_sensibility_01_austen_64kb-0930")


@pytest.fixture(scope="module")
def real_lattices(tmp_path_factory, data_dir):
    """Two bundled LibriVox clips decoded by pocketsphinx at its default beams (~3 s each)."""
    decode = pytest.importorskip("lattice_tools.decode.pocketsphinx")
    out = tmp_path_factory.mktemp("lat")
    wavs = [str(data_dir / "librivox" / f"{c}.wav") for c in CLIPS]
    lats = decode.decode_audio(wavs, out_dir=str(out), progress=False)
    return lats, str(data_dir / "librivox" / "transcription.trn")


def test_study_on_real_speech(real_lattices, tmp_path):
    from lattice_tools.oracle.study import run_study

    lats, trn = real_lattices
    kw = dict(ns=(1, 2, 10), representations=("nbest", "sausage", "phrase", "lattice"), prune_thresholds=(0.0, 0.01),
              out_dir=str(tmp_path / "study"), bootstrap=100, seed=1, progress=False)
    # the trn has 5 utterances, 2 of them decoded: leaving 3 out of every WER must be asked for
    with pytest.raises(MismatchError, match="3 reference utterance"):
        run_study({"ps": lats}, trn, **kw)
    assert not os.path.exists(tmp_path / "study" / "cells")
    kw["allow_missing"] = True
    res = run_study({"ps": lats}, trn, **kw)
    assert "3 reference utterance(s) have no hypothesis" in open(res.files["markdown"]).read()
    # 2 densities x (1best + nbest 1,2,10,inf + sausage 1,2,10,inf + phrase 1,2,10,inf + lattice)
    assert len(res.rows) == 2 * 14
    for f in ("markdown", "csv", "json", "plot_n", "plot_mb"):
        assert os.path.getsize(res.files[f]) > 0
    bad = [i for i in res.invariants if not i.holds]
    assert not bad and len(res.invariants) >= 2 * 12
    rows = {(r.density, r.representation, r.n): r.to_dict() for r in res.rows if r.skipped is None}
    for density in ("ps", "ps@0.01"):
        lat = rows[(density, "lattice", "inf")]
        assert lat["wer"] <= rows[(density, "1best", "1")]["wer"]
        assert lat["wer_low"] <= lat["wer"] <= lat["wer_high"]
        if (density, "phrase", "inf") in rows:   # eq. 6: phrases at N=inf contain every lattice path
            # (integer part: skipping an empty phrase alternative '@' costs 0.001 in sclite)
            assert int(rows[(density, "phrase", "inf")]["cost"]) <= int(lat["cost"])
        for rep in ("nbest", "sausage", "phrase"):
            assert rows[(density, rep, "2")]["N_max"] <= 2
            assert rows[(density, rep, "2")]["MB"] > 0
    # pruning only removes paths: the oracle cannot improve
    assert rows[("ps@0.01", "lattice", "inf")]["cost"] >= rows[("ps", "lattice", "inf")]["cost"]
    # resumable: a rerun recomputes nothing and gives the same rows
    cells = sorted(os.listdir(tmp_path / "study" / "cells" / "ps"))
    mtimes = {c: os.path.getmtime(tmp_path / "study" / "cells" / "ps" / c) for c in cells}
    res2 = run_study({"ps": "/nonexistent-never-read"}, trn, **kw)
    assert res2.rows == res.rows
    assert mtimes == {c: os.path.getmtime(tmp_path / "study" / "cells" / "ps" / c) for c in cells}


@pytest.mark.sclite
def test_study_altctm_cells_equal_debian_sclite(real_lattices, tmp_path):
    """The study's alt-CTM of each representation, scored by Debian sclite against an STM made
    from the trn, gives the study's own C/S/D/I (one recording per utterance, as written)."""
    from _oracle_helpers import run_sclite
    from conftest import SCLITE

    from lattice_tools.io.transcripts.trn import read_trn
    from lattice_tools.oracle.study import run_study

    if SCLITE is None:
        pytest.skip("Debian sclite is not installed")
    lats, trn = real_lattices
    out = tmp_path / "study"
    res = run_study({"ps": lats}, trn, ns=(1, 5), representations=("nbest", "sausage", "phrase"),
                    include_infinity=False, out_dir=str(out), bootstrap=0, plots=False, progress=False,
                    allow_missing=True)
    keys = {lat.key for lat in lats}
    stm = [f"{u.utt_id} 1 spk 0.00 100.00 {u.text}" for u in read_trn(trn) if u.utt_id in keys]
    (tmp_path / "ref.stm").write_text("\n".join(sorted(stm)) + "\n")
    checked = 0
    for r in (row.to_dict() for row in res.rows):
        ctm_gz = out / "altctm" / "ps" / f"{r['representation']}-{r['N']}.ctm.gz"
        import gzip
        lines = gzip.decompress(ctm_gz.read_bytes()).decode().splitlines()
        # sclite wants the CTM sorted by file (it is written per utterance in key order)
        (tmp_path / "h.ctm").write_text("\n".join(lines) + "\n")
        want = run_sclite(SCLITE, str(tmp_path / "ref.stm"), str(tmp_path / "h.ctm"))
        assert (r["ref_words"], r["C"], r["S"], r["D"], r["I"]) == want, r["representation"] + r["N"]
        checked += 1
    assert checked == 7


def test_bootstrap_is_reproducible_and_paired():
    from lattice_tools.oracle.bootstrap import bootstrap_systems, bootstrap_wer, resample_indices

    rng = np.random.default_rng(0)
    a = [ErrorCounts(correct=int(c), substitutions=int(s), ref_words=int(c + s)) for c, s in
         zip(rng.integers(5, 20, 50), rng.integers(0, 5, 50), strict=False)]
    iv1 = bootstrap_wer(a, replications=500, seed=3)["wer"]
    iv2 = bootstrap_wer(a, replications=500, seed=3)["wer"]
    assert iv1 == iv2 and iv1.low < iv1.value < iv1.high
    total = ErrorCounts.sum(a)
    assert iv1.value == pytest.approx(total.wer)
    # independent re-computation of the percentile interval with a plain loop
    idx = resample_indices(len(a), 500, 3)
    wers = [sum(a[i].errors for i in row) / sum(a[i].ref_words for i in row) for row in idx]
    assert (iv1.low, iv1.high) == pytest.approx(tuple(np.quantile(wers, [0.025, 0.975])))
    # paired: a system identical to another gets an identical interval
    both = bootstrap_systems({"x": a, "y": list(a)}, replications=200, seed=5)
    assert both["x"]["wer"] == both["y"]["wer"]


def test_cli_oracle_and_study(real_lattices, tmp_path):
    from click.testing import CliRunner

    from lattice_tools.cli import main

    lats, trn = real_lattices
    from lattice_tools.io.lattices.slf import write_slf
    d = tmp_path / "lats"
    d.mkdir()
    for lat in lats:
        write_slf(lat, str(d / f"{lat.key}.lat"))
    runner = CliRunner()
    # the trn has more utterances than there are lattices: refused unless --allow-missing
    r = runner.invoke(main, ["oracle", str(d), "-r", trn])
    assert r.exit_code == 2 and "--allow-missing" in r.output
    r = runner.invoke(main, ["oracle", str(d), "-r", trn, "--json", str(tmp_path / "o.json"), "--bootstrap", "50",
                             "--allow-missing"])
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "o.json").read_text())
    assert "%WER" in r.output and len(rep["utterances"]) == 2 and "intervals" in rep
    r = runner.invoke(main, ["oracle", str(d), "-r", trn, "--representation", "nbest", "-n", "3",
                             "--mode", "levenshtein", "--allow-missing"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["oracle", str(d), "-r", str(tmp_path / "missing.trn")])
    assert r.exit_code == 2 and "missing.trn" in r.output
    study = ["study", f"ps={d}", "-r", trn, "-o", str(tmp_path / "st"), "-n", "1,2",
             "--representations", "nbest,lattice", "--bootstrap", "20", "--no-plots"]
    r = runner.invoke(main, study)
    assert r.exit_code == 2 and "--allow-missing" in r.output
    r = runner.invoke(main, study + ["--allow-missing"])
    assert r.exit_code == 0, r.output
    assert "invariants" in r.output and (tmp_path / "st" / "study.md").exists()


def test_glm_alternations_reach_the_oracle(tmp_path):
    """--glm: a GLM alternation in the reference becomes a branch the oracle may take."""
    from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
    from lattice_tools.oracle import alternatives_oracle_many
    from lattice_tools.oracle.representations import load_references

    (tmp_path / "t.glm").write_text(
        ';; test\n* name "t.glm"\n* desc "test"\n* copy_no_hit = \'T\'\n'
        "I'M => {I'M / I AM} / [ ] __ [ ]\n")
    (tmp_path / "r.trn").write_text("i'm going home (u1)\n")
    plain = load_references(str(tmp_path / "r.trn"))
    glm = load_references(str(tmp_path / "r.trn"), glm=str(tmp_path / "t.glm"))
    assert "{" in glm["u1"] and "{" not in plain["u1"]
    hyp = Alternatives("u1", (Slot(0, 1, (Alternative(("i", "am", "going", "home")),)),), kind="1best")
    without, with_glm = alternatives_oracle_many([hyp, hyp], [plain["u1"], glm["u1"]])
    assert without.counts.errors == 2 and with_glm.counts.errors == 0


# ----------------------------------------------------------------------------------------------
# the study both ways: whole-side lattices, segmented beside segment-free
@pytest.fixture(scope="module")
def side_lattice(tmp_path_factory, data_dir):
    """The two clips joined into one side (0.2 s of silence between them), decoded whole by pocketsphinx;
    its STM has one segment per clip."""
    decode = pytest.importorskip("lattice_tools.decode.pocketsphinx")
    from lattice_tools.pipelines.demo import concatenated_side

    out = tmp_path_factory.mktemp("side")
    wav, stm = concatenated_side([str(data_dir / "librivox" / f"{c}.wav") for c in CLIPS],
                                 [str(data_dir / "librivox" / "transcription.trn")], str(out))
    return decode.decode_audio([wav], out_dir=str(out / "lat"), progress=False), stm


@pytest.mark.parametrize("mode", ["levenshtein", "sclite"])
def test_study_both_ways_on_a_joined_side(side_lattice, tmp_path, mode):
    from lattice_tools.oracle.study import run_study

    lats, stm = side_lattice
    assert [lat.key for lat in lats] == ["bundled"] and len(open(stm).read().splitlines()) == 2
    res = run_study({"ps": lats}, stm, ns=(1, 2, 10), out_dir=str(tmp_path / "both"), mode=mode,
                    segment_free=True, progress=False, bootstrap=0)
    rows = {r.cell: r.to_dict() for r in res.rows if r.skipped is None}
    assert {("1best", "1"), ("nbest", "2"), ("sausage", "inf"), ("phrase", "10"), ("lattice", "inf")} <= set(rows)
    assert res.invariants and all(i.holds for i in res.invariants)
    for (rep, _n), r in rows.items():
        if rep == "lattice":
            assert r["free_wer"] <= rows[("1best", "1")]["free_wer"] and "seg_wer" not in r
            continue
        assert r["ref_words"] == 16 and r["free_cost"] <= r["seg_cost"] + 1
        if r["moved"] == 0:
            assert int(r["free_cost"]) == int(r["seg_cost"])
        if mode == "levenshtein":
            assert r["free_wer"] <= r["seg_wer"]
    # a whole-side N-best list is one ALT block over both segments: sclite hands it to one segment, so the
    # other segment's words are all deleted there, while the segment-free alignment pairs them (moved)
    nb = rows[("nbest", "2")]
    assert nb["moved"] > 0 and nb["free_wer"] < nb["seg_wer"]
    assert nb["seg_D"] >= min(len(line.split()) - 5 for line in open(stm))
    text = open(res.files["markdown"]).read()
    assert "segmented WER" in text and "segment-free WER" in text and "moved" in text
    with open(res.files["json"]) as f:
        assert json.load(f)["rows"][0]["representation"] == "1best"
    with open(res.files["csv"]) as f:
        assert f.readline().startswith("density,representation,N,seg_wer,free_wer,moved,paired")


@pytest.mark.sclite
def test_study_both_ways_equals_debian_sclite(side_lattice, tmp_path):
    """Each cell's segmented counts are Debian sclite's on its alt-CTM and the STM; its segment-free counts
    (no collar) are Debian sclite's with the STM merged into one segment per side."""
    import gzip

    from _oracle_helpers import run_sclite
    from conftest import SCLITE

    from lattice_tools.oracle.study import run_study

    if SCLITE is None:
        pytest.skip("Debian sclite is not installed")
    lats, stm = side_lattice
    out = tmp_path / "both"
    res = run_study({"ps": lats}, stm, ns=(1, 3), representations=("nbest", "sausage", "phrase"),
                    include_infinity=False, out_dir=str(out), segment_free=True, progress=False)
    lines = [line.split(" ", 5) for line in open(stm).read().splitlines()]
    merged = f"{lines[0][0]} 1 {lines[0][2]} {lines[0][3]} {lines[-1][4]} " + " ".join(x[5] for x in lines)
    (tmp_path / "merged.stm").write_text(merged + "\n")
    checked = 0
    for r in (row.to_dict() for row in res.rows):
        ctm = tmp_path / "h.ctm"
        ctm.write_bytes(gzip.decompress((out / "altctm" / "ps" / f"{r['representation']}-{r['N']}.ctm.gz").read_bytes()))
        seg = run_sclite(SCLITE, stm, str(ctm))
        free = run_sclite(SCLITE, str(tmp_path / "merged.stm"), str(ctm))
        assert seg == (r["ref_words"], r["seg_C"], r["seg_S"], r["seg_D"], r["seg_I"]), r
        assert free == (r["ref_words"], r["free_C"], r["free_S"], r["free_D"], r["free_I"]), r
        checked += 1
    assert checked == 7   # 1-best and three representations at N = 1, 3


def test_study_both_ways_refuses_what_it_cannot_do(side_lattice, tmp_path):
    from lattice_tools.core.errors import LatticeToolsError
    from lattice_tools.oracle.study import run_study

    lats, stm = side_lattice
    with pytest.raises(LatticeToolsError, match="collar applies to the segment-free study"):
        run_study({"ps": lats}, stm, out_dir=str(tmp_path / "a"), collar=1.0)
    renamed = [type(lats[0]).from_arcs(src=lats[0].src, dst=lats[0].dst, word=lats[0].word, symbols=lats[0].symbols,
                                       final_graph_cost=lats[0].final_graph_cost, t0=lats[0].t0, t1=lats[0].t1,
                                       key="other")]
    with pytest.raises(LatticeToolsError, match="names no file/channel"):
        run_study({"ps": renamed}, stm, out_dir=str(tmp_path / "b"), segment_free=True)
    assert not os.path.exists(tmp_path / "b" / "study.md")


def test_study_both_ways_with_segments_equals_the_per_utterance_study(real_lattices, tmp_path, data_dir):
    """Per-utterance lattices placed on one side by a Kaldi segments file: their segmented numbers are the
    per-utterance study's (each clip's alternatives fall in its own segment), and segment-free is never worse."""
    from lattice_tools.oracle.study import run_study
    from lattice_tools.pipelines.demo import concatenated_side

    lats, trn = real_lattices
    _wav, stm = concatenated_side([str(data_dir / "librivox" / f"{c}.wav") for c in CLIPS], [trn], str(tmp_path))
    spans = [line.split()[3:5] for line in open(stm)]
    (tmp_path / "segments").write_text("".join(f"{c} bundled {a} {b}\n" for c, (a, b) in zip(CLIPS, spans, strict=True)))
    kw = dict(ns=(1, 2, 10), representations=("nbest", "sausage", "phrase", "lattice"), include_infinity=False,
              bootstrap=0, plots=False, progress=False)
    both = run_study({"ps": lats}, stm, out_dir=str(tmp_path / "both"), segment_free=True,
                     segments=str(tmp_path / "segments"), **kw)
    per_utt = run_study({"ps": lats}, trn, out_dir=str(tmp_path / "per"), allow_missing=True, **kw)
    cells = {r.cell: r.to_dict() for r in per_utt.rows}
    assert all(i.holds for i in both.invariants)
    assert {r.representation for r in both.rows} == {"1best", "nbest", "sausage", "phrase"}
    assert "no whole-lattice row" in open(both.files["markdown"]).read()
    for r in (row.to_dict() for row in both.rows):
        c = cells[(r["representation"], r["N"])]
        assert (r["seg_C"], r["seg_S"], r["seg_D"], r["seg_I"], r["ref_words"]) == \
            (c["C"], c["S"], c["D"], c["I"], c["ref_words"]), r
        assert int(r["free_cost"]) <= int(r["seg_cost"])


def test_cli_study_segment_free(side_lattice, tmp_path):
    from click.testing import CliRunner

    from lattice_tools.cli import main
    from lattice_tools.io.lattices.slf import write_slf

    lats, stm = side_lattice
    d = tmp_path / "lats"
    d.mkdir()
    write_slf(lats[0], str(d / "bundled.lat"))
    runner = CliRunner()
    base = ["study", f"ps={d}", "-r", stm, "-n", "1,2", "--no-infinity", "--representations", "sausage,lattice"]
    r = runner.invoke(main, base + ["-o", str(tmp_path / "a"), "--segment-free", "--mode", "levenshtein"])
    assert r.exit_code == 0, r.output
    assert "invariants:" in r.output and (tmp_path / "a" / "study.md").exists()
    r = runner.invoke(main, base + ["-o", str(tmp_path / "b"), "--collar", "0.5"])   # a collar needs --segment-free
    assert r.exit_code == 2 and "segment-free" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "b" / "study.md").exists()
    r = runner.invoke(main, base + ["-o", str(tmp_path / "c"), "--segment-free", "--collar", "0.5"])
    assert r.exit_code == 0, r.output
    rows = json.loads((tmp_path / "c" / "study.json").read_text())
    assert rows["collar"] == 0.5 and {r["representation"] for r in rows["rows"]} == {"1best", "sausage", "lattice"}


def test_concatenated_side_joins_recordings(tmp_path, data_dir):
    import wave

    from lattice_tools.core.errors import LatticeToolsError
    from lattice_tools.pipelines.demo import concatenated_side

    wavs = [str(data_dir / "cards" / f"00{k}.wav") for k in (1, 2)]
    wav, stm = concatenated_side(wavs, [str(data_dir / "cards" / "transcription.trn")], str(tmp_path), gap=0.5)
    durs = []
    for p in wavs:
        with wave.open(p) as w:
            durs.append(w.getnframes() / w.getframerate())
    with wave.open(wav) as w:
        assert w.getnframes() / w.getframerate() == pytest.approx(sum(durs) + 0.5, abs=1e-3)
    lines = [line.split(" ", 5) for line in open(stm).read().splitlines()]
    assert [x[:3] for x in lines] == [["bundled", "1", "bundled"]] * 2
    assert float(lines[0][3]) == 0 and float(lines[1][3]) == pytest.approx(durs[0] + 0.5, abs=1e-3)
    assert float(lines[1][4]) == pytest.approx(sum(durs) + 0.5, abs=1e-3)
    with pytest.raises(LatticeToolsError, match="no reference transcript"):
        concatenated_side(wavs, [str(data_dir / "librivox" / "transcription.trn")], str(tmp_path / "x"))


@pytest.mark.slow
def test_demo_appends_the_study_both_ways(tmp_path):
    pytest.importorskip("lattice_tools.decode.pocketsphinx")
    from lattice_tools.pipelines.demo import run_demo

    outputs = run_demo(str(tmp_path / "demo"), corpora=("cards",), densities=("default",), ns=(1, 2), bootstrap=0,
                       kws=False, echo=lambda *a: None)
    text = open(outputs.study["markdown"]).read()
    assert "## Oracle WER study both ways" in text and "segment-free WER" in text
    both = json.loads(open(outputs.both_ways["json"]).read())
    assert all(i["holds"] for i in both["invariants"])
    assert {r["representation"] for r in both["rows"]} == {"1best", "nbest", "sausage", "phrase", "lattice"}
