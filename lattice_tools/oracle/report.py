"""``lattice-tools oracle``: oracle WER of lattices or an alt-CTM, with bootstrap intervals."""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from .._budget import memory_budget
from ..errors import LatticeToolsError
from ..files import discard_temporary, write_json
from ..scoring.counts import ErrorCounts
from .api import alternatives_oracle_many, lattice_oracle
from .bootstrap import bootstrap_wer
from .dp import OracleResult
from .representations import (
    REPRESENTATIONS,
    check_references_covered,
    ctm_oracle,
    glm_filtered_copy,
    load_references,
    make_alternatives,
    match_references,
)


def _is_ctm(path: str, format: str | None = None, encoding: str = "utf-8") -> bool:
    """An input is an (alt-)CTM when named ``.ctm`` or, failing a lattice format from its name, when
    its content is a CTM (:func:`lattice_tools.io.detect.detect_transcript_format`)."""
    from ..io import guess_format
    from ..io.detect import detect_transcript_format, format_from_name

    if format is not None:
        return False
    if format_from_name(str(path)) is not None:
        return format_from_name(str(path)) == "ctm"
    try:
        guess_format(str(path))
        return False
    except LatticeToolsError:
        if not os.path.isfile(str(path)):
            raise
    return detect_transcript_format(str(path), allowed=("ctm",), role="input", option="--format",
                                    encoding=encoding) == "ctm"


