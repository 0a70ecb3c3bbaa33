"""Benchmark: term index + search against Kaldi's ``lattice-to-kws-index`` + ``kws-index-union`` +
``kws-search``, on two lattice sets (``--set``):

* ``big``: bench_phrases.py's "big" lattice, one 30 s, ~140k-link pocketsphinx lattice (the bundled
  librivox clips concatenated with sox, 31.5 s, decoded with wide beams).  Decoding takes a few
  minutes, then it is cached in ``--workdir``;
* ``synth``: the larger decoded set of egs/kws_synth (47 espeak-ng utterances, 404 s), its
  ``lattices.list`` given with ``--lattice-list`` (made by ``egs/kws_synth/run.sh --stop-stage 1``).

1. **Ours**: ``build_lattice_index`` (exact lattice posteriors of every 1..3-word sequence, written to
   SQLite), best of ``--repeat`` runs, in seconds and seconds per hour of audio; then the search of a
   1,000-term list (700 single words and 300 word pairs drawn from the index, seed 0) in ms per query.
2. **Kaldi** (when ``lattice-to-kws-index`` is on PATH or in ``$LATTICE_TOOLS_KALDI_BIN``; else skipped
   with a message): the same lattice (costs pre-scaled by ``--acoustic-scale``, written as a Kaldi
   CompactLattice text archive), ``lattice-to-kws-index --max-states-scale=4 --max-silence-frames=50``
   (Kaldi's defaults) | ``kws-index-union``, then ``kws-search`` of the same 1,000 terms.  Wall times of
   the whole processes; whether Kaldi's determinization stopped early (partial index); and how many of
   Kaldi's hits ours has at the same frames and with the same score (within Kaldi's 2^-10 quantization).

3. ``--population``: whole processes on each pocketsphinx lattice of bench/lattice_population.py (23 files,
   1-31.5 s, 1k-138k links; ``--only`` picks some): ``lattice-tools kws index FILE --max-length N`` (user+sys
   CPU and peak RSS from ``wait4``, hits, file size) and Kaldi's ``lattice-to-kws-index
   --max-states-scale=4 --max-silence-frames=50`` on the same lattice (written beforehand as a
   CompactLattice text archive, silence and fillers as epsilon), each stopped after ``--timeout`` s of CPU.
   ``--tree DIR`` measures another source tree (an export of an older commit with its compiled kernels).

Usage::

    nice python bench/bench_kws_index.py --population [--only concat-wide] [--label NAME] [--tree DIR] \
        [--max-length 3] [--no-kaldi] [--timeout 900] [--kaldi-timeout 300]
    nice python bench/bench_kws_index.py --population --max-length 3 --summary LABEL [LABEL ...]
    nice python bench/bench_kws_index.py [--set big|synth] [--workdir /tmp/bench_phrases] \\
        [--lattice-list exp/lattices/lattices.list] [--acoustic-scale 1.0] [--max-length 2] \\
        [--min-posterior 0] [--no-kaldi]

Measured figures are in docs/kws-index.md ("Performance"), with the commands that produced them.  The exact
3-word index against Kaldi over the 23 pocketsphinx lattices, whole processes, 2026-11-29 (2-core machine at
load 9-19; ``--population --max-length 3 --timeout 300``, split with ``--only`` and joined with ``--summary``)::

    lattice            links    ours CPU  peak RSS  file      hits      | Kaldi CPU                  peak RSS  index
    ps-concat-wide   138,343    13.05 s   845 MB   90.7 MB 3,465,841 | did not finish within 289 s  (342 MB)
    ps-convB-wide    101,473    12.68 s   811 MB   85.2 MB 3,655,104 | did not finish within 290 s  (270 MB)
    ps-convA-wide     83,289     6.93 s   472 MB   47.3 MB 1,847,578 | did not finish within 286 s  (327 MB)
    ps-clip0890-wide  28,559     2.80 s   257 MB   19.1 MB   701,108 | 227.42 s (partial)    382 MB   1.4 MB
    ps-short-numbers-wide 8,418  0.57 s    87 MB    2.3 MB   107,499 | did not finish within 293 s   (91 MB)
    all 23, ours: CPU worst 13.05 s, p95 12.68 s, median 0.57 s; peak RSS 845 / 811 / 81 MB; file 90.7 / 85.2 / 2.3 MB
    Kaldi finished 19 of 23 (10 partial): CPU worst and p95 did not finish, median 0.41 s; over the 19 it
    finished worst 227.4 s, p95 16.0 s, median 0.19 s; peak RSS 382 / 145 / 39 MB; index 6.6 / 5.0 / 0.4 MB
"""
from __future__ import annotations

