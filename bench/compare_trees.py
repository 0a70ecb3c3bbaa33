"""Run the same public ``lattice-tools`` command lines with two source trees and diff every output byte for byte.

A change meant to leave the numbers alone (a layout move, a faster kernel) is checked by running what the
benches and the demo write with the version before and with this one, on the same inputs, and comparing
every file.  Each tree runs as a whole process, ``python -m lattice_tools ...`` with ``PYTHONPATH`` set to
that tree (its C kernels built in place: ``python setup.py build_ext --inplace -q`` in it), in its own
output directory ``WORK/old`` or ``WORK/new``; the commands use paths relative to that directory, so an
output that names its own path names it the same way in both.

Groups (``--groups``, default all but ``demo``):

* ``population`` -- every file of ``bench/lattice_population.py``'s population (``--cache``; generate it with
  ``lattice_population.py --generate``): ``phrases FILE -n 1000 --posterior-threshold 0.1`` (the population
  bench's command), ``nbest FILE -n 100 --json`` and ``sausage FILE --json``, alt-CTMs and statistics.
* ``kaldi`` -- ``mbr-decode`` (``--tra``, ``--sausage-stats``, ``--ctm``, ``--bayes-risk``, ``--times``) and
  ``best-path`` (``--tra``, ``--ctm``, ``--costs``) at acoustic scale 0.1, as ``bench/bench_kaldi.py`` runs
  them, on the vendored Kaldi archives (kGraph's binary nnet lattices, the bundled recordings' text
  archive) and on ``--kaldi-archive`` (e.g. bench_kaldi's 1,025-lattice ``real1025.ark``); ``nbest-paths -n
  10`` and ``oracle-path`` against the reference on the bundled archive.
* ``convert`` -- ``convert`` of the bundled Kaldi archive to an SLF directory, of kGraph's binary archive to a
  text and a binary archive, and of the five wide-beam LibriVox clips of the population (SLF) to a text and
  a binary Kaldi archive.
* ``oracle`` -- ``oracle`` of the bundled archive against its reference for each representation (lattice,
  1best, nbest -n 10, sausage -n 10, phrase -n 10; the reference: the bundled transcriptions), text report
  and ``--json``.
* ``score`` -- ``bench/bench_score.py``'s synthetic cases 1 (2,000 segments, 1-best CTM) and 3 (2,000
  segments x 100-best ALT blocks): ``score -r ref.stm -h hyp.ctm -o DIR --json`` (sclite's report set) and
  ``oracle hyp.ctm -r ref.stm --json``.
* ``kws`` -- ``kws index --max-length 3 --json`` of the five default-beam LibriVox clips of the population and
  of the bundled Kaldi archive, then ``kws search`` of a keyword list (the words, word pairs and triples of
  the bundled transcriptions) as a kwslist XML and as TSV, with ``--json``.
* ``segment-free`` -- ``bench/bench_segment_free.py``'s synthetic sides (80 sides x 300 words, ALT blocks over
  segment boundaries): ``score --json`` with the reference segmentation, ``--segment-free``, ``--segment-free
  --collar 5`` and against one STM segment per side.
* ``glm`` -- the RT-03 GLM (``tests/data/sctk/glm/en20030506.glm``) as ``bench/bench_glm_filter.py`` uses it:
  ``filter --glm GLM -i stm -dh`` of a seeded 2,000-segment STM of the GLM's words, and ``score --glm GLM``
  of the score group's case 1.
* ``kws-score`` -- ``kws score -e ECF -r RTTM -s KWSLIST -t KWLIST --no-otwv --no-stwv -o DIR`` on
  ``bench/bench_kws_score.py``'s synthetic case (40 recordings, 400 keywords): its reports.
* ``nbest-lists`` -- ``bench/bench_nbest_lists.py``'s pipeline on its synthetic N-best lists (200 utterances x
  100-best): ``nbest-to-lattices`` (Kaldi archive and words.txt) and ``oracle`` of that archive.
* ``combine`` -- system combination of two N-best systems made by ``bench/bench_nbest_lists.py``'s generator
  (200 utterances x 20-best; the lists as they are, and the same entries with their preference reversed):
  ``combine --method posterior`` (equal weights; 0.7/0.3 with ``-n 5``) of the TSV lists, and ``combine
  --method rover`` (meth1; avgconf with alpha 0.5) of three 1-best CTMs taken from them (the top entry of
  each system and the second of the first).
* ``demo`` -- ``demo --out demo/out`` (decodes the bundled speech with pocketsphinx; ~75 s of CPU per tree).

Every command's stdout and stderr are kept too (``NAME.stdout``/``NAME.stderr``) and compared like any output
(a new warning is a difference).  An SQLite index is compared as bytes and, when the bytes differ, as its
``.dump`` text; it is also read back through each tree's own ``TermIndex`` into ``X.db.hits.txt`` (its
settings, vocabulary, utterances, one line per hit), so indexes of two storage schemas compare by their
hits.  The result: every file identical, different or present in one tree only, and ``WORK/compare.json``.
A difference is described: JSON by the keys whose values differ (saying when they are only measured times
or sizes), index dumps and kwslists with the same hits or detections by how many scores differ and by how
much, other text by its first differing lines.

Usage::

    git worktree add /work/wt/before COMMIT && (cd /work/wt/before && python setup.py build_ext --inplace -q)
    python bench/compare_trees.py --old /work/wt/before [--new .] --work /tmp/compare \\
        [--kaldi-archive /tmp/bench_kaldi/real1025.ark] [--groups population,kaldi,...,demo]
    python bench/compare_trees.py --old /work/wt/before --work /tmp/compare --diff-only   # compare again

Exit status 0 when every output is byte-identical, 1 otherwise.

Run on 2026-11-29 (load average 4-17) between the version before the layout move (``core/``, the ``io/``
split, ``pipelines/``; commit 39d5d56, the parent of the layout commit) and the version after it and the
speed work that followed (31e2f08); ``--kaldi-archive`` the 1,025-lattice binary ``real1025.ark`` of
bench_kaldi.py (179 MB); population: the 32 files (52 lattices) of lattice_population.py's cache.  Every
group but the demo in one run: 137 commands per tree, all exit 0; 517 of 523 files byte-identical, the 6
others the two indexes, their dumps and their kwslists (below).  The demo in a run of its own.

* population, kaldi, convert, oracle, score, segment-free, glm, kws-score, nbest-lists, combine: every file
  byte-identical (96 alt-CTMs and 64 JSON of the population; MBR tra/sausage stats/CTM/Bayes risk/times and
  best-path tra/CTM/costs of kgraph, bundled and real1025, nbest-paths and oracle-path; 5 conversions (10 SLF
  files, text and binary Kaldi archives); 5 oracle reports and JSON; score report sets and JSON of cases 1
  and 3 and their oracles; 4 segment-free scorings; the GLM filter and score --glm; kws score reports; the
  N-best lists' archive, words.txt and oracle; 4 combinations; every stdout and
  stderr).  Outside this script, this version's worker paths against the version before run serially:
  ``convert ... --jobs 2`` (the bundled archive to SLF, the clips to a text archive), ``phrases`` of two
  clips ``--jobs 2`` and ``kws search --jobs 2``: byte-identical.
* kws (keywords: the 201 words, pairs and triples of the bundled transcriptions): index JSON, TSV and search
  JSON byte-identical; the index files differ by design (the posting-list storage, schema 2) and read back
  to the same settings, vocabulary, utterances, hits and times, with 27,109 of 78,732 (clips) and 29,883
  of 86,347 (bundled) scores apart by at most 7.9e-16 relative -- all of them 3-word hits: the last level
  is summed in another order (docs/kws-index.md, "The last level is summed per (end, next label) first").
  With ``--max-length 4`` the 3-word hits are bit-identical and only the 4-word ones move.  The kwslists
  have the same detections and decisions, 29 (clips) and 35 (bundled) scores of 3-word terms apart by at
  most 4.5e-16 relative.  ``kws search`` of all 56,433 terms of the demo's lattice index (each tree its
  own index): TSV byte-identical (59,257 detections).
* demo: 107 of 186 files byte-identical; the others differ only in measured times (36 study cells'
  ``seconds``, the seconds columns of study.csv/json and study-both-ways), the index sizes and times of the
  keyword-search table (kws_study.md/json, study.md, stdout), the 14 indexes (storage, as above: the same
  hits, scores apart by at most 8.5e-16 relative on 3-word hits) and, from those scores, the last digit of
  19 detection scores in 8 kwslists, of 3 hit scores in view.html and of one MTWV threshold in
  kws_study.json (0.9609960543321869 -> 0.960996054332187); every decision, count and TWV is equal.

Noticed on the way (speed, not output): ``kws search`` of those 56,433 terms, whole process, interleaved
old/new twice at load average ~15: 2.31 / 2.40 s CPU before, 4.89 / 4.72 s now; one ``TermIndex.lookup``
in process 0.009-0.010 ms CPU before, 0.046-0.048 ms now (3 interleaved runs), ~65 % of it in
``decode_postings``'s numpy calls on posting lists of one or two hits.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
DATA = REPO / "tests" / "data"
GROUPS = ("population", "kaldi", "convert", "oracle", "score", "segment-free", "glm", "kws", "kws-score",
          "nbest-lists", "combine", "demo")


def _lattice_population():
    sys.path.insert(0, str(BENCH))
    import lattice_population

    return lattice_population


def _commands(groups: set, cache: str, inputs: Path, kaldi_archive: str | None) -> list:
    """(name, CLI arguments after ``python -m lattice_tools``) of every command, in order.  Input paths are
    absolute (the same files for both trees); output paths relative to the tree's output directory."""
    cmds = []
    if "population" in groups:
        pop = _lattice_population().population(cache)
        if not pop:
            sys.exit(f"no population in {cache}: run bench/lattice_population.py --generate first")
        for name, path, extra, _secs in pop:
            cmds.append((f"population/{name}.phrases", ["phrases", path, "-n", "1000", "--posterior-threshold", "0.1",
                                                         "-o", f"population/{name}.phrases.ctm", *extra]))
            cmds.append((f"population/{name}.nbest", ["nbest", path, "-n", "100", "-o", f"population/{name}.nbest.ctm",
                                                      "--json", f"population/{name}.nbest.json", *extra]))
            cmds.append((f"population/{name}.sausage", ["sausage", path, "-o", f"population/{name}.sausage.ctm",
                                                        "--json", f"population/{name}.sausage.json", *extra]))
    bundled = [str(DATA / "kaldi/lats/bundled.ark.gz"), "--words", str(DATA / "kaldi/lats/bundled.words.txt")]
    bundled_ids = str(DATA / "kaldi/lats/bundled.ref.txt")
    bundled_trn = str(inputs / "bundled.trn")
    if "kaldi" in groups:
        archives = [("kgraph", [str(DATA / "kaldi/lats/kgraph_lat.1")]), ("bundled", bundled)]
        if kaldi_archive:
            archives.append((Path(kaldi_archive).stem, [kaldi_archive]))
        for name, spec in archives:
            d = f"kaldi/{name}"
            cmds.append((f"{d}.mbr", ["mbr-decode", *spec, "--acoustic-scale", "0.1", "--tra", f"{d}.mbr.tra",
                                      "--sausage-stats", f"{d}.mbr.saus", "--ctm", f"{d}.mbr.ctm",
                                      "--bayes-risk", f"{d}.mbr.risk", "--times", f"{d}.mbr.times"]))
            cmds.append((f"{d}.best", ["best-path", *spec, "--acoustic-scale", "0.1", "--tra", f"{d}.best.tra",
                                       "--ctm", f"{d}.best.ctm", "--costs", f"{d}.best.costs"]))
        cmds.append(("kaldi/bundled.nbest-paths", ["nbest-paths", *bundled, "-n", "10", "--acoustic-scale", "0.1",
                                                   "--tra", "kaldi/bundled.nbest-paths.tra", "--ctm",
                                                   "kaldi/bundled.nbest-paths.ctm", "--costs",
                                                   "kaldi/bundled.nbest-paths.costs"]))
        cmds.append(("kaldi/bundled.oracle-path", ["oracle-path", *bundled, "-r", bundled_ids, "--tra",
                                                   "kaldi/bundled.oracle-path.tra", "--errors",
                                                   "kaldi/bundled.oracle-path.err"]))
    if "convert" in groups:
        kgraph = str(DATA / "kaldi/lats/kgraph_lat.1")
        wide = [os.path.join(cache, "lat", f"ps-clip{c}-wide.slf") for c in ("0870", "0880", "0890", "0920", "0930")]
        for name, args in (("bundled-slf", [*bundled, "-o", "convert/bundled.slf.d", "--out-format", "slf"]),
                           ("kgraph-text", [kgraph, "-o", "ark,t:convert/kgraph.txt.ark"]),
                           ("kgraph-binary", [kgraph, "-o", "ark:convert/kgraph.ark"]),
                           ("clips-text", [*wide, "-o", "ark,t:convert/clips.txt.ark"]),
                           ("clips-binary", [*wide, "-o", "ark:convert/clips.ark"])):
            cmds.append((f"convert/{name}", ["convert", *args]))
    if "oracle" in groups:
        for rep, extra in (("lattice", []), ("1best", []), ("nbest", ["-n", "10"]), ("sausage", ["-n", "10"]),
                           ("phrase", ["-n", "10"])):
            cmds.append((f"oracle/bundled.{rep}", ["oracle", *bundled, "-r", bundled_trn, "--representation", rep,
                                                   *extra, "--json", f"oracle/bundled.{rep}.json"]))
    if "score" in groups:
        for case in ("case1", "case3"):
            stm, ctm = str(inputs / case / "ref.stm"), str(inputs / case / "hyp.ctm")
            cmds.append((f"score/{case}.score", ["score", "-r", stm, "-h", ctm, "-o", f"score/{case}.report",
                                                 "--json", f"score/{case}.score.json"]))
            cmds.append((f"score/{case}.oracle", ["oracle", ctm, "-r", stm, "--json", f"score/{case}.oracle.json"]))
    if "kws" in groups:
        clips = [os.path.join(cache, "lat", f"ps-clip{c}-default.slf") for c in ("0870", "0880", "0890", "0920", "0930")]
        kwlist = str(inputs / "kws" / "keywords.txt")
        for name, spec in (("clips", clips), ("bundled", bundled)):
            d = f"kws/{name}"
            cmds.append((f"{d}.index", ["kws", "index", *spec, "--max-length", "3", "-o", f"{d}.db",
                                        "--json", f"{d}.index.json"]))
            cmds.append((f"{d}.search-xml", ["kws", "search", f"{d}.db", "--kwlist", kwlist, "-o", f"{d}.kwslist.xml",
                                             "--json", f"{d}.search.json"]))
            cmds.append((f"{d}.search-tsv", ["kws", "search", f"{d}.db", "--kwlist", kwlist, "-o", f"{d}.hits.tsv"]))
    if "segment-free" in groups:
        sf = inputs / "segment-free"
        for name, extra in (("segmented", []), ("segment-free", ["--segment-free"]),
                            ("collar5", ["--segment-free", "--collar", "5"])):
            cmds.append((f"segment-free/{name}", ["score", "-r", str(sf / "ref.stm"), "-h", str(sf / "hyp.ctm"), *extra,
                                                  "--json", f"segment-free/{name}.json"]))
        cmds.append(("segment-free/merged", ["score", "-r", str(sf / "merged.stm"), "-h", str(sf / "hyp.ctm"),
                                             "--json", "segment-free/merged.json"]))
    if "glm" in groups:
        glm = str(DATA / "sctk/glm/en20030506.glm")
        cmds.append(("glm/filter", ["filter", "--glm", glm, "-i", "stm", "-dh", str(inputs / "glm" / "in.stm"),
                                    "glm/filtered.stm"]))
        cmds.append(("glm/score", ["score", "-r", str(inputs / "case1" / "ref.stm"), "-h",
                                   str(inputs / "case1" / "hyp.ctm"), "--glm", glm, "--json", "glm/score.json"]))
    if "kws-score" in groups:
        c = inputs / "kws-score"
        cmds.append(("kws-score/score", ["kws", "score", "-e", str(c / "bench.ecf.xml"), "-r", str(c / "bench.rttm"),
                                         "-s", str(c / "bench.kwslist.xml"), "-t", str(c / "bench.kwlist.xml"),
                                         "--no-otwv", "--no-stwv", "-o", "kws-score/report"]))
    if "nbest-lists" in groups:
        n = inputs / "nbest-lists"
        cmds.append(("nbest-lists/merge", ["nbest-to-lattices", str(n / "nbest.tsv"), "-o", "ark:nbest-lists/nbest.ark",
                                           "--write-words", "nbest-lists/words.txt"]))
        cmds.append(("nbest-lists/oracle", ["oracle", "ark:nbest-lists/nbest.ark", "--words", "nbest-lists/words.txt",
                                            "-r", str(n / "ref.stm"), "--json", "nbest-lists/oracle.json"]))
    if "combine" in groups:
        c = inputs / "combine"
        a, b = str(c / "a.tsv"), str(c / "b.tsv")
        ctms = [str(c / f"{x}.ctm") for x in ("a1", "b1", "a2")]
        cmds.append(("combine/posterior", ["combine", a, b, "--method", "posterior", "-o", "combine/posterior.ctm"]))
        cmds.append(("combine/posterior-weighted", ["combine", a, b, "--method", "posterior", "-n", "5", "--weights",
                                                    "0.7", "--weights", "0.3", "-o", "combine/posterior-weighted.ctm"]))
        cmds.append(("combine/rover", ["combine", *ctms, "--method", "rover", "-o", "combine/rover.ctm"]))
        cmds.append(("combine/rover-avgconf", ["combine", *ctms, "--method", "rover", "--rover-method", "avgconf",
                                               "--alpha", "0.5", "-o", "combine/rover-avgconf.ctm"]))
    if "demo" in groups:
        cmds.append(("demo/demo", ["demo", "--out", "demo/out", "--no-progress"]))
    return cmds


