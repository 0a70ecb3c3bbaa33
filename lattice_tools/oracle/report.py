"""``lattice-tools oracle``: oracle WER of lattices or an alt-CTM, with bootstrap intervals."""
from __future__ import annotations

import os
from collections.abc import Sequence

from .._budget import check_memory, memory_budget
from ..errors import LatticeToolsError, MismatchError
from ..files import write_json
from ..scoring.counts import ErrorCounts
from .api import alternatives_oracle_many, lattice_oracle
from .bootstrap import bootstrap_wer
from .dp import OracleResult
from .representations import (
    REPRESENTATIONS,
    ctm_oracle,
    deletions_only,
    filter_alternatives,
    glm_list,
    lattice_specs,
    make_alternatives,
    refuse_glm_on_lattice,
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
               segments: str | None = None, segment_free: bool = False, collar: float | None = None) -> dict:
    """Oracle WER of lattices (any format :func:`lattice_tools.io.read_lattices` reads) under one
    representation, or of an (alt-)CTM file, against an STM/trn reference.

    Args:
      inputs: lattice specs (:func:`lattice_tools.io.read_lattice_inputs`, with ``format``, ``words``,
        ``frame_shift``, ``frame_subsampling_factor``), or one (alt-)CTM file (then
        ``representation``/``n`` are ignored: the file's own blocks are the alternatives; against an
        STM it is scored per segment like sclite).
      reference: STM, trn or Kaldi ``text`` file, read by the scorer's input layer
        (:mod:`lattice_tools.scoring.inputs`: format from ``ref_format``, else extension, else
        content; an empty reference is refused).
      glm: one GLM file or several, applied like csrfilt to *both* sides, as ``score --glm`` does:
        to the reference and to the words of the alt-CTM or of the alternatives built from the
        lattices (refused with ``representation="lattice"``: a whole lattice is no transcript).
      allow_missing: lattices (or CTM files/channels) without reference are left out, and
        references without any hypothesis are scored as all deletions (STM) or left out
        (trn/text) -- what ``score --allow-missing`` does -- each with a warning in the report's
        ``warnings``; otherwise MismatchError (:func:`lattice_tools.scoring.inputs.match_keys`).
      segments: a Kaldi ``segments`` file (``utt recording start end``) for utterance-keyed lattices
        against an STM keyed by recording: each STM segment is the reference of the utterance it
        overlaps most (:func:`lattice_tools.scoring.inputs.reference_transcripts`).
      allow_untimed: accept lattices without word times for the phrase representation (whose
        boundaries are times).
      optional_deletable: sclite ``-D``.
      mode: ``"sclite"`` or ``"levenshtein"``.
      representation: ``lattice``, ``1best``, ``nbest``, ``sausage`` or ``phrase``; ``n`` its depth.
      bootstrap, seed: utterance-bootstrap replications (0: none) for 95% intervals.
      json_out: also write the report (with per-utterance counts) as JSON.
      max_memory: bound every step (reading the lattices, the N-best/phrase searches, the oracle)
        by this many bytes of resident memory (BudgetExceededError past it); the searches keep their
        node/state budgets too (None: those alone).
      encoding: text encoding of the reference, GLM and CTM files (e.g. ``latin-1``, ``gb2312``).
      segment_free: whole-side lattices against an STM: one lattice per file/channel, aligned against all
        the side's segments (:func:`lattice_tools.oracle.segment_free.segment_free_oracle`); ``collar``: its
        time constraint in seconds (None: none).
    Returns:
      ``{"counts": {...}, "wer": ..., "precision": ..., "recall": ..., "intervals": {...},
      "utterances": [...]}``.
    """
    if representation not in REPRESENTATIONS:
        raise LatticeToolsError(f"unknown representation {representation!r}; expected one of {', '.join(REPRESENTATIONS)}")
    from ..scoring.inputs import (
        check_encoding,
        match_keys,
        read_hypothesis,
        read_reference,
        reference_format,
        reference_transcripts,
    )

    check_encoding(encoding)
    glms = glm_list(glm)
    opts = dict(mode=mode, optional_deletable=optional_deletable)
    specs = lattice_specs(inputs)
    if not specs:
        raise LatticeToolsError("nothing to score: no inputs")
    is_ctm = [_is_ctm(x, format, encoding) for x in specs]
    if any(is_ctm) and len(specs) > 1:
        raise LatticeToolsError("an alt-CTM input is scored on its own: give one CTM file, or lattices")
    if is_ctm[0] and segments:
        raise LatticeToolsError("segments map the keys of lattices; a CTM names its recordings already "
                                "(convert-ctm maps an utterance-keyed CTM)")
    warnings: list[str] = []
    rfmt = reference_format(str(reference), ref_format, encoding=encoding)
    results: list[OracleResult]
    if collar is not None and not segment_free:
        raise LatticeToolsError("a collar applies to segment-free oracles only (--segment-free)")
    if segment_free:
        if segments:
            raise LatticeToolsError("--segment-free takes whole-side lattices; --segments maps utterance lattices")
        results = _segment_free(specs, is_ctm[0], rfmt, str(reference), glms, representation, collar, warnings,
                                dict(format=format, words=words, frame_shift=frame_shift,
                                     frame_subsampling_factor=frame_subsampling_factor),
                                allow_missing=allow_missing, encoding=encoding, max_memory=max_memory, **opts)
        what = "lattice"
    elif is_ctm[0] and rfmt == "stm":
        # the scorer itself (GLM on both sides, channels, segments): oracle of an alt-CTM = score of it
        results = ctm_oracle(str(specs[0]), str(reference), glm=glms, allow_missing=allow_missing, warnings=warnings,
                             encoding=encoding, **opts)
        what = "alt-CTM"
    elif is_ctm[0]:
        from ..io.altctm import alternatives_from_ctm_items

        ref = read_reference(str(reference), rfmt, glms=glms, encoding=encoding)
        refs = reference_transcripts(ref)
        items, more = read_hypothesis(str(specs[0]), "ctm", glms=glms, encoding=encoding)
        warnings += more
        alts = alternatives_from_ctm_items(items)
        channels: dict = {}
        for a in alts:
            if channels.setdefault(a.file, a.channel) != a.channel:
                raise MismatchError(f"file {a.file!r} has words on channels {channels[a.file]!r} and {a.channel!r}; a "
                                    f"{rfmt} reference has no channel (score it against an STM)", path=str(specs[0]))
        match_keys([a.file for a in alts], refs, allow_missing=allow_missing, warnings=warnings,
                   hyp_what="CTM file", hyp_name=str(specs[0]), ref_name=ref.path, ref_format=ref.format,
                   show=repr)
        alts = [a for a in alts if a.file in refs]
        # CTM words are scored as written (no filler removal), as sclite would
        results = alternatives_oracle_many(alts, [refs[a.file] for a in alts], nonword=lambda w: False, **opts)
        what = "alt-CTM"
    else:
        refuse_glm_on_lattice(glms, [representation])
        from ..io.kaldi_data import read_segments

        ref = read_reference(str(reference), rfmt, glms=glms, encoding=encoding)
        refs = reference_transcripts(ref, read_segments(segments) if segments else None)
        results = _lattice_results(specs, ref, refs, warnings, representation=representation,
                                   n=n, posterior_threshold=posterior_threshold, acoustic_scale=acoustic_scale,
                                   lm_scale=lm_scale, word_penalty=word_penalty, glms=glms, encoding=encoding,
                                   format=format, words=words, frame_shift=frame_shift,
                                   frame_subsampling_factor=frame_subsampling_factor, allow_missing=allow_missing,
                                   allow_untimed=allow_untimed, max_memory=max_memory, progress=progress, opts=opts)
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


