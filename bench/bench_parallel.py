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
* ``kws-index``: the term index of the whole lattices (``kws index``, terms of up to 3 words; the SQLite file);
  and the merge of shards: the corpus' two halves indexed separately (serially), then ``kws merge``d, whose
  CPU seconds are reported against the two builds' (``merge/build``);
* ``kws-search``: the serial run's index searched for a keyword list of every ``--search-stride``-th term it
  holds (``kws search``, a TSV of detections).

For each size and job it runs whole processes:

* the serial run: CPU seconds (user + system of the process);
* ``--jobs N`` for each N in ``--workers``: wall seconds, the peak RSS of the driver and of the largest worker
  (sampled every 0.2 s from /proc), output bytes compared with the serial run;

and prints throughput (utterances per second), parallel efficiency (serial CPU seconds / (N × wall
seconds)) and the peak memory, so that "per-worker memory flat from 10^3 to 10^5 utterances" and
"efficiency at 2 workers" can be read off.  Wall-clock figures mean something only on a quiet machine
(the load average is printed first and last); the CPU and memory figures do not depend on the load.

**Scheduling overhead**, measured in CPU seconds, so that other work on the machine does not change it.
Every run sets ``LATTICE_TOOLS_SHARD_CPU`` (see :mod:`lattice_tools.core.parallel`): the driver process
reports ``task_cpu``, the CPU seconds spent inside the job's shard function summed over all tasks (measured
by the thread that ran each task: a worker, or the driver in a serial run), and ``process_cpu``, its own
CPU seconds.  With ``T1``, ``P1`` these figures of the serial run and ``TN``, ``PN`` those of the run on N
workers (``P1 - T1`` is the serial driver's own work: reading, checking, writing)::

    overhead = (TN - T1) + (PN - (P1 - T1))      # CPU seconds
    overhead % = 100 * overhead / P1

the extra CPU the tasks took on the workers (unpickling is outside it: see below) plus the driver's CPU
beyond the serial driver's work (pickling shards, the in-process Dask scheduler and client, unpickling
results, starting and stopping the cluster).  Reported separately, ``outside_s``: the CPU seconds of the
cluster's other processes and of the workers outside their tasks (total CPU of the process tree, from
``getrusage``, minus ``PN`` and ``TN``): Python start-up and imports in every worker and nanny (a fixed
~2-4 s per worker), Dask's heartbeats, task (de)serialization.

Usage::

    python bench/bench_parallel.py [--workdir /tmp/bench_parallel] [--sizes 1000,10000] [--workers 2]
                                   [--jobs sausage,phrases,oracle,score,convert,kws-index,kws-search]
                                   [--search-stride 4]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


WORDS = REPO / "tests" / "data" / "kaldi" / "lats" / "bundled.words.txt"


def make_corpus(path: Path, utterances: int, start: int = 0) -> None:
    from lattice_tools.io.lattices.lattice_files import read_lattices, write_lattices

    lats = REPO / "tests" / "data" / "kaldi" / "lats"
    sources = list(read_lattices(str(lats / "bundled.ark.gz"), symbols=str(WORDS)))

    def copies():
        for i in range(start, start + utterances):
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


def run(cmd: list[str], cpu_log: Path | None = None) -> dict:
    env = dict(os.environ)
    if cpu_log is not None:
        cpu_log.unlink(missing_ok=True)
        env["LATTICE_TOOLS_SHARD_CPU"] = str(cpu_log)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # stderr goes to a file: a pipe read only at the end fills with progress output and blocks the command
    err_file = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_file, text=True, env=env)
    driver_peak = worker_peak = 0
    while proc.poll() is None:
        rss = _tree_rss(proc.pid)
        driver_peak = max(driver_peak, rss.get(proc.pid, 0))
        worker_peak = max([worker_peak] + [v for p, v in rss.items() if p != proc.pid])
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    err_file.seek(0)
    err = err_file.read()[-2000:]
    err_file.close()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = {"wall": wall, "cpu": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
           "driver_mb": driver_peak / 2**20, "worker_mb": worker_peak / 2**20}
    if cpu_log is not None:
        lines = cpu_log.read_text().splitlines() if cpu_log.exists() else []
        if len(lines) != 1:
            raise SystemExit(f"{' '.join(cmd)}: expected one task-CPU report in {cpu_log}, found {len(lines)}")
        report = json.loads(lines[0])
        out.update(task_cpu=report["task_cpu"], tasks=report["tasks"], driver_cpu=report["process_cpu"])
    return out