import argparse
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from _alt_helpers import read_slf_lattice  # noqa: E402
from bench_phrases import big_lattice_slf  # noqa: E402

from lattice_tools.io.keyword_search.kwlist import KeywordTerm  # noqa: E402
from lattice_tools.kws.build import build_lattice_index  # noqa: E402
from lattice_tools.kws.index import index_lattice  # noqa: E402
from lattice_tools.kws.search import search  # noqa: E402
from lattice_tools.kws.store import TermIndex  # noqa: E402


def kaldi_bin(name: str) -> str | None:
    d = os.environ.get("LATTICE_TOOLS_KALDI_BIN")
    if d and os.access(os.path.join(d, name), os.X_OK):
        return os.path.join(d, name)
    return shutil.which(name)


def keyword_list(db: str, n_words: int = 700, n_pairs: int = 300, seed: int = 0) -> list[KeywordTerm]:
    with TermIndex(db) as idx:
        terms = idx.terms()
    words = [t for t in terms if len(t.split()) == 1]
    pairs = [t for t in terms if len(t.split()) == 2]
    rng = random.Random(seed)
    chosen = rng.sample(words, min(n_words, len(words))) + rng.sample(pairs, min(n_pairs, len(pairs)))
    return [KeywordTerm(f"KW-{i:04d}", t) for i, t in enumerate(chosen)]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, stdout=None, stdin=None) -> tuple[float, float]:
    """(wall, CPU) seconds of a whole process."""
    t, c = time.perf_counter(), children_cpu()
    subprocess.run(cmd, check=True, stdout=stdout, stdin=stdin, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, children_cpu() - c


def run_kaldi(lats, terms, workdir: str, ours_hits, tag: str, timeout: float | None = None):
    tools = {n: kaldi_bin(n) for n in ("lattice-to-kws-index", "kws-index-union", "transcripts-to-fsts", "kws-search")}
    missing = [n for n, p in tools.items() if p is None]
    if missing:
        print(f"Kaldi: skipped ({', '.join(missing)} not on PATH nor in $LATTICE_TOOLS_KALDI_BIN)")
        return None
    from lattice_tools.alternatives._common import word_labels
    from lattice_tools.io import write_lattices

    symbols = lats[-1].symbols  # the lattices share one growing table: the last one has every word
    ark = os.path.join(workdir, f"kws_{tag}.ark")
    words_txt = os.path.join(workdir, f"kws_{tag}.words.txt")
    # silence and fillers (<sil>, !NULL, <s>, </s>) are epsilons for both indexes
    write_lattices([lat.replace(word=word_labels(lat), ilabel=word_labels(lat)) for lat in lats], f"ark,t:{ark}",
                   format="kaldi")
    symbols.write(words_txt)
    umap = os.path.join(workdir, f"kws_{tag}_utter.map")
    Path(umap).write_text("".join(f"{lat.key} {i}\n" for i, lat in enumerate(lats, 1)))
    kw_ids = os.path.join(workdir, f"kws_{tag}_keywords.int")
    with open(kw_ids, "w") as f:
        for t in terms:
            f.write(t.kwid + " " + " ".join(str(symbols.id(w)) for w in t.words) + "\n")
    index = os.path.join(workdir, f"kws_{tag}_kaldi.index")
    log = os.path.join(workdir, f"kws_{tag}_kaldi.index.log")
    t, c = time.perf_counter(), children_cpu()
    with open(log, "w") as err:
        p1 = subprocess.Popen([tools["lattice-to-kws-index"], "--max-states-scale=4", "--max-silence-frames=50",
                               f"ark:{umap}", f"ark:{ark}", "ark:-"], stdout=subprocess.PIPE, stderr=err)
        try:
            subprocess.run([tools["kws-index-union"], "ark:-", f"ark:{index}"], stdin=p1.stdout, check=True,
                           stderr=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            p1.kill()
            p1.wait()
            print(f"Kaldi: lattice-to-kws-index | kws-index-union did not finish in {timeout:.0f} s of wall time "
                  f"({children_cpu() - c:.1f} s CPU); no index")
            return None
        p1.stdout.close()
        p1.wait()
    t_index, c_index = time.perf_counter() - t, children_cpu() - c
    partial = Path(log).read_text().count("partial results")
    fsts = os.path.join(workdir, f"kws_{tag}_kw.fsts")
    timed([tools["transcripts-to-fsts"], f"ark:{kw_ids}", f"ark:{fsts}"])
    hits_txt = os.path.join(workdir, f"kws_{tag}_kaldi.hits")
    t_search, c_search = timed([tools["kws-search"], "--negative-tolerance=-1", f"ark:{index}", f"ark:{fsts}",
                                f"ark,t:{hits_txt}"])
    utt_of = {str(i): lat.key for i, lat in enumerate(lats, 1)}
    kaldi = defaultdict(list)
    for line in open(hits_txt):
        kw, u, b, e, sc = line.split()
        kaldi[kw].append((utt_of[u], int(b), int(e), float(sc)))
    text = {t.kwid: t.words for t in terms}
    ours = defaultdict(dict)
    for h in ours_hits:
        ours[h.words][(h.utterance, round(h.tbeg * 100), round((h.tbeg + h.dur) * 100))] = h.score
    n_k = sum(map(len, kaldi.values()))
    same = sum(1 for kw, hs in kaldi.items() for u, b, e, sc in hs
               if (u, b, e) in ours[text[kw]]
               and abs(-math.log(max(ours[text[kw]][(u, b, e)], 1e-300)) - sc) <= 2 ** -10 + 1e-9)
    n_ours = sum(len(ours[t.words]) for t in terms)
    print(f"Kaldi: lattice-to-kws-index | kws-index-union {t_index:.2f} s wall, {c_index:.2f} s CPU "
          f"= {c_index / (sum(lat.duration for lat in lats) / 3600):.0f} s CPU per hour of audio"
          f"{f' (determinization stopped early on {partial} of {len(lats)} lattices: PARTIAL index)' if partial else ''}"
          f"; kws-search of {len(terms)} terms {t_search:.2f} s wall, {c_search:.2f} s CPU = "
          f"{1000 * c_search / len(terms):.2f} ms CPU/query (whole process)")
    print(f"Kaldi hits {n_k}, ours for the same terms {n_ours}; Kaldi hits that ours has at the same frames "
          f"with the same score (within 2^-10): {same}/{n_k}")
    return c_index, c_search


def load_set(args):
    """(lattices, seconds of audio, tag) of --set."""
    if args.set == "big":
        lat = read_slf_lattice(big_lattice_slf(args.workdir), "concat")
        lats = [lat]
    else:
        if not args.lattice_list:
            sys.exit("--set synth needs --lattice-list (egs/kws_synth/run.sh --stop-stage 1 makes it)")
        from lattice_tools.io import read_lattice_inputs
        from lattice_tools.pipelines.recipe import read_list

        lats = list(read_lattice_inputs(read_list(args.lattice_list)))
    if args.acoustic_scale != 1.0:  # pre-scale, so that Kaldi (no scale option) sees the same weights
        lats = [lat.replace(acoustic_cost=lat.acoustic_cost * args.acoustic_scale,
                            final_acoustic_cost=lat.final_acoustic_cost * args.acoustic_scale) for lat in lats]
    return lats, sum(lat.duration for lat in lats), args.set


def _measured(cmd: list, env: dict, cpu_limit: float, log: str) -> tuple:
    """(exit code, CPU s user+sys, peak RSS MB) of one whole process, its stderr in ``log``; stopped by the
    kernel after ``cpu_limit`` s of CPU (RLIMIT_CPU: SIGXCPU, exit code -24) -- CPU, not wall time, because the
    shared machine's load makes wall times meaningless."""

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_limit), int(cpu_limit) + 5))

    with open(log, "wb") as err:
        # cwd: ``python -m`` puts the working directory first on sys.path, before PYTHONPATH (--tree)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=limit,
                                cwd=env["PYTHONPATH"].split(os.pathsep)[0])
        _, status, ru = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def population_bench(cache: str, label: str, kaldi: bool, max_length: int, only: list | None,
                     timeout: float, kaldi_timeout: float | None = None) -> None:
    """Whole processes on every pocketsphinx lattice of bench/lattice_population.py: ``lattice-tools kws index
    FILE --max-length N`` (CPU, peak RSS, hits, file size) and, with ``kaldi``, Kaldi's ``lattice-to-kws-index``
    on the same lattice (a CompactLattice text archive written beforehand, untimed)."""
    import json

    import lattice_population as pop

    from lattice_tools.alternatives._common import word_labels
    from lattice_tools.io import write_lattices

    env = pop._env()
    outdir = os.path.join(cache, "kws", label)
    os.makedirs(outdir, exist_ok=True)
    rows = []
    files = [p for p in pop.population(cache) if p[0].startswith("ps-") and (not only or any(o in p[0] for o in only))]
    kaldi_limit = timeout if kaldi_timeout is None else kaldi_timeout
    print(f"{'lattice':<26} {'links':>7} {'ours CPU s':>10} {'RSS MB':>7} {'hits':>9} {'MB':>7}"
          f"{'  Kaldi CPU s  RSS MB      MB  partial' if kaldi else ''}", flush=True)
    for name, path, extra, _secs in files:
        db = os.path.join(outdir, name + ".db")
        js = os.path.join(outdir, name + ".json")
        log = os.path.join(outdir, name + ".log")
        rc, cpu, rss = _measured([*pop._cli(), "kws", "index", path, *extra, "-o", db, "--max-length",
                                  str(max_length), "--json", js], env, timeout, log)
        if rc != 0:
            print(f"{name:<26} ours: exit {rc} after {cpu:.1f} s CPU, {rss:.0f} MB: "
                  f"{(Path(log).read_text().strip().splitlines() or [''])[-1]}", flush=True)
            rows.append(dict(name=name, failed=True))
            continue
        lat = read_slf_lattice(path, name)
        row = dict(name=name, links=lat.num_arcs, cpu=cpu, rss=rss, hits=json.load(open(js))["hits"],
                   mb=os.path.getsize(db) / 1e6)
        line = (f"{name:<26} {lat.num_arcs:7d} {cpu:10.2f} {rss:7.0f} {row['hits']:9d} {row['mb']:7.1f}")
        print(line, end="", flush=True)
        line = ""
        if kaldi:
            tool = kaldi_bin("lattice-to-kws-index")
            ark, umap, index = (os.path.join(outdir, name + x) for x in (".ark", ".utter.map", ".kaldi.index"))
            # silence and fillers (<sil>, !NULL, <s>, </s>) are epsilons for both indexes
            write_lattices([lat.replace(word=word_labels(lat), ilabel=word_labels(lat))], f"ark,t:{ark}",
                           format="kaldi")
            Path(umap).write_text(f"{name} 1\n")
            if os.path.exists(index):
                os.remove(index)
            log = os.path.join(outdir, name + ".kaldi.log")
            krc, kcpu, krss = _measured([tool, "--max-states-scale=4", "--max-silence-frames=50", f"ark:{umap}",
                                         f"ark:{ark}", f"ark:{index}"], env, kaldi_limit, log)
            partial = "partial results" in Path(log).read_text()
            finished = krc == 0
            row.update(kaldi_cpu=kcpu, kaldi_rss=krss, kaldi_rc=krc, kaldi_partial=partial, kaldi_finished=finished,
                       kaldi_mb=os.path.getsize(index) / 1e6 if finished else None)
            if finished:
                line += f"  {kcpu:11.2f} {krss:7.0f} {row['kaldi_mb']:7.1f}  {'yes' if partial else 'no'}"
            else:
                line += (f"  did not finish within {kcpu:.0f} s of CPU (exit {krc}; limit {kaldi_limit:.0f} s; "
                         f"{krss:.0f} MB): no index")
        rows.append(row)
        print(line, flush=True)
        with open(os.path.join(outdir, "results.json"), "w") as f:  # after every lattice: a stopped run keeps its rows
            json.dump(rows, f, indent=1)
    population_summary(rows, max_length, kaldi_limit if kaldi else None)


