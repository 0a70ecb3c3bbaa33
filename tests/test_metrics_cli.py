"""`lattice-tools metrics` / `leaderboard` end to end, input formats and error messages."""
# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import json

import pytest
from click.testing import CliRunner

from lattice_tools.cli import main
from lattice_tools.metrics.io import read_annotations, read_hypotheses, read_references

REF = "u1 मेरा नाम राम है\nu2 मैं office जा रहा हूँ\nu3 എന്റെ പേര് രാമൻ\nu4 Hello, Mr. Smith. I like ice cream!\n"
SYS_A = "u1 मेरा नाम राम हैं\nu2 मैं ऑफिस जा रहा हूँ\nu3 एन्टे पेर रामन\nu4 hello mister smith i like icecream\n"
SYS_B = "मेरा नाम श्याम है (u1)\nमैं office जा रहा (u2)\nHello, Mr Smith. I like ice-cream. (u4)\n"
ANN = "id\tlang\tentities\tcs\nu1\thi\tराम\t\nu2\thi\t\thin-eng\nu3\tml\t\t\nu4\ten\tMr. Smith\t\n"


@pytest.fixture
def files(tmp_path):
    for name, text in (("ref.txt", REF), ("a.txt", SYS_A), ("b.trn", SYS_B), ("ann.tsv", ANN)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_metrics_command(files):
    out, per = files / "sum.json", files / "per.jsonl"
    r = CliRunner().invoke(main, ["metrics", str(files / "ref.txt"), str(files / "a.txt"), "-a", str(files / "ann.tsv"),
                                  "--resamples", "300", "-o", str(out), "--per-utterance", str(per)])
    assert r.exit_code == 0, r.output
    s = json.loads(out.read_text())
    assert s["all"]["coverage"] == 1.0
    assert s["all"]["taxonomy"]["script_collapse"] == 1
    assert s["languages"]["ml"]["metrics"]["sfr"]["value"] == 0.0
    assert s["all"]["metrics"]["switch_f1"]["value"] == 0.0     # "office" transliterated: switches lost
    rows = [json.loads(x) for x in per.read_text().splitlines()]
    assert [x["id"] for x in rows] == ["u1", "u2", "u3", "u4"]
    assert rows[3]["orthography"]["wer"] == 0.0 and rows[3]["wer"] > 0   # robust WER vs plain WER


def test_leaderboard_command(files):
    out, md = files / "lb.json", files / "lb.md"
    r = CliRunner().invoke(main, ["leaderboard", str(files / "ref.txt"), "-s", f"A={files / 'a.txt'}",
                                  "-s", f"B={files / 'b.trn'}", "-a", str(files / "ann.tsv"), "--resamples", "300",
                                  "-o", str(out), "-m", str(md), "--allow-missing"])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    assert rep["systems"]["B"]["all"]["coverage"] == 0.75
    assert rep["systems"]["B"]["languages"]["ml"]["taxonomy"]["no_output"] == 1
    # the code-switched utterance is its own group (Lin, BharatVoice-Bench, Table 3's "Hi-En CS" column)
    assert {t["language"] for t in rep["paired_tests"]["wer"]} == {"all", "en", "hi", "hin-eng"}
    assert rep["systems"]["A"]["languages"]["hin-eng"]["wer_by_cmi"]["mid"]["utterances"] == 1
    text = md.read_text()
    assert "## Composite" in text and "| B |" in text and "Paired bootstrap" in text


def test_errors_name_file_and_line(files):
    bad = files / "bad.txt"
    bad.write_text("u1 a\nu1 b\n")
    r = CliRunner().invoke(main, ["metrics", str(files / "ref.txt"), str(bad)])
    assert r.exit_code == 2 and "bad.txt:2" in r.output and "appears twice in the hypothesis" in r.output
    extra = files / "extra.txt"
    extra.write_text("zz hello\n")
    r = CliRunner().invoke(main, ["metrics", str(files / "ref.txt"), str(extra)])
    assert r.exit_code == 2 and "have no reference (first: 'zz')" in r.output
    r = CliRunner().invoke(main, ["leaderboard", str(files / "ref.txt"), "-s", "nopath"])
    assert r.exit_code == 2 and "NAME=PATH" in r.output
    badann = files / "bad.tsv"
    badann.write_text("lang\tentities\nhi\tx\n")
    r = CliRunner().invoke(main, ["metrics", str(files / "ref.txt"), str(files / "a.txt"), "-a", str(badann)])
    assert r.exit_code == 2 and "bad.tsv:1" in r.output and "'id'" in r.output


def test_readers(files):
    reference, refs = read_references(str(files / "ref.txt"))
    assert reference.format == "text" and refs["u3"] == "എന്റെ പേര് രാമൻ"
    warnings = []
    hyps = read_hypotheses(str(files / "b.trn"), reference, refs, allow_missing=True, warnings=warnings)
    assert hyps["u2"] == "मैं office जा रहा" and "u3" not in hyps and "(first: 'u3')" in warnings[0]
    assert read_hypotheses(str(files / "a.txt"), reference, refs)["u3"] == "एन्टे पेर रामन"
    j = files / "ann.json"
    j.write_text(json.dumps({"u1": {"lang": "hi", "entities": ["राम"]}, "u2": {"lang": "hi", "cs": "hin-eng"}}))
    a = read_annotations(str(j))
    assert a["u1"].entities == ("राम",) and a["u2"].cs == "hin-eng"
    jl = files / "ann.jsonl"
    jl.write_text('{"id": "u1", "lang": "hi"}\n{"id": "u2", "lang": "bn", "entities": ["x"]}\n')
    assert read_annotations(str(jl))["u2"].lang == "bn"
    assert read_annotations(str(files / "ann.tsv"))["u4"].entities == ("Mr. Smith",)


def test_metrics_with_alternatives(files):
    from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm

    ref = files / "ref_en.txt"
    ref.write_text("s1 new york is big\ns2 hello world\n")
    hyp = files / "hyp_en.txt"
    hyp.write_text("s1 knew work is pig\ns2 hello world\n")
    ann = files / "ann_en.json"
    ann.write_text(json.dumps({"s1": {"lang": "en", "entities": ["New York"]}, "s2": {"lang": "en"}}))

    def slot(t, words):
        return Slot(t, t + 0.5, [Alternative((w,), (t,), (0.5,), posterior=p) for w, p in words])

    nets = [Alternatives("s1", [slot(0.0, [("knew", .6), ("new", .4)]), slot(0.5, [("work", .5), ("yolk", .3),
                                                                                 ("york", .2)]),
                                slot(1.0, [("is", 1.0)]), slot(1.5, [("pig", .7), ("big", .3)])], kind="sausage"),
            Alternatives("s2", [slot(0.0, [("hello", 1.0)]), slot(0.5, [("world", 1.0)])], kind="sausage")]
    alt = files / "sausage.ctm"
    write_alternatives_ctm(str(alt), nets)
    out = files / "alt.json"
    r = CliRunner().invoke(main, ["metrics", str(ref), str(hyp), "-a", str(ann), "--resamples", "0",
                                  "--alternatives", f"sausage={alt}", "--ks", "1,2,all", "-o", str(out),
                                  "--coverage-plot", str(files / "cov.png")])
    assert r.exit_code == 0, r.output
    s = json.loads(out.read_text())
    cov = {row["k"]: row for row in s["alternatives"]["sausage"]["coverage"]}
    assert cov[1]["errors_1best"] == 3 and cov[1]["errors_oracle"] == 3
    assert cov[2]["errors_oracle"] == 1 and cov[None]["error_recovery"] == 1.0
    assert cov[2]["entities_recovered"] == 0 and cov[None]["entity_recovery"] == 1.0
    assert (files / "cov.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    oracle = s["alternatives"]["sausage"]["oracle"]
    assert oracle["metrics"]["wer"]["value"] == 0.0 and oracle["metrics"]["ne_fnr"]["value"] == 0.0


def test_unknown_language_names_the_utterance(files):
    ann = files / "badlang.json"
    ann.write_text(json.dumps({"u1": {"lang": "xx-unknown"}}))
    r = CliRunner().invoke(main, ["metrics", str(files / "ref.txt"), str(files / "a.txt"), "-a", str(ann),
                                  "--resamples", "0"])
    assert r.exit_code == 2 and "[u1]" in r.output and "no expected script" in r.output
