"""Helpers of tests/test_chain_scorer.py: random STM/CTM cases whose references are chains (the
inputs the fast scorer takes), with confidences, '*' times, '@' and ALT blocks."""
from __future__ import annotations

import random

from _scoring_helpers import VOCAB, random_ref_text


def random_chain_case(rng: random.Random, n_files=2, n_segs=4, max_words=6, conf=False, stars=False,
                      shuffle=False):
    """(stm_lines, ctm_lines): references without alternations; optional words, '@', case."""
    stm, ctm = [], []
    for f in range(n_files):
        for ch in ("A", "B")[: rng.randint(1, 2)]:
            t = 0.0
            spk = f"spk{f}{ch}" if rng.random() < 0.7 else f"Spk{f}"
            for _s in range(n_segs):
                start = round(t + rng.choice([0.0, 0.3, 1.0]), 2)
                end = round(start + rng.uniform(1.0, 4.0), 2)
                text = random_ref_text(rng, rng.randint(0, max_words), p_alt=0.0)
                if rng.random() < 0.1:
                    text = (text + " @").strip()
                stm.append(f"f{f} {ch} {spk} {start:.2f} {end:.2f} <o,f0,male> {text}")
                t = end
            n_items = rng.randint(0, max_words * n_segs)
            times = sorted(round(rng.uniform(0.0, t + 1.0), 2) for _ in range(n_items))

            def c():
                return f" {rng.random():.3f}" if conf else ""
            for tm in times:
                if rng.random() < 0.2:
                    ctm.append(f"f{f} {ch} * * <ALT_BEGIN>")
                    n_alt = rng.randint(1, 4)
                    for k in range(n_alt):
                        nw = rng.randint(0, 3)
                        if nw == 0:
                            ctm.append(f"f{f} {ch} {tm:.2f} 0.10 @{c()}")
                        for j in range(nw):
                            st = "*" if stars and rng.random() < 0.1 else f"{tm + 0.05 * j:.2f}"
                            ctm.append(f"f{f} {ch} {st} 0.05 {rng.choice(VOCAB + ['(uh)', 'A'])}{c()}")
                        ctm.append(f"f{f} {ch} * * " + ("<ALT>" if k < n_alt - 1 else "<ALT_END>"))
                else:
                    w = rng.choice(VOCAB + ["(uh)", "UM", "A", "@;x"])
                    st = "*" if stars and rng.random() < 0.1 else f"{tm:.2f}"
                    ctm.append(f"f{f} {ch} {st} {rng.choice([0.1, 0.2, 0.35])} {w}{c()}")
    if shuffle:
        rng.shuffle(stm)
    return stm, ctm


def random_sausage_case(rng: random.Random, n_segs=3, max_words=6):
    """(stm_lines, ctm_lines) of one file/channel written slot by slot like a confusion-network
    CTM: alternatives may start before the previous slot's words, empty alternatives are '@'
    with '*' times (sclite keeps such blocks in file order)."""
    stm, ctm = [], []
    t = 0.0
    for _s in range(n_segs):
        start = round(t + 0.2, 2)
        end = round(start + 3.0, 2)
        ref = [rng.choice(VOCAB[:8]) for _ in range(rng.randint(0, max_words))]
        stm.append(f"f0 A spk {start:.2f} {end:.2f} <o,f0,male> {' '.join(ref)}")
        tm = start + 0.1
        for _k in range(rng.randint(0, max_words + 1)):
            ctm.append("f0 A * * <ALT_BEGIN>")
            n_alt = rng.randint(1, 3)
            for a in range(n_alt):
                if rng.random() < 0.3:
                    ctm.append("f0 A * * @")
                else:
                    st = max(start, tm + rng.uniform(-0.6, 0.2))
                    ctm.append(f"f0 A {st:.2f} 0.10 {rng.choice(VOCAB[:8])}")
                ctm.append("f0 A * * " + ("<ALT>" if a < n_alt - 1 else "<ALT_END>"))
            tm += 0.3
        t = end
    return stm, ctm
