"""Corpus-level work on several processes (lattice_tools.core.parallel): the same bytes as one process for any
number of workers and any completion order, retries of a dead worker's shard, a loud failure for a shard
that fails twice, and a killed run that resumes without recomputing finished shards.  Engines: the
standard library's process pool, a Dask LocalCluster of worker processes, and (when Slurm runs)
dask-jobqueue's SLURMCluster."""
from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

import lattice_tools.core.parallel as parallel
from lattice_tools.alternatives.lattices_to_ctm import make_alternatives_ctm
from lattice_tools.core.errors import FormatError, LatticeToolsError
from lattice_tools.core.parallel import Shard, ShardStore, run_shards, shard_lattices
from lattice_tools.io.lattices.lattice_files import read_lattices

REPO = Path(__file__).resolve().parent.parent
# real lattices of three decoders (pocketsphinx, Sphinx-3, Kaldi's kGraph): see tests/data/*/PROVENANCE.md
LATTICES = [str(REPO / "tests" / "data" / p) for p in (
    "inputs/003.lat", "inputs/004.lat", "slf/pocketsphinx_cards_002.lat.gz", "slf/sphinx3_pittsburgh.lat.gz",
    "slf/kaldi_kgraph_utt8.slf.gz")]


def _shards(n):
    return [Shard(i, (i,), (f"u{i}",), f"fp{i}") for i in range(n)]


def _square(items):
    return [x * x for x in items]


def _slow_first(items):  # the first shards finish last
    (x,) = items
    time.sleep(0.02 * (8 - x))
    return x


def test_results_come_in_shard_order_whatever_finishes_first():
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        out = [r for _, r in run_shards(_slow_first, _shards(8), executor=pool, window=8)]
    assert out == list(range(8))
    assert [r for _, r in run_shards(_square, _shards(5))] == [[i * i] for i in range(5)]


class _Flaky:
    """Fails (like a worker that died) the first ``failures`` times it is called on shard 2."""

    def __init__(self, failures):
        self.failures, self.lock = failures, threading.Lock()

    def __call__(self, items):
        with self.lock:
            if items == (2,) and self.failures:
                self.failures -= 1
                raise BrokenProcessPool("a worker died")
        return items[0]


def test_a_failed_shard_is_retried_once():
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert [r for _, r in run_shards(_Flaky(1), _shards(4), executor=pool)] == [0, 1, 2, 3]


def test_a_shard_that_fails_twice_fails_the_job_naming_its_utterances():
    shards = [Shard(i, (i,), (f"utt{i}a", f"utt{i}z"), f"fp{i}") for i in range(4)]
    with concurrent.futures.ThreadPoolExecutor(2) as pool, \
            pytest.raises(LatticeToolsError, match=r"2 utterances 'utt2a' \.\. 'utt2z' failed twice.*a worker died"):
        list(run_shards(_Flaky(2), shards, executor=pool))


def _bad_input(items):
    raise FormatError("bad arc", path="x.lat", line=3)


def test_an_input_error_is_not_retried():
    calls = []

    def counting(items):
        calls.append(items)
        return _bad_input(items)

    with concurrent.futures.ThreadPoolExecutor(1) as pool, pytest.raises(FormatError, match="x.lat.*bad arc"):
        list(run_shards(counting, _shards(1), executor=pool))
    assert len(calls) == 1


def test_shards_close_at_the_arc_and_utterance_limits():
    lats = [lat for path in LATTICES for lat in read_lattices(path)]
    by_count = list(shard_lattices(lats, max_utterances=2, max_arcs=10**9))
    assert [len(s.keys) for s in by_count] == [2, 2, 1]
    assert [k for s in by_count for k in s.keys] == [lat.key for lat in lats]
    by_arcs = list(shard_lattices(lats, max_arcs=1, max_utterances=100))
    assert [len(s.keys) for s in by_arcs] == [1] * len(lats)
    # the fingerprint follows the lattices and the parameters, nothing else
    def fingerprint(parameters, path=LATTICES[0]):
        return list(shard_lattices(list(read_lattices(path)), parameters, fingerprint=True))[0].fingerprint

    assert len(fingerprint("p")) == 64 and fingerprint("p") == fingerprint("p")
    assert fingerprint("p") != fingerprint("q") and fingerprint("p") != fingerprint("p", LATTICES[1])
    # ... and is computed only when asked for (a store names its files by it; nothing else reads it)
    assert {s.fingerprint for s in by_count} == {""}


