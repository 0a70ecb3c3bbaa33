#!/usr/bin/env python3
"""Benchmark: N-best lists read, merged into lattices and scored, side by side with sclite on their alt-CTM.

Synthetic data (seeded): a population of members, each ``U`` utterances x ``N``-best lists (``--utts``,
``--nbest``) in one of the generic N-best formats (``--sources``: TSV and JSON lines, the same lists): per
utterance a random 12-word reference over a 2,000-word vocabulary; every entry is that reference with 1-4
random substitutions, deletions or insertions, word times 0.3 s apart, log-probability scores; an STM
reference.  Two whole-process pipelines compute the same number, the oracle WER of the N-best lists:

* lattice-tools: ``nbest-to-lattices`` (read and merge, ``join=paths``: the lattice's paths are the
  entries) then ``oracle`` (exact lattice oracle, sclite's weights and tie rules);
* sclite: ``sclite -h nbest.ctm ctm -r ref.stm stm -o sum`` on the N-best alt-CTM (one ALT block per
  utterance with every entry), which scores the best-matching alternative of each block.

Every member runs ``--rounds`` times, each run of lattice-tools followed by its own sclite run (A B A B ...);
the script prints each run's CPU seconds (user + system of the processes) and peak RSS, the ratio
lattice-tools / sclite, and the worst case, p95 and median of the ratios over the population.  sclite's
time grows with the block size; beyond ``--sclite-utts`` utterances it runs on the first ``--sclite-utts``
only and its time is extrapolated linearly (marked in the table).

Usage: python bench/bench_nbest_lists.py [--utts 1000] [--nbest 10 100] [--sources tsv jsonl] [--rounds 2]
       [--sclite-utts 1000] [--workdir DIR]

With an extrapolated sclite time, the table's sclite error rate is that of the first ``--sclite-utts``
utterances and the oracle WER that of all of them.

Measured 2026-11-29 on the shared 2-core machine under a load average of 9-13 (seven engineers' jobs; CPU
seconds of each process, which the load also inflates, so only runs made side by side compare):

* The default population (1,000 utterances x 10- and 100-best, TSV and JSON lines, two rounds; load 10.2 at
  the start): 10-best: lattice-tools 4.23-4.58 s, sclite 0.87-0.93 s, ratio 4.66-5.26; 100-best:
  lattice-tools 9.02-11.99 s, sclite 12.33-19.93 s, ratio 0.515-0.913.  Over the 8 runs: worst 5.264, p95
  5.113, median 2.785.  Both tools give the same error rate (10-best 8.58% / 8.6%, 100-best 7.13% / 7.1%).
  sclite's time grows with the ALT blocks' size, lattice-tools' mostly with the utterances: on short lists
  the two Python processes' start (imports: 0.27 s each) and the oracle's per-lattice work dominate.
* 10,000 utterances x 100-best TSV (load 9-12): ``nbest-to-lattices`` 46.7 s + ``oracle`` 54.9 s = 101.6 s;
  sclite 16.58 s on the first 1,000 utterances (165.8 s extrapolated): ratio 0.613 (the same command measured
  1.12-1.17 before this version's changes to the Kaldi writer, the TSV reader, the merge and the oracle's
  tie rules, under other loads).
* Side by side with the tree before those changes (1,000 x 100-best TSV, three rounds alternating, load
  10-13): ``nbest-to-lattices`` 7.26 / 7.29 / 7.46 s -> 4.77 / 5.18 / 4.94 s, ``oracle`` 6.57 / 7.34 / 6.90 s
  -> 5.46 / 5.94 / 5.66 s, together 13.8-14.6 s -> 10.2-11.1 s (1.3-1.4x); the archive and words.txt
  byte-identical, and the oracle's JSON report identical apart from its ``input`` field (the archive's name).
* Where the time goes now (one stage at a time in one process, 1,000 x 100-best): reading the TSV into N-best
  lists 2.1 s, merging them 0.9 s, the Kaldi records 0.6 s (110 MB of archive: word alignments frame by
  frame; load ~15); reading the archive 0.7 s, the oracle DP (numpy, one step per level of the lattice)
  2.4 s, the rest of the oracle (graphs, traceback, sclite's tie rules in one batched call) 0.5 s (load ~7).  **The target of 0.1x is not met**: at
  100-best it is missed by about 6x, at 10-best by about 50x.  Python's per-line and per-level work (the
  reader, the DP) would have to be compiled, and even then the archive between the two processes (written
  0.6 s, read 0.7 s per 1,000 utterances) and the two starts (0.55 s) alone are 0.09-0.15x of sclite's
  100-best time (12-20 s per 1,000 utterances).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("tsv", "jsonl")


def make_data(workdir: Path, utts: int, nbest: int, seed: int = 0) -> None:
    """``nbest.tsv``, ``nbest.jsonl`` (the same lists in the two generic formats) and ``ref.stm``."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(2000)]
    with open(workdir / "nbest.tsv", "w") as tsv, open(workdir / "nbest.jsonl", "w") as jsonl, \
            open(workdir / "ref.stm", "w") as stm:
        for u in range(utts):
            key = f"utt{u:05d}"
            ref = [rng.choice(vocab) for _ in range(12)]
            stm.write(f"{key} 1 spk 0.000 4.000 {' '.join(ref)}\n")
            seen = set()
            rank = 0
            while rank < nbest:
                words = list(ref)
                for _ in range(rng.randint(1, 4)):
                    op, i = rng.random(), rng.randrange(len(words) + 1)
                    if op < 0.5 and i < len(words):
                        words[i] = rng.choice(vocab)
                    elif op < 0.75 and i < len(words) and len(words) > 1:
                        del words[i]
                    else:
                        words.insert(i, rng.choice(vocab))
                if tuple(words) in seen:
                    continue
                seen.add(tuple(words))
                rank += 1
                score = f"{-rank * 0.5 - rng.random():.4f}"
                starts = [f"{0.3 * i:.2f}" for i in range(len(words))]
                ends = [f"{0.3 * i + 0.25:.2f}" for i in range(len(words))]
                times = " ".join(f"{a}:{b}" for a, b in zip(starts, ends, strict=True))
                tsv.write(f"{key}\t{rank}\t{score}\t{' '.join(words)}\t{times}\n")
                jsonl.write(f'{{"key": "{key}", "rank": {rank}, "score": {score}, "words": {json.dumps(words)}, '
                            f'"starts": [{", ".join(starts)}], "ends": [{", ".join(ends)}]}}\n')