def make_kwlist(index: Path, path: Path, stride: int) -> int:
    """Every ``stride``-th distinct term of ``index`` (in SQLite's term order) as lines 'KWID words'."""
    import sqlite3

    with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as conn:
        terms = [t for (t,) in conn.execute("SELECT DISTINCT term FROM postings ORDER BY term")][::stride]
    path.write_text("".join(f"KW-{i:06d} {t}\n" for i, t in enumerate(terms)))
    return len(terms)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default="/tmp/bench_parallel")
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--workers", default="2")
    ap.add_argument("--jobs", default="sausage,phrases,oracle,score,convert,kws-index,kws-search")
    ap.add_argument("--search-stride", type=int, default=4, help="kws-search: every this-many-th term of the index.")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    exe = [sys.executable, "-m", "lattice_tools"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("size\tjob\tworkers\twall_s\tcpu_s\tcpu_ms_per_utt\tutt_per_s\tefficiency\tdriver_MB\tworker_MB\t"
          "tasks\ttask_cpu_s\tdriver_cpu_s\toverhead_s\toverhead_%\toutside_s\tidentical")
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
                if job == "kws-search":
                    index, kwlist = work / f"kws-index{size}.serial.out", work / f"kwlist{size}.txt"
                    if not index.exists():
                        run([*exe, "kws", "index", str(corpus), "--words", str(WORDS), "-o", str(index)])
                    if not kwlist.exists():
                        make_kwlist(index, kwlist, args.search_stride)
                    return [*exe, "kws", "search", str(index), "--kwlist", str(kwlist), "-o", str(out),
                            "--out-format", "tsv"]
                if job == "score":
                    hyp = work / f"sausage{size}.serial.ctm"
                    if not hyp.exists():
                        run([*exe, "sausage", str(corpus), "--words", str(WORDS), "-n", "10", "-o", str(hyp)])
                    return [*exe, "score", "-r", str(stm), "-h", str(hyp), "-F", "--json", str(out)]
                return [*exe, job, str(corpus), "--words", str(WORDS), "-n", "100" if job == "phrases" else "10",
                        "-o", str(out)]

            serial_out = work / f"{job}{size}.serial.out"
            if job in ("score", "kws-search"):
                command(serial_out)   # makes the inputs first, outside the timing
            log = work / "shard_cpu.jsonl"
            serial = run(command(serial_out), log)
            t1, p1 = serial["task_cpu"], serial["driver_cpu"]

            def row(n, r, efficiency, worker_mb, same, size=size, job=job, t1=t1, p1=p1):
                if n == 1:   # the serial run: its own reference
                    overhead = outside = 0.0
                else:
                    overhead = (r["task_cpu"] - t1) + (r["driver_cpu"] - (p1 - t1))
                    outside = r["cpu"] - r["driver_cpu"] - r["task_cpu"]
                print(f"{size}\t{job}\t{n}\t{r['wall']:.2f}\t{r['cpu']:.2f}\t{1000 * r['cpu'] / size:.2f}\t"
                      f"{size / r['wall']:.0f}\t{efficiency}\t{r['driver_mb']:.0f}\t{worker_mb}\t{r['tasks']}\t"
                      f"{r['task_cpu']:.2f}\t{r['driver_cpu']:.2f}\t{overhead:.2f}\t{100 * overhead / p1:.1f}\t"
                      f"{outside:.2f}\t{same}", flush=True)

            row(1, serial, "1.00", "-", "yes")
            for n in map(int, args.workers.split(",")):
                out = work / f"{job}{size}.jobs{n}.out"
                r = run([*command(out), "--jobs", str(n)], log)
                same = out.read_bytes() == serial_out.read_bytes()
                row(n, r, f"{serial['cpu'] / (n * r['wall']):.2f}", f"{r['worker_mb']:.0f}", "yes" if same else "NO")
            if job == "kws-index":
                half = size // 2
                parts = []
                for k, (start, count) in enumerate(((0, half), (half, size - half))):
                    part = work / f"corpus{size}.part{k}.ark"
                    if not part.exists():
                        make_corpus(part, count, start)
                    parts.append(run([*exe, "kws", "index", str(part), "--words", str(WORDS), "-o",
                                      str(work / f"kws-index{size}.part{k}.out")]))
                merged = run([*exe, "kws", "merge", *(str(work / f"kws-index{size}.part{k}.out") for k in (0, 1)),
                              "-o", str(work / f"kws-index{size}.merged.out")])
                build = sum(p["cpu"] for p in parts)
                print(f"{size}\tkws-merge\t2 shards\tbuild CPU {build:.2f} s, merge CPU {merged['cpu']:.2f} s "
                      f"(wall {merged['wall']:.2f} s): merge/build {100 * merged['cpu'] / build:.1f} %", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")

if __name__ == "__main__":
    main()
