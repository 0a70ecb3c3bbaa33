"""Benchmark: Kaldi's latbin jobs against lattice-tools' equivalents, whole process, same archives.

Jobs (each side reads the archive, computes and writes its text output; outputs are checked equal):

* ``mbr``: ``lattice-mbr-decode`` (tra + sausage stats)  vs  ``lattice-tools mbr-decode``
* ``nbest``: ``lattice-determinize | lattice-to-nbest --n=10 | lattice-copy``  vs  ``lattice-tools nbest-paths -n 10``
* ``oracle``: ``lattice-oracle``  vs  ``lattice-tools oracle-path``
* ``best``: ``lattice-best-path``  vs  ``lattice-tools best-path``

Archives: ``real1025`` -- the reported figure: 1,025 real lattices in one binary Kaldi archive (the 20 of the
two real Kaldi archives below and 1,005 pocketsphinx lattices of windows of real speech; see
:func:`real_archive` for exactly how it is made and how many distinct lattices it holds); ``big`` -- the 31.5 s concatenation of the bundled LibriVox clips decoded by pocketsphinx with
wide beams (~138k links; made as in bench_phrases.py, cached in ``--workdir``), as a Kaldi text archive;
``bundled`` -- the 10 bundled recordings (tests/data/kaldi, text); ``kgraph`` -- kGraph's real Kaldi
archive (binary; 10 utterances: the floor of a small job, beside the 1,025-utterance figure).  Runs are interleaved (Kaldi, ours, Kaldi, ours, ...), best of ``--rounds``; the
machine is shared, so ratios are the figure to read.  Needs the Kaldi tools on PATH (or
$LATTICE_TOOLS_KALDI_BIN); otherwise it says so and exits.

Usage::

    python bench/bench_kaldi.py [--workdir /tmp/bench_kaldi] [--rounds 3] [--jobs mbr,nbest,oracle,best]
                                [--archives real1025,kgraph,bundled,big] [--timeout 300] [--breakdown]
                                [--decode-budget SECONDS]

The 1,025-utterance archive (2026-11-29): decoding the 1,005 windows was cut after ~50 minutes of a machine at
load average 11-17 (two decoders, one over the windows from the first, one from the 601st): 407 windows were
decoded -- 374 from the start of the list (LibriVox clips 0870: 241, 0880: 47, 0890: 86) and 33 from the 601st
(clip 0920), all read speech of the LibriVox reader -- and the other 598 window slots repeat them in order under
``-again`` keys (``--decode-budget`` builds it that way; the windows of the other recordings were not reached).  Every lattice is real decoder output; 427 of the 1,025
are distinct.  179 MB binary (lattice-copy), 168,695 frames; the pocketsphinx windows are 1-3 s lattices of
1,000-3,000 arcs, with transition-id strings of one id per frame.

Measured 2026-11-29 (``LATTICE_TOOLS_KALDI_BIN=/work/shared/tools/kaldi-peer/bin python bench/bench_kaldi.py
--workdir W --rounds 3 --timeout 300 --jobs best,mbr --archives real1025,kgraph``, acoustic scale 0.1, load
average 10-14; the version before the compiled binary CompactLattice reader with ``--rounds 2`` right after;
CPU seconds Kaldi / ours, ratio; every output identical to Kaldi's):

    archive    job    before                    this version              target
    real1025   best   1.12 / 10.99  (9.85x)     0.94 / 1.38  (1.46x)      0.30x: MISSED
    real1025   mbr    3.13 / 11.31  (3.61x)     2.78 / 2.38  (0.86x)      0.31x: MISSED
    kgraph     best   -                         0.01 / 0.16              (10 utterances: the start-up floor)
    kgraph     mbr    -                         0.01 / 0.20

Binary archives were read by a Python loop of ~4 reads per arc: 9 of the 11 s.  What remained then (cProfile of
``best-path`` on real1025, CPU clock, per lattice): start-up (interpreter, numpy, imports) ~0.12 s once; the
compiled body reader 0.13-0.17 ms; the rest of reading (header, Python buffer refills) ~0.4 ms;
``raw_to_lattice`` (frames, ``Lattice.from_arcs``, symbols, validation: ~30 numpy calls on arrays of 1-3k
items) ~1.1 ms; ``best_path_kaldi`` (Kaldi's state order view, the search) ~0.7 ms -- against Kaldi's ~0.9 ms
per lattice for everything.

Then (same day) the best path became one compiled engine run straight from the archive's bytes
(``compact_best_path_reader``: one C call per buffer of records: key, FST header, body, trimming, Kaldi's order,
the search; no hub lattice), and the memory budget's check (one per lattice) reads /proc/self/statm with pread
(2.5 us instead of 18 us).  ``--rounds 5 --jobs best,mbr --archives real1025,kgraph --breakdown``, load 15-19:

    archive    job    Kaldi / ours CPU s   ratio    target
    real1025   best   0.81 / 0.24          0.29x    0.30x: met (per round, interleaved: 0.30-0.34x)
    real1025   mbr    2.55 / 2.00          0.78x    0.31x: MISSED
    kgraph     best   0.01 / 0.14                   (10 utterances: the start-up floor)

Best path breakdown: interpreter 0.036, numpy 0.052, lattice-tools imports 0.024, reading the archive with every
best path 0.112 (Kaldi's lattice-copy of the archive: 1.18).  The start-up alone is 0.14x of Kaldi's job;
``perf`` of the whole process: the compiled reader ~16 %, the kernel's copy of the file and Python's buffer
refills ~12 %, the interpreter (start-up imports included) ~36 %.  MBR: reading 0.71 (a hub lattice per
utterance), computation 1.04 (its C recursion 0.17), formatting 0.08: ~1.7 ms of Python and numpy per lattice;
0.31x needs MBR computed from the archive's bytes as the best path is.

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


def prepare(workdir: Path, names: list, kd: str, decode_budget: float | None = None) -> dict:
    """{name: (rspecifier, reference table)} -- archives and word-id references."""
    from lattice_tools.io import read_lattices, write_lattices

    out = {}
    # big: pocketsphinx wide-beam lattice of the 31.5 s concatenation (bench_phrases' recipe)
    big = workdir / "big.ark"
    if "big" in names and not big.exists():
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
    if "real1025" in names:
        out["real1025"] = (f"ark:{real_archive(workdir, kd, decode_budget)}", None)
    return out


#: The recordings of real speech this machine has (read speech of the LibriVox reader, CMU speakers' commands,
#: digits and card names): the sources of the windows of the 1,025-utterance archive.
_PS_TESTDATA = Path(os.environ.get("POCKETSPHINX_TESTDATA", "/usr/share/pocketsphinx/test/data"))
_RECORDINGS = ([REPO / "lattice_tools/data/librivox" / f"sense_and_sensibility_01_austen_64kb-{c}.wav"
                for c in ("0870", "0880", "0890", "0920", "0930")]
               + [REPO / "lattice_tools/data/cards" / f"00{i}.wav" for i in range(1, 6)]
               + [_PS_TESTDATA / n for n in ("goforward.raw", "numbers.raw", "something.raw", "tidigits/dhd.2934z.raw")])
#: window lengths (seconds) and the step of their starts; 1,005 windows are taken evenly from all of them
_WINDOW_LENGTHS, _WINDOW_STEP, _N_WINDOWS = (1.0, 1.5, 2.0, 2.5, 3.0), 0.05, 1005


def real_archive(workdir: Path, kd: str, decode_budget: float | None = None) -> Path:
    """A binary Kaldi archive of 1,025 real lattices (built once, cached in ``workdir``):

    * the 10 lattices of kGraph's Kaldi nnet archive (``tests/data/kaldi/lats/kgraph_lat.1``, Mandarin) and the 10
      of the bundled archive (``tests/data/kaldi/lats/bundled.ark.gz``: pocketsphinx lattices of the bundled
      recordings), each once;
    * 1,005 pocketsphinx lattices (default beams) of windows of real speech: the 14 recordings in
      ``_RECORDINGS`` (~47 s of audio: 5 LibriVox clips, 5 ``cards`` recordings, the 4 CMU recordings of
      Debian's ``pocketsphinx-testdata``), cut by sox into windows of 1.0, 1.5, 2.0, 2.5 and 3.0 s starting
      every 0.05 s (2,149 windows); 1,005 of them taken at even intervals (``_windows``).  The windows overlap
      (there are not 1,005 disjoint utterances of real speech on this machine), but each is a different
      stretch of audio decoded on its own.

    Decoding costs ~0.5-0.7 s of CPU per window (one decoder reused over a run of windows, in the order of
    the list).  Windows already decoded (``real1025_slf*/<window>.lat``) are kept; with ``decode_budget``
    (seconds) the decoding of the rest stops when it is spent, and the window slots without a lattice take
    the decoded ones again, in list order, under new keys (``<window>-again<k>``): the archive then holds
    fewer distinct lattices, each repeated at most ceil(1005 / decoded) times (the bench prints how many).

    The pocketsphinx lattices are converted by lattice-tools (one word table; pocketsphinx posteriors in the
    graph cost, acoustic costs 0), and Kaldi's ``lattice-copy`` writes the final archive (binary) from the
    text archives."""
    ark = workdir / "real1025.ark"
    if ark.exists():
        return ark
    import time

    from lattice_tools.core.symbols import SymbolTable
    from lattice_tools.decode.pocketsphinx import decode_audio
    from lattice_tools.io import write_lattices
    from lattice_tools.io.lattices.slf import read_slf

    audio = workdir / "real1025_audio"
    audio.mkdir(exist_ok=True)
    names = []
    for rec, start, length in _windows():
        out = audio / f"{rec.stem.replace('sense_and_sensibility_01_austen_64kb-', 'lv')}-s{start:05.2f}-l{length:.1f}.wav"
        if not out.exists():
            src = (["-t", "raw", "-r", "16000", "-e", "signed-integer", "-b", "16", "-c", "1"] if rec.suffix == ".raw"
                   else [])
            subprocess.run(["sox", *src, str(rec), "-r", "16000", "-c", "1", "-b", "16", str(out), "trim", str(start),
                            str(length)], check=True)
        names.append(out.stem)

    def decoded(name):
        return next((d / f"{name}.lat" for d in sorted(workdir.glob("real1025_slf*")) if (d / f"{name}.lat").exists()),
                    None)

    t0 = time.monotonic()
    missing = [n for n in names if decoded(n) is None]
    for k in range(0, len(missing), 25):                     # runs of 25 windows, one decoder each
        if decode_budget is not None and time.monotonic() - t0 > decode_budget:
            break
        decode_audio([str(audio / f"{n}.wav") for n in missing[k:k + 25]], out_dir=str(workdir / "real1025_slf"),
                     independent=False, progress=False)
    symbols = SymbolTable()
    lats = []
    for name in names:
        path = decoded(name)
        if path is not None:
            lat = read_slf(str(path), symbols=symbols, frame_shift=0.01, key=name)
            symbols = lat.symbols
            lats.append(lat)
    if not lats:
        raise SystemExit("no window decoded")
    n_distinct = len(lats)
    lats += [lats[i % n_distinct].with_key(f"{lats[i % n_distinct].key}-again{i // n_distinct}")
             for i in range(n_distinct, len(names))]
    print(f"real1025: {n_distinct} distinct window lattices of {len(names)} (the rest repeated) + 20 Kaldi-archive "
          "lattices", flush=True)
    texts = workdir / "real1025.txt.ark"
    write_lattices(lats, f"ark,t:{texts}")
    kgraph = workdir / "kgraph.txt.ark"
    subprocess.run([os.path.join(kd, "lattice-copy"), f"ark:{REPO / 'tests/data/kaldi/lats/kgraph_lat.1'}",
                    f"ark,t:{kgraph}"], check=True, stderr=subprocess.DEVNULL)
    with gzip.open(REPO / "tests/data/kaldi/lats/bundled.ark.gz", "rb") as f:
        bundled = f.read()
    both = workdir / "real1025.all.txt.ark"
    both.write_bytes(kgraph.read_bytes() + bundled + texts.read_bytes())
    tmp = workdir / "real1025.ark.tmp"
    subprocess.run([os.path.join(kd, "lattice-copy"), f"ark,t:{both}", f"ark:{tmp}"], check=True,
                   stderr=subprocess.DEVNULL)
    os.replace(tmp, ark)
    return ark


def _windows() -> list:
    """(recording, start, length) of the 1,005 windows, in the order they are decoded."""
    import wave

    wins = []
    for rec in _RECORDINGS:
        if rec.suffix == ".raw":
            dur = rec.stat().st_size / 32000.0  # headerless 16 kHz 16-bit mono
        else:
            with wave.open(str(rec)) as w:
                dur = w.getnframes() / w.getframerate()
        for length in _WINDOW_LENGTHS:
            k = 0
            while k * _WINDOW_STEP + length <= dur + 1e-9:
                wins.append((rec, round(k * _WINDOW_STEP, 2), length))
                k += 1
    return [wins[i * len(wins) // _N_WINDOWS] for i in range(_N_WINDOWS)]


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
if job == "mbr":
    lats = list(read_lattices(spec))
    t["read archive"] = cpu()
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
else:  # as best-path runs: the compiled reader computes each best path from the archive's bytes
    from lattice_tools.algorithms.kaldi_ops import compact_best_path_reader
    from lattice_tools.io.lattices.kaldi import read_kaldi_lattices
    items = list(read_kaldi_lattices(spec, compact=compact_best_path_reader(None, acoustic_scale=scale)))
    t["read archive + best paths"] = cpu()
    lines = [T.int_vector_line(it.key, (it.value[0] if hasattr(it, "value") else
                                        best_path_kaldi(it, acoustic_scale=scale).words)) for it in items]
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
    ap.add_argument("--archives", default="real1025,kgraph,bundled,big")
    ap.add_argument("--acoustic-scale", default="0.1")
    ap.add_argument("--decode-budget", type=float, default=None, metavar="SECONDS",
                    help="real1025: stop decoding windows after this long and repeat the decoded ones (default: "
                         "decode all 1,005; ~10 min of CPU)")
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
    archives = prepare(w, args.archives.split(","), kd, args.decode_budget)
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
            ratios = sorted(o[0] / k[0] for k, o in zip(tk, to, strict=True))  # the spread: each interleaved round's ratio
            print(f"{name:8s} {job:7s} {kc_cpu:11.2f} {oc_cpu:10.2f} {oc_cpu / kc_cpu:5.2f}x   {kc_wall:10.2f} "
                  f"{oc_wall:9.2f}  {verdict}  (rounds {ratios[0]:.2f}-{ratios[-1]:.2f}x)", flush=True)
    if args.breakdown:
        breakdown(archives, args.archives.split(","), args.jobs.split(","), kd, env, args.acoustic_scale,
                  args.rounds)


if __name__ == "__main__":
    main()
