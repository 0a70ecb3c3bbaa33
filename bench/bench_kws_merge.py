"""Benchmark: ``kws merge`` of two index shards against the CPU seconds of building them.

The corpus of ``bench/bench_parallel.py`` (the bundled recordings' real Kaldi lattices copied under new keys)
at ``--size`` utterances, in two halves; each half indexed by ``kws index`` (whole processes, cached in
``--workdir``; their CPU seconds are measured when they are built, and given again with ``--build-cpu`` when the
shards are cached), then merged ``--rounds`` times.  With ``--baseline DIR`` (a checkout of another version,
its compiled kernels built), each round runs that version's merge and this tree's, interleaved (A B A B ...),
and checks that both merged files are the same bytes.  Prints for every run the CPU seconds (user + sys of
the whole process), the peak RSS and merge/build, and the load average before and after: on a shared
machine compare CPU seconds, never wall time.

Usage::

    python bench/bench_kws_merge.py [--workdir /tmp/bench_kws_merge] [--size 1000] [--rounds 2]
                                    [--baseline /path/to/other/checkout] [--build-cpu SECONDS]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_parallel import WORDS, make_corpus  # noqa: E402


def timed(cmd: list[str], tree: Path) -> tuple[float, float]:
    """CPU seconds (user + sys) and peak RSS in MB of ``cmd`` run with ``tree`` first on the path."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *cmd], env=env, cwd=tree, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    user, system, rss_kb = proc.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system), int(rss_kb) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default="/tmp/bench_kws_merge")
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline", help="a checkout of another version whose merge runs interleaved with this one")
    ap.add_argument("--build-cpu", type=float, help="the shards' build CPU seconds, when they are cached")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    exe = [sys.executable, "-m", "lattice_tools"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    half = args.size // 2
    shards, build = [], 0.0
    for k, (start, count) in enumerate(((0, half), (half, args.size - half))):
        part, shard = work / f"corpus{args.size}.part{k}.ark", work / f"shard{args.size}.{k}.db"
        if not part.exists():
            make_corpus(part, count, start)
        if not shard.exists():
            cpu, mb = timed([*exe, "kws", "index", str(part), "--words", str(WORDS), "-o", str(shard)], REPO)
            print(f"build shard {k}: {cpu:.2f} CPU s, {mb:.0f} MB", flush=True)
            build += cpu
        shards.append(str(shard))
    if args.build_cpu is not None:
        build = args.build_cpu
    trees = [("this", REPO)] + ([("baseline", Path(args.baseline).resolve())] if args.baseline else [])
    for r in range(args.rounds):
        outputs = []
        for name, tree in trees:
            out = work / f"merged.{name}.db"
            cpu, mb = timed([*exe, "kws", "merge", *shards, "-o", str(out)], tree)
            share = f", merge/build {100 * cpu / build:.1f} %" if build else ""
            print(f"round {r + 1} {name}: merge {cpu:.2f} CPU s, {mb:.0f} MB{share}", flush=True)
            outputs.append(out.read_bytes())
        if len(outputs) > 1:
            print(f"round {r + 1}: merged files {'identical' if outputs[0] == outputs[1] else 'DIFFERENT'}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
