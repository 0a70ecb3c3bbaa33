"""Helpers for the NIST format and GLM filter tests: data paths, a random transcript generator
built from the RT-03 GLM's own vocabulary, and a runner for Debian's csrfilt.sh."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile

from _data import TEST_DATA

SCTK = str(TEST_DATA / "sctk")
CSRFILT_DATA = os.path.join(SCTK, "csrfilt-testdata")
SCLITE_DATA = os.path.join(SCTK, "sclite-testdata")
RT03_GLM = os.path.join(SCTK, "glm", "en20030506.glm")
DEBIAN_BIN = "/usr/lib/sctk/bin"
DEBIAN_CSRFILT = os.path.join(DEBIAN_BIN, "csrfilt.sh")
DEBIAN_SCLITE = os.path.join(DEBIAN_BIN, "sclite")


def have_debian_csrfilt() -> bool:
    return os.path.exists(DEBIAN_CSRFILT) and os.path.exists(os.path.join(DEBIAN_BIN, "rfilter1")) \
        and shutil.which("perl") is not None


def run_debian_csrfilt(glm: str, text: bytes, fmt: str, delete_hyphens: bool = False) -> tuple[int, bytes]:
    """Run Debian's csrfilt.sh on ``text``; returns (exit status, stdout)."""
    env = dict(os.environ)
    env["PATH"] = DEBIAN_BIN + os.pathsep + env.get("PATH", "")
    args = [DEBIAN_CSRFILT] + (["-dh"] if delete_hyphens else []) + ["-i", fmt, glm]
    with tempfile.TemporaryDirectory() as tmp:
        # csrfilt.sh writes its temporary files to /tmp by name; run each call from its own dir.
        proc = subprocess.run(args, input=text, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp,
                              env=env, timeout=120)
    return proc.returncode, proc.stdout


def glm_vocabulary(glm_path: str = RT03_GLM) -> list[str]:
    """Words that appear on either side of the GLM's rules (so random text actually hits rules)."""
    from lattice_tools.io.transcripts.glm import read_glm

    words = set()
    for rule in read_glm(glm_path).rules:
        for side in (rule.lhs, rule.rhs):
            for w in side.replace("{", " ").replace("}", " ").replace("/", " ").split():
                words.add(w)
    return sorted(words)


FILLERS = ["the", "a", "of", "and", "i", "you", "know", "well", "so", "uh-huh", "um", "mm-hmm",
           "light-weight", "-re", "pla-", "%hesitation", "yeah", "ok", "it's", "i'm", "don't",
           "we're", "that's", "they're", "e-mail", "x-ray", "twenty-one", "t.v.", "a.", "b.", "@"]


def random_words(rng: random.Random, vocab: list[str], n: int) -> list[str]:
    out = []
    for _ in range(n):
        pool = vocab if rng.random() < 0.6 else FILLERS
        w = rng.choice(pool)
        if rng.random() < 0.5:
            w = w.lower()
        out.append(w)
    return out


def random_transcript(rng: random.Random, vocab: list[str], n: int) -> str:
    words = random_words(rng, vocab, n)
    text = []
    for w in words:
        r = rng.random()
        if r < 0.08:
            text.append(f"({w})")
        elif r < 0.12:
            text.append("{ " + w + " / " + rng.choice(FILLERS) + " }")
        else:
            text.append(w)
    return " ".join(text)


def random_stm(rng: random.Random, vocab: list[str], n_lines: int) -> str:
    lines = [";; random STM", ';; LABEL "O" "Overall" "Overall"']
    t = 0.0
    for i in range(n_lines):
        dur = round(rng.uniform(0.5, 9.0), 2)
        label = rng.choice(["", " <O,f0,male>", " <O>"])
        lines.append(f"sw_{1000 + i // 4} {rng.choice('AB')} sw_{1000 + i // 4}_A {t:.2f} {t + dur:.2f}{label} "
                     + random_transcript(rng, vocab, rng.randint(0, 14)))
        t += dur
    return "\n".join(lines) + "\n"


def random_trn(rng: random.Random, vocab: list[str], n_lines: int) -> str:
    return "".join(random_transcript(rng, vocab, rng.randint(1, 14)) + f" (spk{i % 3}-utt{i})\n"
                   for i in range(n_lines))


def random_txt(rng: random.Random, vocab: list[str], n_lines: int) -> str:
    return "".join(random_transcript(rng, vocab, rng.randint(0, 14)) + "\n" for i in range(n_lines))


def random_ctm(rng: random.Random, vocab: list[str], n_words: int) -> str:
    lines = [";; random CTM"]
    t = 0.0
    for w in random_words(rng, vocab, n_words):
        if w == "@":
            continue
        dur = round(rng.uniform(0.05, 0.9), 2)
        conf = f" {rng.random():.3f}" if rng.random() < 0.5 else ""
        lines.append(f"sw_1001 A {t:.2f} {dur:.2f} {w}{conf}")
        t += dur
    return "\n".join(lines) + "\n"