def _make_inputs(inputs: Path, groups: set) -> None:
    """The generated inputs, written once and shared by both trees."""
    inputs.mkdir(parents=True, exist_ok=True)
    trn = b"".join((REPO / "lattice_tools" / "data" / c / "transcription.trn").read_bytes() for c in ("cards", "librivox"))
    (inputs / "bundled.trn").write_bytes(trn)
    if "segment-free" in groups and not (inputs / "segment-free" / "hyp.ctm").exists():
        sys.path.insert(0, str(BENCH))
        import bench_segment_free

        stm, ctm, _stats = bench_segment_free.sides(0, 80, 300)
        (inputs / "segment-free").mkdir(parents=True, exist_ok=True)
        for name, lines in (("ref.stm", stm), ("merged.stm", bench_segment_free.merged_stm(stm)), ("hyp.ctm", ctm)):
            (inputs / "segment-free" / name).write_text("\n".join(lines) + "\n")
    if "glm" in groups and not (inputs / "glm" / "in.stm").exists():
        import random

        from lattice_tools.io.transcripts.glm import read_glm

        rules = read_glm(str(DATA / "sctk/glm/en20030506.glm"))
        lhs = sorted({r.lhs for r in rules.rules if r.section is None})
        plain = [f"w{i}" for i in range(300)] + ["the", "a", "and", "i", "uh", "um", "mhm"]
        vocab = [w.lower() for w in lhs if w.isascii() and "[" not in w and "{" not in w] or plain
        rng = random.Random(0)
        (inputs / "glm").mkdir(parents=True, exist_ok=True)
        with open(inputs / "glm" / "in.stm", "w") as f:
            for k in range(2000):
                words = [rng.choice(vocab) if rng.random() < 0.3 else rng.choice(plain) for _ in range(12)]
                f.write(f"file{k // 100:04d} A spk{k // 100:04d} {k % 100 * 10:.2f} {k % 100 * 10 + 9:.2f} "
                        f"<o,f0,male> {' '.join(words)}\n")
    if "score" in groups or "glm" in groups:
        sys.path.insert(0, str(BENCH))
        import bench_score

        for case, kw in (("case1", dict(n_segments=2000, words_per_seg=10)),
                         ("case3", dict(n_segments=2000, words_per_seg=10, nbest=100))):
            d = inputs / case
            if not (d / "hyp.ctm").exists():
                d.mkdir(parents=True, exist_ok=True)
                bench_score.make_case(str(d), **kw)
    if "kws-score" in groups and not (inputs / "kws-score" / "bench.kwslist.xml").exists():
        sys.path.insert(0, str(BENCH))
        import bench_kws_score

        (inputs / "kws-score").mkdir(parents=True, exist_ok=True)
        bench_kws_score.make_case(inputs / "kws-score", 40, 400)
    if "nbest-lists" in groups and not (inputs / "nbest-lists" / "nbest.tsv").exists():
        sys.path.insert(0, str(BENCH))
        import bench_nbest_lists

        (inputs / "nbest-lists").mkdir(parents=True, exist_ok=True)
        bench_nbest_lists.make_data(inputs / "nbest-lists", 200, 100)
    if "combine" in groups and not (inputs / "combine" / "a2.ctm").exists():
        sys.path.insert(0, str(BENCH))
        import bench_nbest_lists

        c = inputs / "combine"
        c.mkdir(parents=True, exist_ok=True)
        bench_nbest_lists.make_data(c, 200, 20)
        os.replace(c / "nbest.tsv", c / "a.tsv")
        entries = [line.rstrip("\n").split("\t") for line in (c / "a.tsv").read_text().splitlines(True)]
        with open(c / "b.tsv", "w") as f:  # the same entries, the last one the most probable
            for key, rank, _score, words, times in entries:
                f.write(f"{key}\t{rank}\t{-(21 - int(rank)) * 0.5:.4f}\t{words}\t{times}\n")
        for name, rank in (("a1", "1"), ("b1", "20"), ("a2", "2")):
            with open(c / f"{name}.ctm", "w") as f:
                for key, r, _score, words, times in entries:
                    if r != rank:
                        continue
                    conf = 0.9 if name == "a1" else 0.6 if name == "b1" else 0.3
                    for w, t in zip(words.split(), times.split(), strict=True):
                        t0, t1 = (float(x) for x in t.split(":"))
                        f.write(f"{key} 1 {t0:.2f} {t1 - t0:.2f} {w} {conf}\n")
    if "kws" in groups:
        d = inputs / "kws"
        if not (d / "keywords.txt").exists():
            d.mkdir(parents=True, exist_ok=True)
            terms = []
            for corpus in ("librivox", "cards"):
                for line in (REPO / "lattice_tools" / "data" / corpus / "transcription.trn").read_text().splitlines():
                    words = line.rsplit("(", 1)[0].lower().split()
                    terms += words + [" ".join(words[i:i + n]) for n in (2, 3) for i in range(len(words) - n + 1)]
            unique = list(dict.fromkeys(terms))
            (d / "keywords.txt").write_text("".join(f"KW-{i:04d} {t}\n" for i, t in enumerate(unique, 1)))


