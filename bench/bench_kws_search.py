#!/usr/bin/env python3
"""Keyword-search look-up speed: ``lattice-tools kws search`` of every term of a lattice index, whole
processes, this source tree side by side with another version of lattice-tools (``--peer``: a source tree
with its kernels built, e.g. ``git archive <commit> | tar -x -C DIR`` then ``python setup.py build_ext
--inplace`` in DIR), and a check that both write the same detections byte for byte.

Usage: python bench/bench_kws_search.py --peer DIR [--repeat 2] [--keep DIR]

Each tree builds its own index (``kws index``, its own file format) of the bundled lattices
(``tests/data/kaldi/lats/bundled.ark.gz``: 10 utterances, 56,433 terms of 1 to 3 words, 86,347 hits);
the keyword list is every term the index holds, so a search is 56,433 look-ups (nearly all of one or two
hits per utterance).  Runs are interleaved (peer, ours, peer, ours...); each run's CPU time (user + system
of the child process, the steadier figure on a shared machine) and peak RSS are printed, then the best of
each.

Measured on the shared 2-core machine (CPU time, runs interleaved, 3 runs each):

  peer = the row-per-hit index (39d5d56), load 6.6-7.1:
      peer 2.69 / 2.33 / 2.36 s, ours 2.51 / 2.05 / 2.35 s (best 2.33 vs 2.05); 80 MB peak RSS both
  peer = posting lists decoded with numpy (31e2f08), load 6.6-7.1:
      peer 5.21 / 4.73 / 5.72 s, ours 2.20 / 2.33 / 2.62 s (best 4.73 vs 2.20)
  load 1.5-1.7 (CPU times higher than at load 7 on this machine, for both), the same two peers:
      row-per-hit: peer 2.96 / 2.86 / 2.80 s, ours 2.77 / 2.86 / 2.67 s (best 2.80 vs 2.67)
      numpy:       peer 5.85 / 6.14 / 6.99 s, ours 2.61 / 3.04 / 2.73 s (best 5.85 vs 2.61)
  Detections identical in every run (59,257 lines).  With numpy each look-up decoded its one- or
  two-hit lists with some twenty numpy calls, most of its time.

Commands:
  python bench/bench_kws_search.py --peer /tmp/lattice-tools-39d5d56 --repeat 3
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LATS = REPO / "tests" / "data" / "kaldi" / "lats"


def _env(tree: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")


def build(tree: Path, work: Path, name: str) -> Path:
    """``tree``'s index of the bundled lattices."""
    db = work / f"{name}.db"
    subprocess.run([sys.executable, "-m", "lattice_tools", "kws", "index", f"ark,t:{LATS / 'bundled.ark.gz'}",
                    "--words", str(LATS / "bundled.words.txt"), "-o", str(db)],
                   env=_env(tree), check=True, stdout=subprocess.DEVNULL, cwd=work)  # (not the repo: -m would find it)
    return db


def write_terms(db: Path, out: Path) -> int:
    """Every term of our index as a Kaldi keyword list ``KWID word [word ...]``."""
    sys.path.insert(0, str(REPO))
    from lattice_tools.kws.store import TermIndex

    with TermIndex(str(db)) as index:
        terms = index.terms()
    out.write_text("".join(f"KW-{i:06d} {t}\n" for i, t in enumerate(terms)), encoding="utf-8")
    return len(terms)


def search(tree: Path, db: Path, kwlist: Path, out: Path) -> tuple[float, int]:
    """CPU seconds (user + system) and peak RSS (KiB) of one ``kws search`` process of ``tree``."""
    cmd = [sys.executable, "-m", "lattice_tools", "kws", "search", str(db), "--kwlist", str(kwlist), "-o", str(out)]
    pid = os.fork()
    if pid == 0:  # the child: exactly the command, its own usage measured by wait4
        try:
            os.chdir(out.parent)  # not the repo: python -m finds a package in the working folder first
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.execve(sys.executable, cmd, _env(tree))
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"kws search of {tree} failed (exit status {os.waitstatus_to_exitcode(status)})")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", required=True, type=Path, help="another lattice-tools source tree (kernels built)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="keep the indexes and detections in this folder")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-kws-search-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        trees = {"peer": args.peer.resolve(), "ours": REPO}
        dbs = {name: build(tree, work, name) for name, tree in trees.items()}
        kwlist = work / "terms.txt"
        n = write_terms(dbs["ours"], kwlist)
        print(f"{n} terms; load {os.getloadavg()[0]:.1f}", flush=True)
        times: dict[str, list[float]] = {"peer": [], "ours": []}
        outs = {}
        for r in range(args.repeat):
            for name, tree in trees.items():
                out = work / f"hits.{name}.tsv"
                cpu, rss = search(tree, dbs[name], kwlist, out)
                times[name].append(cpu)
                outs[name] = out.read_bytes()
                print(f"run {r + 1} {name}: {cpu:.2f} s CPU, {rss / 1024:.0f} MB peak RSS", flush=True)
            if outs["peer"] != outs["ours"]:
                raise SystemExit("the detections differ")
        print(f"load {os.getloadavg()[0]:.1f}; best CPU: peer {min(times['peer']):.2f} s, ours "
              f"{min(times['ours']):.2f} s; detections identical ({len(outs['ours'].splitlines())} lines)")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
