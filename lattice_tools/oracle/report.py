"""``lattice-tools oracle``: oracle WER of lattices or an alt-CTM, with bootstrap intervals."""
from __future__ import annotations

import json
import os

from ..errors import LatticeToolsError
from ..io.common import atomic_write
from ..scoring.counts import ErrorCounts
from .batch import alternatives_oracle_many
from .bootstrap import bootstrap_wer
from .lattice_oracle import OracleResult, lattice_oracle
from .representations import REPRESENTATIONS, ctm_oracle, load_references, make_alternatives, match_references


def _is_ctm(path: str) -> bool:
    p = str(path)
    p = p[:-3] if p.endswith(".gz") else p
    return p.lower().endswith(".ctm")


def oracle_wer(inputs: str, reference: str, *, glm: str | None = None, optional_deletable: bool = False,
               mode: str = "sclite", representation: str = "lattice", n: int | None = None,
               posterior_threshold: float = 0.1, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
               word_penalty: float = 0.0, bootstrap: int = 0, seed: int = 0, json_out: str | None = None,
               progress: bool | None = None) -> dict:
    """Oracle WER of lattices (any format :func:`lattice_tools.io.read_lattices` reads) under one
    representation, or of an (alt-)CTM file, against an STM/trn reference.

    Args:
      inputs: lattice spec, or a ``.ctm``/``.ctm.gz`` file (then ``representation``/``n`` are ignored:
        the file's own blocks are the alternatives; against an STM it is scored per segment like sclite).
      reference: ``.stm`` / ``.trn`` (or Kaldi-style text) file; ``glm`` filters it like csrfilt.
      optional_deletable: sclite ``-D``.
      mode: ``"sclite"`` or ``"levenshtein"``.
      representation: ``lattice``, ``1best``, ``nbest``, ``sausage`` or ``phrase``; ``n`` its depth.
      bootstrap, seed: utterance-bootstrap replications (0: none) for 95% intervals.
      json_out: also write the report (with per-utterance counts) as JSON.
    Returns:
      ``{"counts": {...}, "wer": ..., "precision": ..., "recall": ..., "intervals": {...},
      "utterances": [...]}``.
    """
    from tqdm import tqdm

    if representation not in REPRESENTATIONS:
        raise LatticeToolsError(f"unknown representation {representation!r}; expected one of {', '.join(REPRESENTATIONS)}")
    disable = (not os.isatty(2)) if progress is None else not progress
    opts = dict(mode=mode, optional_deletable=optional_deletable)
    ref_low = str(reference)[:-3] if str(reference).endswith(".gz") else str(reference)
    results: list[OracleResult]
    if _is_ctm(inputs) and ref_low.endswith(".stm"):
        stm_path = reference
        if glm is not None:
            from .representations import _filtered_copy
            stm_path = _filtered_copy(str(reference), glm, "stm")
        results = ctm_oracle(str(inputs), str(stm_path), **opts)
        what = "alt-CTM"
    else:
        refs = load_references(str(reference), glm=glm)
        if _is_ctm(inputs):
            from ..io.altctm import read_alternatives_ctm
            alts = read_alternatives_ctm(str(inputs))
            keys = [a.file for a in alts]
            match_references(keys, refs, what="CTM file")
            # CTM words are scored as written (no filler removal), as sclite would
            results = alternatives_oracle_many(alts, [refs[k] for k in keys], nonword=lambda w: False, **opts)
            what = "alt-CTM"
        else:
            from ..io import read_lattices
            results = []
            batch_alts, batch_refs = [], []
            for lat in tqdm(read_lattices(str(inputs)), desc="oracle", unit="utt", disable=disable):
                match_references([lat.key], refs)
                if representation == "lattice":
                    results.append(lattice_oracle(lat, refs[lat.key], **opts))
                else:
                    kw = {"posterior_threshold": posterior_threshold} if representation == "phrase" else {}
                    batch_alts.append(make_alternatives(lat, representation, n, acoustic_scale=acoustic_scale,
                                                        lm_scale=lm_scale, word_penalty=word_penalty, **kw))
                    batch_refs.append(refs[lat.key])
            if batch_alts:
                results = alternatives_oracle_many(batch_alts, batch_refs, **opts)
            what = representation
    if not results:
        raise LatticeToolsError("nothing to score: no utterances", path=str(inputs))
    total = ErrorCounts.sum(r.counts for r in results)
    report = {"input": str(inputs), "reference": str(reference), "what": what, "mode": mode,
              "representation": None if what == "alt-CTM" else representation, "n": n,
              "optional_deletable": optional_deletable, "counts": total.as_dict(), "wer": total.wer,
              "precision": total.precision, "recall": total.recall, "cost": sum(r.cost for r in results),
              "utterances": [{"key": r.key, "cost": r.cost, "words": " ".join(r.words), **r.counts.as_dict()}
                             for r in results]}
    if bootstrap:
        ivs = bootstrap_wer([r.counts for r in results], replications=bootstrap, seed=seed)
        report["intervals"] = {k: v.as_dict() for k, v in ivs.items()}
    if json_out:
        with atomic_write(json_out) as f:
            json.dump(report, f, indent=1, allow_nan=True)
            f.write("\n")
    return report


def format_report(report: dict) -> str:
    c = report["counts"]
    label = report["what"] if report["representation"] is None else (
        report["representation"] + ("" if report["n"] is None else f"(N={report['n']})"))
    lines = [f"oracle {label} [{report['mode']}]: {len(report['utterances'])} utterances",
             f"%WER {100 * report['wer']:.2f} [ {c['errors']} / {c['ref_words']}, {c['insertions']} ins, "
             f"{c['deletions']} del, {c['substitutions']} sub ]  C={c['correct']}  "
             f"precision={report['precision']:.4f} recall={report['recall']:.4f}"]
    if "intervals" in report:
        iv = report["intervals"]["wer"]
        lines.append(f"95% bootstrap interval of WER ({iv['replications']} replications): "
                     f"[{100 * iv['low']:.2f}, {100 * iv['high']:.2f}]")
    return "\n".join(lines)