def run_tree(tree: str, out: Path, cmds: list, timeout: float) -> list:
    """Run every command with ``tree``'s lattice-tools in ``out``; (name, exit code, CPU s) of each."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(tree)
    env.setdefault("OMP_NUM_THREADS", "1")
    rows = []
    for name, args in cmds:
        (out / os.path.dirname(name)).mkdir(parents=True, exist_ok=True)  # every output goes under it
        with open(out / f"{name}.stdout", "wb") as so, open(out / f"{name}.stderr", "wb") as se:
            r0 = os.times()
            try:
                rc = subprocess.run([sys.executable, "-m", "lattice_tools", *args], cwd=out, env=env, stdout=so,
                                    stderr=se, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            r1 = os.times()
        cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
        rows.append((name, rc, round(cpu, 2)))
        print(f"  {tree}: {name}: exit {rc}, {cpu:.2f} s CPU", flush=True)
    return rows


#: run with a tree's lattice-tools: an index's settings (all but the schema version), vocabulary, utterances and
#: every hit, one line each (hits: term, utterance, file, channel, tbeg, dur, score), the hits read through that
#: tree's own TermIndex, so that indexes of two storage schemas compare
_DUMP_HITS = """
import sys
from lattice_tools.kws.store import TermIndex
idx = TermIndex(sys.argv[1])
q = idx.conn.execute
rows = ["meta\\t%s\\t%s" % kv for kv in q("SELECT key, value FROM meta WHERE key != 'schema_version' ORDER BY key")]
rows += ["vocabulary\\t" + w for (w,) in q("SELECT word FROM vocabulary ORDER BY word")]
rows += ["utterance\\t" + "\\t".join(map(repr, r)) for r in q("SELECT * FROM utterances ORDER BY 1")]
terms = idx.terms() if hasattr(idx, "terms") else [t for (t,) in q("SELECT DISTINCT term FROM hits")]
hits = []
for t in terms:
    for h in idx.lookup(t.split(" ")):
        hits.append("\\t".join(["hit", " ".join(h.words), h.utterance, h.file, h.channel, repr(h.tbeg), repr(h.dur),
                                 repr(h.score)]))
