#!/usr/bin/env python3
"""Synthesize a speech corpus with espeak-ng: one utterance per sentence of a text file, the voices
taking turns, each sentence converted to 16 kHz mono 16-bit WAV with sox (0.3 s of silence added
before and after).

    local/synthesize.py [--voices "en-us en-gb+f3 ..."] [--speeds "165 150 180"] [--max-utts N] text.txt out_dir

Writes ``out_dir/wav/uttNNN.wav``, ``out_dir/text`` (Kaldi text: ``uttNNN words``, lowercase, no
punctuation: the reference), ``out_dir/utt2spk`` (the voice), ``out_dir/wav.list`` (absolute paths)
and ``out_dir/.done`` last.  Deterministic: espeak-ng and sox give the same bytes for the same
text, voice and speed.  Every output file is written under a temporary name and renamed.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

DEFAULT_VOICES = "en-us en-gb+f3 en-gb-scotland en-us+m3 en-029 en-gb-x-rp+f2"
DEFAULT_SPEEDS = "165 150 180"


def sentences(path: str) -> list[str]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(line)
    if not out:
        sys.exit(f"{path}: no sentences")
    return out


def normalize(sentence: str) -> str:
    """The reference words of a sentence: lowercase, hyphens as spaces, other punctuation removed."""
    return " ".join(re.sub(r"[^a-z' ]", " ", sentence.lower().replace("-", " ")).split())


def write_atomic(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("text")
    ap.add_argument("out_dir")
    ap.add_argument("--voices", default=DEFAULT_VOICES)
    ap.add_argument("--speeds", default=DEFAULT_SPEEDS, help="words per minute, taking turns like the voices")
    ap.add_argument("--max-utts", type=int, default=0, help="only the first N sentences (0 = all)")
    args = ap.parse_args()
    for tool in ("espeak-ng", "sox"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (apt-get install espeak-ng sox)")
    voices, speeds = args.voices.split(), [int(s) for s in args.speeds.split()]
    todo = sentences(args.text)
    if args.max_utts > 0:
        todo = todo[:args.max_utts]
    wav_dir = os.path.join(args.out_dir, "wav")
    os.makedirs(wav_dir, exist_ok=True)
    text, utt2spk, wavs = [], [], []
    for i, sentence in enumerate(todo, 1):
        utt, voice, speed = f"utt{i:03d}", voices[(i - 1) % len(voices)], speeds[(i - 1) % len(speeds)]
        wav = os.path.abspath(os.path.join(wav_dir, utt + ".wav"))
        raw = wav + ".espeak.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", raw, sentence], check=True)
        subprocess.run(["sox", "-V1", raw, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer",
                        wav + ".tmp.wav", "pad", "0.3", "0.3"], check=True)
        os.replace(wav + ".tmp.wav", wav)
        os.remove(raw)
        text.append(f"{utt} {normalize(sentence)}\n")
        utt2spk.append(f"{utt} {voice.replace('+', '_')}\n")
        wavs.append(wav + "\n")
    write_atomic(os.path.join(args.out_dir, "text"), "".join(text))
    write_atomic(os.path.join(args.out_dir, "utt2spk"), "".join(utt2spk))
    write_atomic(os.path.join(args.out_dir, "wav.list"), "".join(wavs))
    open(os.path.join(args.out_dir, ".done"), "w").close()
    print(f"{len(todo)} utterances, {len(set(voices[: len(todo)]))} voices -> {args.out_dir}")


if __name__ == "__main__":
    main()
