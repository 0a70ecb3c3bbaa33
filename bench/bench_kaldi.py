"""Benchmark: Kaldi's latbin jobs against lattice-tools' equivalents, whole process, same archives.

Jobs (each side reads the archive, computes and writes its text output; outputs are checked equal):

* ``mbr``: ``lattice-mbr-decode`` (tra + sausage stats)  vs  ``lattice-tools mbr-decode``
* ``nbest``: ``lattice-determinize | lattice-to-nbest --n=10 | lattice-copy``  vs  ``lattice-tools nbest-paths -n 10``
* ``oracle``: ``lattice-oracle``  vs  ``lattice-tools oracle-path``
* ``best``: ``lattice-best-path``  vs  ``lattice-tools best-path``

Archives: ``big`` -- the 31.5 s concatenation of the bundled LibriVox clips decoded by pocketsphinx with
wide beams (~138k links; made as in bench_phrases.py, cached in ``--workdir``), as a Kaldi text archive;
``bundled`` -- the 10 bundled recordings (tests/data/kaldi, text); ``kgraph`` -- kGraph's real Kaldi
archive (binary).  Runs are interleaved (Kaldi, ours, Kaldi, ours, ...), best of ``--rounds``; the
machine is shared, so ratios are the figure to read.  Needs the Kaldi tools on PATH (or
$LATTICE_TOOLS_KALDI_BIN); otherwise it says so and exits.

Usage::

    python bench/bench_kaldi.py [--workdir /tmp/bench_kaldi] [--rounds 3] [--jobs mbr,nbest,oracle,best]
                                [--archives big,bundled,kgraph] [--timeout 300] [--breakdown]

``--breakdown`` also prints, for ``mbr`` and ``best``, the CPU time of each phase of our side (interpreter,
numpy, imports -- for MBR also the sausages module with its C kernel --, reading, computation and for MBR its
C recursion, formatting; best of ``--rounds``, in a fresh interpreter each) next to Kaldi's ``lattice-copy``
of the same archive (its reading).

Measured 2026-11-26 after the MBR recursion moved from numba to C (``LATTICE_TOOLS_KALDI_BIN=/work/shared/
tools/kaldi-peer/bin python bench/bench_kaldi.py --rounds 5 --timeout 60 --jobs mbr,best --breakdown``,
acoustic scale 0.1; CPU seconds, Kaldi vs ours, ratio; every output identical): big mbr 1.18 / 0.50 (0.42x),
best 0.24 / 0.36 (1.50x); bundled mbr 0.05 / 0.14, best 0.03 / 0.13; kgraph mbr 0.01 / 0.12, best 0.01 / 0.11.
Breakdown on big, mbr: interpreter 0.028, numpy 0.041, lattice-tools imports 0.016, MBR imports (sausages, C
kernel) 0.002, reading 0.231, computation 0.139 (C recursion 0.104 for two passes), formatting 0.009 --
Kaldi's lattice-copy of the archive 0.27, so Kaldi's MBR computation is ~0.9 s; best: the same start-up,
reading 0.237, the search 0.022.  The numba checkout the same day (same command): big mbr 1.23 / 0.88
(0.71x), bundled 0.06 / 0.44, kgraph 0.01 / 0.43.
After the Kaldi text reader moved to C (``--rounds 3 --jobs best,mbr --breakdown``, interleaved with the checkout
before the session): big best 0.23 / 0.20 (0.86x; 1.37-1.5x before), mbr 1.18 / 0.36 (0.31x), the reading phase
0.09-0.10 (0.22-0.27 before); bundled best 0.03 / 0.11, kgraph best 0.01 / 0.11 (reading 0.012, as before).
After Lattice.from_arcs (topological order, arc reindexing) and CompactLatticeShortestPath moved to C (``--rounds 5
--timeout 60 --jobs best,mbr --breakdown``; main just before: big best 0.24 / 0.20, 0.82x): big best 0.25 / 0.18
(0.70x), reading 0.088 -> 0.068, the search 0.022 -> 0.008; mbr 1.20 / 0.36 (0.30x); bundled best 0.04 / 0.12,
kgraph 0.01 / 0.11 (the start-up floor).

Measured earlier the same day (``--rounds 3 --timeout 60``, all jobs): big nbest 7.58 / 2.32 (0.31x), oracle
Kaldi did not finish in 60 s / 0.67; bundled nbest 1.42 / 0.31 (0.22x), oracle 0.63 / 0.22 (0.35x,
identical); kgraph nbest 0.05 / 0.19.  A Python process costs ~0.1 s before it reads a lattice (numba 0.3 s
more for the commands that still use it): docs/kaldi.md ("Speed") says where the time goes.
"""
from __future__ import annotations