with open(sys.argv[2], "w") as f:
    f.write("".join(r + "\\n" for r in rows + sorted(hits)))
"""


def dump_index_hits(tree: str, out: Path) -> None:
    """``X.db.hits.txt`` beside every index ``X.db`` under ``out``, written by ``tree``'s lattice-tools."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    for db in sorted(out.rglob("*.db")):
        subprocess.run([sys.executable, "-c", _DUMP_HITS, str(db), f"{db}.hits.txt"], env=env, check=True, cwd=out)


def _hits_difference(a: Path, b: Path) -> str | None:
    """For two index dumps with the same settings, vocabulary, utterances and hits but scores apart: how many
    scores differ and by how much (None when anything else differs)."""
    la, lb = a.read_text().splitlines(), b.read_text().splitlines()
    if len(la) != len(lb):
        return None
    n_hits, n, worst = 0, 0, 0.0
    for x, y in zip(la, lb, strict=True):
        if not x.startswith("hit\t"):
            if x != y:
                return None
            continue
        n_hits += 1
        *ka, sa = x.split("\t")
        *kb, sb = y.split("\t")
        if ka != kb:
            return None
        if sa != sb:
            fa, fb = float(sa), float(sb)
            n += 1
            worst = max(worst, abs(fa - fb) / max(abs(fa), abs(fb)))
    return (f"the same settings, vocabulary, utterances and {n_hits} hits (terms, utterances, times); "
            f"{n} scores differ, by at most {worst:.2g} relative")