def oracle_wer(inputs: str | Sequence[str], reference: str, *, glm: str | None = None,
               optional_deletable: bool = False, mode: str = "sclite", representation: str = "lattice",
               n: int | None = None, posterior_threshold: float = 0.1, acoustic_scale: float = 1.0,
               lm_scale: float = 1.0, word_penalty: float = 0.0, bootstrap: int = 0, seed: int = 0,
               json_out: str | None = None, progress: bool | None = None, ref_format: str | None = None,
               format: str | None = None, words: str | None = None, frame_shift: float | None = None,
               frame_subsampling_factor: int | None = None, allow_missing: bool = False,
               allow_untimed: bool = False, max_memory: int | None = None, encoding: str = "utf-8",
               segment_free: bool = False, collar: float | None = None) -> dict:
    """Oracle WER of lattices (any format :func:`lattice_tools.io.read_lattices` reads) under one
    representation, or of an (alt-)CTM file, against an STM/trn reference.

    Args:
      inputs: lattice specs (:func:`lattice_tools.io.read_lattice_inputs`, with ``format``, ``words``,
        ``frame_shift``, ``frame_subsampling_factor``), or one (alt-)CTM file (then
        ``representation``/``n`` are ignored: the file's own blocks are the alternatives; against an
        STM it is scored per segment like sclite).
      reference: STM, trn or Kaldi ``text`` file (``ref_format``, else detected: see
        :func:`lattice_tools.oracle.representations.load_references`); ``glm`` filters it like csrfilt.
      allow_missing: reference utterances without a lattice are left out (with a warning in the
        report's ``warnings``) instead of raising MismatchError.
      allow_untimed: accept lattices without word times for the phrase representation (whose
        boundaries are times).
      optional_deletable: sclite ``-D``.
      mode: ``"sclite"`` or ``"levenshtein"``.
      representation: ``lattice``, ``1best``, ``nbest``, ``sausage`` or ``phrase``; ``n`` its depth.
      bootstrap, seed: utterance-bootstrap replications (0: none) for 95% intervals.
      json_out: also write the report (with per-utterance counts) as JSON.
      max_memory: bound the N-best/phrase searches by this many bytes of resident memory instead of
        their node/state counts (BudgetExceededError past it; None: the counts).
      encoding: text encoding of the reference, GLM and CTM files (e.g. ``latin-1``, ``gb2312``).
      segment_free: whole-side lattices against an STM: one lattice per file/channel, aligned against all
        the side's segments (:func:`lattice_tools.oracle.segment_free.segment_free_oracle`); ``collar``: its
        time constraint in seconds (None: none).
    Returns:
      ``{"counts": {...}, "wer": ..., "precision": ..., "recall": ..., "intervals": {...},
      "utterances": [...]}``.
    """
    from tqdm import tqdm

    if representation not in REPRESENTATIONS:
        raise LatticeToolsError(f"unknown representation {representation!r}; expected one of {', '.join(REPRESENTATIONS)}")
    from ..io.detect import detect_transcript_format
    from ..io.inputs import check_times, check_word_table, is_text

    disable = (not os.isatty(2)) if progress is None else not progress
    opts = dict(mode=mode, optional_deletable=optional_deletable)
    specs = [inputs] if isinstance(inputs, (str, os.PathLike)) else [str(x) for x in inputs]
    is_ctm = [_is_ctm(x, format, encoding) for x in specs]
    if any(is_ctm) and len(specs) > 1:
        raise LatticeToolsError("an alt-CTM input is scored on its own: give one CTM file, or lattices")
    warnings: list[str] = []
    rfmt = detect_transcript_format(str(reference), ref_format, allowed=("stm", "trn", "text"), role="reference",
                                    option="--ref-format", encoding=encoding)
    results: list[OracleResult]
    if collar is not None and not segment_free:
        raise LatticeToolsError("a collar applies to segment-free oracles only (--segment-free)")
    if segment_free:
        results = _segment_free(specs, is_ctm[0], rfmt, str(reference), glm, representation, collar, warnings,
                                dict(format=format, words=words, frame_shift=frame_shift,
                                     frame_subsampling_factor=frame_subsampling_factor),
                                allow_missing=allow_missing, encoding=encoding, max_memory=max_memory, **opts)
        what = "lattice"
    elif is_ctm[0] and rfmt == "stm":
        stm_path = reference
        if glm is not None:
            stm_path = glm_filtered_copy(str(reference), glm, "stm", encoding)
        try:
            results = ctm_oracle(str(specs[0]), str(stm_path), encoding=encoding, **opts)
        finally:  # the GLM-filtered copy is a scratch file: removed as soon as it is scored
            if stm_path is not reference:
                discard_temporary(stm_path)
        what = "alt-CTM"
    else:
        refs = load_references(str(reference), glm=glm, fmt=rfmt, encoding=encoding)
        if is_ctm[0]:
            from ..io.altctm import read_alternatives_ctm
            alts = read_alternatives_ctm(str(specs[0]), encoding=encoding)
            keys = [a.file for a in alts]
            match_references(keys, refs, what="CTM file")
            check_references_covered(keys, refs, allow_missing, str(reference), warnings)
            # CTM words are scored as written (no filler removal), as sclite would
            results = alternatives_oracle_many(alts, [refs[k] for k in keys], nonword=lambda w: False, **opts)
            what = "alt-CTM"
        else:
            from ..io import read_lattice_inputs
            results = []
            batch_alts, batch_refs, keys = [], [], []
            lats = read_lattice_inputs(specs, format=format, words=words, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor)
            text_refs = is_text(refs.values())
            for lat in tqdm(lats, desc="oracle", unit="utt", disable=disable):
                match_references([lat.key], refs)
                check_word_table(lat, text_refs)
                if representation == "phrase":
                    check_times(lat, allow_untimed=allow_untimed, what="phrase segmentation")
                keys.append(lat.key)
                if representation == "lattice":
                    results.append(lattice_oracle(lat, refs[lat.key], **opts))
                else:
                    kw = {"posterior_threshold": posterior_threshold} if representation == "phrase" else {}
                    if max_memory is not None and representation in ("nbest", "phrase"):
                        kw.update(max_pops=sys.maxsize, max_states=sys.maxsize)  # the memory budget governs
                    with memory_budget(max_memory):
                        batch_alts.append(make_alternatives(lat, representation, n, acoustic_scale=acoustic_scale,
                                                            lm_scale=lm_scale, word_penalty=word_penalty, **kw))
                    batch_refs.append(refs[lat.key])
            check_references_covered(keys, refs, allow_missing, str(reference), warnings)
            if batch_alts:
                results = alternatives_oracle_many(batch_alts, batch_refs, **opts)
            what = representation
    if not results:
        raise LatticeToolsError("nothing to score: no utterances", path=str(inputs))
    total = ErrorCounts.sum(r.counts for r in results)
    report = {"input": " ".join(specs), "reference": str(reference), "what": what, "mode": mode,
              "representation": None if what == "alt-CTM" else representation, "n": n,
              "optional_deletable": optional_deletable, "counts": total.as_dict(), "wer": total.wer,
              "precision": total.precision, "recall": total.recall, "cost": sum(r.cost for r in results),
              "utterances": [{"key": r.key, "cost": r.cost, "words": " ".join(r.words), **r.counts.as_dict()}
                             for r in results], "warnings": warnings}
    if bootstrap:
        ivs = bootstrap_wer([r.counts for r in results], replications=bootstrap, seed=seed)
        report["intervals"] = {k: v.as_dict() for k, v in ivs.items()}
    if json_out:  # strict JSON: undefined values (e.g. precision of an empty output) are null
        write_json(json_out, report, indent=1, sort_keys=False)
    return report


def _segment_free(specs, is_ctm, rfmt, reference, glm, representation, collar, warnings, lattice_options, *,
                  allow_missing, encoding, max_memory, mode, optional_deletable) -> list[OracleResult]:
    """The segment-free branch of :func:`oracle_wer`: whole-side lattices against an STM."""
    from ..io import read_lattice_inputs
    from ..io.stm import read_stm
    from .segment_free import segment_free_oracle

    if is_ctm:
        raise LatticeToolsError("--segment-free takes lattices; for an alt-CTM, 'lattice-tools score "
                                "--segment-free' aligns its ALT blocks across segments (its alignment is the oracle "
                                "over them)")
    if rfmt != "stm" or representation != "lattice":
        raise LatticeToolsError("--segment-free needs an STM reference and the lattice representation",
                                path=reference)
    stm_path = glm_filtered_copy(reference, glm, "stm", encoding) if glm is not None else reference
    try:
        stm = read_stm(stm_path, encoding)
    finally:
        if stm_path is not reference:
            discard_temporary(stm_path)
    lats = read_lattice_inputs(specs, **lattice_options)
    with memory_budget(max_memory):
        return segment_free_oracle(lats, stm, collar=collar, mode=mode, optional_deletable=optional_deletable,
                                   allow_missing=allow_missing, warnings=warnings, ref_name=reference)


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
