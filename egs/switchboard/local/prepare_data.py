#!/usr/bin/env python3
"""Stage 0 of egs/switchboard: turn the Hub5'00 LDC layout into a Kaldi-style data directory.

    prepare_data.py [--stm-source ldc|lhotse] [--corrected-stm S] [--corrected-glm G]
                    [--extra-glm G ...] <corpus-dir> <data-dir>

<corpus-dir> holds LDC2002S09/hub5e_00/english/*.sph and LDC2002T43/reference/ (as the LDC
releases, or the stand-in from make_standin_corpus.py).  Writes to <data-dir>:

  wav.scp                 recording -> command producing 16 kHz mono wav of one channel (sox)
  segments                utterance recording start end   (from the STM, seconds)
  reco2file_and_channel   recording file channel          (for CTM file/channel ids)
  utt2spk, text           Kaldi conventions (text = raw STM transcript)
  stm, glm                the reference STM and GLM (LDC's, built from the transcripts with lhotse,
                          or the corrected ones of Faria et al. when given)
  glms                    one GLM path per line: the base GLM then every --extra-glm (RT-03, RT-04F)
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys


def die(msg: str) -> None:
    sys.exit(f"prepare_data.py: error: {msg}")


def stm_from_lhotse(corpus: str) -> list[str]:
    # lhotse's own transcript parser of its eval2000 recipe (prepare_eval2000 would also open every
    # .sph with the sph2pipe binary, which lhotse downloads at run time; the references need no audio).
    try:
        from lhotse.recipes.eval2000 import make_segments
    except ImportError:
        die("--stm-source lhotse needs lhotse (pip install 'lattice-tools[lhotse]')")
    from pathlib import Path

    lines = []
    for sup in make_segments(Path(corpus) / "LDC2002T43" / "reference" / "english"):
        side = "A" if sup.channel == 0 else "B"
        end = sup.start + sup.duration
        lines.append(f"{sup.recording_id} {side} {sup.recording_id}_{side} {sup.start:.2f} {end:.2f} <o,f0,unknown> "
                     f"{sup.text.lower()}")
    lines.sort(key=lambda line: (line.split()[0], line.split()[1], float(line.split()[3])))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description="Hub5'00 LDC layout -> Kaldi-style data dir with STM and GLM")
    ap.add_argument("corpus")
    ap.add_argument("data")
    ap.add_argument("--stm-source", choices=["ldc", "lhotse"], default="ldc")
    ap.add_argument("--corrected-stm", default="", help="Faria et al.'s switchboard-benchmark.stm (replaces the STM)")
    ap.add_argument("--corrected-glm", default="", help="Faria et al.'s switchboard-benchmark.glm (replaces the GLM)")
    ap.add_argument("--extra-glm", action="append", default=[], help="further GLMs (RT-03, RT-04F), in order")
    args = ap.parse_args()

    audio = os.path.join(args.corpus, "LDC2002S09", "hub5e_00", "english")
    ref = os.path.join(args.corpus, "LDC2002T43", "reference")
    sphs = sorted(glob.glob(os.path.join(audio, "*.sph")))
    if not sphs:
        die(f"no .sph audio under {audio}")
    ldc_stm = os.path.join(ref, "hub5e00.english.000405.stm")
    ldc_glm = os.path.join(ref, "en20000405_hub5.glm")
    for p in (ldc_stm, ldc_glm) + tuple(args.extra_glm):
        if not os.path.isfile(p):
            die(f"missing {p}")
    os.makedirs(args.data, exist_ok=True)

    if args.corrected_stm:
        stm_lines = [line.rstrip("\n") for line in open(args.corrected_stm, encoding="utf-8")]
    elif args.stm_source == "lhotse":
        header = [line.rstrip("\n") for line in open(ldc_stm, encoding="utf-8") if line.startswith(";;")]
        stm_lines = header + stm_from_lhotse(args.corpus)
    else:
        stm_lines = [line.rstrip("\n") for line in open(ldc_stm, encoding="utf-8")]

    files = {os.path.splitext(os.path.basename(p))[0]: os.path.abspath(p) for p in sphs}
    segments, text, utt2spk, recos = [], [], [], set()
    for lineno, line in enumerate(stm_lines, 1):
        if not line.strip() or line.startswith(";;"):
            continue
        parts = line.split(None, 6)
        if len(parts) < 5:
            die(f"STM line {lineno}: expected 'file channel speaker start end [<labels>] text'")
        f, ch, spk, start, end = parts[:5]
        if f not in files:
            die(f"STM line {lineno}: no audio for file {f} under {audio}")
        words = parts[5] if len(parts) > 5 else ""
        if len(parts) > 6 and parts[5].startswith("<"):
            words = parts[6]
        elif parts[5:6] and parts[5].startswith("<"):
            words = ""
        else:
            words = line.split(None, 5)[5] if len(line.split(None, 5)) > 5 else ""
        reco = f"{f}-{ch}"
        recos.add((reco, f, ch))
        utt = f"{reco}_{round(float(start) * 100):06d}-{round(float(end) * 100):06d}"
        segments.append(f"{utt} {reco} {float(start):.2f} {float(end):.2f}")
        text.append(f"{utt} {words}".rstrip())
        utt2spk.append(f"{utt} {spk}")

    def write(name: str, lines) -> None:
        tmp = os.path.join(args.data, f".{name}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.writelines(line + "\n" for line in lines)
            os.replace(tmp, os.path.join(args.data, name))
        finally:  # no temporary file left on failure
            if os.path.exists(tmp):
                os.remove(tmp)

    channel_index = {"A": 1, "B": 2, "1": 1, "2": 2}
    write("wav.scp", [f"{reco} sox {files[f]} -t wav -r 16000 -b 16 - remix {channel_index.get(ch, 1)} |"
                      for reco, f, ch in sorted(recos)])
    write("reco2file_and_channel", [f"{reco} {f} {ch}" for reco, f, ch in sorted(recos)])
    write("segments", sorted(segments))
    write("text", sorted(text))
    write("utt2spk", sorted(utt2spk))
    write("stm", stm_lines)
    glm = args.corrected_glm or ldc_glm
    shutil.copyfile(glm, os.path.join(args.data, "glm"))
    write("glms", [os.path.abspath(os.path.join(args.data, "glm"))] + [os.path.abspath(g) for g in args.extra_glm])
    print(f"prepare_data.py: {len(segments)} segments from {len(recos)} recording sides -> {args.data}")


if __name__ == "__main__":
    main()