def _files(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _sqlite_dump(path: Path) -> list:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(con.iterdump())
    finally:
        con.close()


#: keys of JSON reports that hold measured times or sizes, which differ from run to run or by design
TIMING_KEY = re.compile(r"seconds|time|cpu|wall|rss|ms_per|bytes", re.I)


def _flat(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _flat(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _flat(v, f"{path}[{i}]")
    else:
        yield path, obj


def _json_difference(ta: bytes, tb: bytes) -> str | None:
    """The JSON keys whose values differ (lists indexed), saying whether they are all measured times/sizes."""
    try:
        fa, fb = dict(_flat(json.loads(ta))), dict(_flat(json.loads(tb)))
    except ValueError:
        return None
    keys = sorted(k for k in fa.keys() | fb.keys() if fa.get(k, "<absent>") != fb.get(k, "<absent>"))
    kind = "only measured times/sizes" if all(TIMING_KEY.search(k) for k in keys) else "VALUES"
    other = [k for k in keys if not TIMING_KEY.search(k)] or keys
    shown = "; ".join(f"{k}: {fa.get(k, '<absent>')!r} -> {fb.get(k, '<absent>')!r}" for k in other[:4])
    return f"JSON, {len(keys)} values differ ({kind}); e.g. {shown}"


_SCORE_ATTR = re.compile(r'score="([^"]*)"')


def _score_difference(a: Path, b: Path) -> str | None:
    """For two kwslists with the same detections (everything but score="..." equal, line by line, decisions
    included): how many scores differ and by how much (None when anything else differs)."""
    la, lb = a.read_text().splitlines(), b.read_text().splitlines()
    if len(la) != len(lb):
        return None
    n, worst = 0, 0.0
    for x, y in zip(la, lb, strict=True):
        if x == y:
            continue
        if _SCORE_ATTR.sub("", x) != _SCORE_ATTR.sub("", y):
            return None
        fa, fb = float(_SCORE_ATTR.search(x).group(1)), float(_SCORE_ATTR.search(y).group(1))
        n += 1
        worst = max(worst, abs(fa - fb) / max(abs(fa), abs(fb)))
    return f"the same detections and decisions; {n} scores differ, by at most {worst:.2g} relative"


def _first_difference(a: Path, b: Path) -> str:
    if a.suffix == ".xml":
        found = _score_difference(a, b)
        if found:
            return found
    if a.suffix == ".json":
        found = _json_difference(a.read_bytes(), b.read_bytes())
        if found:
            return found
    if a.name.endswith(".db.hits.txt"):
        found = _hits_difference(a, b)
        if found:
            return found
    if a.suffix == ".db":
        try:
            da, db = _sqlite_dump(a), _sqlite_dump(b)
        except sqlite3.Error as e:
            return f"SQLite dump failed: {e}"
        if da == db:
            return "SQLite bytes differ, .dump identical"
        la, lb = da, db
    else:
        ta, tb = a.read_bytes(), b.read_bytes()
        try:
            la, lb = ta.decode().splitlines(), tb.decode().splitlines()
        except UnicodeDecodeError:
            return f"binary, {len(ta)} vs {len(tb)} bytes"
    diff = list(difflib.unified_diff(la, lb, "old", "new", n=0, lineterm=""))
    changed = sum(1 for d in diff if d[:1] in "+-" and d[:3] not in ("+++", "---"))
    return f"{changed} lines differ; first: " + " | ".join(d[:200] for d in diff[2:6])


def compare(work: Path) -> dict:
    old, new = work / "old", work / "new"
    fo, fn = _files(old), _files(new)
    result = dict(identical=[], different={}, only_old=sorted(fo - fn), only_new=sorted(fn - fo))
    for f in sorted(fo & fn):
        if (old / f).read_bytes() == (new / f).read_bytes():
            result["identical"].append(f)
        else:
            result["different"][f] = _first_difference(old / f, new / f)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="the source tree of the version before")
    ap.add_argument("--new", default=str(REPO), help="the source tree of the version after (default: this one)")
    ap.add_argument("--work", default="/tmp/compare_trees")
    ap.add_argument("--cache", default=os.environ.get("LATTICE_POPULATION_CACHE", "/tmp/lattice_population"),
                    help="bench/lattice_population.py's cache (the population's lattices)")
    ap.add_argument("--kaldi-archive", default=None, help="one more Kaldi archive for the kaldi group "
                    "(e.g. bench_kaldi.py's real1025.ark)")
    ap.add_argument("--groups", default=",".join(g for g in GROUPS if g != "demo"))
    ap.add_argument("--timeout", type=float, default=1800.0, help="wall seconds per command")
    ap.add_argument("--diff-only", action="store_true", help="compare the outputs already in WORK")
    args = ap.parse_args(argv)
    groups = set(args.groups.split(","))
    unknown = groups - set(GROUPS)
    if unknown:
        ap.error(f"unknown groups {sorted(unknown)}; known: {', '.join(GROUPS)}")
    work = Path(args.work).resolve()
    runs = {}
    if not args.diff_only:
        inputs = work / "inputs"
        _make_inputs(inputs, groups)
        cmds = _commands(groups, args.cache, inputs, args.kaldi_archive)
        print(f"{len(cmds)} commands per tree, e.g.: python -m lattice_tools {' '.join(cmds[0][1])}", flush=True)
        for side, tree in (("old", args.old), ("new", args.new)):
            (work / side).mkdir(parents=True, exist_ok=True)
            t = time.time()
            runs[side] = run_tree(tree, work / side, cmds, args.timeout)
            dump_index_hits(tree, work / side)
            print(f"{side} ({tree}): {time.time() - t:.0f} s", flush=True)
    else:
        for side, tree in (("old", args.old), ("new", args.new)):
            dump_index_hits(tree, work / side)
    result = compare(work)
    result["runs"] = runs
    with open(work / "compare.json", "w") as f:
        json.dump(result, f, indent=1)
    for side in ("old", "new"):
        for name, rc, _cpu in runs.get(side, []):
            if rc != 0:
                print(f"{side}: {name} exited {rc}")
    n = len(result["identical"]) + len(result["different"]) + len(result["only_old"]) + len(result["only_new"])
    print(f"{len(result['identical'])} of {n} files byte-identical ({work}/old vs {work}/new)")
    for f, why in result["different"].items():
        print(f"DIFFERENT {f}: {why}")
    for f in result["only_old"]:
        print(f"ONLY OLD  {f}")
    for f in result["only_new"]:
        print(f"ONLY NEW  {f}")
    return 0 if n == len(result["identical"]) else 1


if __name__ == "__main__":
    sys.exit(main())