def test_fingerprints_are_computed_only_for_a_store(tmp_path, monkeypatch):
    from lattice_tools.core.parallel import with_companions

    lats = [lat for path in LATTICES for lat in read_lattices(path)]
    plain = list(with_companions(shard_lattices(lats, "p", max_utterances=2), "ref of {}".format))
    hashed = list(with_companions(shard_lattices(lats, "p", max_utterances=2, fingerprint=True),
                                  "ref of {}".format))
    assert [(s.items, s.keys) for s in plain] == [(s.items, s.keys) for s in hashed]
    assert {s.fingerprint for s in plain} == {""} and all(len(s.fingerprint) == 64 for s in hashed)
    # the companions' texts are part of a fingerprint
    other = list(with_companions(shard_lattices(lats, "p", max_utterances=2, fingerprint=True),
                                 "other ref of {}".format))
    assert all(a.fingerprint != b.fingerprint for a, b in zip(hashed, other, strict=True))
    # a store refuses a shard without one: named by its index alone, another input's result would be taken for it
    store = ShardStore(str(tmp_path / "s"))
    with pytest.raises(ValueError, match="no fingerprint"):
        store.get(plain[0])
    with pytest.raises(ValueError, match="no fingerprint"):
        store.put(plain[0], 1)
    assert not (tmp_path / "s").exists()

    # the commands hash no lattice when nothing is stored (serially, or on workers without a shard_dir)
    def refused(*args):
        raise AssertionError("a fingerprint nobody reads")

    monkeypatch.setattr(parallel, "lattice_digest", refused)
    make_alternatives_ctm(LATTICES, "sausage", 4, str(tmp_path / "a.ctm"), progress=False)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        make_alternatives_ctm(LATTICES, "sausage", 4, str(tmp_path / "b.ctm"), executor=pool, progress=False)
    assert (tmp_path / "a.ctm").read_bytes() == (tmp_path / "b.ctm").read_bytes()
    with pytest.raises(AssertionError, match="nobody reads"):
        make_alternatives_ctm(LATTICES, "sausage", 4, str(tmp_path / "c.ctm"), shard_dir=str(tmp_path / "s"),
                              progress=False)


def test_a_killed_run_resumes_with_the_finished_shards(tmp_path):
    store = ShardStore(str(tmp_path / "shards"))
    calls = []

    def counting(items):
        calls.append(items)
        return items[0] * 10

    run = run_shards(counting, _shards(6), store=store)
    assert [next(run)[1] for _ in range(3)] == [0, 10, 20]   # killed after three shards
    run.close()
    calls.clear()
    assert [r for _, r in run_shards(counting, _shards(6), store=store)] == [0, 10, 20, 30, 40, 50]
    assert calls == [(3,), (4,), (5,)]
    # a shard whose inputs changed (another fingerprint) is computed again
    changed = [Shard(0, (0,), ("u0",), "other")] + _shards(6)[1:]
    calls.clear()
    assert [r for _, r in run_shards(counting, changed, store=store)][0] == 0 and calls == [(0,)]
    store.remove()
    assert not (tmp_path / "shards").exists()


@pytest.fixture(scope="module")
def serial_outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("serial")
    out = {}
    for kind in ("nbest", "sausage", "phrases"):
        make_alternatives_ctm(LATTICES, kind, 4, str(root / f"{kind}.ctm"), progress=False)
        out[kind] = (root / f"{kind}.ctm").read_bytes()
    return out


def test_process_pool_equals_the_serial_run(serial_outputs, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "SHARD_UTTERANCES", 1)   # one utterance per shard: several shards
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        for kind, expected in serial_outputs.items():
            path = tmp_path / f"{kind}.ctm"
            make_alternatives_ctm(LATTICES, kind, 4, str(path), executor=pool, progress=False)
            assert path.read_bytes() == expected, kind


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed", reason="needs Dask: pip install 'lattice-tools[dask]'")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=0) as cluster, distributed.Client(cluster) as client:
        yield client


def test_dask_local_cluster_equals_the_serial_run(serial_outputs, dask_client, tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "SHARD_UTTERANCES", 2)
    for kind, expected in serial_outputs.items():
        path = tmp_path / f"{kind}.ctm"
        make_alternatives_ctm(LATTICES, kind, 4, str(path), executor=dask_client, shard_dir=str(tmp_path / "s"),
                              progress=False)
        assert path.read_bytes() == expected, kind
        assert not (tmp_path / "s").exists()   # the finished run leaves no shards behind


