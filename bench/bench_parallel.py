"""Benchmark: corpus-level jobs on several worker processes (``--jobs N``), against one process.

A synthetic corpus: the bundled recordings' real Kaldi lattices (tests/data/kaldi/lats/bundled.ark.gz: pocketsphinx
decodes of the 10 bundled clips) copied round-robin under new keys into Kaldi text archives of
10^3, 10^4, 10^5 utterances (``--sizes``), cached in ``--workdir``, with the matching references (the bundled
reference words, as a Kaldi ``text`` file and as an STM of one segment per utterance).  The jobs (``--jobs``):

* ``sausage`` (``-n 10``) and ``phrases`` (``-n 100``): lattices to alt-CTM;
* ``oracle``: phrase-alternative oracle WER (``--representation phrase -n 10 --bootstrap 100 --json``);
* ``score``: the sausage alt-CTM scored against the STM with ``-F`` (sclite's fragment rule: the general engine,
  whose alignments run on the workers) and ``--json``;
* ``convert``: the text archive to a binary Kaldi archive (the records are formatted on the workers);
* ``kws-index``: the term index of the whole lattices (``kws index``, terms of up to 3 words; the SQLite file).

For each size and job it runs whole processes:

* the serial run: CPU seconds (user + system of the process);
* ``--jobs N`` for each N in ``--workers``: wall seconds, the peak RSS of the driver and of the largest worker
  (sampled every 0.2 s from /proc), output bytes compared with the serial run;

and prints throughput (utterances per second), parallel efficiency (serial CPU seconds / (N × wall
seconds)) and the peak memory, so that "per-worker memory flat from 10^3 to 10^5 utterances" and
"efficiency at 2 workers" can be read off.  The machine is shared: run it on a quiet machine (the load
average is printed first).

Usage::

    python bench/bench_parallel.py [--workdir /tmp/bench_parallel] [--sizes 1000,10000] [--workers 2]
                                   [--jobs sausage,phrases,oracle,score,convert,kws-index]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


WORDS = REPO / "tests" / "data" / "kaldi" / "lats" / "bundled.words.txt"


def make_corpus(path: Path, utterances: int) -> None:
    from lattice_tools.io.lattices.lattice_files import read_lattices, write_lattices

    lats = REPO / "tests" / "data" / "kaldi" / "lats"
    sources = list(read_lattices(str(lats / "bundled.ark.gz"), symbols=str(WORDS)))

    def copies():
        for i in range(utterances):
            yield sources[i % len(sources)].with_key(f"utt{i:07d}")

    write_lattices(copies(), f"ark,t:{path}", format="kaldi")


def make_references(work: Path, utterances: int) -> tuple[Path, Path]:
    """The corpus' reference as a Kaldi ``text`` file and as an STM (file = utterance, one segment)."""
    lats = REPO / "tests" / "data" / "kaldi" / "lats"
    words = dict(reversed(line.split()) for line in WORDS.read_text().splitlines())
    refs = [" ".join(words.get(i, "zzunknown") for i in line.split()[1:])   # 999999: a word not in the table
            for line in (lats / "bundled.ref.txt").read_text().splitlines()]
    text, stm = work / f"ref{utterances}.txt", work / f"ref{utterances}.stm"
    if not text.exists():
        text.write_text("".join(f"utt{i:07d} {refs[i % len(refs)]}\n" for i in range(utterances)))
        stm.write_text("".join(f"utt{i:07d} 1 spk 0.000 10000.000 {refs[i % len(refs)]}\n" for i in range(utterances)))
    return text, stm


def _tree_rss(pid: int) -> dict[int, int]:
    """RSS in bytes of ``pid`` and its descendants."""
    out = {}
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                out[p] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            pass
        todo += children.get(p, [])
    return out


def run(cmd: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    driver_peak = worker_peak = 0
    while proc.poll() is None:
        rss = _tree_rss(proc.pid)
        driver_peak = max(driver_peak, rss.get(proc.pid, 0))
        worker_peak = max([worker_peak] + [v for p, v in rss.items() if p != proc.pid])
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    err = proc.stderr.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall": wall, "cpu": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
            "driver_mb": driver_peak / 2**20, "worker_mb": worker_peak / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default="/tmp/bench_parallel")
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--workers", default="2")
    ap.add_argument("--jobs", default="sausage,phrases,oracle,score,convert,kws-index")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    exe = [sys.executable, "-m", "lattice_tools"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("size\tjob\tworkers\twall_s\tcpu_s\tutt_per_s\tefficiency\tdriver_MB\tworker_MB\tidentical")
    for size in map(int, args.sizes.split(",")):
        corpus = work / f"corpus{size}.ark"
        if not corpus.exists():
            make_corpus(corpus, size)
        text, stm = make_references(work, size)
        for job in args.jobs.split(","):
            def command(out, job=job, corpus=corpus, size=size, text=text, stm=stm):
                if job == "oracle":
                    return [*exe, "oracle", str(corpus), "--words", str(WORDS), "-r", str(text), "--representation",
                            "phrase", "-n", "10", "--bootstrap", "100", "--json", str(out)]
                if job == "convert":  # to a binary Kaldi archive: formatting on the workers
                    return [*exe, "convert", str(corpus), "-o", f"ark:{out}"]
                if job == "kws-index":
                    return [*exe, "kws", "index", str(corpus), "--words", str(WORDS), "-o", str(out)]
                if job == "score":
                    hyp = work / f"sausage{size}.serial.ctm"
                    if not hyp.exists():
                        run([*exe, "sausage", str(corpus), "--words", str(WORDS), "-n", "10", "-o", str(hyp)])
                    return [*exe, "score", "-r", str(stm), "-h", str(hyp), "-F", "--json", str(out)]
                return [*exe, job, str(corpus), "--words", str(WORDS), "-n", "100" if job == "phrases" else "10",
                        "-o", str(out)]

            serial_out = work / f"{job}{size}.serial.out"
            if job == "score":
                command(serial_out)   # makes the hypothesis first, outside the timing
            serial = run(command(serial_out))
            print(f"{size}\t{job}\t1\t{serial['wall']:.2f}\t{serial['cpu']:.2f}\t{size / serial['wall']:.0f}\t"
                  f"1.00\t{serial['driver_mb']:.0f}\t-\tyes", flush=True)
            for n in map(int, args.workers.split(",")):
                out = work / f"{job}{size}.jobs{n}.out"
                r = run([*command(out), "--jobs", str(n)])
                same = out.read_bytes() == serial_out.read_bytes()
                print(f"{size}\t{job}\t{n}\t{r['wall']:.2f}\t{r['cpu']:.2f}\t{size / r['wall']:.0f}\t"
                      f"{serial['cpu'] / (n * r['wall']):.2f}\t{r['driver_mb']:.0f}\t{r['worker_mb']:.0f}\t"
                      f"{'yes' if same else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
