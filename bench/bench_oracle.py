"""Benchmark of the exact oracle (prints numbers; not a test).

1. Exact full-lattice oracle on a real ~30 s pocketsphinx lattice (all bundled LibriVox clips
   concatenated with sox, decoded with wide beams and ``fwdflat=False``: ~140k+ links) against
   the concatenated reference, in sclite and Levenshtein mode.  Target: < 1 s.
2. An alt-CTM of 2,000 STM segments, each one 100-best ALT block (real 100-best lists of the
   bundled clips, repeated with shifted times), scored by Debian sclite and by
   :func:`lattice_tools.oracle.representations.ctm_oracle`: equal counts, and the speed ratio.
   Target: >= 20x faster than sclite.

Usage: python bench/bench_oracle.py [--work DIR] [--segments 2000] [--n 100]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/tmp/lattice-tools-bench-oracle")
    ap.add_argument("--segments", type=int, default=2000)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="timing repetitions (best is reported)")
    args = ap.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)

    from lattice_tools.decode.pocketsphinx import bundled_audio, decode_audio
    from lattice_tools.io import read_lattices
    from lattice_tools.io.transcripts.trn import read_trn
    from lattice_tools.oracle import lattice_oracle

    wavs = bundled_audio("librivox")
    trn = os.path.join(os.path.dirname(wavs[0]), "transcription.trn")
    refs = {u.utt_id: u.text for u in read_trn(trn)}
    keys = [os.path.splitext(os.path.basename(w))[0] for w in wavs]

    # ---------------------------------------------------------------- 1. full-lattice oracle
    concat = os.path.join(args.work, "concat.wav")
    lat_dir = os.path.join(args.work, "concat_lat")
    if not os.path.isdir(lat_dir) or not os.listdir(lat_dir):
        # all clips plus the first one again: ~31.8 s of speech
        subprocess.run(["sox", *wavs, wavs[0], concat], check=True)
        decode_audio([concat], out_dir=lat_dir, beam=1e-80, wbeam=1e-60, pbeam=1e-80, fwdflat=False)
    lat = next(iter(read_lattices(lat_dir)))
    ref = " ".join([refs[k] for k in keys] + [refs[keys[0]]])
    print(f"[1] lattice {lat.key}: {lat.num_states} states, {lat.num_arcs} links, {lat.duration:.1f} s; "
          f"reference {len(ref.split())} words")
    for mode in ("sclite", "levenshtein"):
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            res = lattice_oracle(lat, ref, mode=mode)
            best = min(best, time.perf_counter() - t)
        print(f"    exact lattice oracle [{mode:11s}] {best:.3f} s  (target < 1 s: {'OK' if best < 1 else 'MISSED'})  "
              f"{res.counts.kaldi_line()}")

    # ---------------------------------------------------------------- 2. alt-CTM vs Debian sclite
    sclite = shutil.which("sclite") or "/usr/lib/sctk/bin/sclite"
    if not os.path.exists(sclite):
        print("[2] Debian sclite not found: skipped")
        return
    from lattice_tools.alternatives.nbest_lists import nbest
    from lattice_tools.core.counts import ErrorCounts
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm
    from lattice_tools.oracle.representations import ctm_oracle

    base_dir = os.path.join(args.work, "clips_lat")
    if not os.path.isdir(base_dir) or not os.listdir(base_dir):
        decode_audio(wavs, out_dir=base_dir)
    lists = {lat.key: nbest(lat, args.n) for lat in read_lattices(base_dir)}
    stm_lines, alts = [], []
    for s in range(args.segments):
        k = keys[s % len(keys)]
        start = 10.0 * s
        stm_lines.append(f"rec A spk {start:.2f} {start + 10:.2f} {refs[k]}")
        alts.append(lists[k].with_location("rec", "A", start))
    stm = os.path.join(args.work, "bench.stm")
    ctm = os.path.join(args.work, "bench.ctm")
    with open(stm, "w") as f:
        f.write("\n".join(stm_lines) + "\n")
    write_alternatives_ctm(ctm, alts)
    blocks = sum(1 for a in alts for s in a.slots if s.depth > 1)
    depth = max(s.depth for a in alts for s in a.slots)
    print(f"[2] alt-CTM: {args.segments} segments, {blocks} ALT blocks of up to {depth} alternatives, "
          f"{os.path.getsize(ctm) / 1e6:.1f} MB")
    # wall time and CPU time (user + system of the child): on a shared machine the wall time of
    # either tool varies by 2x with the load, the CPU time much less
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sclite, "-r", stm, "stm", "-h", ctm, "ctm", "-o", "rsum", "stdout"],
                         capture_output=True, text=True).stdout
    t_sclite = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_sclite = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    want = None
    for line in out.splitlines():
        if re.match(r"\s*\|\s*Sum(/Avg)?\s*\|", line):
            nums = [int(float(x)) for x in re.findall(r"-?\d+(?:\.\d+)?", line)[:6]]
            want = tuple(nums[1:6])
    best = best_cpu = float("inf")
    for _ in range(args.repeat):
        t, c = time.perf_counter(), time.process_time()
        res = ctm_oracle(ctm, stm, with_words=False)  # counts only, like sclite -o sum
        best = min(best, time.perf_counter() - t)
        best_cpu = min(best_cpu, time.process_time() - c)
    c = ErrorCounts.sum(r.counts for r in res)
    got = (c.ref_words, c.correct, c.substitutions, c.deletions, c.insertions)
    print(f"    Debian sclite  {t_sclite:8.2f} s wall {cpu_sclite:8.2f} s CPU  #Wrd C S D I = {want}")
    print(f"    ctm_oracle     {best:8.2f} s wall {best_cpu:8.2f} s CPU  #Wrd C S D I = {got}  "
          f"({'equal' if got == want else 'DIFFERENT'})")
    print(f"    speed-up {t_sclite / best:.1f}x wall, {cpu_sclite / best_cpu:.1f}x CPU "
          f"(target >= 20x: {'OK' if min(t_sclite / best, cpu_sclite / best_cpu) >= 20 else 'MISSED'})")


if __name__ == "__main__":
    sys.exit(main())
