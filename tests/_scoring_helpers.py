"""Helpers shared by the scoring tests: NIST golden cases, baseline parsers, a Debian sclite runner
and a random STM/CTM generator."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from _data import TEST_DATA

_REPO = Path(__file__).resolve().parent.parent
SCTK_DATA = str(TEST_DATA / "sctk" / "sclite-testdata")
BASE = os.path.join(SCTK_DATA, "base")
SCLITE = shutil.which("sclite") or ("/usr/lib/sctk/bin/sclite" if os.path.exists("/usr/lib/sctk/bin/sclite")
                                    else None)


@dataclass
class GoldenCase:
    """One sclite regression test (command line in base/<name>.com or SCTK's tsclite.sh)."""

    name: str
    kind: str            # "stm" (STM ref, CTM hyp) or "trn"
    ref: str
    hyp: str
    opts: dict = field(default_factory=dict)
    encoding: str = "utf-8"


# Every regression test of SCTK's tsclite.sh that needs neither -d (GNU diff), -L (language
# model), -S (inferred word segmentation), -c (character alignment), -T (time-mediated), -w
# (word weights) nor -P (SGML input), and whose reference is an STM or trn file.
GOLDEN_CASES = [
    GoldenCase("test1", "trn", "csrnab.ref", "csrnab.hyp", dict(id_type="wsj")),
    GoldenCase("test1e", "trn", "csrnab.ref", "csrnab.hyp", dict(id_type="wsj")),
    GoldenCase("test3", "stm", "lvc_ref.stm", "lvc_hyp.ctm"),
    GoldenCase("test3a", "stm", "lvc_refe.stm", "lvc_hyp.ctm"),
    GoldenCase("test3b", "stm", "lvc_ref.stm", "lvc_hypc.ctm"),
    GoldenCase("test7", "trn", "tests.ref", "tests.hyp", dict(optional_deletable=True, fragments=True)),
    GoldenCase("test7_r", "trn", "tests.hyp", "tests.ref", dict(optional_deletable=True, fragments=True)),
    GoldenCase("test7_noD", "trn", "tests.ref", "tests.hyp", dict(fragments=True)),
    GoldenCase("test7_6", "trn", "tests.ref", "tests.hyp", dict(optional_deletable=True, fragments=True)),
    GoldenCase("test7-utf8-2bytes", "trn", "tests.ref.utf8-2bytes", "tests.hyp.utf8-2bytes",
               dict(optional_deletable=True, fragments=True)),
    GoldenCase("test7-utf8-3bytes", "trn", "tests.ref.utf8-3bytes", "tests.hyp.utf8-3bytes",
               dict(optional_deletable=True, fragments=True)),
    GoldenCase("test7-utf8-4bytes", "trn", "tests.ref.utf8-4bytes", "tests.hyp.utf8-4bytes",
               dict(optional_deletable=True, fragments=True)),
    GoldenCase("test14_a", "stm", "lvc_refr.stm", "lvc_hypr.ctm", dict(reduce=("ref", "hyp"))),
    GoldenCase("test14_b", "stm", "lvc_ref.stm", "lvc_hypr.ctm", dict(reduce=("ref", "hyp"))),
    GoldenCase("test14_c", "stm", "lvc_refr.stm", "lvc_hyp.ctm", dict(reduce=("ref", "hyp"))),
    GoldenCase("test14_d", "stm", "lvc_refr.stm", "lvc_hypr.ctm", dict(reduce=("hyp",))),
    GoldenCase("test14_e", "stm", "lvc_refr.stm", "lvc_hypr.ctm", dict(reduce=("ref",))),
    GoldenCase("test15_a", "stm", "test.cantonese.stm", "test.cantonese.ctm"),
    GoldenCase("test15_c", "trn", "test.turkish.ref", "test.turkish.hyp", dict(id_type="spu_id", case_language="turkish")),
    GoldenCase("test15_d", "trn", "test.ukranian.ref", "test.ukranian.hyp", dict(id_type="spu_id", case_language="ukrainian")),
    GoldenCase("test17", "trn", "test.vietnamese.ref.trn", "test.vietnamese.hyp.trn", dict(id_type="spu_id", case_language="vietnamese")),
] + [
    GoldenCase(f"test16_{i}", "stm", "stm2ctm_missing.ref.stm", f"stm2ctm_missing.{h}.ctm", dict(allow_missing=True))
    for i, h in [(2, "hyp-missall"), (3, "hyp-missfile1"), (4, "hyp-missfile1chanA"), (5, "hyp-missfile1chanb"),
                 (6, "hyp-missfile2"), (7, "hyp-missfile2chanA"), (8, "hyp-missfile2chanB"), (9, "hyp")]
]


def parse_summary(path: str) -> dict:
    """Rows of a .raw (counts) or .sys table: {speaker or 'Sum': [snt, wrd, corr, sub, del, ins, err, serr]}
    (``Sum/Avg`` is reported as ``Sum``; an NCE column, when present, is ignored)."""
    rows = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "|" not in line:
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) not in (3, 4) or cells[0] in ("SPKR", "") or cells[0].startswith(("Mean", "S.D.", "Median")):
                continue
            try:
                left = [float(x) for x in cells[1].split()]
                right = [float(x) for x in cells[2].split()]
            except ValueError:
                continue
            if len(left) == 2 and len(right) == 6:
                rows["Sum" if cells[0] == "Sum/Avg" else cells[0]] = left + right
    return rows


