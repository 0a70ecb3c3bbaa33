#!/usr/bin/env python3
"""System combination on the bundled recordings: three pocketsphinx configurations as systems.

Each system decodes the bundled LibriVox clips (lattice_tools/data/librivox) into lattices; its
exact 100-best lists (:func:`lattice_tools.alternatives.nbest`, posteriors under the lattice's
scores) are written in the generic TSV format and read back by ``lattice-tools combine``'s reader,
as any decoder's N-best lists would be.  The table gives, scored with the project's sclite-exact
scorer against the clips' transcripts:

* each system's WER: its 1-best is the top entry of its N-best list (the most probable word
  sequence under the lattice posteriors, not pocketsphinx's Viterbi 1-best: docs/nbest.md), and its
  N-best oracle WER;
* the posterior combination (``combine --method posterior``, equal weights): the WER of its
  1-best (the confusion network's MBR words) and the oracle WER of its alt-CTM (the best path
  through the confusion network's bins, as sclite scores an alt-CTM);
* the posterior combination of CTM systems (``combine --method posterior`` with ``.ctm`` systems: each word's
  confidence read as its posterior, a confusion network per CTM): each system's MBR 1-best CTM (its lattice's
  confusion-network words, their bins' posteriors as confidences), the three together and system A's N-best
  list beside B's and C's;
* NIST ROVER over the three 1-best CTMs (``combine --method rover``, identical to SCTK's ``rover``):
  voting alone (``meth1``, alpha 1) and with confidences (``avgconf``, alpha 0.5);
* the oracle of the three lists together (the combined N-best list).

Usage: python bench/table_combine_bundled.py [--workdir /tmp/combine_bundled] [-n 100]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SYSTEMS = {
    "A: defaults": {},
    "B: lw 9": {"lw": 9.0},
    "C: lw 10, wide beams": {"lw": 10.0, "beam": 1e-60, "wbeam": 1e-50},
}


def main() -> None:
    from lattice_tools.alternatives.combine import combine_systems
    from lattice_tools.alternatives.nbest_lists import nbest
    from lattice_tools.alternatives.nbest_merge import combine_nbests
    from lattice_tools.alternatives.sausages import sausage
    from lattice_tools.decode.pocketsphinx import decode_audio
    from lattice_tools.io.lattices.lattice_files import read_lattices
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm
    from lattice_tools.io.transcripts.ctm import read_ctm
    from lattice_tools.io.transcripts.nbest import write_nbest_tsv
    from lattice_tools.io.transcripts.nbest_files import read_nbest
    from lattice_tools.io.transcripts.stm import read_stm
    from lattice_tools.oracle.api import alternatives_oracle_many
    from lattice_tools.pipelines.demo import _bundled, _stm_for
    from lattice_tools.scoring.sclite import score_stm_ctm

    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", default="/tmp/combine_bundled")
    ap.add_argument("-n", type=int, default=100)
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    paths, trn = _bundled("librivox")
    stm_path = str(work / "ref.stm")
    _stm_for(paths, [trn], stm_path)
    stm = read_stm(stm_path)
    refs = {seg.file: seg.text for seg in stm.segments}

    def wer(ctm: str) -> str:
        total = score_stm_ctm(stm, read_ctm(ctm), allow_missing=True).total  # no words: deletions, as sclite
        return f"{100 * total.wer:.1f} ({total.errors}/{total.ref_words})"

    rows, tsvs = [], []
    for i, (name, opts) in enumerate(SYSTEMS.items()):
        lat_dir = work / f"sys{i}"
        tsv = str(work / f"sys{i}.tsv")
        if not os.path.exists(tsv):
            lats = decode_audio(paths, out_dir=str(lat_dir), progress=False, **opts)
            write_nbest_tsv(tsv, (nbest(lat, args.n) for lat in lats))
        tsvs.append(tsv)
        lists = list(read_nbest(tsv))
        one = str(work / f"sys{i}.1best.ctm")
        write_alternatives_ctm(one, lists, 1)
        orc = alternatives_oracle_many(lists, [refs[a.key] for a in lists])
        err = sum(r.counts.errors for r in orc)
        n_ref = sum(r.counts.ref_words for r in orc)
        depth = sum(len(a.slots[0].alternatives) for a in lists) / len(lists)
        rows.append((name, wer(one), f"{100 * err / n_ref:.1f} ({err}/{n_ref})", f"{depth:.0f}"))
    comb = str(work / "combined.ctm")
    stats = combine_systems(tsvs, comb)
    comb1 = str(work / "combined.1best.ctm")
    combine_systems(tsvs, comb1, n=1)
    saus_oracle = wer(comb)  # sclite scores an alt-CTM by its best path
    ones = [str(work / f"sys{i}.1best.ctm") for i in range(len(SYSTEMS))]
    for label, kw in (("ROVER meth1 (voting)", {}), ("ROVER avgconf, alpha 0.5", {"rover_method": "avgconf",
                                                                                   "alpha": 0.5})):
        rover_out = str(work / f"rover_{kw.get('rover_method', 'meth1')}.ctm")
        combine_systems(ones, rover_out, method="rover", **kw)
        rows.append((label, wer(rover_out), "", "1"))
    per_system = [list(read_nbest(t)) for t in tsvs]
    union = [combine_nbests(group) for group in zip(*per_system, strict=True)]
    orc = alternatives_oracle_many(union, [refs[a.key] for a in union])
    err = sum(r.counts.errors for r in orc)
    n_ref = sum(r.counts.ref_words for r in orc)
    rows.append(("posterior combination (A+B+C)", wer(comb1), saus_oracle + " (confusion network)",
                 f"{stats.statistics.n_max} (max bin)"))
    # CTM systems (1-best with word confidences): each system's MBR 1-best, the words of its lattice's confusion
    # network with their bins' posteriors as confidences, read back as a confusion network per CTM (each
    # confidence is its word's posterior); alone, and beside system A's N-best list
    mbr = []
    for i in range(len(SYSTEMS)):
        mbr.append(str(work / f"sys{i}.mbr.ctm"))
        write_alternatives_ctm(mbr[-1], (sausage(lat) for lat in read_lattices(str(work / f"sys{i}"))), 1)
    for label, tag, inputs in (("posterior combination of the MBR 1-best CTMs (A+B+C)", "ctms", mbr),
                               ("posterior combination, A's N-best list + B, C MBR CTMs", "mixed",
                                [tsvs[0], *mbr[1:]])):
        out = str(work / f"combined_{tag}.ctm")
        ctm_stats = combine_systems(inputs, out)
        combine_systems(inputs, str(work / f"combined_{tag}.1best.ctm"), n=1)
        rows.append((label, wer(str(work / f"combined_{tag}.1best.ctm")), wer(out) + " (confusion network)",
                     f"{ctm_stats.statistics.n_max} (max bin)"))
    rows.append(("union of the three N-best lists", "", f"{100 * err / n_ref:.1f} ({err}/{n_ref})",
                 f"{sum(len(a.slots[0].alternatives) for a in union) / len(union):.0f}"))
    print("| system | WER % (1-best) | oracle WER % | N (mean) |\n|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
