"""summarize returns a frozen MetricsSummary; its to_dict() is what the metrics and leaderboard commands
write, byte-identical to their output when it was a plain dict (goldens in tests/data/metrics_summary)."""
# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lattice_tools.core.counts import ErrorCounts
from lattice_tools.metrics.evaluate import MetricsSummary, MetricValue, evaluate_system, summarize
from lattice_tools.metrics.io import read_annotations, read_hypotheses, read_references

DATA = Path(__file__).resolve().parent / "data" / "metrics_summary"


def _process(*args, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA.parents[2]), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "lattice_tools", *args, "-o", str(out)], cwd=DATA,
                          capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc


def _run(*args, out: Path) -> bytes:
    _process(*args, out=out)
    return out.read_bytes()


def test_metrics_json_is_byte_identical(tmp_path):
    got = _run("metrics", "ref.txt", "a.txt", "-a", "ann.tsv", "--resamples", "300", out=tmp_path / "m.json")
    assert got == (DATA / "metrics.json").read_bytes()


def test_leaderboard_json_is_byte_identical(tmp_path):
    got = _run("leaderboard", "ref.txt", "-s", "A=a.txt", "-s", "B=b.trn", "-a", "ann.tsv", "--resamples", "200",
               "--allow-missing",
               out=tmp_path / "l.json")
    assert got == (DATA / "leaderboard.json").read_bytes()


def test_leaderboard_markdown_and_warnings_are_byte_identical(tmp_path):
    proc = _process("leaderboard", "ref.txt", "-s", "A=a.txt", "-s", "B=b.trn", "-a", "ann.tsv", "--resamples", "200",
                    "--allow-missing", "-m", str(tmp_path / "l.md"), out=tmp_path / "l.json")
    assert (tmp_path / "l.json").read_bytes() == (DATA / "leaderboard.json").read_bytes()
    assert (tmp_path / "l.md").read_bytes() == (DATA / "leaderboard.md").read_bytes()
    assert proc.stderr == (DATA / "leaderboard.stderr").read_bytes()


def test_metrics_with_alternatives_is_byte_identical(tmp_path):
    got = _run("metrics", "ref_en.txt", "hyp_en.txt", "-a", "ann_en.json", "--resamples", "50", "--alternatives",
               "sausage=sausage_en.ctm", "--ks", "1,2,all", out=tmp_path / "m.json")
    assert got == (DATA / "metrics-alternatives.json").read_bytes()


def test_metrics_warnings_are_byte_identical(tmp_path):
    proc = _process("metrics", "ref.txt", "b.trn", "-a", "ann.tsv", "--resamples", "100", "--allow-missing",
                    out=tmp_path / "m.json")
    assert (tmp_path / "m.json").read_bytes() == (DATA / "metrics-missing.json").read_bytes()
    assert proc.stderr == (DATA / "metrics-missing.stderr").read_bytes()


def test_summary_is_typed_and_frozen():
    reference, refs = read_references(str(DATA / "ref.txt"))
    hyps = read_hypotheses(str(DATA / "a.txt"), reference, refs)
    s = summarize(evaluate_system(refs, hyps, read_annotations(str(DATA / "ann.tsv"))), resamples=100)
    assert isinstance(s, MetricsSummary) and isinstance(s.word_counts, ErrorCounts)
    assert all(isinstance(m, MetricValue) for m in s.metrics.values())
    assert s.utterances == s.covered == 4 and s.coverage == 1.0 and sum(s.taxonomy.values()) == 4
    wer = s.metrics["wer"]
    assert wer.value == pytest.approx(s.word_counts.wer) and wer.ci is not None and wer.ci[0] <= wer.value <= wer.ci[1]
    assert s.to_dict()["metrics"]["wer"] == {"value": wer.value, "n": wer.n, "ci": list(wer.ci)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.covered = 3  # type: ignore[misc]
    empty = summarize([], resamples=0)
    assert empty.coverage is None and empty.word_counts is None and "word_counts" not in empty.to_dict()


def test_reports_are_typed_and_frozen(tmp_path):
    from lattice_tools.metrics.commands import leaderboard, metrics
    from lattice_tools.metrics.leaderboard import LeaderboardReport, PairedComparison
    from lattice_tools.metrics.results import AlternativesMetrics, CompositeRating, MetricsReport, SystemMetrics
    from lattice_tools.metrics.stats import PairedTest

    m = metrics(str(DATA / "ref_en.txt"), str(DATA / "hyp_en.txt"), annotations=str(DATA / "ann_en.json"),
                output=str(tmp_path / "m.json"), resamples=50, alternatives=[("sausage", str(DATA / "sausage_en.ctm"))],
                ks=(1, 2, None))
    assert isinstance(m, MetricsReport) and isinstance(m.all, MetricsSummary)
    assert isinstance(m.composite, CompositeRating) and m.composite.factors == ("wer", "sfr")
    alt = m.alternatives["sausage"]
    assert isinstance(alt, AlternativesMetrics) and [r.k for r in alt.coverage] == [1, 2, None]
    assert alt.oracle.metrics["wer"].value == 0.0 and m.warnings == ()
    assert (tmp_path / "m.json").read_bytes() == (DATA / "metrics-alternatives.json").read_bytes()
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.warnings = ("x",)  # type: ignore[misc]
    b = leaderboard(str(DATA / "ref.txt"), [("A", str(DATA / "a.txt")), ("B", str(DATA / "b.trn"))],
                    annotations=str(DATA / "ann.tsv"), output=str(tmp_path / "l.json"), resamples=200,
                    allow_missing=True)
    assert isinstance(b, LeaderboardReport) and list(b.systems) == ["A", "B"]
    assert all(isinstance(s, SystemMetrics) for s in b.systems.values())
    assert b.languages == ("en", "hi", "hin-eng", "ml")
    assert all(isinstance(t, PairedComparison) and isinstance(t.test, PairedTest)
               for tests in b.paired_tests.values() for t in tests)
    assert len(b.warnings) == 1 and "u3" in b.warnings[0]
    assert b.systems["B"].all.covered == 3 and b.systems["A"].all.covered == 4
