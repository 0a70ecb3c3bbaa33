"""Helpers of the keyword-search scoring tests and benchmark: random ECF/RTTM/KWlist/kwslist cases and a
runner for NIST F4DE's KWSEval (found through $LATTICE_TOOLS_F4DE: the F4DE root holding KWSEval/ and
common/)."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

DATA = Path(__file__).parent / "data" / "f4de"


def f4de_root() -> Path | None:
    root = os.environ.get("LATTICE_TOOLS_F4DE")
    if not root:
        return None
    p = Path(root)
    if not (p / "KWSEval" / "tools" / "KWSEval" / "KWSEval.pl").is_file() or shutil.which("perl") is None:
        return None
    return p


def f4de_skip_reason() -> str:
    if shutil.which("perl") is None:
        return "perl is not installed"
    if not os.environ.get("LATTICE_TOOLS_F4DE"):
        return "set LATTICE_TOOLS_F4DE to an F4DE checkout (the folder with KWSEval/ and common/)"
    return f"no KWSEval/tools/KWSEval/KWSEval.pl under $LATTICE_TOOLS_F4DE={os.environ['LATTICE_TOOLS_F4DE']}"


def run_kwseval(root: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run F4DE's KWSEval.pl with ``args`` in ``cwd`` (Perl hash seed fixed, as F4DE requires)."""
    env = dict(os.environ, PERL_PERTURB_KEYS="0", PERL_HASH_SEED="0")
    cmd = ["perl", "-x", f"-I{root / 'KWSEval' / 'lib'}", f"-I{root / 'common' / 'lib'}",
           str(root / "KWSEval" / "tools" / "KWSEval" / "KWSEval.pl"), *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, encoding="utf-8")


VOCAB = ["yes", "no", "why", "not", "sure", "hello", "Hello", "world", "the", "cat", "sat", "on", "mat", "a"]