def parse_pra(path: str) -> list[dict]:
    """Per-segment blocks of a .pra: id, scores, REF/HYP/Eval lines (trailing blanks kept)."""
    blocks, cur = [], None
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("id: "):
                cur = {"id": line[4:].strip()}
                blocks.append(cur)
            elif cur is not None:
                for tag in ("Scores:", "REF:", "HYP:", "Eval:", "File:", "Channel:", "Labels:"):
                    if line.startswith(tag):
                        cur[tag] = line
    return blocks


def run_sclite(ref_path, ref_fmt, hyp_path, hyp_fmt, extra=(), workdir=None) -> dict:
    """Run Debian sclite, return the parsed .raw rows (raises if sclite produced no report)."""
    workdir = workdir or tempfile.mkdtemp(prefix="sclite.")
    cmd = [SCLITE, "-r", ref_path, ref_fmt, "-h", hyp_path, hyp_fmt, "-o", "sum", "pra", "-O", workdir,
           "-n", "out", "-f", "0", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    raw = os.path.join(workdir, "out.sys")
    if not os.path.exists(raw):
        raise RuntimeError(f"sclite failed: {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    return parse_summary(raw), os.path.join(workdir, "out.pra")


# ---------------------------------------------------------------------------------------------
# random STM / CTM generation for cross-checks
VOCAB = ["a", "b", "c", "d", "e", "uh", "um", "the", "i", "it's", "ab-", "-ing", "abc", "cd"]


def random_ref_text(rng: random.Random, n_words: int, p_alt=0.15, p_opt=0.15, nested=True, depth=0) -> str:
    """Random transcript with alternations (nested when ``nested``), ``@``, optional words,
    fragments and mixed case."""
    out = []
    for _ in range(n_words):
        r = rng.random()
        if r < p_alt and depth < 2:
            n_alt = rng.randint(2, 3)
            alts = []
            for _k in range(n_alt):
                x = rng.random()
                if x < 0.2:
                    alts.append("@")
                elif nested and x < 0.3:
                    alts.append(random_ref_text(rng, rng.randint(1, 2), 0.5, p_opt, nested, depth + 1))
                else:
                    alts.append(" ".join(rng.choice(VOCAB[:10]) for _ in range(rng.randint(1, 2))))
            out.append("{ " + " / ".join(alts) + " }")
        elif r < p_alt + p_opt:
            out.append(f"({rng.choice(VOCAB)})")
        else:
            w = rng.choice(VOCAB)
            out.append(w.upper() if rng.random() < 0.1 else w)
    return " ".join(out)


def random_case(rng: random.Random, n_files=2, n_segs=4, alt_blocks=True, max_words=6):
    """(stm_lines, ctm_lines) sorted the way sclite needs them (file, channel, time)."""
    stm, ctm = [], []
    for f in range(n_files):
        for ch in ("A", "B")[: rng.randint(1, 2)]:
            t = 0.0
            spk = f"spk{f}{ch}"
            segs = []
            for _ in range(n_segs):
                start = round(t + rng.choice([0.0, 0.3, 1.0]), 2)
                end = round(start + rng.uniform(1.0, 4.0), 2)
                segs.append((start, end))
                text = random_ref_text(rng, rng.randint(0, max_words))
                stm.append(f"f{f} {ch} {spk} {start:.2f} {end:.2f} <o,f0,male> {text}")
                t = end
            # hypothesis words spread over [0, t+1], some in gaps, some after the end
            n_items = rng.randint(0, max_words * n_segs)
            times = sorted(round(rng.uniform(0.0, t + 1.0), 2) for _ in range(n_items))
            for tm in times:
                if alt_blocks and rng.random() < 0.15:
                    ctm.append(f"f{f} {ch} * * <ALT_BEGIN>")
                    n_alt = rng.randint(2, 4)
                    for k in range(n_alt):
                        nw = rng.randint(0, 2)
                        if nw == 0:
                            ctm.append(f"f{f} {ch} {tm:.2f} 0.10 @")
                        for j in range(nw):
                            ctm.append(f"f{f} {ch} {tm + 0.05 * j:.2f} 0.05 {rng.choice(VOCAB)}")
                        ctm.append(f"f{f} {ch} * * " + ("<ALT>" if k < n_alt - 1 else "<ALT_END>"))
                else:
                    w = rng.choice(VOCAB + ["(uh)", "UM", "A"])
                    ctm.append(f"f{f} {ch} {tm:.2f} {rng.choice([0.1, 0.2, 0.35])} {w}")
    return stm, ctm
