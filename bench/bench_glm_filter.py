"""Benchmark GLM filtering against Debian SCTK, whole processes, side by side.

1. ``lattice-tools filter`` vs ``csrfilt.sh``: an STM of ``--segments`` segments whose words are
   drawn (seeded) from the left-hand sides of the NIST RT-03 GLM (so most words hit a rule) mixed
   with plain words, filtered with that GLM and ``-dh``.  Both outputs must be byte-identical.
2. (``--score-dir DIR`` with ``DIR/ref.stm`` and ``DIR/hyp.ctm``, e.g. from
   ``python bench/bench_score.py --cases 1 --workdir DIR``) ``lattice-tools score --glm`` vs the
   sclite pipeline it replaces: ``csrfilt.sh -i stm`` on the reference, ``csrfilt.sh -i ctm`` on the
   hypothesis, then ``sclite -r ref stm -h hyp ctm``; the Sum line counts must agree.

Each command runs ``--repeat`` times (alternating) and the fastest run is reported (wall and CPU of
the children): the machine is shared, CPU times vary much less than wall times.  Bytecode is
compiled first (PYTHONDONTWRITEBYTECODE would otherwise recompile every module per process).

Usage: python bench/bench_glm_filter.py [--glm shared/sctk/glm/en20030506.glm] [--segments 20000]
                                        [--repeat 3] [--score-dir /tmp/bs1]
"""
from __future__ import annotations

import argparse
import compileall
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

CSRFILT = shutil.which("csrfilt.sh") or "/usr/lib/sctk/bin/csrfilt.sh"
SCLITE = shutil.which("sclite") or "/usr/lib/sctk/bin/sclite"


def default_glm() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "shared", "sctk", "glm", "en20030506.glm"),
                 "tests/data/sctk/glm/en20030506.glm"):
        if os.path.exists(cand):
            return os.path.abspath(cand)  # the commands run in a temporary directory
    sys.exit("bench_glm_filter.py: pass --glm (the RT-03 GLM is in shared/sctk/glm/)")


def sctk_env() -> dict:
    # csrfilt.sh calls rfilter1 by name: it must be on PATH
    return dict(os.environ, PATH=os.path.dirname(CSRFILT) + os.pathsep + os.environ.get("PATH", ""))


