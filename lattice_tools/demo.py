"""The main job: the whole pipeline on the bundled real speech, in a few minutes on 2 cores.

1. decode the bundled LibriVox and "cards" recordings with pocketsphinx into word lattices (SLF) at two
   lattice densities (pocketsphinx's default beams, and wider beams);
2. score the decoder's 1-best CTM against the references exactly like sclite (``%WER`` line, ``.sys``,
   ``.pra``, JSON);
3. derive N-best lists, sausages and phrase alternatives and write them as alt-CTM files;
4. run the oracle study (seed 001 Tables 3-6 in structure: oracle WER, N, N_max, N_.9, N_.5, MB,
   bootstrap intervals) over both densities, with the whole-lattice oracle, and plot it.
"""
from __future__ import annotations

import os
import wave
from collections.abc import Sequence

from .errors import LatticeToolsError

# pocketsphinx search settings: its defaults, and a denser lattice from the first (tree) pass alone
# with wider beams (about 8x the arcs on the bundled LibriVox clips: 119k against 15k).
DENSITIES = {
    "default": {},
    "dense": {"fwdflat": False, "beam": 1e-60, "wbeam": 1e-40, "pbeam": 1e-60},
}
DEMO_NS = (1, 2, 10, 100, 1000)


def _bundled(corpus: str) -> tuple[list[str], str]:
    from .decode.pocketsphinx import bundled_audio

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", corpus)
    return bundled_audio(corpus), os.path.join(here, "transcription.trn")


def _stm_for(paths: Sequence[str], trn_paths: Sequence[str], out: str) -> None:
    """An STM with one segment per bundled utterance (file = utterance id, channel 1 -- the channel every
    CTM of the toolkit has by default -- whole file)."""
    from .io.common import atomic_write
    from .io.trn import read_trn

    text = {u.utt_id: u.text for p in trn_paths for u in read_trn(p)}
    lines = []
    for p in paths:
        key = os.path.splitext(os.path.basename(p))[0]
        if key not in text:
            raise LatticeToolsError(f"no reference transcript for bundled audio {p}")
        with wave.open(p) as w:
            dur = w.getnframes() / w.getframerate()
        lines.append(f"{key} 1 {key} 0.000 {dur:.3f} {text[key]}")
    with atomic_write(out) as f:
        f.write("\n".join(sorted(lines)) + "\n")


def run_demo(out: str = "demo-out", *, corpora: Sequence[str] = ("librivox", "cards"), ns: Sequence[int] = DEMO_NS,
             densities: Sequence[str] = ("default", "dense"), bootstrap: int = 1000, seed: int = 0,
             progress: bool | None = None, echo=print) -> dict:
    """Run decode -> 1-best scoring -> alternatives -> oracle study on the bundled speech.

    Returns a dict of the files written (tables, plots, CTMs, lattices).  Everything lands under
    ``out``; finished study cells are reused on a rerun.
    """
    from .decode.pocketsphinx import decode_audio
    from .io.ctm import read_ctm
    from .io.stm import read_stm
    from .oracle.study import run_study
    from .scoring.reports import kaldi_line, write_reports
    from .scoring.sclite import score_stm_ctm

    unknown = set(densities) - set(DENSITIES)
    if unknown:
        raise LatticeToolsError(f"unknown density {sorted(unknown)}; choose from {sorted(DENSITIES)}")
    os.makedirs(out, exist_ok=True)
    paths, trns = [], []
    for corpus in corpora:
        p, t = _bundled(corpus)
        paths += p
        trns.append(t)
    stm_path = os.path.join(out, "reference.stm")
    _stm_for(paths, trns, stm_path)
    files = {"reference": stm_path}

    lattice_sets = {}
    baselines = []  # the decoder's own 1-best per density, shown beside the lattice's best path
    for name in densities:
        lat_dir = os.path.join(out, "lattices", name)
        ctm = os.path.join(out, "lattices", f"{name}.1best.ctm")
        echo(f"[demo] decoding {len(paths)} recordings ({name} beams) -> {lat_dir}")
        lattice_sets[name] = decode_audio(paths, out_dir=lat_dir, ctm=ctm, progress=progress, **DENSITIES[name])
        files[f"lattices/{name}"] = lat_dir
        result = score_stm_ctm(read_stm(stm_path), read_ctm(ctm), optional_deletable=True)
        score_dir = os.path.join(out, "score", f"{name}.1best")
        write_reports(result, score_dir)
        echo(f"[demo] decoder hypothesis (pocketsphinx hyp(), {name} beams): {kaldi_line(result.total)}")
        t = result.total
        baselines.append({"density": name, "name": "decoder hypothesis (pocketsphinx hyp())", "wer": 100 * t.wer,
                          "C": t.correct, "S": t.substitutions, "D": t.deletions, "I": t.insertions,
                          "ref_words": t.ref_words})
        files[f"score/{name}.1best"] = score_dir

    echo("[demo] alternatives + oracle study (N-best, sausage, phrase, whole lattice)")
    study_dir = os.path.join(out, "study")
    data = " + ".join({"librivox": "LibriVox clips", "cards": "'cards' recordings"}.get(c, c) for c in corpora)
    result = run_study(lattice_sets, stm_path, ns=ns, out_dir=study_dir, bootstrap=bootstrap, seed=seed,
                       progress=progress, title=f"bundled speech ({data}), pocketsphinx lattices",
                       baselines=baselines)
    files.update({f"study/{k}": v for k, v in result.files.items()})
    # Error counts are what the invariants promise; the sclite alignment cost also charges 0.001 per
    # '@' (empty alternative) chosen, so costs can differ by such amounts with equal errors.
    failed = [inv for inv in result.invariants if not inv.get("holds_on_errors", inv.get("holds", True))]
    if failed:
        raise LatticeToolsError(f"oracle invariants violated: {failed}")
    md = result.files.get("markdown") or os.path.join(study_dir, "study.md")
    if os.path.exists(md):
        with open(md, encoding="utf-8") as f:
            echo(f.read())
    echo("[demo] outputs:")
    for k, v in files.items():
        echo(f"  {k:28s} {v}")
    return files
