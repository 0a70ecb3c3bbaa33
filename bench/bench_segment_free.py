"""Segment-free scoring of alternatives side by side with sclite (and meeteval when installed).

A seeded generator of conversation sides (:func:`sides`): each side a run of reference words with times,
cut into STM segments at pauses; the hypothesis is the reference with some stretches of 1-3 words replaced
by ALT blocks whose alternatives include the reference words (in a random place among wrong ones), some of
the blocks crossing a segment boundary, so the true oracle error is 0 (``noise`` adds substitutions,
insertions and deletions outside the blocks).

Run (whole processes, CPU time of each child)::

    python bench/bench_segment_free.py                 # 80 sides x 300 words, as in docs/scoring.md
    python bench/bench_segment_free.py --sides 8       # a quick look
    python bench/bench_segment_free.py --no-sclite     # without the slow sclite run
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

VOCAB = ["yeah", "i", "know", "the", "a", "to", "and", "that", "it", "you", "was", "we", "they", "of", "so",
         "like", "in", "just", "but", "have", "uh", "um", "well", "think", "really", "what", "do", "not", "there",
         "is", "right", "oh", "this", "be", "one", "go", "mean", "kind", "lot", "people", "thing", "year", "good",
         "work", "school", "house", "kids", "money", "time", "car"]


def _word(rng: random.Random) -> str:
    return rng.choice(VOCAB)


def sides(seed: int = 0, n_sides: int = 80, n_words: int = 300, p_block: float = 0.08, p_cross: float = 0.33,
          noise: float = 0.0, channel_b: bool = False):
    """(stm_lines, ctm_lines, stats): ``n_sides`` sides (files ``sw<k>``, channel A (and B if ``channel_b``)),
    each ``n_words`` reference words.  A block starts at a word with probability ``p_block``; with
    probability ``p_cross`` it is placed over the last word of a segment and the first of the next.
    ``noise``: per word outside blocks, the probability of an error (substitution, insertion or deletion)."""
    rng = random.Random(seed)
    stm, ctm = [], []
    stats = dict(segments=0, blocks=0, crossing=0, words=0)
    chans = ("A", "B") if channel_b else ("A",)
    for s in range(n_sides):
        for ch in chans:
            f = f"sw{s:04d}"
            spk = f"{f}_{ch}"
            t = rng.uniform(0.0, 2.0)
            words = []          # (word, start, duration, segment)
            seg = 0
            left_in_seg = rng.randint(4, 16)
            for _ in range(n_words):
                d = round(rng.uniform(0.15, 0.5), 2)
                words.append((_word(rng), round(t, 2), d, seg))
                t += d + rng.choice([0.0, 0.0, 0.02, 0.05])
                left_in_seg -= 1
                if left_in_seg == 0:
                    seg += 1
                    left_in_seg = rng.randint(4, 16)
                    t += rng.uniform(0.3, 1.2)
            n_segs = words[-1][3] + 1
            for k in range(n_segs):
                ws = [w for w in words if w[3] == k]
                if not ws:
                    continue
                start = max(0.0, ws[0][1] - 0.05)
                end = ws[-1][1] + ws[-1][2] + 0.05
                stm.append(f"{f} {ch} {spk} {start:.2f} {end:.2f} <o,f0,male> {' '.join(w[0] for w in ws)}")
                stats["segments"] += 1
            stats["words"] += len(words)
            i = 0
            lines = []
            while i < len(words):
                w = words[i]
                if rng.random() < p_block:
                    length = rng.randint(1, 3)
                    if rng.random() < p_cross:
                        # move the block over the next segment boundary at or after i
                        j = i
                        while j + 1 < len(words) and words[j + 1][3] == words[i][3]:
                            j += 1
                        if j + 1 < len(words):
                            start = max(i, j - rng.randint(0, 1))
                            lines.extend(f"{f} {ch} {x[1]:.2f} {x[2]:.2f} {x[0]}" for x in words[i:start])
                            i = start
                            length = max(length, j + 2 - i)
                    else:
                        while length > 1 and words[min(i + length, len(words)) - 1][3] != words[i][3]:
                            length -= 1
                    span = words[i:i + length]
                    if span[0][3] != span[-1][3]:
                        stats["crossing"] += 1
                    stats["blocks"] += 1
                    t0 = span[0][1]
                    t1 = span[-1][1] + span[-1][2]
                    alts = [[(x[0], x[1], x[2]) for x in span]]
                    for _ in range(rng.randint(1, 3)):
                        n = rng.randint(0, 3)
                        if n == 0:
                            alts.append([])
                            continue
                        step = (t1 - t0) / n
                        alts.append([(_word(rng), round(t0 + k * step, 2), round(step, 2)) for k in range(n)])
                    rng.shuffle(alts)
                    lines.append(f"{f} {ch} * * <ALT_BEGIN>")
                    for k, alt in enumerate(alts):
                        if not alt:
                            lines.append(f"{f} {ch} {t0:.2f} {t1 - t0:.2f} @")
                        for word, st, du in alt:
                            lines.append(f"{f} {ch} {st:.2f} {du:.2f} {word}")
                        lines.append(f"{f} {ch} * * " + ("<ALT>" if k < len(alts) - 1 else "<ALT_END>"))
                    i += length
                    continue
                r = rng.random()
                if r < noise / 3:
                    lines.append(f"{f} {ch} {w[1]:.2f} {w[2]:.2f} {_word(rng)}")                    # substitution
                elif r < 2 * noise / 3:
                    pass                                                                              # deletion
                elif r < noise:
                    half = round(w[2] / 2, 2)
                    lines.append(f"{f} {ch} {w[1]:.2f} {half:.2f} {w[0]}")                            # insertion
                    lines.append(f"{f} {ch} {w[1] + half:.2f} {half:.2f} {_word(rng)}")
                else:
                    lines.append(f"{f} {ch} {w[1]:.2f} {w[2]:.2f} {w[0]}")
                i += 1
            ctm.extend(lines)
    return stm, ctm, stats


def first_alternatives(ctm_lines: list[str]) -> list[str]:
    """The 1-best CTM of an alt-CTM: each ALT block replaced by its first alternative (``@`` dropped)."""
    out, in_block, first = [], False, False
    for line in ctm_lines:
        tag = line.split()[4]
        if tag == "<ALT_BEGIN>":
            in_block, first = True, True
        elif tag == "<ALT>":
            first = False
        elif tag == "<ALT_END>":
            in_block = False
        elif tag != "@" and (first or not in_block):
            out.append(line)
    return out


def merged_stm(stm_lines: list[str]) -> list[str]:
    """One STM segment per file/channel/speaker: first start .. last end, the words in order."""
    groups: dict = {}
    for line in stm_lines:
        f, ch, spk, t1, t2, lab, *words = line.split(" ")
        g = groups.setdefault((f, ch, spk), [float(t1), float(t2), lab, []])
        g[0], g[1] = min(g[0], float(t1)), max(g[1], float(t2))
        g[3].extend(words)
    return [f"{f} {ch} {spk} {t1:.2f} {t2:.2f} {lab} {' '.join(w)}".rstrip()
            for (f, ch, spk), (t1, t2, lab, w) in groups.items()]


def _run(cmd: list[str]) -> tuple[float, float, int, str]:
    """(wall s, child CPU s, child max RSS MB, stdout) of one whole process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"failed: {' '.join(cmd)}\n{err.read()}")
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, out.read()