def write_altctm(workdir: Path, utts: int) -> Path:
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm
    from lattice_tools.io.transcripts.nbest_files import read_nbest

    out = workdir / f"nbest{utts}.ctm"
    lists = (nb for i, nb in enumerate(read_nbest(str(workdir / "nbest.tsv"))) if i < utts)
    write_alternatives_ctm(str(out), lists, None)
    stm = workdir / f"ref{utts}.stm"
    with open(workdir / "ref.stm") as f, open(stm, "w") as g:
        for i, line in enumerate(f):
            if i < utts:
                g.write(line)
    return out


def timed(cmd: list[str], env=None) -> tuple[float, int, str]:
    """CPU seconds (user + system) of the child process, its peak RSS (kB) and its output.  CPU time, not wall
    time: the benchmark machine is shared, and wall time there measures the other jobs too."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *cmd], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    *err, last = proc.stderr.rstrip("\n").split("\n")
    user, system, rss = last.split()
    cpu = float(user) + float(system)
    print(f"  [{cpu:.2f} s CPU, {int(rss) / 1024:.0f} MB] {' '.join(os.path.basename(c) for c in cmd[:4])} ...",
          flush=True)
    return cpu, int(rss), proc.stdout + "\n".join(err)


def sclite_errors(out: str) -> tuple[int, float]:
    """(#Wrd, Err %) of the Sum/Avg line of sclite's sum report."""
    for line in out.splitlines():
        if "Sum/Avg" in line:
            nums = re.findall(r"[0-9.]+", line)
            # | Sum/Avg | #Snt #Wrd | Corr Sub Del Ins Err S.Err |  (percentages)
            return int(nums[1]), float(nums[6])
    raise SystemExit("no Sum/Avg line in sclite's report")


def ours(work: Path, source: str, env) -> tuple[float, int, float]:
    """The lattice-tools pipeline on ``nbest.<source>``: (CPU seconds of both processes, peak RSS kB, oracle WER)."""
    lt = [sys.executable, "-m", "lattice_tools"]
    t_merge, m_merge, _ = timed(lt + ["nbest-to-lattices", str(work / f"nbest.{source}"), "-o",
                                      f"ark:{work / 'nbest.ark'}", "--write-words", str(work / "words.txt")], env)
    t_oracle, m_oracle, _ = timed(lt + ["oracle", f"ark:{work / 'nbest.ark'}", "--words", str(work / "words.txt"),
                                        "-r", str(work / "ref.stm"), "--json", str(work / "oracle.json")], env)
    with open(work / "oracle.json") as f:
        wer = 100 * json.load(f)["wer"]
    (work / "nbest.ark").unlink()
    return t_merge + t_oracle, max(m_merge, m_oracle), wer


def percentile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) by linear interpolation between the sorted values."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (pos - lo)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--utts", type=int, nargs="+", default=[1000], help="utterances of each population member")
    ap.add_argument("--nbest", type=int, nargs="+", default=[10, 100], help="entries per list of each member")
    ap.add_argument("--sources", nargs="+", default=list(SOURCES), choices=SOURCES)
    ap.add_argument("--rounds", type=int, default=2, help="runs of each member, each beside its own sclite run")
    ap.add_argument("--sclite-utts", type=int, default=1000,
                    help="sclite runs on at most this many utterances (its time extrapolated linearly beyond)")
    ap.add_argument("--workdir", default="/tmp/bench_nbest_lists")
    ap.add_argument("--sclite", default=shutil.which("sclite") or "/usr/lib/sctk/bin/sclite")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")
    rows = []
    for utts in args.utts:
        for nbest in args.nbest:
            work = Path(args.workdir) / f"{utts}x{nbest}"
            work.mkdir(parents=True, exist_ok=True)
            if not (work / "nbest.jsonl").exists():
                make_data(work, utts, nbest)
            m = min(args.sclite_utts, utts)
            ctm = work / f"nbest{m}.ctm"
            if not ctm.exists():
                write_altctm(work, m)
            for rnd in range(args.rounds):
                for source in args.sources:  # ours and sclite alternate: A B A B ...
                    cpu, rss, wer = ours(work, source, env)
                    t_sclite, rss_sclite, rep = timed([args.sclite, "-h", str(ctm), "ctm", "-r",
                                                       str(work / f"ref{m}.stm"), "stm", "-o", "sum", "stdout"])
                    wrd, err = sclite_errors(rep)
                    sclite_cpu = t_sclite * utts / m
                    rows.append((f"{utts} x {nbest}-best {source}", rnd, cpu, rss, wer, sclite_cpu, rss_sclite,
                                 err, m < utts))
    print(f"\nload: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")
    print("| member | round | lattice-tools CPU s | peak MB | oracle WER % | sclite CPU s | peak MB | sclite Err % | "
          "ratio |\n|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for name, rnd, cpu, rss, wer, sclite_cpu, rss_sclite, err, extrapolated in rows:
        ratio = cpu / sclite_cpu
        ratios.append(ratio)
        mark = " (extrapolated)" if extrapolated else ""
        print(f"| {name} | {rnd + 1} | {cpu:.2f} | {rss / 1024:.0f} | {wer:.2f} | {sclite_cpu:.2f}{mark} | "
              f"{rss_sclite / 1024:.0f} | {err:.1f} | {ratio:.3f} |")
    print(f"\nratio lattice-tools / sclite (CPU) over {len(ratios)} runs: worst {max(ratios):.3f}, "
          f"p95 {percentile(ratios, 0.95):.3f}, median {statistics.median(ratios):.3f}; target <= 0.1")


if __name__ == "__main__":
    main()
