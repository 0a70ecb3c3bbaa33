#!/usr/bin/env python3
"""Benchmark: N-best lists read, merged into lattices and scored, side by side with sclite on their alt-CTM.

Synthetic data (seeded): ``--utts`` utterances, each a ``--nbest``-best list in the generic TSV format
(a random 12-word reference over a 2,000-word vocabulary; every entry is that reference with 1-4 random
substitutions, deletions or insertions, word times 0.3 s apart, log-probability scores) and an STM
reference.  Two whole-process pipelines compute the same number, the oracle WER of the N-best lists:

* lattice-tools: ``nbest-to-lattices`` (read and merge, ``join=paths``: the lattice's paths are the
  entries) then ``oracle`` (exact lattice oracle, sclite's weights and tie rules);
* sclite: ``sclite -h nbest.ctm ctm -r ref.stm stm -o sum`` on the N-best alt-CTM (one ALT block per
  utterance with every entry), which scores the best-matching alternative of each block.

Usage: python bench/bench_nbest_lists.py [--utts 10000] [--nbest 100] [--sclite-utts 500] [--workdir DIR]

sclite's time grows with the block size; when ``--sclite-utts`` is below ``--utts`` it runs on the
first ``--sclite-utts`` utterances only and the script prints its time per utterance and the ratio
at equal utterance counts (a linear extrapolation, marked as such), after checking that both tools
give the same errors on that subset.

Measured 2026-11-29 on the shared 2-core machine (CPU seconds of each process; wall times were 3-5x
larger under the other jobs' load):

* 10,000 utterances x 100-best (1,000,000 entries, 209 MB TSV): lattice-tools ``nbest-to-lattices``
  112.5 s (1.12 GB Kaldi archive: the word alignments are written frame by frame) + ``oracle`` 106.1 s
  = 218.6 s; sclite on the 430 MB alt-CTM 176.0 s.  Ratio 1.24: the target of 0.1x is **not** met.
  Both find 8,616 errors in 120,000 words (7.18%; sclite prints 7.2), but they split them
  differently: lattice-tools 7,255 deletions and 1,361 insertions, sclite 3.2% deletions and
  4.0% insertions.  Deletions and insertions cost the same (3), so several entries tie, and the lattice
  oracle and sclite's ALT-block choice pick different ones.
* 200 utterances x 100-best: lattice-tools 2.1 + 2.0 = 4.1 s, sclite 1.9 s; both 7.5% WER
  (lattice-tools: 181 / 2400 errors).
* In one process, per utterance of 100 entries: reading 1.9 ms, merging 3.3 ms, lattice oracle
  3.2 ms (pure Python merge; the rest is process start-up and the Kaldi archive in between).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def make_data(workdir: Path, utts: int, nbest: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(2000)]
    with open(workdir / "nbest.tsv", "w") as tsv, open(workdir / "ref.stm", "w") as stm:
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
                times = " ".join(f"{0.3 * i:.2f}:{0.3 * i + 0.25:.2f}" for i in range(len(words)))
                tsv.write(f"{key}\t{rank}\t{-rank * 0.5 - rng.random():.4f}\t{' '.join(words)}\t{times}\n")


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


def timed(cmd: list[str], env=None) -> tuple[float, str]:
    """CPU seconds (user + system) of the child process, and its output.  CPU time, not wall time: the
    benchmark machine is shared, and wall time there measures the other jobs too."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"  [{cpu:.1f} s CPU, {wall:.1f} s wall] {' '.join(os.path.basename(c) for c in cmd[:4])} ...", flush=True)
    return cpu, proc.stdout + proc.stderr


def sclite_errors(out: str) -> tuple[int, int]:
    """(#Wrd, Err) of the Sum/Avg line of sclite's sum report."""
    for line in out.splitlines():
        if "Sum/Avg" in line:
            nums = re.findall(r"[0-9.]+", line)
            # | Sum/Avg | #Snt #Wrd | Corr Sub Del Ins Err S.Err |  (percentages)
            return int(nums[1]), float(nums[6])
    raise SystemExit("no Sum/Avg line in sclite's report")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--utts", type=int, default=10000)
    ap.add_argument("--nbest", type=int, default=100)
    ap.add_argument("--sclite-utts", type=int, default=500)
    ap.add_argument("--workdir", default="/tmp/bench_nbest_lists")
    ap.add_argument("--sclite", default=shutil.which("sclite") or "/usr/lib/sctk/bin/sclite")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    lt = [sys.executable, "-m", "lattice_tools"]
    if not (work / "nbest.tsv").exists():
        make_data(work, args.utts, args.nbest)

    t_merge, _ = timed(lt + ["nbest-to-lattices", str(work / "nbest.tsv"), "-o", f"ark:{work / 'nbest.ark'}",
                             "--write-words", str(work / "words.txt")], env)
    t_oracle, out = timed(lt + ["oracle", f"ark:{work / 'nbest.ark'}", "--words", str(work / "words.txt"),
                                "-r", str(work / "ref.stm"), "--json", str(work / "oracle.json")], env)
    ours = t_merge + t_oracle
    print(f"lattice-tools, {args.utts} utterances x {args.nbest}-best: nbest-to-lattices {t_merge:.1f} s + "
          f"oracle {t_oracle:.1f} s = {ours:.1f} s CPU")

    m = min(args.sclite_utts, args.utts)
    ctm = write_altctm(work, m)
    t_sclite, rep = timed([args.sclite, "-h", str(ctm), "ctm", "-r", str(work / f"ref{m}.stm"), "stm", "-o", "sum",
                           "stdout"])
    wrd, err = sclite_errors(rep)
    print(f"sclite on the alt-CTM of {m} utterances: {t_sclite:.1f} s CPU (#Wrd {wrd}, Err {err}%)")
    if m == args.utts:
        with open(work / "oracle.json") as f:
            print(f"lattice-tools oracle WER on the same utterances: {100 * json.load(f)['wer']:.2f}%")
    else:  # the same subset through lattice-tools, to check that the numbers agree
        sub_tsv = work / f"nbest{m}.tsv"
        keep = {f"utt{u:05d}" for u in range(m)}
        with open(work / "nbest.tsv") as f, open(sub_tsv, "w") as g:
            g.writelines(line for line in f if line.split("\t", 1)[0] in keep)
        timed(lt + ["nbest-to-lattices", str(sub_tsv), "-o", f"ark:{work / 'sub.ark'}", "--write-words",
                    str(work / "sub.words.txt")], env)
        _, sub = timed(lt + ["oracle", f"ark:{work / 'sub.ark'}", "--words", str(work / "sub.words.txt"), "-r",
                             str(work / f"ref{m}.stm")], env)
        print("lattice-tools oracle on the same subset:\n" + "\n".join(
            line for line in sub.splitlines() if line.strip())[-600:])
    per_utt_sclite = t_sclite / m
    if m < args.utts:
        print(f"ratio lattice-tools / sclite at {args.utts} utterances (sclite extrapolated linearly from {m}): "
              f"{ours / (per_utt_sclite * args.utts):.4f}")
    else:
        print(f"ratio lattice-tools / sclite: {ours / t_sclite:.4f}")


if __name__ == "__main__":
    main()
