#!/usr/bin/env python3
"""Build a small stand-in for the Hub5'00 Switchboard LDC corpora from lattice-tools' bundled speech.

No LDC data exists on the machines this project is tested on, so every stage of egs/switchboard is
exercised on this stand-in, laid out exactly like the LDC releases:

    <out>/LDC2002S09/hub5e_00/english/<conv>.sph            two-channel NIST SPHERE audio
    <out>/LDC2002T43/reference/english/<conv>.txt           LDC transcripts ("start end A: words")
    <out>/LDC2002T43/reference/hub5e00.english.000405.stm   the NIST reference STM
    <out>/LDC2002T43/reference/en20000405_hub5.glm          a NIST GLM (a small excerpt of RT-03 rules)

Each "conversation" puts bundled LibriVox clips on channel A and "cards" clips on channel B, taking
turns with silence on the other side, as in a telephone conversation.  The audio stays 16 kHz
(real Switchboard is 8 kHz mu-law; the decode stage resamples whatever it gets to 16 kHz).
Requires sox.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import wave

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "lattice_tools", "data")

CONVERSATIONS = {
    "sw_4390": [("A", "librivox", "sense_and_sensibility_01_austen_64kb-0880"),
                ("B", "cards", "001"),
                ("A", "librivox", "sense_and_sensibility_01_austen_64kb-0930"),
                ("B", "cards", "005")],
    "sw_4484": [("A", "librivox", "sense_and_sensibility_01_austen_64kb-0890"),
                ("B", "cards", "002"),
                ("B", "cards", "004"),
                ("A", "librivox", "sense_and_sensibility_01_austen_64kb-0920")],
}
GAP = 0.5  # seconds of silence between turns

GLM = """\
;; A small excerpt in the format of the NIST Hub5 GLM (rules of the RT-03 GLM en20030506.glm),
;; for the egs/switchboard stand-in corpus.
* name "stand-in hub5 glm"
* desc "excerpt of en20030506.glm rules"
* format = 'NIST1'
* max_nrules = '1000'
* copy_no_hit = 'T'
* case_sensitive = 'F'
;;
MISTER => MR / [ ] __ [ ]
MR. => MR / [ ] __ [ ]
UH-HUH => UH-HUH / [ ] __ [ ]
HE'S => HE IS / [ ] __ [ ]
THAT'S => THAT IS / [ ] __ [ ]
"""


def transcripts() -> dict[str, str]:
    out = {}
    for corpus in ("librivox", "cards"):
        with open(os.path.join(DATA, corpus, "transcription.trn"), encoding="utf-8") as f:
            for line in f:
                text, _, utt = line.rstrip("\n").rpartition(" (")
                out[utt.rstrip(")")] = text
    return out


def wav_duration(path: str) -> float:
    with wave.open(path) as w:
        return w.getnframes() / w.getframerate()


def build(out: str) -> None:
    if shutil.which("sox") is None:
        sys.exit("make_standin_corpus.py: sox is needed (apt-get install sox)")
    text = transcripts()
    audio_dir = os.path.join(out, "LDC2002S09", "hub5e_00", "english")
    ref_dir = os.path.join(out, "LDC2002T43", "reference")
    os.makedirs(audio_dir, exist_ok=True)
    os.makedirs(os.path.join(ref_dir, "english"), exist_ok=True)
    stm_lines = [';; CATEGORY "0" "" ""', ';; LABEL "O" "Overall" "Overall"',
                 ';; LABEL "F" "Female" "Female Talkers"', ';; LABEL "M" "Male" "Male Talkers"']
    with tempfile.TemporaryDirectory() as tmp:
        for conv, turns in CONVERSATIONS.items():
            pieces = {"A": [], "B": []}
            t = GAP
            txt_lines = ["#Language: eng", f"#File id: {conv}", ""]
            for side, corpus, utt in turns:
                wav = os.path.join(DATA, corpus, f"{utt}.wav")
                dur = wav_duration(wav)
                other = "B" if side == "A" else "A"
                pieces[side].append(("wav", wav))
                pieces[other].append(("silence", dur))
                start, end = round(t, 2), round(t + dur, 2)
                txt_lines.append(f"{start:.2f} {end:.2f} {side}: {text[utt]}")
                txt_lines.append("")
                gender = "unknown"  # the bundled clips carry no speaker metadata
                stm_lines.append(f"{conv} {side} {conv}_{side} {start:.2f} {end:.2f} <o,f0,{gender}> {text[utt]}")
                for s in ("A", "B"):
                    pieces[s].append(("silence", GAP))
                t += dur + GAP
            channel_wavs = []
            for side in ("A", "B"):
                parts = []
                for i, (kind, val) in enumerate([("silence", GAP)] + pieces[side]):
                    p = os.path.join(tmp, f"{conv}_{side}_{i}.wav")
                    if kind == "wav":
                        subprocess.run(["sox", val, "-r", "16000", "-c", "1", "-b", "16", p], check=True)
                    else:
                        subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", p, "trim", "0", f"{val:.4f}"], check=True)
                    parts.append(p)
                side_wav = os.path.join(tmp, f"{conv}_{side}.wav")
                subprocess.run(["sox", *parts, side_wav], check=True)
                channel_wavs.append(side_wav)
            sph = os.path.join(audio_dir, f"{conv}.sph")
            subprocess.run(["sox", "-M", *channel_wavs, "-t", "sph", "-e", "signed-integer", "-b", "16", sph], check=True)
            with open(os.path.join(ref_dir, "english", f"{conv}.txt"), "w", encoding="utf-8") as f:
                f.write("\n".join(txt_lines) + "\n")
    body = sorted(line for line in stm_lines if not line.startswith(";;"))
    # NIST STMs are sorted by file, channel, start time.
    body.sort(key=lambda line: (line.split()[0], line.split()[1], float(line.split()[3])))
    with open(os.path.join(ref_dir, "hub5e00.english.000405.stm"), "w", encoding="utf-8") as f:
        f.write("\n".join([line for line in stm_lines if line.startswith(";;")] + body) + "\n")
    with open(os.path.join(ref_dir, "en20000405_hub5.glm"), "w", encoding="utf-8") as f:
        f.write(GLM)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="directory to create the stand-in corpora in")
    build(ap.parse_args().out)


if __name__ == "__main__":
    main()