def population_summary(rows: list, max_length: int, kaldi_limit: float | None) -> None:
    """Worst / p95 / median of ours (and, with ``kaldi_limit``, of Kaldi's runs that finished within it)."""
    import lattice_population as pop

    ok = [r for r in rows if not r.get("failed")]
    print(f"\n{len(ok)} lattices, lattice-tools kws index FILE --max-length {max_length} (whole process):")
    for key, unit in (("cpu", "CPU s"), ("rss", "peak RSS MB"), ("mb", "file MB")):
        worst = max(ok, key=lambda r: r[key])
        print(f"  ours  {unit:<12} {pop._summary([r[key] for r in ok])}   (worst: {worst['name']})")
    if kaldi_limit is not None:
        done = [r for r in ok if r["kaldi_finished"]]
        # SIGXCPU: the CPU limit; SIGKILL: its hard limit; SIGTERM: stopped from outside (a bounded run)
        stopped = [r for r in ok if r["kaldi_rc"] in (-24, -9, -15)]
        failed = [r for r in ok if not r["kaldi_finished"] and r not in stopped]
        n_partial = sum(r["kaldi_partial"] for r in done)
        print(f"Kaldi lattice-to-kws-index --max-states-scale=4 --max-silence-frames=50: {len(done)} of {len(ok)} "
              f"lattices finished ({n_partial} of them with a partial index: its determinization stopped early); "
              f"limit {kaldi_limit:.0f} s of CPU per lattice")
        for r in stopped:
            print(f"  {r['name']}: did not finish within {r['kaldi_cpu']:.0f} s of CPU (stopped "
                  f"{'at the limit' if r['kaldi_rc'] != -15 else 'from outside'}; {r['kaldi_rss']:.0f} MB then; "
                  f"ours {r['cpu']:.1f} s, {r['rss']:.0f} MB)")
        for r in failed:
            print(f"  {r['name']}: FAILED (exit {r['kaldi_rc']} after {r['kaldi_cpu']:.1f} s)")
        if failed:
            return
        # CPU over every lattice, a stopped run counting as more than the CPU it had: valid ranks only while every
        # stopped run had more CPU than any finished one; a statistic that lands on one is a lower bound
        finished_max = max((r["kaldi_cpu"] for r in done), default=0.0)
        if stopped and min(r["kaldi_cpu"] for r in stopped) <= finished_max:
            print("  (a run was stopped before the slowest finished one: no ranks over all lattices)")
        else:
            floor = min((r["kaldi_cpu"] for r in stopped), default=0.0)
            cpus = sorted(math.inf if r in stopped else r["kaldi_cpu"] for r in ok)
            p95 = cpus[min(len(cpus) - 1, max(0, int(round(0.95 * len(cpus))) - 1))]
            n = len(cpus)
            med = cpus[(n - 1) // 2] if n % 2 else (cpus[n // 2 - 1] + cpus[n // 2]) / 2

            def show(v):
                return f"> {floor:.0f}" if math.isinf(v) else f"{v:.3f}"

            print(f"  Kaldi CPU s        worst {show(cpus[-1])}  p95 {show(p95)}  median {show(med)}   (all {n} "
                  f"lattices; a stopped run counts as more than it had)")
        if done:
            print(f"  over the {len(done)} lattices Kaldi finished (leaving out the {len(stopped)} stopped, the "
                  f"hardest):")
            for key, unit in (("kaldi_cpu", "CPU s"), ("kaldi_rss", "peak RSS MB"), ("kaldi_mb", "index MB")):
                worst = max(done, key=lambda r: r[key])
                print(f"  Kaldi {unit:<12} {pop._summary([r[key] for r in done])}   (worst: {worst['name']})")
            for key, unit in (("cpu", "CPU s"), ("rss", "peak RSS MB"), ("mb", "file MB")):
                worst = max(done, key=lambda r: r[key])
                print(f"  ours  {unit:<12} {pop._summary([r[key] for r in done])}   (worst: {worst['name']})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", choices=("big", "synth"), default="big")
    ap.add_argument("--workdir", default="/tmp/bench_phrases")
    ap.add_argument("--lattice-list", default=None, help="--set synth: the lattices.list of egs/kws_synth")
    ap.add_argument("--acoustic-scale", type=float, default=1.0)
    ap.add_argument("--max-length", type=int, default=2)
    ap.add_argument("--min-posterior", type=float, default=0.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-kaldi", action="store_true")
    ap.add_argument("--kaldi-timeout", type=float, default=None, help="stop Kaldi's indexing after this many seconds (--population: of CPU, per lattice; "
                    "default --timeout)")
    ap.add_argument("--population", action="store_true",
                    help="whole processes on the pocketsphinx lattices of bench/lattice_population.py")
    ap.add_argument("--cache", default=os.environ.get("LATTICE_POPULATION_CACHE", "/tmp/lattice_population"))
    ap.add_argument("--label", default="current")
    ap.add_argument("--only", nargs="+", help="--population: only the names containing one of these")
    ap.add_argument("--tree", default=None, help="--population: measure the lattice-tools of this source tree")
    ap.add_argument("--timeout", type=float, default=900.0, help="--population: CPU seconds per process")
    ap.add_argument("--summary", nargs="+", metavar="LABEL",
                    help="--population: print the statistics of the saved results of these labels together (runs "
                         "split over several processes, e.g. with --only); a lattice counts once, from the first "
                         "label that has it")
    args = ap.parse_args()
    args.cache = os.path.abspath(args.cache)   # the measured processes run in the tree's folder (--tree)
    if args.population and args.summary:
        import json

        rows, seen = [], set()
        for label in args.summary:
            for r in json.load(open(os.path.join(args.cache, "kws", label, "results.json"))):
                if r["name"] not in seen:
                    seen.add(r["name"])
                    rows.append(r)
        print(f"{len(rows)} lattices from {', '.join(args.summary)}")
        population_summary(rows, args.max_length, None if args.no_kaldi else
                           (args.timeout if args.kaldi_timeout is None else args.kaldi_timeout))
        return
    if args.population:
        if args.tree:
            import lattice_population

            lattice_population.TREE[0] = os.path.abspath(args.tree)
        population_bench(args.cache, args.label, not args.no_kaldi, args.max_length, args.only, args.timeout,
                         args.kaldi_timeout)
        return
    lats, seconds, tag = load_set(args)
    hours = seconds / 3600
    print(f"{tag}: {len(lats)} lattice(s), {sum(lat.num_arcs for lat in lats)} links, "
          f"{sum(lat.num_states for lat in lats)} nodes, {seconds:.1f} s audio, acoustic scale {args.acoustic_scale}")
    db = os.path.join(args.workdir, f"kws_{tag}_ours.db")
    best_idx, best_total = math.inf, math.inf
    for _ in range(args.repeat):  # CPU time: the machine is shared, wall time is noisy
        t = time.process_time()
        hits = [h for lat in lats for h in index_lattice(lat, max_length=args.max_length, min_posterior=args.min_posterior)]
        best_idx = min(best_idx, time.process_time() - t)
        t = time.process_time()
        stats = build_lattice_index(lats, db, max_length=args.max_length, min_posterior=args.min_posterior)
        best_total = min(best_total, time.process_time() - t)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"ours: index_lattice (max_length {args.max_length}, min_posterior {args.min_posterior:g}, pruned mass "
          f"{stats.pruned_mass:.3g}) {best_idx:.2f} s CPU, "
          f"with SQLite {best_total:.2f} s CPU (best of {args.repeat}) = {best_total / hours:.0f} s per hour of audio; "
          f"{stats.hits} hits, {os.path.getsize(db) / 1e6:.1f} MB; peak RSS {peak:.0f} MB")
    terms = keyword_list(db)
    best_q = math.inf
    for _ in range(args.repeat):
        t = time.process_time()
        res = search(db, terms)
        best_q = min(best_q, time.process_time() - t)
    print(f"ours: search of {len(terms)} terms {best_q:.3f} s CPU = {1000 * best_q / len(terms):.3f} ms/query "
          f"({len(res.detections)} detections)")
    if not args.no_kaldi:
        kal = run_kaldi(lats, terms, args.workdir, hits, tag, args.kaldi_timeout)
        if kal:
            print(f"ratio Kaldi/ours (CPU): index {kal[0] / best_total:.1f}x, search {kal[1] / best_q:.1f}x "
                  f"(ours in-process, Kaldi whole processes)")


if __name__ == "__main__":
    main()
