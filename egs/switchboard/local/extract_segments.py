#!/usr/bin/env python3
"""Cut each utterance of a Kaldi data dir (wav.scp + segments) into its own 16 kHz mono wav with sox.

    extract_segments.py <data-dir> <wav-dir>     -> <wav-dir>/<utt>.wav and <wav-dir>/wav.list

Existing outputs are kept (reruns do no work); each file is written to a temporary name and renamed.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data, out = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    wav_scp = {}
    for line in open(os.path.join(data, "wav.scp"), encoding="utf-8"):
        reco, cmd = line.rstrip("\n").split(None, 1)
        wav_scp[reco] = cmd
    paths = []
    for lineno, line in enumerate(open(os.path.join(data, "segments"), encoding="utf-8"), 1):
        parts = line.split()
        if len(parts) != 4:
            sys.exit(f"{data}/segments:{lineno}: expected 'utterance recording start end'")
        utt, reco, start, end = parts[0], parts[1], float(parts[2]), float(parts[3])
        if reco not in wav_scp:
            sys.exit(f"{data}/segments:{lineno}: recording {reco} is not in wav.scp")
        dst = os.path.join(out, f"{utt}.wav")
        paths.append(os.path.abspath(dst))
        if os.path.exists(dst):
            continue
        cmd = wav_scp[reco].strip()
        tmp = os.path.join(out, f".{utt}.tmp.wav")
        if cmd.endswith("|"):
            # a "sox ... - remix N |" pipe: run it and trim in a second sox
            pipe = cmd[:-1].strip()
            full = f"{pipe} | sox -t wav - -t wav {shlex.quote(tmp)} trim {start:.3f} ={end:.3f}"
        else:
            full = f"sox {shlex.quote(cmd)} -r 16000 -c 1 -b 16 {shlex.quote(tmp)} trim {start:.3f} ={end:.3f}"
        try:
            subprocess.run(full, shell=True, check=True)
            os.replace(tmp, dst)
        finally:  # a failed extraction leaves no temporary file behind
            if os.path.exists(tmp):
                os.remove(tmp)
    tmp = os.path.join(out, ".wav.list.tmp")
    try:
        with open(tmp, "w") as f:
            f.writelines(p + "\n" for p in paths)
        os.replace(tmp, os.path.join(out, "wav.list"))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print(f"extract_segments.py: {len(paths)} utterances in {out}")


if __name__ == "__main__":
    main()
