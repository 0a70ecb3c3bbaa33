"""Benchmark: what the alt-CTM statistic ``MB`` (the zlib level-9 gzip size of the text written) costs the driver
of a sausage/phrases job, and whether the workers could compute it instead with the same number.

The corpus is ``bench/bench_parallel.py``'s (the bundled Kaldi lattices copied round-robin into a text archive of
``--utterances`` utterances, cached in ``--workdir``).  For each job (``sausage -n 10``, ``phrases -n 100``):

* the whole serial command as a child process: its CPU seconds (user + system);
* the same job in this process, with the writer recording the pieces of text it is given (one per shard, exactly
  what :class:`~lattice_tools.io.transcripts.altctm.AlternativesCtmWriter` compresses), then the CPU seconds of
  compressing those pieces as the writer does (one ``zlib.compressobj(9, DEFLATED, 31)``; best of ``--repeat``),
  checked to give the job's own ``gzip_bytes``;
* the byte counts of the ways a worker could compress its own shard: one stream with ``Z_FULL_FLUSH`` after every
  shard (each piece then decodes without the others' history), ``Z_SYNC_FLUSH`` after every shard (byte-aligned
  pieces, history kept: a worker could not produce its piece without the previous shards' text), and one gzip
  stream per shard; each against the one stream the statistic reports.

A level-9 deflate stream's bytes depend on everything before them (the 32 KB window, the hash chains, where its
blocks end, the bit position), so a piece a worker compresses alone is a different number; the bench prints by
how much.

Usage::

    python bench/bench_altctm_gzip.py [--workdir /tmp/bench_parallel] [--utterances 1000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

JOBS = {"sausage": ["-n", "10"], "phrases": ["-n", "100"]}


def child_cpu(cmd: list[str]) -> float:
    """CPU seconds (user + system) of the child process running ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def recorded_pieces(kind: str, n: int, corpus: Path, words: Path, out: Path):
    """The pieces of text the job's writer compresses, and the job's statistics."""
    import lattice_tools.alternatives.lattices_to_ctm as job_module
    from lattice_tools.io.transcripts.altctm import AlternativesCtmWriter

    pieces: list[bytes] = []

    class Recording(AlternativesCtmWriter):
        def _emit(self, text: str) -> None:
            pieces.append(text.encode("utf-8"))
            super()._emit(text)

    saved = job_module.AlternativesCtmWriter
    job_module.AlternativesCtmWriter = Recording
    try:
        summary = job_module.make_alternatives_ctm([str(corpus)], kind, n, str(out), words=str(words), progress=False)
    finally:
        job_module.AlternativesCtmWriter = saved
    return pieces, summary.statistics


def gzip_size(pieces: list[bytes], flush: int | None = None) -> int:
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    size = 0
    for piece in pieces:
        size += len(gz.compress(piece))
        if flush is not None:
            size += len(gz.flush(flush))
    return size + len(gz.flush())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default="/tmp/bench_parallel")
    ap.add_argument("--utterances", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from bench_parallel import WORDS, make_corpus

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / f"corpus{args.utterances}.ark"
    if not corpus.exists():
        make_corpus(corpus, args.utterances)
    print(f"load average at start: {os.getloadavg()}")
    for kind, options in JOBS.items():
        out = work / f"gzip-{kind}{args.utterances}.ctm"
        total = child_cpu([sys.executable, "-m", "lattice_tools", kind, str(corpus), "--words", str(WORDS), *options,
                           "-o", str(out)])
        pieces, stats = recorded_pieces(kind, int(options[1]), corpus, WORDS, work / f"gzip-{kind}.inproc.ctm")
        seconds = []
        for _ in range(args.repeat):
            t = time.process_time()
            single = gzip_size(pieces)
            seconds.append(time.process_time() - t)
        assert single == stats.gzip_bytes, (single, stats.gzip_bytes)
        full = gzip_size(pieces, zlib.Z_FULL_FLUSH)
        sync = gzip_size(pieces, zlib.Z_SYNC_FLUSH)
        separate = sum(gzip_size([piece]) for piece in pieces)
        print(f"{kind} {' '.join(options)}: {args.utterances} utterances, {len(pieces)} pieces, {stats.bytes} bytes; "
              f"serial command {total:.2f} CPU s; zlib-9 of its text {min(seconds):.3f} CPU s "
              f"({100 * min(seconds) / total:.1f} %; runs {', '.join(f'{s:.3f}' for s in seconds)})")
        for name, size in (("one stream (the statistic)", single), ("Z_FULL_FLUSH per piece", full),
                           ("Z_SYNC_FLUSH per piece", sync), ("one gzip stream per piece", separate)):
            print(f"    {name:28s} {size:>10d} bytes ({size - single:+d})")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