def _wer(text: str) -> str:
    """The error rate a run printed: Kaldi's %WER line, else the Err column of sclite's Sum/Avg row."""
    lines = text.splitlines()
    for line in lines:
        if line.startswith("%WER"):
            return line.split("[")[0].replace("%WER", "").strip() + " %"
    for line in lines:
        if "Sum/Avg" in line:
            return line.split("|")[3].split()[-2] + " %"
    return "?"


def in_process(stm_path: str, ctm_path: str, collar: float | None) -> tuple[float, float]:
    """(CPU s, WER %) of score_files(..., segment_free=True) in this process (reading and filtering included,
    interpreter start-up and imports not)."""
    from lattice_tools.scoring.sclite import score_files

    score_files(stm_path, ctm_path, segment_free=True, collar=collar)      # warm: imports, compiled module
    t = time.process_time()
    result = score_files(stm_path, ctm_path, segment_free=True, collar=collar)
    return time.process_time() - t, 100.0 * result.total.errors / max(result.total.ref_words, 1)


def _try(cmd: list[str]) -> str:
    """How a peer that may refuse the input ends: its exit status and the first FATAL/ERROR line."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    said = [x.strip() for x in (proc.stdout + proc.stderr).splitlines() if "FATAL" in x or "rror" in x]
    return f"exit {proc.returncode}" + (f": {said[0][:90]}" if said else "")


def meeteval_tcpwer(stm_lines: list[str], ctm_lines: list[str], collar: float) -> tuple[float, float]:
    """(CPU s, WER %) of meeteval's tcpwer in this process (one speaker per file, as the generator makes)."""
    from meeteval.io.seglst import SegLST
    from meeteval.wer import tcpwer

    ref = SegLST([dict(session_id=f, speaker="s", start_time=float(t0), end_time=float(t1), words=" ".join(w))
                  for f, _c, _s, t0, t1, _l, *w in (x.split(" ") for x in stm_lines)])
    hyp = SegLST([dict(session_id=f, speaker="s", start_time=float(t), end_time=float(t) + float(d), words=w)
                  for f, _c, t, d, w in (x.split() for x in ctm_lines)])
    t = time.process_time()
    rates = tcpwer(ref, hyp, collar=collar)
    cpu = time.process_time() - t
    return cpu, 100.0 * sum(r.errors for r in rates.values()) / sum(r.length for r in rates.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sides", type=int, default=80)
    ap.add_argument("--words", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--collar", type=float, default=5.0)
    ap.add_argument("--no-sclite", action="store_true")
    args = ap.parse_args()
    stm, ctm, stats = sides(args.seed, args.sides, args.words)
    print(f"{args.sides} sides x {args.words} words: {stats['words']} words, {stats['segments']} STM segments, "
          f"{stats['blocks']} ALT blocks ({stats['crossing']} crossing a segment boundary)")
    lt = [sys.executable, "-m", "lattice_tools", "score"]
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, lines in (("ref.stm", stm), ("merged.stm", merged_stm(stm)), ("hyp.ctm", ctm)):
            paths[name] = os.path.join(tmp, name)
            with open(paths[name], "w") as f:
                f.write("\n".join(lines) + "\n")
        rows = [
            ("lattice-tools score (reference segmentation)", lt + ["-r", paths["ref.stm"], "-h", paths["hyp.ctm"]]),
            ("lattice-tools score --segment-free", lt + ["-r", paths["ref.stm"], "-h", paths["hyp.ctm"],
                                                        "--segment-free"]),
            (f"lattice-tools score --segment-free --collar {args.collar}",
             lt + ["-r", paths["ref.stm"], "-h", paths["hyp.ctm"], "--segment-free", "--collar", str(args.collar)]),
            ("lattice-tools score, one STM segment per side", lt + ["-r", paths["merged.stm"], "-h", paths["hyp.ctm"]]),
        ]
        sclite = shutil.which("sclite")
        if sclite and not args.no_sclite:
            rows.append(("sclite (reference segmentation)", [sclite, "-r", paths["ref.stm"], "stm", "-h",
                                                              paths["hyp.ctm"], "ctm", "-o", "sum", "stdout"]))
            rows.append(("sclite, one STM segment per side", [sclite, "-r", paths["merged.stm"], "stm", "-h",
                                                               paths["hyp.ctm"], "ctm", "-o", "sum", "stdout"]))
        print(f"{'whole process':58s} {'WER':>9s} {'wall s':>8s} {'CPU s':>8s} {'max RSS MB':>11s}")
        for label, cmd in rows:
            wall, cpu, rss, out = _run(cmd)
            print(f"{label:58s} {_wer(out):>9s} {wall:8.2f} {cpu:8.2f} {rss:11d}")
        for collar in (None, args.collar):
            cpu, wer = in_process(paths["ref.stm"], paths["hyp.ctm"], collar)
            label = "score_files(segment_free=True" + ("" if collar is None else f", collar={collar}") + ")"
            print(f"{label + ' in process':58s} {wer:7.2f} % {'':>8s} {cpu:8.2f}")
        asclite = shutil.which("asclite")
        if asclite:
            said = _try([asclite, "-r", paths["ref.stm"], "stm", "-h", paths["hyp.ctm"], "ctm"])
            print(f"asclite on the alt-CTM: {said}")
        # meeteval reads no ALT blocks: compare on the 1-best of each block's first alternative
        one_best = first_alternatives(ctm)
        paths["1best.ctm"] = os.path.join(tmp, "1best.ctm")
        with open(paths["1best.ctm"], "w") as f:
            f.write("\n".join(one_best) + "\n")
        print(f"1-best (first alternative of each block), collar {args.collar}, Levenshtein weights:")
        _w, cpu, _r, out = _run(lt + ["-r", paths["ref.stm"], "-h", paths["1best.ctm"], "--segment-free", "--collar",
                                      str(args.collar), "--mode", "levenshtein"])
        label = "lattice-tools score --segment-free --collar (whole process)"
        print(f"{label:58s} {_wer(out):>9s} {'':>8s} {cpu:8.2f}")
        try:
            cpu, wer = meeteval_tcpwer(stm, one_best, args.collar)
            print(f"{'meeteval tcpwer (in process)':58s} {wer:7.2f} % {'':>8s} {cpu:8.2f}")
        except ImportError:
            print("meeteval not installed")


if __name__ == "__main__":
    main()