def test_cli_jobs_equals_the_serial_run(serial_outputs, tmp_path):
    out = tmp_path / "phrases.ctm"
    r = subprocess.run([sys.executable, "-m", "lattice_tools", "phrases", *LATTICES, "-n", "4", "-o", str(out),
                        "--jobs", "2"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    if r.returncode == 2 and "needs Dask" in r.stderr:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == serial_outputs["phrases"]
    assert not Path(f"{out}.shards").exists()
    r = subprocess.run([sys.executable, "-m", "lattice_tools", "phrases", LATTICES[0], "-o", str(out), "--jobs", "0"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and "--jobs" in r.stderr and "Traceback" not in r.stderr


def _slurm_ready() -> bool:
    if shutil.which("sinfo") is None:
        return False
    proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    return proc.returncode == 0 and "idle" in proc.stdout


@pytest.mark.skipif(not _slurm_ready(), reason="no Slurm cluster answers (scripts/slurm_local.sh starts one)")
def test_dask_jobqueue_slurm_cluster_equals_the_serial_run(serial_outputs, serial_oracles, bundled_reference,
                                                            tmp_path):
    import signal

    # dask_jobqueue installs a SIGINT handler (sys.exit) when it is imported: keep the test process's own,
    # so a later test's Ctrl-C still raises KeyboardInterrupt
    handler = signal.getsignal(signal.SIGINT)
    try:
        jobqueue = pytest.importorskip("dask_jobqueue", reason="needs dask-jobqueue")
    finally:
        signal.signal(signal.SIGINT, handler)
    distributed = pytest.importorskip("distributed")
    env = [f"export PYTHONPATH={REPO}"]
    # job_mem: what each worker job asks Slurm for; small, so two jobs fit on a small CI node (the worker's
    # own memory limit is off)
    with jobqueue.SLURMCluster(cores=1, processes=1, memory="2GB", job_mem="256M", walltime="00:10:00",
                               python=sys.executable, job_script_prologue=env, log_directory=str(tmp_path / "logs"),
                               local_directory=str(tmp_path / "dask"), scheduler_options={"dashboard_address": ":0"},
                               worker_extra_args=["--memory-limit", "0"]) as cluster:
        cluster.scale(2)
        with distributed.Client(cluster) as client:
            try:
                # one worker job is enough to send every task through Slurm; the second is waited for a while
                # (a small node may run one job at a time), and the shards go to whichever workers there are
                client.wait_for_workers(1, timeout=180)
                with contextlib.suppress(distributed.TimeoutError):
                    client.wait_for_workers(2, timeout=60)
            except distributed.TimeoutError as e:  # the scheduler's own account, so a failure says why
                queue = subprocess.run(["squeue", "-o", "%i %T %r %C %m"], capture_output=True, text=True).stdout
                node = subprocess.run(["scontrol", "show", "node"], capture_output=True, text=True).stdout
                logs = "".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted((tmp_path / "logs").glob("*")))
                pytest.fail(f"{e}\nsqueue:\n{queue}\nnode:\n{node}\nworker logs:\n{logs}")
            path = tmp_path / "sausage.ctm"
            make_alternatives_ctm(LATTICES, "sausage", 4, str(path), executor=client, progress=False)
            _oracle(bundled_reference, "phrase", tmp_path / "phrase.json", executor=client)
            ref, hyp, options = SCORE_CASES[0]
            scored = _score_reports(ref, hyp, options, tmp_path / "score", executor=client)
    assert path.read_bytes() == serial_outputs["sausage"]
    assert (tmp_path / "phrase.json").read_bytes() == serial_oracles["phrase"]
    assert scored == _score_reports(ref, hyp, options, tmp_path / "score-serial")


def test_decoding_on_a_process_pool_equals_the_serial_run(tmp_path):
    pytest.importorskip("pocketsphinx", reason="needs the decode extra")
    from lattice_tools.decode.pocketsphinx import decode_audio

    clips = [str(REPO / "lattice_tools" / "data" / "cards" / f"00{i}.wav") for i in (1, 2, 3)]
    decode_audio(clips, out_dir=str(tmp_path / "serial"), ctm=str(tmp_path / "serial.ctm"), progress=False)
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        lats = decode_audio(clips, out_dir=str(tmp_path / "pool"), ctm=str(tmp_path / "pool.ctm"), progress=False,
                            executor=pool, shard_dir=str(tmp_path / "shards"))
    assert [lat.key for lat in lats] == ["001", "002", "003"]
    for key in ("001", "002", "003"):
        assert (tmp_path / "pool" / f"{key}.lat").read_bytes() == (tmp_path / "serial" / f"{key}.lat").read_bytes()
    assert (tmp_path / "pool.ctm").read_bytes() == (tmp_path / "serial.ctm").read_bytes()
    assert not (tmp_path / "shards").exists()
    with pytest.raises(LatticeToolsError, match="fresh decoder per file"):
        decode_audio(clips, out_dir=str(tmp_path / "x"), independent=False, executor=pool)


# ---- oracle: the per-lattice oracles in shards ------------------------------------------------------------
KALDI = REPO / "tests" / "data" / "kaldi" / "lats"
BUNDLED = [f"ark:gunzip -c {KALDI / 'bundled.ark.gz'}|"]   # the 10 bundled recordings (see its PROVENANCE.md)
ORACLE_REPRESENTATIONS = ("lattice", "1best", "nbest", "sausage", "phrase")


@pytest.fixture(scope="module")
def bundled_reference(tmp_path_factory):
    """The bundled recordings' reference as words (bundled.ref.txt has word ids; 999999 = not in the table)."""
    words = dict(reversed(line.split()) for line in (KALDI / "bundled.words.txt").read_text().splitlines())
    path = tmp_path_factory.mktemp("ref") / "ref.txt"
    path.write_text("".join(" ".join([key, *(words.get(i, "zzunknown") for i in ids)]) + "\n" for key, *ids in
                            (line.split() for line in (KALDI / "bundled.ref.txt").read_text().splitlines())))
    return str(path)


def _oracle(reference, representation, json_out, **kw):
    from lattice_tools.oracle.report import oracle_wer

    return oracle_wer(BUNDLED, reference, words=str(KALDI / "bundled.words.txt"), representation=representation,
                      n=10, bootstrap=50, seed=3, json_out=str(json_out), progress=False, **kw)


@pytest.fixture(scope="module")
def serial_oracles(bundled_reference, tmp_path_factory):
    root = tmp_path_factory.mktemp("oracle")
    out = {}
    for rep in ORACLE_REPRESENTATIONS:
        _oracle(bundled_reference, rep, root / f"{rep}.json")
        out[rep] = (root / f"{rep}.json").read_bytes()
    return out


def test_oracle_on_a_dask_cluster_equals_the_serial_report(serial_oracles, bundled_reference, dask_client, tmp_path,
                                                           monkeypatch):
    monkeypatch.setattr(parallel, "SHARD_UTTERANCES", 3)   # 10 utterances: 4 shards
    for rep, expected in serial_oracles.items():
        report = _oracle(bundled_reference, rep, tmp_path / f"{rep}.json", executor=dask_client,
                         shard_dir=str(tmp_path / "s"))
        assert (tmp_path / f"{rep}.json").read_bytes() == expected, rep
        assert len(report.utterances) == 10 and report.intervals
        assert not (tmp_path / "s").exists()


def test_a_killed_oracle_resumes_with_its_finished_shards(serial_oracles, bundled_reference, tmp_path, monkeypatch):
    import lattice_tools.oracle.report as report_module

    monkeypatch.setattr(parallel, "SHARD_UTTERANCES", 2)   # 5 shards
    real = report_module.oracle_of_shard
    calls = []

    def killed_after_two(job, items):
        if len(calls) == 2:
            raise KeyboardInterrupt   # the run is killed while computing the third shard
        calls.append([lat.key for lat, _ in items])
        return real(job, items)

    monkeypatch.setattr(report_module, "oracle_of_shard", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        _oracle(bundled_reference, "phrase", tmp_path / "phrase.json", shard_dir=str(tmp_path / "s"))
    assert not (tmp_path / "phrase.json").exists() and len(list((tmp_path / "s").iterdir())) == 2
    calls.clear()

    def counting(job, items):
        calls.append([lat.key for lat, _ in items])
        return real(job, items)

    monkeypatch.setattr(report_module, "oracle_of_shard", counting)
    _oracle(bundled_reference, "phrase", tmp_path / "phrase.json", shard_dir=str(tmp_path / "s"))
    order = [u["key"] for u in json.loads(serial_oracles["phrase"])["utterances"]]
    assert calls == [order[4:6], order[6:8], order[8:10]]   # only the unfinished shards
    assert (tmp_path / "phrase.json").read_bytes() == serial_oracles["phrase"]
    assert not (tmp_path / "s").exists()


def test_cli_oracle_jobs_equals_the_serial_report(serial_oracles, bundled_reference, tmp_path):
    out = tmp_path / "sausage.json"
    r = subprocess.run([sys.executable, "-m", "lattice_tools", "oracle", *BUNDLED, "-r", bundled_reference,
                        "--words", str(KALDI / "bundled.words.txt"), "--representation", "sausage", "-n", "10",
                        "--bootstrap", "50", "--seed", "3", "--json", str(out), "--jobs", "2"],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    if r.returncode == 2 and "needs Dask" in r.stderr:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == serial_oracles["sausage"]
    assert not Path(f"{out}.shards").exists()


# ---- study: each cell's per-utterance work in shards -------------------------------------------------------
def _study(reference, out_dir, **kw):
    from lattice_tools.oracle.study import run_study

    run_study({"bundled": BUNDLED}, reference, ns=[1, 10], prune_thresholds=[0, 0.05], out_dir=str(out_dir),
              words=str(KALDI / "bundled.words.txt"), bootstrap=30, plots=False, progress=False, **kw)
    files = {}
    for path in sorted(p for p in Path(out_dir).rglob("*") if p.is_file()):
        rel = str(path.relative_to(out_dir))
        if rel.endswith(".json"):   # every number but the measured seconds
            files[rel] = _without_seconds(json.loads(path.read_text()))
        elif rel.startswith("altctm"):
            files[rel] = path.read_bytes()
    return files


def _without_seconds(x):
    if isinstance(x, dict):
        assert "seconds" not in x or (isinstance(x["seconds"], float) and x["seconds"] >= 0), x["seconds"]
        return {k: _without_seconds(v) for k, v in x.items() if k != "seconds"}
    return [_without_seconds(v) for v in x] if isinstance(x, list) else x


def test_study_on_a_dask_cluster_equals_the_serial_study(bundled_reference, dask_client, tmp_path, monkeypatch):
    serial = _study(bundled_reference, tmp_path / "serial")
    monkeypatch.setattr(parallel, "SHARD_UTTERANCES", 4)
    assert _study(bundled_reference, tmp_path / "dask", executor=dask_client) == serial
    # 2 densities x (the 1-best, 3 representations x N = 1, 10), and the N=inf cells no search budget stopped
    assert sum(rel.startswith("altctm") for rel in serial) >= 2 * (1 + 3 * 2)


# ---- score: the alignments in shards of segments -----------------------------------------------------------
SCTK = REPO / "tests" / "data" / "sctk" / "sclite-testdata"   # sclite's own test files (see its README)
SCORE_CASES = [   # (reference, hypothesis, options): the general engine (-F, confidences) and trn
    ("lvc_ref.stm", "lvc_hyp.ctm", {"fragments": True}),
    ("lvc_ref.stm", "lvc_hypc.ctm", {"optional_deletable": True, "tuning": "general"}),
    ("csrnab.ref", "csrnab.hyp", {"ref_format": "trn", "hyp_format": "trn", "fragments": True, "id_type": "wsj"}),
]


def _score_reports(ref, hyp, options, out_dir, **kw):
    from lattice_tools.scoring.reports import write_reports
    from lattice_tools.scoring.sclite import score_files
    from lattice_tools.scoring.tuning import EngineTuning

    options = dict(options)
    if options.pop("tuning", None):
        options["tuning"] = EngineTuning(engine="general")
    result = score_files(str(SCTK / ref), str(SCTK / hyp), **options, **kw)
    write_reports(result, str(out_dir), "r")
    return {p.name: p.read_bytes() for p in sorted(Path(out_dir).iterdir())}


def test_score_on_a_dask_cluster_equals_the_serial_reports(dask_client, tmp_path, monkeypatch):
    import lattice_tools.scoring.sclite as sclite

    monkeypatch.setattr(sclite, "SHARD_SEGMENTS", 7)   # several shards per file
    for i, (ref, hyp, options) in enumerate(SCORE_CASES):
        serial = _score_reports(ref, hyp, options, tmp_path / f"serial{i}")
        assert {"r.sys", "r.pra", "r.json"} <= set(serial), serial.keys()
        assert _score_reports(ref, hyp, options, tmp_path / f"dask{i}", executor=dask_client) == serial, (ref, hyp)


def test_the_sharded_job_writes_what_the_plain_functions_write(tmp_path):
    """The job sends its workers the Kaldi lattices without their transition-id strings and gets text back: the
    file is still what the algorithms' own functions and the alt-CTM writer give (the sausage follows Kaldi's
    stored order of states, which the lattices keep)."""
    from lattice_tools.alternatives.sausages import sausage
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm

    words = str(KALDI / "bundled.words.txt")
    expected = write_alternatives_ctm(str(tmp_path / "plain.ctm"),
                                      (sausage(lat, 4) for lat in read_lattices(BUNDLED[0], symbols=words)), 4)
    stats = make_alternatives_ctm(BUNDLED, "sausage", 4, str(tmp_path / "job.ctm"), words=words, progress=False)
    assert (tmp_path / "job.ctm").read_bytes() == (tmp_path / "plain.ctm").read_bytes()
    assert stats.statistics == expected and stats.kind == "sausage"


@pytest.mark.parametrize("command", [
    ["score", "-r", str(SCTK / "lvc_ref.stm"), "-h", str(SCTK / "lvc_hyp.ctm"), "-F", "--json", "OUT"],
    ["sausage", LATTICES[0], LATTICES[1], "-n", "4", "-o", "OUT"]])
def test_a_serial_run_reports_its_tasks_cpu_seconds(command, tmp_path):
    """bench/bench_parallel.py's scheduling overhead needs the serial run's task CPU seconds: every command goes
    through run_shards serially too (score aligns its segments as one shard)."""
    log = tmp_path / "cpu.jsonl"
    args = [str(tmp_path / "out") if a == "OUT" else a for a in command]
    r = subprocess.run([sys.executable, "-m", "lattice_tools", *args], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO), parallel.SHARD_CPU_ENV: str(log)})
    assert r.returncode == 0, r.stderr
    (report,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert report["tasks"] >= 1 and 0 < report["task_cpu"] <= report["process_cpu"]


# ---- kws index: the hits in shards, written in input order -------------------------------------------------
def _kws_index(path, **kw):
    from lattice_tools.io import read_lattice_inputs
    from lattice_tools.kws.build import build_lattice_index

    lats = read_lattice_inputs(BUNDLED, words=str(KALDI / "bundled.words.txt"))
    counts = build_lattice_index(lats, str(path), **kw)
    return counts, Path(path).read_bytes()


def test_kws_index_on_a_dask_cluster_equals_the_serial_file(dask_client, tmp_path, monkeypatch):
    serial_counts, serial = _kws_index(tmp_path / "serial.db")
    assert serial_counts.utterances == 10 and serial_counts.hits > 1000
    monkeypatch.setattr(parallel, "SHARD_UTTERANCES", 3)
    assert _kws_index(tmp_path / "dask.db", executor=dask_client) == (serial_counts, serial)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dask.db", "serial.db"]   # no temporary left


def test_cli_kws_index_jobs_equals_the_serial_file(tmp_path):
    def index(out, *more):
        return subprocess.run([sys.executable, "-m", "lattice_tools", "kws", "index", *BUNDLED, "--words",
                               str(KALDI / "bundled.words.txt"), "-o", str(out), *more], capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})

    r = index(tmp_path / "jobs.db", "--jobs", "2")
    if r.returncode == 2 and "needs Dask" in r.stderr:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    assert index(tmp_path / "serial.db").returncode == 0
    assert (tmp_path / "jobs.db").read_bytes() == (tmp_path / "serial.db").read_bytes()
    r = index(tmp_path / "x.db", "--from", "sausage", "--jobs", "2")
    assert r.returncode == 2 and "--jobs" in r.stderr and "Traceback" not in r.stderr


def test_a_killed_kws_index_resumes_with_its_finished_shards(tmp_path, monkeypatch):
    import lattice_tools.kws.build as build

    _counts, serial = _kws_index(tmp_path / "serial.db")
    real = build.lattice_hits_of_shard
    calls = []

    def killed_after_two(job, items):
        if len(calls) == 2:
            raise KeyboardInterrupt   # the build is killed while finding the third shard's hits
        calls.append([lat.key for lat, _ in items])
        return real(job, items)

    monkeypatch.setattr(build, "lattice_hits_of_shard", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        _kws_index(tmp_path / "index.db", shard_dir=str(tmp_path / "s"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s", "serial.db"]   # no index, no temporary
    calls.clear()

    def counting(job, items):
        calls.append([lat.key for lat, _ in items])
        return real(job, items)

    monkeypatch.setattr(build, "lattice_hits_of_shard", counting)
    _kws_index(tmp_path / "index.db", shard_dir=str(tmp_path / "s"))
    assert len(calls) == 8   # one utterance per shard serially: the 8 not finished
    assert (tmp_path / "index.db").read_bytes() == serial
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.db", "serial.db"]


def test_jobs_start_no_cluster_until_a_task_is_submitted():
    pytest.importorskip("distributed")
    from lattice_tools.core.parallel import open_executor, run_shards, shard_items

    with open_executor(jobs=2) as executor:
        assert not executor.started          # an alt-CTM oracle, a single file: nothing to send
    with open_executor(jobs=2) as executor:
        shards = shard_items(list(range(6)), [str(i) for i in range(6)], 2)
        results = [r for _, r in run_shards(sum, shards, executor=executor)]
        assert executor.started
    assert results == [1, 5, 9] and not executor.started   # closed on exit


def test_oracle_of_an_alt_ctm_with_jobs_starts_no_cluster(tmp_path, bundled_reference):
    ctm = tmp_path / "1best.ctm"
    make_alternatives_ctm(LATTICES, "nbest", 1, str(ctm), progress=False)
    code = ("import sys, lattice_tools.core.parallel as p\n"
            "def refuse(self): raise SystemExit('a cluster was started')\n"
            "p.LocalClusterOnDemand.client = refuse\n"
            "from lattice_tools.cli import main\n"
            f"sys.argv = ['lattice-tools', 'oracle', {str(ctm)!r}, '-r', {bundled_reference!r}, '--allow-missing', '--jobs', '2']\n"
            "main()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    assert "WER" in r.stdout


# ---- convert: records formatted on the workers, written here in input order -------------------------------

@pytest.mark.parametrize("out", ["ark:{d}/lats.ark", "ark,t:{d}/lats.txt", "ark,scp:{d}/l.ark,{d}/l.scp", "{d}/slf"])
def test_convert_on_workers_equals_the_serial_run(out, tmp_path, monkeypatch):
    from lattice_tools.io import convert_lattices

    monkeypatch.setattr(parallel, "SHARD_UTTERANCES", 3)   # several shards from the 10 utterances
    source = f"ark:gunzip -c {KALDI / 'bundled.ark.gz'}|"
    serial, pooled = tmp_path / "serial", tmp_path / "pool"
    serial.mkdir(), pooled.mkdir()
    to = "slf" if "ark" not in out else None
    n = convert_lattices([source], out.format(d=serial), to_format=to, progress=False)
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        assert convert_lattices([source], out.format(d=pooled), to_format=to, progress=False, executor=pool) == n == 10
    files = sorted(p.relative_to(serial) for p in serial.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(pooled) for p in pooled.rglob("*") if p.is_file()) and files
    for f in files:
        a, b = (serial / f).read_bytes(), (pooled / f).read_bytes()
        assert a == b.replace(str(pooled).encode(), str(serial).encode()), f   # the scp names its own archive


def test_convert_cli_jobs_equals_the_serial_run(tmp_path):
    pytest.importorskip("distributed", reason="needs Dask: pip install 'lattice-tools[dask]'")
    source = f"ark:gunzip -c {KALDI / 'bundled.ark.gz'}|"
    outs = []
    for extra in ([], ["--jobs", "2"]):
        out = tmp_path / f"out{len(outs)}.txt"
        r = subprocess.run([sys.executable, "-m", "lattice_tools", "convert", source, "-o", f"ark,t:{out}", *extra],
                           capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n\n") >= 10


def test_writing_on_workers_refuses_a_duplicate_key_and_writes_nothing(tmp_path):
    from lattice_tools.core.errors import MismatchError
    from lattice_tools.io import read_lattices, write_lattices

    lats = list(read_lattices(f"ark:gunzip -c {KALDI / 'bundled.ark.gz'}|"))
    with concurrent.futures.ProcessPoolExecutor(2) as pool, pytest.raises(MismatchError, match="duplicate"):
        write_lattices([*lats, lats[3]], f"ark:{tmp_path / 'x.ark'}", executor=pool)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def kws_search_case(tmp_path_factory):
    """A max-length-3 and a max-length-2 index of the bundled lattices, and a keyword list of every 25th term
    of the first (1-, 2- and 3-word terms; the 3-word ones are long terms of the second index), an
    out-of-vocabulary term and an in-vocabulary term without hits."""
    import sqlite3

    from lattice_tools.io import read_lattice_inputs
    from lattice_tools.io.keyword_search.kwlist import KeywordTerm

    root = tmp_path_factory.mktemp("kws_search")
    _kws_index(root / "max3.db")
    _kws_index(root / "max2.db", max_length=2)
    with sqlite3.connect(f"file:{root / 'max3.db'}?mode=ro", uri=True) as conn:
        all_terms = [t for (t,) in conn.execute("SELECT DISTINCT term FROM postings ORDER BY term")]
    texts = all_terms[::25]
    vocabulary = sorted({w for t in all_terms for w in t.split()})
    texts[5:5] = ["zzz-not-a-word", f"{vocabulary[0]} {vocabulary[0]} {vocabulary[0]} {vocabulary[0]}"]
    terms = [KeywordTerm(f"KW-{i:05d}", t) for i, t in enumerate(texts)]
    assert {len(t.words) for t in terms} >= {1, 2, 3}
    lattices = [lat[0] if isinstance(lat, tuple) else lat
                for lat in read_lattice_inputs(BUNDLED, words=str(KALDI / "bundled.words.txt"))]
    return root, terms, all_terms, lattices


def test_kws_search_parts_come_in_term_order_and_join_to_the_search(kws_search_case, monkeypatch):
    """kws search writes the parts as they come: they hold consecutive runs of the terms, each term's detections
    in its own part, and joined they are search()'s result."""
    import lattice_tools.kws.search as kws_search

    root, terms, _all, lattices = kws_search_case
    options = dict(normalization="kst", duration=300.0, duptime=0.5)
    whole = kws_search.search(str(root / "max2.db"), terms, lattices=iter(lattices), **options)
    monkeypatch.setattr(kws_search, "SEARCH_SHARD_TERMS", 7)
    monkeypatch.setattr(kws_search, "SEARCH_MAX_SHARD_TERMS", 20)
    parts = list(kws_search.search_parts(str(root / "max2.db"), terms, lattices=iter(lattices), **options))
    assert len(parts) > 3
    assert [k for kwids, _ in parts for k in kwids] == [t.kwid for t in terms]
    for kwids, part in parts:
        assert {d.kwid for d in part.detections} <= set(kwids)
        assert set(part.oov) | set(part.no_hits) | set(part.too_long) <= set(kwids)
    joined = kws_search.SearchResult()
    for _kwids, part in parts:
        joined.detections += part.detections
        joined.oov += part.oov
        joined.no_hits += part.no_hits
        joined.too_long += part.too_long
        joined.kst_unnormalized += part.kst_unnormalized
        joined.oov_words.update(part.oov_words)
    assert joined == whole


def test_kws_search_on_workers_equals_the_serial_search(kws_search_case, dask_client, monkeypatch):
    import lattice_tools.kws.search as kws_search

    root, terms, _all, lattices = kws_search_case
    options = dict(normalization="kst", duration=300.0, duptime=0.5)
    serial = kws_search.search(str(root / "max2.db"), terms, lattices=iter(lattices), **options)
    assert serial.oov == ["KW-00005"] and serial.no_hits == ["KW-00006"]
    assert not serial.too_long and len({d.kwid for d in serial.detections}) > 50
    assert any(len(terms[int(d.kwid[3:])].words) == 3 for d in serial.detections)   # long terms answered
    monkeypatch.setattr(kws_search, "SEARCH_SHARD_TERMS", 7)   # many shards of terms, of 1 to 20 terms
    monkeypatch.setattr(kws_search, "SEARCH_MAX_SHARD_TERMS", 20)
    sizes = kws_search._ShardSizes()
    assert [len(s.items) for s in sizes.shards(terms[:30], terms[:30])][:2] == [7, 7]
    sizes.record(10, 1e-9)   # cheap terms: the largest shards
    assert sizes.next_size() == 20
    sizes.record(10, 1e3)    # dear ones: the smallest
    assert sizes.next_size() == 1
    for workers in (1, 3):   # (2: the Dask cluster below)
        with concurrent.futures.ProcessPoolExecutor(workers) as pool:
            assert kws_search.search(str(root / "max2.db"), terms, lattices=iter(lattices), executor=pool,
                                     **options) == serial, workers
    assert kws_search.search(str(root / "max2.db"), terms, lattices=iter(lattices), executor=dask_client,
                             **options) == serial
    # without the lattices, the long terms are reported too long on workers as here
    short = kws_search.search(str(root / "max2.db"), terms, **options)
    assert short.too_long and kws_search.search(str(root / "max2.db"), terms, executor=dask_client,
                                                **options) == short


def test_cli_kws_search_jobs_writes_the_serial_bytes(kws_search_case, tmp_path):
    root, _terms, all_terms, _lattices = kws_search_case
    kwlist = tmp_path / "terms.txt"   # every term of the index: several shards of the default size
    kwlist.write_text("".join(f"KW-{i:06d} {t}\n" for i, t in enumerate(all_terms)))

    def search(out, *more):
        return subprocess.run([sys.executable, "-m", "lattice_tools", "kws", "search", str(root / "max3.db"),
                               "--kwlist", str(kwlist), "-o", str(out), *more], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})

    from lattice_tools.kws.search import SEARCH_SHARD_TERMS

    assert len(all_terms) > 3 * SEARCH_SHARD_TERMS
    r = search(tmp_path / "jobs.xml", "--jobs", "2")
    if r.returncode == 2 and "needs Dask" in r.stderr:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    assert search(tmp_path / "serial.xml").returncode == 0
    assert (tmp_path / "jobs.xml").read_bytes() == (tmp_path / "serial.xml").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.xml", "serial.xml", "terms.txt"]
