#!/usr/bin/env python3
"""Decoding speed (frames/s) of ``decode_ctc`` with the Kaldi backend and, when k2 is importable,
the k2 backend, on the same synthetic CTC posteriors and graphs (the vendored k2 fixtures' language).

Usage: python bench/bench_decode_ctc.py [--utts 20] [--frames 400] [--repeat 3]

Graphs: our kaldifst HLG.fst (built here) and k2's HLG.pt from tests/data/k2-fixtures (converted for
the Kaldi decoder).  Posteriors: log_softmax of noise plus peaks on a CTC alignment of random
word sequences (seeded).  Times exclude graph loading and include the conversion of each
decoder output into the hub Lattice (no word alignment).  Prints frames/s and the k2/Kaldi ratio.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


def shared_fixtures() -> Path:
    return REPO / "tests" / "data" / "k2-fixtures"  # vendored with the tests (tests/data/README.md)


def make_inputs(fx: Path, utts: int, frames: int, seed: int = 0):
    from _ctc_helpers import ctc_alignment, synthetic_logprobs

    from lattice_tools.ctc.graph import prepare_lang, read_lexicon

    lang = prepare_lang(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt")
    lex = read_lexicon(fx / "lexicon.txt")
    rng = np.random.default_rng(seed)
    out = []
    for i in range(utts):
        ids: list[int] = []
        while True:
            w, pron = lex[int(rng.integers(len(lex)))]
            ids += [lang.tokens.id(t) for t in pron]
            ali = ctc_alignment(ids, np.random.default_rng(seed + i))
            if len(ali) >= frames:
                break
        out.append((f"utt{i}", synthetic_logprobs(ali[:frames], 12, rng, peak=5.0, noise=0.9)))
    return out


def run(graph, items, backend, repeat, **kw):
    from lattice_tools.ctc.decode import decode_ctc, load_graph

    g = load_graph(graph, backend=backend, words=kw.pop("words", None))
    decode_ctc(g, items[:1], backend=backend, word_align=False, **kw)  # warm-up
    best = float("inf")
    arcs = 0
    for _ in range(repeat):
        t = time.perf_counter()
        lats = decode_ctc(g, items, backend=backend, word_align=False, **kw)
        best = min(best, time.perf_counter() - t)
        arcs = sum(lat.num_arcs for lat in lats)
    return best, arcs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--utts", type=int, default=20)
    ap.add_argument("--frames", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--beam", type=float, default=20.0)
    ap.add_argument("--lattice-beam", type=float, default=8.0)
    args = ap.parse_args()
    fx = shared_fixtures()
    from lattice_tools.ctc.graph import build_graph

    items = make_inputs(fx, args.utts, args.frames)
    total_frames = sum(x.shape[0] for _, x in items)
    try:
        import k2  # noqa: F401
        have_k2 = True
    except ImportError:
        have_k2 = False
    with tempfile.TemporaryDirectory() as tmp:
        build_graph(fx / "tokens.txt", fx / "lexicon.txt", fx / "words.txt", lm=fx / "G.fst.txt", out=tmp)
        beams = dict(beam=args.beam, lattice_beam=args.lattice_beam)
        rows = [("kaldi", "kaldifst HLG.fst", *run(tmp, items, "kaldi", args.repeat, **beams)),
                ("kaldi", "k2 HLG.pt (converted)", *run(fx / "HLG.pt", items, "kaldi", args.repeat,
                                                       words=fx / "words.txt", **beams))]
        if have_k2:
            rows.append(("k2", "k2 HLG.pt", *run(fx / "HLG.pt", items, "k2", args.repeat, words=fx / "words.txt",
                                                 **beams)))
    print(f"{args.utts} utterances x {args.frames} frames = {total_frames} frames, beam {args.beam}, "
          f"lattice beam {args.lattice_beam}, best of {args.repeat}")
    print(f"{'backend':8} {'graph':24} {'seconds':>8} {'frames/s':>10} {'arcs':>9}")
    for backend, graph, sec, arcs in rows:
        print(f"{backend:8} {graph:24} {sec:8.3f} {total_frames / sec:10.0f} {arcs:9d}")
    if have_k2:
        print(f"ratio k2/kaldi (same HLG.pt graph, frames/s): {rows[1][2] / rows[2][2]:.2f}")
    else:
        print("k2 not importable: k2 backend skipped (see docs/k2-and-ctc.md to build it)")


if __name__ == "__main__":
    main()
