"""The recipes on a real Slurm scheduler: recipes/utils/slurm.sh (Kaldi run.pl's interface over
``sbatch --array --wait``) logs, quotes and fails exactly like utils/local_run.sh, and a recipe stage and
egs/switchboard/run.sh with ``--cmd recipes/utils/slurm.sh`` write the same bytes as with the local runner.

Needs a running Slurm cluster (``sinfo`` answers with an idle node; CI starts a one-node cluster with
scripts/slurm_local.sh and exports SLURM_CONF); skipped with the reason otherwise."""
from __future__ import annotations

import csv
import shutil
import subprocess

import pytest
from _recipe_helpers import EGS, RECIPES, REPO, have_cli, run, tree_digest


def _slurm_state() -> str | None:
    """None when a Slurm node is ready, else why not."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return "Slurm is not installed (Debian: slurm-wlm munge; scripts/slurm_local.sh starts a one-node cluster)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer in 20 s"
    if proc.returncode != 0:
        return f"no Slurm controller answers (start one with scripts/slurm_local.sh): {proc.stderr.strip()[:200]}"
    if not {"idle", "mixed", "allocated"} & set(proc.stdout.split()):
        return f"no Slurm node is up (sinfo: {proc.stdout.strip()[:100]})"
    return None


_WHY_NOT = _slurm_state()
pytestmark = pytest.mark.skipif(_WHY_NOT is not None, reason=_WHY_NOT or "")
SLURM = RECIPES / "utils" / "slurm.sh"
LOCAL = RECIPES / "utils" / "local_run.sh"


def _job_logs(root, pattern):
    """Each job log without its time stamps (the lines that say when and how long)."""
    out = {}
    for p in sorted(root.glob(pattern)):
        out[p.name] = [line for line in p.read_text().splitlines()
                       if not line.startswith(("# Started at", "# Accounting", "# Ended"))] + \
                      [line.split(" at ")[0] for line in p.read_text().splitlines() if line.startswith("# Ended")]
    return out


@pytest.mark.parametrize("args", [
    ["echo", "job JOB says", "hello world", ">", "out.JOB.txt"],
    ["bash", "-c", "echo \"quoted JOB\"; echo 'single' >&2"],
    ["printf", "[%s]\\n", "a b", "JOB"],
])
def test_slurm_runner_logs_and_quotes_like_the_local_runner(tmp_path, args):
    for runner, where in ((LOCAL, tmp_path / "local"), (SLURM, tmp_path / "slurm")):
        where.mkdir()
        run([runner, "JOB=1:3", "log/x.JOB.log", *args], cwd=where)
    assert _job_logs(tmp_path / "slurm" / "log", "x.*.log") == _job_logs(tmp_path / "local" / "log", "x.*.log")
    for j in (1, 2, 3):
        if (tmp_path / "local" / f"out.{j}.txt").exists():
            assert (tmp_path / "slurm" / f"out.{j}.txt").read_text() == f"job {j} says hello world\n"


def test_slurm_runner_fails_when_any_job_fails(tmp_path):
    proc = run([SLURM, "JOB=1:3", "log/y.JOB.log", "bash", "-c", "exit $((JOB % 2))"], cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert "2 / 3 failed (jobs 1 3), log is in log/y.*.log" in proc.stderr
    assert "# Ended (code 0)" in (tmp_path / "log" / "y.2.log").read_text()


def test_slurm_runner_refuses_bad_usage(tmp_path):
    proc = run([SLURM, "JOB=1:2", "log/one.log", "true"], cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "would all write one log file" in proc.stderr
    proc = run([SLURM, "--max-jobs-run", "x", "log/a.log", "true"], cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "expected a positive integer" in proc.stderr


@pytest.mark.skipif(not have_cli(), reason="the lattice-tools entry point is not installed")
def test_make_alternatives_on_slurm_equals_the_local_run(tmp_path):
    lats = [REPO / "tests" / "data" / "inputs" / name for name in ("003.lat", "004.lat")]
    lats += [REPO / "tests" / "data" / "slf" / "pocketsphinx_cards_002.lat.gz"]
    listing = tmp_path / "lattices.list"
    listing.write_text("".join(f"{p}\n" for p in lats))
    common = ["--kinds", "nbest sausage phrases", "--depths", "1 3"]
    run([RECIPES / "make_alternatives.sh", "--nj", "1", *common, listing, tmp_path / "local"])
    run([RECIPES / "make_alternatives.sh", "--nj", "2", "--cmd", SLURM, *common, listing, tmp_path / "slurm"])
    assert (tmp_path / "slurm" / "log" / "q").is_dir()  # the jobs went through sbatch
    local = tree_digest(tmp_path / "local")
    assert len(local) == 18 and tree_digest(tmp_path / "slurm") == local


@pytest.mark.slow
@pytest.mark.skipif(not have_cli(), reason="the lattice-tools entry point is not installed")
def test_egs_switchboard_on_slurm_equals_the_local_run(tmp_path):
    pytest.importorskip("pocketsphinx")
    corpus = tmp_path / "ldc"
    run(["python3", EGS / "local" / "make_standin_corpus.py", corpus])
    small = ["--nj", "2", "--nbest-depths", "1", "--sausage-depths", "2", "--phrase-depths", "2", "--study-ns", "1 2",
             "--study-opts", "--no-infinity --bootstrap 50 --no-plots", "--stop-stage", "4"]
    run([EGS / "run.sh", "--corpus", corpus, "--exp", tmp_path / "local", *small], timeout=1200)
    run([EGS / "run.sh", "--corpus", corpus, "--exp", tmp_path / "slurm", "--cmd", SLURM, *small], timeout=1200)
    local = tree_digest(tmp_path / "local" / "alternatives", "**/alt.ctm.gz")
    assert len(local) == 3 and tree_digest(tmp_path / "slurm" / "alternatives", "**/alt.ctm.gz") == local
    assert tree_digest(tmp_path / "slurm" / "lattices", "lat/*") == tree_digest(tmp_path / "local" / "lattices", "lat/*")
    assert (tmp_path / "slurm" / "scores" / "summary.txt").read_bytes() == \
        (tmp_path / "local" / "scores" / "summary.txt").read_bytes()
    assert _without_seconds(tmp_path / "slurm" / "study" / "study.csv") == \
        _without_seconds(tmp_path / "local" / "study" / "study.csv")


def _without_seconds(path):
    """The study's rows without the ``seconds`` column (how long each cell took)."""
    rows = list(csv.DictReader(path.open()))
    assert rows and "seconds" in rows[0]
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]