def timed(commands) -> tuple[float, float]:
    """Run ``commands`` (a list of (argv, stdin path or None, stdout path or None)) one after the
    other; (wall seconds, CPU seconds of the children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    for argv, stdin, stdout in commands:
        with open(stdin or os.devnull, "rb") as fin, open(stdout or os.devnull, "wb") as fout:
            subprocess.run(argv, stdin=fin, stdout=fout, check=True, env=sctk_env(), cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best_of(repeat: int, *command_lists):
    """Alternate the command lists ``repeat`` times; the fastest (wall, cpu) of each."""
    best = [(float("inf"), float("inf"))] * len(command_lists)
    for _ in range(repeat):
        for k, commands in enumerate(command_lists):
            wall, cpu = timed(commands)
            best[k] = (min(best[k][0], wall), min(best[k][1], cpu))
    return best


def report(name_theirs: str, theirs, name_ours: str, ours, note: str) -> None:
    print(f"  {name_theirs:28s} wall {theirs[0]:6.2f} s   cpu {theirs[1]:6.2f} s")
    print(f"  {name_ours:28s} wall {ours[0]:6.2f} s   cpu {ours[1]:6.2f} s")
    print(f"  ratio ours/theirs: wall {ours[0] / theirs[0]:.2f}   cpu {ours[1] / theirs[1]:.2f}   {note}")


def bench_filter(glm: str, segments: int, seed: int, repeat: int) -> None:
    from lattice_tools.io.transcripts.glm import read_glm

    rules = read_glm(glm)
    lhs = sorted({r.lhs for r in rules.rules if r.section is None})
    plain = [f"w{i}" for i in range(300)] + ["the", "a", "and", "i", "uh", "um", "mhm"]
    vocab = [w.lower() for w in lhs if w.isascii() and "[" not in w and "{" not in w] or plain
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        stm = os.path.join(tmp, "in.stm")
        with open(stm, "w") as f:
            for s in range(segments):
                words = [rng.choice(vocab) if rng.random() < 0.3 else rng.choice(plain) for _ in range(12)]
                f.write(f"file{s // 100:04d} A spk{s // 100:04d} {s % 100 * 10:.2f} {s % 100 * 10 + 9:.2f} "
                        f"<o,f0,male> {' '.join(words)}\n")
        size = os.path.getsize(stm)
        theirs_out, ours_out = os.path.join(tmp, "csrfilt.stm"), os.path.join(tmp, "ours.stm")
        theirs, ours = best_of(
            repeat,
            [([CSRFILT, "-i", "stm", "-dh", glm], stm, theirs_out)],
            [([sys.executable, "-m", "lattice_tools", "filter", "--glm", glm, "-i", "stm", "-dh", stm, ours_out],
              None, None)])
        same = open(theirs_out, "rb").read() == open(ours_out, "rb").read()
    print(f"filter: {segments} STM segments, {size / 1e6:.1f} MB, GLM {glm}, -dh")
    report("csrfilt.sh", theirs, "lattice-tools filter", ours, f"identical output: {same}")


_SUM = re.compile(r"\|\s*Sum(?:/Avg)?\s*\|\s*([\d.]+)\s+([\d.]+)\s*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def bench_score(glm: str, workdir: str, repeat: int) -> None:
    ref, hyp = os.path.join(workdir, "ref.stm"), os.path.join(workdir, "hyp.ctm")
    if not (os.path.exists(ref) and os.path.exists(hyp)):
        sys.exit(f"bench_glm_filter.py: {workdir} needs ref.stm and hyp.ctm "
                 f"(python bench/bench_score.py --cases 1 --workdir {workdir})")
    with tempfile.TemporaryDirectory() as tmp:
        fref, fhyp = os.path.join(tmp, "ref.f.stm"), os.path.join(tmp, "hyp.f.ctm")
        sclite_out, ours_out = os.path.join(tmp, "sclite.txt"), os.path.join(tmp, "ours.txt")
        theirs, ours = best_of(
            repeat,
            [([CSRFILT, "-i", "stm", glm], ref, fref), ([CSRFILT, "-i", "ctm", glm], hyp, fhyp),
             ([SCLITE, "-r", fref, "stm", "-h", fhyp, "ctm", "-o", "sum", "stdout"], None, sclite_out)],
            [([sys.executable, "-m", "lattice_tools", "score", "-r", ref, "-h", hyp, "--glm", glm], None, ours_out)])
        counts = []
        for out in (sclite_out, ours_out):
            m = _SUM.search(open(out, encoding="utf-8", errors="replace").read())
            counts.append(m.groups() if m else None)
    print(f"score --glm: {ref} + {hyp}")
    report("csrfilt.sh x2 + sclite", theirs, "lattice-tools score --glm", ours,
           f"same Sum line (#Snt #Wrd Corr Sub Del Ins): {counts[0] is not None and counts[0] == counts[1]}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--glm", default=None)
    ap.add_argument("--segments", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--score-dir", default=None, help="also time score --glm on DIR/ref.stm + DIR/hyp.ctm")
    args = ap.parse_args(argv)
    glm = args.glm or default_glm()
    if not os.path.exists(CSRFILT):
        sys.exit("bench_glm_filter.py: Debian sctk's csrfilt.sh is needed (apt-get install sctk)")
    import lattice_tools

    compileall.compile_dir(os.path.dirname(lattice_tools.__file__), quiet=1)
    bench_filter(glm, args.segments, args.seed, args.repeat)
    if args.score_dir:
        bench_score(glm, args.score_dir, args.repeat)


if __name__ == "__main__":
    main()