import argparse
import gzip
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

KALDI_TOOLS = ("lattice-mbr-decode", "lattice-determinize", "lattice-to-nbest", "lattice-copy", "lattice-oracle",
               "lattice-best-path")


def kaldi_dir() -> str | None:
    d = os.environ.get("LATTICE_TOOLS_KALDI_BIN")
    if d and all(os.access(os.path.join(d, t), os.X_OK) for t in KALDI_TOOLS):
        return d
    found = [shutil.which(t) for t in KALDI_TOOLS]
    return os.path.dirname(found[0]) if all(found) else None


def prepare(workdir: Path) -> dict:
    """{name: (rspecifier, reference table)} -- archives and word-id references."""
    from lattice_tools.io import read_lattices, write_lattices

    out = {}
    # big: pocketsphinx wide-beam lattice of the 31.5 s concatenation (bench_phrases' recipe)
    big = workdir / "big.ark"
    if not big.exists():
        from bench_phrases import BIG, CLIPS, decode

        lib = REPO / "lattice_tools" / "data" / "librivox"
        wav = workdir / "concat.wav"
        if not wav.exists():
            subprocess.run(["sox", *[str(lib / f"sense_and_sensibility_01_austen_64kb-{c}.wav") for c in CLIPS],
                            str(wav)], check=True)
        slf = workdir / "concat_wide.slf"
        decode(str(wav), str(slf), BIG)
        lats = [lat.with_key("concat") for lat in read_lattices(str(slf))]
        write_lattices(lats, f"ark,t:{big}")
        lats[0].symbols.write(str(workdir / "big.words.txt"))
        trn = {}
        for line in open(lib / "transcription.trn"):
            words, _, utt = line.strip().rpartition("(")
            trn[utt.rstrip(")").strip()] = words.split()
        ref = [w for c in CLIPS for w in trn[f"sense_and_sensibility_01_austen_64kb-{c}"]]
        syms = lats[0].symbols
        (workdir / "big.ref.txt").write_text("concat " + " ".join(str(syms.id(w)) if w in syms else "999999"
                                                                  for w in ref) + "\n")
    out["big"] = (f"ark:{big}", workdir / "big.ref.txt")
    bundled = workdir / "bundled.ark"
    if not bundled.exists():
        with gzip.open(REPO / "tests/data/kaldi/lats/bundled.ark.gz", "rb") as f:
            bundled.write_bytes(f.read())
    out["bundled"] = (f"ark:{bundled}", REPO / "tests/data/kaldi/lats/bundled.ref.txt")
    out["kgraph"] = (f"ark:{REPO / 'tests/data/kaldi/lats/kgraph_lat.1'}", None)
    return out