def random_case(seed: int, directory: Path, *, size: int = 1, segment: bool | None = None) -> dict:
    """Write a random ECF, RTTM, KWlist and kwslist into ``directory``; return their paths and flags.

    Scores carry 3 decimals (ties happen), decisions follow one global threshold (F4DE refuses other
    outputs), words of one speaker never overlap, some hits fall outside the ECF or into files it does not
    name, some terms have no reference occurrence and some are missing from the system output.  ``segment``
    (default: a quarter of the seeds) makes a case for segment scoring (F4DE -g: excerpts that do not
    overlap); the random draws are the same either way."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    n_files = rng.randint(1, 3) * size
    # Segment scoring (F4DE -g) on overlapping excerpts keeps an arbitrary one (Perl hash order) of two hits
    # on one target segment, so its cases have excerpts that do not overlap.
    drawn = rng.random() < 0.25
    segment = drawn if segment is None else segment
    ecf_lines, rttm_lines, words_by_chan = [], [], {}
    for f in range(n_files):
        file = f"F{f:02d}"
        chans = ["1"] if rng.random() < 0.6 else ["1", "2"]
        for ch in chans:
            total = rng.uniform(20, 60) * (1 if size == 1 else 5)
            stype = rng.choice(["bnews", "cts", "splitcts", "confmtg"])
            t = 0.0
            n_ex = rng.randint(1, 3)
            for _ in range(n_ex):
                tb = round(t + rng.uniform(0, 5), 3)
                du = round(rng.uniform(5, total / n_ex), 3)
                ecf_lines.append(f'  <excerpt audio_filename="audio/{file}.sph" channel="{ch}" tbeg="{tb:.3f}" '
                                 f'dur="{du:.3f}" source_type="{stype}"/>')
                t = tb + du - (0 if segment else rng.uniform(0, 3))   # excerpts may overlap
            words = []
            for spk in range(rng.randint(1, 2)):
                t = rng.uniform(0, 2)
                speaker = f"{file}_{ch}_s{spk}"
                turn: list[tuple[float, float]] = []
                turn_len = rng.randint(2, 6)
                while t < total:
                    w = rng.choice(VOCAB)
                    d = round(rng.uniform(0.1, 0.8), 3)
                    stype = rng.choices(["lex", "frag", "fp", "un-lex"], [0.85, 0.05, 0.05, 0.05])[0]
                    tb = round(t, 3)
                    rttm_lines.append(f"LEXEME {file} {ch} {tb:.3f} {d:.3f} {w} {stype} {speaker} <NA>")
                    words.append((tb, d, w))
                    turn.append((tb, d))
                    t = tb + d + rng.choice([0.0, 0.05, 0.3, 0.49, 0.6, 1.2])
                    if len(turn) == turn_len or t >= total:
                        # A SPEAKER turn over these words (segment scoring cuts excerpts at turns).
                        tb0, te = turn[0][0], turn[-1][0] + turn[-1][1]
                        rttm_lines.append(f"SPEAKER {file} {ch} {tb0:.3f} {te - tb0:.3f} <NA> <NA> {speaker} <NA>")
                        turn = []
                        turn_len = rng.randint(2, 6)
            words_by_chan[(file, ch)] = words
    # Terms: words and 2-3 word sequences of the reference, plus absent ones.
    terms = []
    all_words = [w for ws in words_by_chan.values() for w in ws]
    for i in range(rng.randint(3, 8) * size):
        kind = rng.random()
        if kind < 0.4:
            text = rng.choice(VOCAB)
        elif kind < 0.85 and len(all_words) > 3:
            j = rng.randrange(len(all_words) - 3)
            text = " ".join(w for _, _, w in all_words[j:j + rng.randint(2, 3)])
        else:
            text = rng.choice(["zebra", "no way out", "nothing here"])
        terms.append((f"KW-{i:04d}", text))
    thr = rng.choice([0.3, 0.5, 0.7])
    dets = {}
    for kwid, text in terms:
        if rng.random() < 0.1:
            continue   # missing from the system output
        hits = []
        first = text.split()[0]
        for (file, ch), words in words_by_chan.items():
            for tb, d, w in words:
                if w.lower() == first.lower() and rng.random() < 0.6:
                    span = d * len(text.split()) + rng.uniform(-0.3, 0.3)
                    hb = max(0.0, tb + rng.uniform(-0.4, 0.4))
                    hits.append((file, ch, round(hb, 2), round(max(0.01, span), 2)))
            for _ in range(rng.randint(0, 3)):
                hits.append((file, ch, round(rng.uniform(0, 60), 2), round(rng.uniform(0.1, 1.5), 2)))
        if rng.random() < 0.2:
            hits.append(("NOTINECF", "1", 1.0, 0.5))
        dets[kwid] = [(f, c, tb, du, round(rng.random(), 3)) for f, c, tb, du in hits]
    ecf = directory / "case.ecf.xml"
    ecf.write_text('<ecf source_signal_duration="100.000" language="english" version="1">\n'
                   + "\n".join(ecf_lines) + "\n</ecf>\n")
    rttm = directory / "case.rttm"
    rttm.write_text("\n".join(rttm_lines) + "\n")
    norm = rng.choice(["lowercase", ""])
    kwlist = directory / "case.kwlist.xml"
    kwlist.write_text(f'<kwlist ecf_filename="case.ecf.xml" version="1" language="english" encoding="UTF-8" '
                      f'compareNormalize="{norm}">\n'
                      + "".join(f'<kw kwid="{k}">\n<kwtext>{t}</kwtext>\n</kw>\n' for k, t in terms) + "</kwlist>\n")
    kwslist = directory / "case.kwslist.xml"
    body = []
    for kwid, hits in dets.items():
        body.append(f'<detected_kwlist kwid="{kwid}" search_time="1" oov_count="0">')
        for f, c, tb, du, sc in hits:
            body.append(f'<kw file="{f}" channel="{c}" tbeg="{tb:.2f}" dur="{du:.2f}" score="{sc:.3f}" '
                        f'decision="{"YES" if sc >= thr else "NO"}"/>')
        body.append("</detected_kwlist>")
    kwslist.write_text('<kwslist kwlist_filename="case.kwlist.xml" language="english" system_id="">\n'
                       + "\n".join(body) + "\n</kwslist>\n")
    return {"ecf": ecf, "rttm": rttm, "kwlist": kwlist, "kwslist": kwslist, "inc": rng.random() < 0.3,
            "segment": segment}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split("|")]


def _last_digit_apart(a: str, b: str) -> bool:
    """Two printed numbers that differ by one unit of their last decimal (a value on a rounding boundary,
    summed in another order)."""
    try:
        fa, fb = float(a), float(b)
    except ValueError:
        return False
    if "." not in a or "." not in b or len(a.split(".")[1]) != len(b.split(".")[1]):
        return False
    unit = 10.0 ** -len(a.split(".")[1])
    return abs(abs(fa - fb) - unit) < unit * 1e-6


def compare_reports(expected: str, got: str) -> tuple[list[str], dict]:
    """Compare an F4DE report with ours line by line.  A line may differ only (a) by the order of its cells
    (F4DE orders the columns of a condition without scored keywords by Perl hash order) or (b) by one unit
    in the last printed digit of a number that lies on a rounding boundary (F4DE sums per-keyword rates in
    Perl hash order).  Returns (problems, counts of such lines)."""
    problems: list[str] = []
    stats = {"exact": 0, "permuted": 0, "rounding": 0}
    e_lines, g_lines = expected.splitlines(), got.splitlines()
    if len(e_lines) != len(g_lines):
        return [f"{len(e_lines)} lines expected, got {len(g_lines)}"], stats
    for n, (e, g) in enumerate(zip(e_lines, g_lines, strict=False), 1):
        if e == g:
            stats["exact"] += 1
            continue
        ec, gc = _cells(e), _cells(g)
        if sorted(ec) == sorted(gc) or sorted(x.strip("-+") for x in ec) == sorted(x.strip("-+") for x in gc):
            stats["permuted"] += 1
            continue
        if len(ec) == len(gc) and all(a == b or _last_digit_apart(a, b) for a, b in zip(ec, gc, strict=False)):
            stats["rounding"] += 1
            continue
        problems.append(f"line {n}: expected {e!r}, got {g!r}")
    return problems, stats