def _lattice_results(specs, ref, refs: dict, warnings: list, *, representation, n, posterior_threshold,
                     acoustic_scale, lm_scale, word_penalty, glms, encoding, format, words, frame_shift,
                     frame_subsampling_factor, allow_missing, allow_untimed, max_memory, progress,
                     opts) -> list[OracleResult]:
    """The oracle of every lattice of ``specs`` matched to its reference (``match_keys``: the same
    errors and ``allow_missing`` as ``score``), under the memory budget ``max_memory`` (every
    step: reading, building the alternatives, the oracle DP)."""
    from tqdm import tqdm

    from ..io import read_lattice_inputs
    from ..io.inputs import check_times, check_word_table, is_text, is_word_ids
    from ..scoring.inputs import match_keys

    disable = (not os.isatty(2)) if progress is None else not progress
    match = dict(allow_missing=allow_missing, warnings=warnings, hyp_what="lattice", hyp_name=" ".join(specs),
                 ref_name=ref.path, ref_format=ref.format, show=repr)
    results: list[OracleResult] = []
    batch_alts, batch_refs, keys = [], [], []
    text_refs = is_text(refs.values())
    id_refs = is_word_ids(refs.values())
    with memory_budget(max_memory):
        lats = read_lattice_inputs(specs, format=format, words=words, frame_shift=frame_shift,
                                   frame_subsampling_factor=frame_subsampling_factor)
        for lat in tqdm(lats, desc="oracle", unit="utt", delay=2, disable=disable):  # shown after ~2 s
            keys.append(lat.key)
            if lat.key not in refs:
                if not allow_missing:
                    match_keys([lat.key], [], **{**match, "warnings": []})
                continue
            check_memory("the oracle", lat.key)
            check_word_table(lat, text_refs, ids=id_refs)
            if representation == "phrase":
                check_times(lat, allow_untimed=allow_untimed, what="phrase segmentation")
            if representation == "lattice":
                results.append(lattice_oracle(lat, refs[lat.key], **opts))
                continue
            # (the searches keep their node/state budgets under a memory budget: their compiled loops
            # do not measure every structure they grow, and without those budgets an N-best search with
            # no N reached 8 GB under a 500M budget)
            kw = {"posterior_threshold": posterior_threshold} if representation == "phrase" else {}
            alts = make_alternatives(lat, representation, n, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                                     word_penalty=word_penalty, **kw)
            batch_alts.extend(filter_alternatives([alts], glms, encoding=encoding))
            batch_refs.append(refs[lat.key])
        missing = match_keys(keys, refs, **match)
        if batch_alts:
            check_memory("the oracle")
            results = alternatives_oracle_many(batch_alts, batch_refs, **opts)
        if missing and ref.format == "stm":
            results += deletions_only(missing, refs, **opts)
    return results


def _segment_free(specs, is_ctm, rfmt, reference, glms, representation, collar, warnings, lattice_options, *,
                  allow_missing, encoding, max_memory, mode, optional_deletable) -> list[OracleResult]:
    """The segment-free branch of :func:`oracle_wer`: whole-side lattices against an STM."""
    from ..io import read_lattice_inputs
    from ..scoring.inputs import read_reference
    from .segment_free import segment_free_oracle

    if is_ctm:
        raise LatticeToolsError("--segment-free takes lattices; for an alt-CTM, 'lattice-tools score "
                                "--segment-free' aligns its ALT blocks across segments (its alignment is the oracle "
                                "over them)")
    if rfmt != "stm" or representation != "lattice":
        raise LatticeToolsError("--segment-free needs an STM reference and the lattice representation",
                                path=reference)
    refuse_glm_on_lattice(glms, [representation])   # a GLM on the reference side only would be a wrong number
    stm = read_reference(reference, "stm", encoding=encoding).records
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