def commands(job: str, spec: str, ref, kd: str, w: Path, scale: str) -> tuple[list[str], list[str], tuple]:
    """(Kaldi's command, ours, (their output, our output) to compare)."""
    k = lambda t: os.path.join(kd, t)  # noqa: E731
    lt = [sys.executable, "-m", "lattice_tools.cli"]
    if job == "mbr":
        return ([k("lattice-mbr-decode"), f"--acoustic-scale={scale}", spec, f"ark,t:{w}/k.tra", "ark:/dev/null",
                 f"ark,t:{w}/k.saus"],
                lt + ["mbr-decode", spec, "--acoustic-scale", scale, "--tra", f"{w}/o.tra", "--sausage-stats",
                      f"{w}/o.saus"], ((w / "k.saus", w / "o.saus"), (w / "k.tra", w / "o.tra")))
    if job == "nbest":
        sh = (f"{k('lattice-determinize')} --acoustic-scale={scale} {spec} ark:- | {k('lattice-to-nbest')} --n=10 "
              f"--acoustic-scale={scale} ark:- ark:- | {k('lattice-copy')} ark:- ark,t:{w}/k.nbest")
        return (["bash", "-c", sh], lt + ["nbest-paths", spec, "-n", "10", "--acoustic-scale", scale, "--tra",
                                          f"{w}/o.nbest.tra"], ())
    if job == "oracle":
        return ([k("lattice-oracle"), spec, f"ark,t:{ref}", f"ark,t:{w}/k.or.tra", f"ark,t:{w}/k.or.err"],
                lt + ["oracle-path", spec, "-r", str(ref), "--tra", f"{w}/o.or.tra", "--errors", f"{w}/o.or.err"],
                ((w / "k.or.err", w / "o.or.err"),))
    if job == "best":
        return ([k("lattice-best-path"), f"--acoustic-scale={scale}", spec, f"ark,t:{w}/k.best"],
                lt + ["best-path", spec, "--acoustic-scale", scale, "--tra", f"{w}/o.best"],
                ((w / "k.best", w / "o.best"),))
    raise ValueError(job)


TIMEOUT = 300.0


def timed(cmd, env) -> tuple[float, float] | None:
    """(CPU seconds, wall seconds) of the whole process (children included: user + system), or None
    if it failed.  CPU time is the figure to compare on a shared machine."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    try:
        res = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO,
                             timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        print(f"  timed out after {TIMEOUT:.0f} s: {' '.join(map(str, cmd))[:200]}", flush=True)
        return None
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        print(f"  failed (exit {res.returncode}): {' '.join(map(str, cmd))[:200]}\n  {res.stderr[-300:]}", flush=True)
        return None
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall


#: Run in a fresh interpreter by --breakdown: CPU seconds of each phase of our side of a job, in the
#: order the command line goes through them (the interpreter's own start-up is the CPU already used
#: when the first line runs).
_PHASES = r"""
import json, resource, sys
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
job, spec, scale = sys.argv[1], sys.argv[2], float(sys.argv[3])
t = {"interpreter": cpu()}
import numpy
t["numpy"] = cpu()
import click, lattice_tools.cli.latbin
from lattice_tools.io import read_lattices
from lattice_tools.io import kaldi_tables as T
from lattice_tools.algorithms.kaldi_ops import best_path_kaldi
t["lattice-tools imports"] = cpu()
if job == "mbr":
    from lattice_tools._ext import native
    from lattice_tools.alternatives.sausages import mbr_decode
    K = native("mbr")
    t["MBR imports (sausages, C kernel)"] = cpu()
lats = list(read_lattices(spec))
t["read archive"] = cpu()
if job == "mbr":
    kernel = [0.0]
    compiled = K.acc_stats  # (sausages looks the kernel up in the module at every call)
    def timed_kernel(*a):
        c = cpu()
        r = compiled(*a)
        kernel[0] += cpu() - c
        return r
    K.acc_stats = timed_kernel
    res = [mbr_decode(lat, acoustic_scale=scale) for lat in lats]
    t["compute"] = cpu()
    lines = [T.posterior_line(lat.key, r.bins) + T.int_vector_line(lat.key, r.words) for lat, r in zip(lats, res)]
else:
    res = [best_path_kaldi(lat, acoustic_scale=scale) for lat in lats]
    t["compute"] = cpu()
    lines = [T.int_vector_line(lat.key, r.words) for lat, r in zip(lats, res)]
t["format output"] = cpu()
names, prev, out = list(t), 0.0, {}
for n in names:
    out[n], prev = t[n] - prev, t[n]
if job == "mbr":
    out["compute: of which the MBR kernel"] = kernel[0]
