"""Benchmark ``lattice-tools filter`` against Debian ``csrfilt.sh``, whole process, side by side.

Input: an STM of ``--segments`` segments whose words are drawn (seeded) from the left-hand sides of
the NIST RT-03 GLM (so most words hit a rule) mixed with plain words; filtered with that GLM, with
``-dh``.  Both outputs must be byte-identical; the script prints both wall times and the ratio.

Usage: python bench/bench_glm_filter.py [--glm shared/sctk/glm/en20030506.glm] [--segments 20000]
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

CSRFILT = shutil.which("csrfilt.sh") or "/usr/lib/sctk/bin/csrfilt.sh"


def default_glm() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "shared", "sctk", "glm", "en20030506.glm"),
                 "/work/shared/sctk/glm/en20030506.glm"):
        if os.path.exists(cand):
            return cand
    sys.exit("bench_glm_filter.py: pass --glm (the RT-03 GLM is in shared/sctk/glm/)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--glm", default=None)
    ap.add_argument("--segments", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    glm = args.glm or default_glm()
    if not os.path.exists(CSRFILT):
        sys.exit("bench_glm_filter.py: Debian sctk's csrfilt.sh is needed (apt-get install sctk)")
    from lattice_tools.io.glm import read_glm

    rules = read_glm(glm)
    lhs = sorted({r.lhs for r in rules.rules if r.section is None})
    plain = [f"w{i}" for i in range(300)] + ["the", "a", "and", "i", "uh", "um", "mhm"]
    vocab = [w.lower() for w in lhs if w.isascii() and "[" not in w and "{" not in w] or plain
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        stm = os.path.join(tmp, "in.stm")
        with open(stm, "w") as f:
            for s in range(args.segments):
                words = [rng.choice(vocab) if rng.random() < 0.3 else rng.choice(plain) for _ in range(12)]
                f.write(f"file{s // 100:04d} A spk{s // 100:04d} {s % 100 * 10:.2f} {s % 100 * 10 + 9:.2f} "
                        f"<o,f0,male> {' '.join(words)}\n")
        size = os.path.getsize(stm)
        theirs, ours = os.path.join(tmp, "csrfilt.stm"), os.path.join(tmp, "ours.stm")
        t0 = time.perf_counter()
        with open(stm, "rb") as fin, open(theirs, "wb") as fout:
            # csrfilt.sh calls rfilter1 by name: it must be on PATH
            env = dict(os.environ, PATH=os.path.dirname(CSRFILT) + os.pathsep + os.environ.get("PATH", ""))
            subprocess.run([CSRFILT, "-i", "stm", "-dh", glm], stdin=fin, stdout=fout, check=True, env=env)
        t_theirs = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "lattice_tools", "filter", "--glm", glm, "-i", "stm", "-dh", stm, ours],
                       check=True)
        t_ours = time.perf_counter() - t0
        same = open(theirs, "rb").read() == open(ours, "rb").read()
    print(f"input: {args.segments} STM segments, {size / 1e6:.1f} MB, GLM {glm}")
    print(f"csrfilt.sh     {t_theirs:7.2f} s")
    print(f"lattice-tools  {t_ours:7.2f} s   ratio ours/csrfilt = {t_ours / t_theirs:.2f}   identical output: {same}")


if __name__ == "__main__":
    main()
