"""Benchmark: parse a large real SLF lattice and compute arc posteriors.

Concatenates the bundled LibriVox clips with sox (~25 s of speech), decodes them with pocketsphinx
using wide beams and no flat-lexicon pass into one large lattice (100k+ links), then times

* ``read_slf`` (vectorized parse),
* the line-by-line engine (io/slf_body.parse_body_lines) that parses other layouts with precise errors (the "peer": what a
  straightforward SLF reader costs),
* ``arc_posteriors`` (log-semiring forward-backward) and ``total_log_prob``.

Run:  nice python bench/bench_slf.py [--beam 1e-80] [--fwdflat] [--keep DIR]
Target: parse + posteriors < 0.5 s.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def best_of(fn, repeat=5):
    """Best (wall, cpu) seconds over ``repeat`` runs.  CPU time is reported too because the
    machines this runs on are often shared: wall time then measures the neighbours."""
    best_wall = best_cpu = float("inf")
    out = None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - w)
        best_cpu = min(best_cpu, time.process_time() - c)
    return (best_wall, best_cpu), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beam", type=float, default=1e-80)
    ap.add_argument("--fwdflat", action="store_true", help="run the flat-lexicon pass (it prunes the lattice)")
    ap.add_argument("--wbeam", type=float, default=1e-60)
    ap.add_argument("--pbeam", type=float, default=1e-80)
    ap.add_argument("--keep", default=None, help="directory to keep the audio and lattice in")
    args = ap.parse_args(argv)

    from lattice_tools.algorithms import arc_posteriors, total_log_prob
    from lattice_tools.decode.pocketsphinx import bundled_audio, decode_audio
    from lattice_tools.io.lattices.slf import read_slf
    from lattice_tools.io.lattices.slf_body import parse_body_lines

    if shutil.which("sox") is None:
        sys.exit("bench_slf.py needs the sox program to concatenate the clips")
    work = args.keep or tempfile.mkdtemp(prefix="bench_slf.")
    os.makedirs(work, exist_ok=True)
    wav = os.path.join(work, "librivox_all.wav")
    clips = bundled_audio("librivox")
    cmd = ["sox", *clips, wav]
    print("$", " ".join(os.path.relpath(c) if os.path.exists(c) else c for c in cmd))
    subprocess.run(cmd, check=True)
    t = time.perf_counter()
    decode_audio([wav], out_dir=work, beam=args.beam, wbeam=args.wbeam, pbeam=args.pbeam, fwdflat=args.fwdflat,
                 progress=False)
    print(f"decode (pocketsphinx, beam={args.beam:g} wbeam={args.wbeam:g} pbeam={args.pbeam:g} "
          f"fwdflat={args.fwdflat}): "
          f"{time.perf_counter() - t:.1f} s")
    slf = os.path.join(work, "librivox_all.lat")
    with open(slf) as f:
        text = f.read()
    lines = text.split("\n")
    n_links = sum(1 for line in lines if line.startswith("J="))
    print(f"lattice: {slf}  {os.path.getsize(slf) / 1e6:.1f} MB, {n_links} links")

    t_parse, lat = best_of(lambda: read_slf(slf))
    nodes = [(i + 1, s) for i, s in enumerate(lines) if s.startswith("I=")]
    links = [(i + 1, s) for i, s in enumerate(lines) if s.startswith("J=")]
    t_slow, _ = best_of(lambda: parse_body_lines(nodes, links, slf), repeat=2)
    # posteriors on a freshly read lattice each time (no cached schedule)
    fresh = [read_slf(slf) for _ in range(5)]
    it = iter(fresh)
    t_post, post = best_of(lambda: arc_posteriors(next(it)))
    t_total, total = best_of(lambda: total_log_prob(lat))
    print(f"states={lat.num_states} arcs={lat.num_arcs} duration={lat.duration:.2f} s  log-likelihood={total:.3f}")
    print("                                              wall ms     cpu ms")
    row = lambda name, t: print(f"{name:44s} {t[0] * 1e3:8.1f}   {t[1] * 1e3:8.1f}")  # noqa: E731
    row("read_slf (vectorized parse + Lattice build)", t_parse)
    row("line-by-line field parse only (peer)", t_slow)
    print(f"{'  ratio peer / read_slf (cpu)':44s} {t_slow[1] / t_parse[1]:8.2f}x")
    row("arc_posteriors (cold)", t_post)
    row("total_log_prob", t_total)
    both = (t_parse[0] + t_post[0], t_parse[1] + t_post[1])
    row("parse + posteriors (target < 500 ms)", both)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