print(json.dumps(out))
"""


def breakdown(archives: dict, names: list, jobs: list, kd: str, env: dict, scale: str, rounds: int) -> None:
    """Where the CPU time of our side goes, phase by phase (best of ``rounds`` per phase), next to
    Kaldi's whole process and Kaldi's ``lattice-copy`` of the same archive (its reading)."""
    import json

    for name in names:
        spec = archives[name][0]
        copy = [t for t in (timed([os.path.join(kd, "lattice-copy"), spec, "ark:/dev/null"], env)
                            for _ in range(rounds)) if t]
        for job in jobs:
            if job not in ("mbr", "best"):
                continue
            runs = []
            for _ in range(rounds):
                res = subprocess.run([sys.executable, "-c", _PHASES, job, spec, scale], env=env, capture_output=True,
                                     text=True, timeout=TIMEOUT, cwd=REPO)
                if res.returncode != 0:
                    print(f"  breakdown failed: {res.stderr[-300:]}")
                    return
                runs.append(json.loads(res.stdout))
            best = {k: min(r[k] for r in runs) for k in runs[0]}
            parts = ", ".join(f"{k} {v:.3f}" for k, v in best.items())
            print(f"{name:8s} {job:5s} ours CPU s: {parts}; Kaldi's lattice-copy (read + write) "
                  f"{min(t[0] for t in copy):.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", default="/tmp/bench_kaldi")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", default="mbr,nbest,oracle,best")
    ap.add_argument("--archives", default="big,bundled,kgraph")
    ap.add_argument("--acoustic-scale", default="0.1")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per process (default 300)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also print, for mbr and best, the CPU time of each phase of our side (interpreter, "
                         "imports, reading, computation, MBR kernel, formatting) and Kaldi's lattice-copy of the archive")
    args = ap.parse_args()
    globals()["TIMEOUT"] = args.timeout
    kd = kaldi_dir()
    if kd is None:
        print("bench_kaldi: the Kaldi tools (" + ", ".join(KALDI_TOOLS) + ") are not on PATH or in "
              "$LATTICE_TOOLS_KALDI_BIN; nothing to compare against.  Skipped.")
        return
    w = Path(args.workdir)
    w.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONPYCACHEPREFIX=str(w / "pycache"))
    # An installed package has its bytecode (.pyc) files; a shell with PYTHONDONTWRITEBYTECODE set would
    # make our side recompile every module in every run (measured +0.02-0.03 s per process).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    archives = prepare(w)
    print(f"{'archive':8s} {'job':7s} {'Kaldi CPU s':>11s} {'ours CPU s':>10s} {'ratio':>6s}   "
          f"{'Kaldi wall':>10s} {'ours wall':>9s}  outputs")
    for name in args.archives.split(","):
        spec, ref = archives[name]
        for job in args.jobs.split(","):
            if job == "oracle" and ref is None:
                continue
            kc, oc, compare = commands(job, spec, ref, kd, w, args.acoustic_scale)
            timed(oc, env)  # warm-up: page cache, bytecode caches
            tk, to = [], []
            for _ in range(args.rounds):
                tk.append(timed(kc, env))
                to.append(timed(oc, env))
            if any(t is None for t in to):
                print(f"{name:8s} {job:7s} lattice-tools failed")
                continue
            oc_cpu, oc_wall = min(t[0] for t in to), min(t[1] for t in to)
            if any(t is None for t in tk):
                print(f"{name:8s} {job:7s} {'failed':>11s} {oc_cpu:10.2f} {'':>6s}   {'':>10s} {oc_wall:9.2f}", flush=True)
                continue
            kc_cpu, kc_wall = min(t[0] for t in tk), min(t[1] for t in tk)
            same = all(a.read_bytes() == b.read_bytes() for a, b in compare)
            verdict = ("identical" if same else "DIFFERENT") if compare else "-"
            print(f"{name:8s} {job:7s} {kc_cpu:11.2f} {oc_cpu:10.2f} {oc_cpu / kc_cpu:5.2f}x   {kc_wall:10.2f} "
                  f"{oc_wall:9.2f}  {verdict}", flush=True)
    if args.breakdown:
        breakdown(archives, args.archives.split(","), args.jobs.split(","), kd, env, args.acoustic_scale,
                  args.rounds)


if __name__ == "__main__":
    main()
