"""``lattice-tools oracle``: oracle WER of lattices or an alt-CTM, with bootstrap intervals."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core._budget import check_memory, memory_budget
from ..core.counts import ErrorCounts
from ..core.errors import LatticeToolsError, MismatchError
from ..core.files import write_json
from .api import alternatives_oracle_many, lattice_oracle_many
from .bootstrap import Interval, bootstrap_wer
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


@dataclass(frozen=True)
class OracleReport:
    """What :func:`oracle_wer` (``lattice-tools oracle``) found: the oracle error counts of the whole input and of
    each utterance.

    ``input``: the inputs, space-separated; ``reference``: the reference file; ``what``: the representation, or
    ``"alt-CTM"`` for a CTM input (whose ``representation`` is then None); ``n``: the representation's depth;
    ``counts``: the sum of the utterances' counts; ``cost``: the sum of their oracle costs (the mode's units);
    ``utterances``: one :class:`~lattice_tools.oracle.dp.OracleResult` per utterance (its oracle words, times and
    alignment), in input order; ``warnings``: what was left out (``allow_missing``) and why;
    ``wer_interval``, ``precision_interval``, ``recall_interval``: the utterance-bootstrap intervals (None
    without ``bootstrap``)."""

    input: str
    reference: str
    what: str
    mode: str
    representation: str | None
    n: int | None
    optional_deletable: bool
    counts: ErrorCounts
    cost: float
    utterances: tuple[OracleResult, ...]
    warnings: tuple[str, ...] = ()
    wer_interval: Interval | None = None
    precision_interval: Interval | None = None
    recall_interval: Interval | None = None

    @property
    def wer(self) -> float:
        return self.counts.wer

    @property
    def precision(self) -> float:
        return self.counts.precision

    @property
    def recall(self) -> float:
        return self.counts.recall

    @property
    def intervals(self) -> dict[str, Interval]:
        """The bootstrap intervals by measure (``wer``, ``precision``, ``recall``); empty without bootstrap."""
        pairs = (("wer", self.wer_interval), ("precision", self.precision_interval), ("recall", self.recall_interval))
        return {name: iv for name, iv in pairs if iv is not None}

    def to_dict(self) -> dict:
        """The report as JSON values (what ``--json`` writes): the counts, rates and per-utterance counts, the
        intervals only with bootstrap."""
        out = {"input": self.input, "reference": self.reference, "what": self.what, "mode": self.mode,
               "representation": self.representation, "n": self.n, "optional_deletable": self.optional_deletable,
               "counts": self.counts.as_dict(), "wer": self.wer, "precision": self.precision, "recall": self.recall,
               "cost": self.cost,
               "utterances": [{"key": r.key, "cost": r.cost, "words": " ".join(r.words), **r.counts.as_dict()}
                              for r in self.utterances],
               "warnings": list(self.warnings)}
        if self.intervals:
            out["intervals"] = {k: v.as_dict() for k, v in self.intervals.items()}
        return out


def _is_ctm(path: str, format: str | None = None, encoding: str = "utf-8") -> bool:
    """An input is an (alt-)CTM when named ``.ctm`` or, failing a lattice format from its name, when
    its content is a CTM (:func:`lattice_tools.io.transcripts.detect.detect_transcript_format`)."""
    from ..io import guess_format
    from ..io.transcripts.detect import detect_transcript_format, format_from_name

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


def oracle_wer(inputs: str | Sequence[str], reference: str, *, glm: str | Sequence[str] | None = None,
               optional_deletable: bool = False, mode: str = "sclite", representation: str = "lattice",
               n: int | None = None, posterior_threshold: float = 0.1, acoustic_scale: float = 1.0,
               lm_scale: float = 1.0, word_penalty: float = 0.0, bootstrap: int = 0, seed: int = 0,
               json_out: str | None = None, progress: bool | None = None, ref_format: str | None = None,
               format: str | None = None, words: str | None = None, frame_shift: float | None = None,
               frame_subsampling_factor: int | None = None, keys: str | None = None, allow_missing: bool = False,
               allow_untimed: bool = False, max_memory: int | None = None, encoding: str = "utf-8",
               segments: str | None = None, segment_free: bool = False, collar: float | None = None, executor=None,
               shard_dir: str | None = None) -> OracleReport:
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
      keys: a file naming the lattices in input order, one key per line (e.g. the icefall cut ids of a
        k2 ``.pt`` file): :func:`lattice_tools.io.read_lattice_inputs`.
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
      executor: None computes here; a :class:`concurrent.futures.Executor` or a ``dask.distributed.Client``
        computes the per-lattice oracles (alternatives and DP) in shards of utterances on its workers
        (:mod:`lattice_tools.core.parallel`); the report is the same either way (the bootstrap is drawn after
        gathering, in input order).  Alt-CTM inputs and ``segment_free`` run here.  ``shard_dir``:
        finished shards are kept there, so a killed run started again recomputes only the rest.
      segment_free: whole-side lattices against an STM: one lattice per file/channel, aligned against all
        the side's segments (:func:`lattice_tools.oracle.segment_free.segment_free_oracle`); ``collar``: its
        time constraint in seconds (None: none).
    Returns:
      an :class:`OracleReport` (``to_dict()``: the JSON of ``json_out``).
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
    opts: dict[str, Any] = dict(mode=mode, optional_deletable=optional_deletable)
    specs = lattice_specs(inputs)
    if not specs:
        raise LatticeToolsError("nothing to score: no inputs")
    is_ctm = [_is_ctm(x, format, encoding) for x in specs]
    if any(is_ctm) and len(specs) > 1:
        raise LatticeToolsError("an alt-CTM input is scored on its own: give one CTM file, or lattices")
    if is_ctm[0] and keys:
        raise LatticeToolsError("keys name the lattices of the inputs; a CTM names its recordings already")
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
                                     frame_subsampling_factor=frame_subsampling_factor, keys=keys),
                                dict(n=n, posterior_threshold=posterior_threshold, acoustic_scale=acoustic_scale,
                                     lm_scale=lm_scale, word_penalty=word_penalty),
                                allow_missing=allow_missing, encoding=encoding, max_memory=max_memory, **opts)
        what = representation
    elif is_ctm[0] and rfmt == "stm":
        # the scorer itself (GLM on both sides, channels, segments): oracle of an alt-CTM = score of it
        results = ctm_oracle(str(specs[0]), str(reference), glm=glms, allow_missing=allow_missing, warnings=warnings,
                             encoding=encoding, **opts)
        what = "alt-CTM"
    elif is_ctm[0]:
        from ..io.transcripts.altctm import alternatives_from_ctm_items

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
        from ..io.transcripts.kaldi_data import read_segments

        ref = read_reference(str(reference), rfmt, glms=glms, encoding=encoding)
        refs = reference_transcripts(ref, read_segments(segments) if segments else None)
        results = _lattice_results(specs, ref, refs, warnings, representation=representation,
                                   n=n, posterior_threshold=posterior_threshold, acoustic_scale=acoustic_scale,
                                   lm_scale=lm_scale, word_penalty=word_penalty, glms=glms, encoding=encoding,
                                   format=format, words=words, frame_shift=frame_shift,
                                   frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                                   allow_missing=allow_missing, allow_untimed=allow_untimed, max_memory=max_memory,
                                   progress=progress, opts=opts,
                                   executor=executor, shard_dir=shard_dir)
        what = representation
    if not results:
        raise LatticeToolsError("nothing to score: no utterances", path=str(inputs))
    total = ErrorCounts.sum(r.counts for r in results)
    intervals = bootstrap_wer([r.counts for r in results], replications=bootstrap, seed=seed) if bootstrap else {}
    report = OracleReport(input=" ".join(specs), reference=str(reference), what=what, mode=mode,
                          representation=None if what == "alt-CTM" else representation, n=n,
                          optional_deletable=optional_deletable, counts=total, cost=sum(r.cost for r in results),
                          utterances=tuple(results), warnings=tuple(warnings),
                          wer_interval=intervals.get("wer"), precision_interval=intervals.get("precision"),
                          recall_interval=intervals.get("recall"))
    if json_out:  # strict JSON: undefined values (e.g. precision of an empty output) are null
        write_json(json_out, report.to_dict(), indent=1, sort_keys=False)
    return report


@dataclass(frozen=True)
class OracleJob:
    """What one lattice's oracle depends on besides the lattice and its reference (sent with each shard)."""

    representation: str
    n: int | None
    posterior_threshold: float
    acoustic_scale: float
    lm_scale: float
    word_penalty: float
    glms: tuple
    encoding: str
    mode: str
    optional_deletable: bool
    max_memory: int | None


def oracle_of_shard(job: OracleJob, items) -> list[OracleResult]:
    """The oracle of each ``(lattice, reference)`` of a shard, in order (what a worker runs), under the
    job's memory budget: the lattice itself, or the alternatives of its representation."""
    opts: dict[str, Any] = dict(mode=job.mode, optional_deletable=job.optional_deletable)
    with memory_budget(job.max_memory):
        if job.representation == "lattice":
            return lattice_oracle_many([lat for lat, _ in items], [reference for _, reference in items], **opts)
        # (the searches keep their node/state budgets under a memory budget: their compiled loops
        # do not measure every structure they grow, and without those budgets an N-best search with
        # no N reached 8 GB under a 500M budget)
        kw = {"posterior_threshold": job.posterior_threshold} if job.representation == "phrase" else {}
        alts = []
        for lat, _reference in items:
            check_memory("the oracle", lat.key)
            made = make_alternatives(lat, job.representation, job.n, acoustic_scale=job.acoustic_scale,
                                     lm_scale=job.lm_scale, word_penalty=job.word_penalty, **kw)
            alts.extend(filter_alternatives([made], job.glms, encoding=job.encoding))
        check_memory("the oracle")
        # results are per utterance (alternatives_oracle_many equals the per-utterance oracle), so a
        # shard's batch gives the numbers of one batch of the whole corpus
        return alternatives_oracle_many(alts, [reference for _lat, reference in items], **opts)


def _lattice_results(specs, ref, refs: dict, warnings: list, *, representation, n, posterior_threshold,
                     acoustic_scale, lm_scale, word_penalty, glms, encoding, format, words, frame_shift,
                     frame_subsampling_factor, allow_missing, allow_untimed, max_memory, progress,
                     opts, keys=None, executor=None, shard_dir=None) -> list[OracleResult]:
    """The oracle of every lattice of ``specs`` matched to its reference (``match_keys``: the same
    errors and ``allow_missing`` as ``score``), under the memory budget ``max_memory`` (every
    step: reading, building the alternatives, the oracle DP), computed in shards of utterances
    (:mod:`lattice_tools.core.parallel`: here, or on the workers of ``executor``; the same results in the
    same order either way; finished shards kept in ``shard_dir`` for resuming)."""
    from tqdm import tqdm

    from ..core.parallel import ShardStore, run_shards, shard_lattices, with_companions
    from ..io import read_lattice_inputs
    from ..io.lattices.inputs import check_times, check_word_table, is_text, is_word_ids
    from ..scoring.inputs import match_keys

    disable = (not os.isatty(2)) if progress is None else not progress
    match = dict(allow_missing=allow_missing, warnings=warnings, hyp_what="lattice", hyp_name=" ".join(specs),
                 ref_name=ref.path, ref_format=ref.format, show=repr)
    job = OracleJob(representation, n, posterior_threshold, acoustic_scale, lm_scale, word_penalty, tuple(glms),
                    encoding, opts["mode"], opts["optional_deletable"], max_memory)
    store = ShardStore(shard_dir) if shard_dir else None
    results: list[OracleResult] = []
    seen: list[str] = []
    text_refs = is_text(refs.values())
    id_refs = is_word_ids(refs.values())

    def matched(lats):
        for lat in lats:
            seen.append(lat.key)
            if lat.key not in refs:
                if not allow_missing:
                    match_keys([lat.key], [], **{**match, "warnings": []})
                continue
            check_memory("the oracle", lat.key)
            check_word_table(lat, text_refs, ids=id_refs)
            if representation == "phrase":
                check_times(lat, allow_untimed=allow_untimed, what="phrase segmentation")
            yield lat

    with memory_budget(max_memory), tqdm(desc="oracle", unit="utt", delay=2, disable=disable) as bar:  # after ~2 s
        lats = read_lattice_inputs(specs, format=format, words=words, frame_shift=frame_shift,
                                   frame_subsampling_factor=frame_subsampling_factor, keys=keys)
        shards = with_companions(shard_lattices(matched(lats), repr(job), fingerprint=store is not None),
                                 refs.__getitem__)
        for _shard, shard_results in run_shards(oracle_of_shard, shards, executor=executor, args=(job,), store=store,
                                                progress=lambda s: bar.update(len(s.keys))):
            results.extend(shard_results)
        missing = match_keys(seen, refs, **match)
        if missing and ref.format == "stm":
            results += deletions_only(missing, refs, **opts)
    if store:
        store.remove()
    return results


def _segment_free(specs, is_ctm, rfmt, reference, glms, representation, collar, warnings, lattice_options,
                  alternative_options, *, allow_missing, encoding, max_memory, mode,
                  optional_deletable) -> list[OracleResult]:
    """The segment-free branch of :func:`oracle_wer`: whole-side lattices against an STM, one result per side.

    ``lattice``: the exact oracle path through each side's lattice
    (:func:`~lattice_tools.oracle.segment_free.segment_free_oracle`).  The other representations: each side's
    alternatives as alt-CTM items on its file/channel, GLM-filtered like a hypothesis alt-CTM, aligned against
    the side's segments by the segment-free scorer (:func:`~lattice_tools.scoring.segment_free.score_segment_free`):
    its alignment is the oracle over the alternatives, so this equals ``score --segment-free`` of their alt-CTM."""
    from ..io import read_lattice_inputs
    from ..scoring.inputs import read_reference
    from .segment_free import segment_free_oracle

    if is_ctm:
        raise LatticeToolsError("--segment-free takes lattices; for an alt-CTM, 'lattice-tools score "
                                "--segment-free' aligns its ALT blocks across segments (its alignment is the oracle "
                                "over them)")
    if rfmt != "stm":
        raise LatticeToolsError("--segment-free needs an STM reference (its segments are what the whole-side "
                                "alignment crosses)", path=reference)
    refuse_glm_on_lattice(glms, [representation])   # a GLM on the reference side only would be a wrong number
    with memory_budget(max_memory):
        lats = read_lattice_inputs(specs, **lattice_options)
        if representation == "lattice":
            stm = read_reference(reference, "stm", encoding=encoding).records
            return segment_free_oracle(lats, stm, collar=collar, mode=mode, optional_deletable=optional_deletable,
                                       allow_missing=allow_missing, warnings=warnings, ref_name=reference)
        return _segment_free_alternatives(lats, reference, glms, representation, collar, warnings,
                                          alternative_options, allow_missing=allow_missing, encoding=encoding,
                                          mode=mode, optional_deletable=optional_deletable)


def _segment_free_alternatives(lats, reference, glms, representation, collar, warnings, alternative_options, *,
                               allow_missing, encoding, mode, optional_deletable) -> list[OracleResult]:
    """:func:`_segment_free` for the alternatives of whole-side lattices (1best, nbest, sausage, phrase)."""
    from ..io.lattices.inputs import check_times
    from ..io.transcripts.altctm import alternatives_to_ctm_items
    from ..io.transcripts.ctm import CtmItems
    from ..io.transcripts.stm import Stm
    from ..scoring.inputs import filter_hypothesis_items, read_reference
    from ..scoring.segment_free import score_segment_free
    from ..scoring.segments import group_segments
    from .segment_free import side_of_key

    stm = read_reference(reference, "stm", glms=glms, encoding=encoding).records
    assert isinstance(stm, Stm), "read as an STM"
    sides = group_segments(list(stm.segments), False, None)
    options = dict(alternative_options)
    n = options.pop("n")
    if representation != "phrase":
        options.pop("posterior_threshold")
    located = []
    for lat in lats:
        check_times(lat, what="segment-free scoring (alternatives placed in the STM's segments by their times)")
        side = side_of_key(lat.key, sides)
        if side is None:
            raise MismatchError(f"lattice key {lat.key!r} names no file/channel of {reference} (expected "
                                "file-channel, file_channel, or a file with one channel)", key=lat.key)
        alts = make_alternatives(lat, representation, n, **options).with_location(side[0], side[1], 0.0)
        located.append((side, lat.key, alts))
    items: list = []
    for _side, _key, alts in sorted(located, key=lambda x: x[0]):
        items.extend(alternatives_to_ctm_items(alts, n))
    hyp, more = filter_hypothesis_items(CtmItems(items, [], ""), glms, fmt="ctm", encoding=encoding)
    warnings.extend(more)
    result = score_segment_free(stm, hyp, collar=collar, mode=mode, optional_deletable=optional_deletable,
                                allow_missing=allow_missing, ref_name=str(reference))
    warnings.extend(result.warnings)
    by_side: dict = {}
    for seg in result.segments:
        by_side.setdefault((seg.file, seg.channel), []).append(seg)
    keys = {side: key for side, key, _ in located}
    out = []
    for side, segs in by_side.items():
        total = ErrorCounts.sum(s.alignment.counts for s in segs)
        counts = dataclasses.replace(total, segments=1, segment_errors=int(total.errors > 0))  # one row per side
        words = tuple(p.hyp for s in segs for p in s.alignment.pairs if p.hyp is not None)
        out.append(OracleResult(keys.get(side, f"{side[0]}-{side[1]}"), mode, counts,
                                float(sum(s.alignment.cost for s in segs)), words, (), ()))
    return out


def format_report(report: OracleReport) -> str:
    """The report as the command prints it: the label, the WER line and the bootstrap interval of WER."""
    c = report.counts
    label = report.what if report.representation is None else (
        report.representation + ("" if report.n is None else f"(N={report.n})"))
    lines = [f"oracle {label} [{report.mode}]: {len(report.utterances)} utterances",
             f"%WER {100 * report.wer:.2f} [ {c.errors} / {c.ref_words}, {c.insertions} ins, "
             f"{c.deletions} del, {c.substitutions} sub ]  C={c.correct}  "
             f"precision={report.precision:.4f} recall={report.recall:.4f}"]
    if report.wer_interval is not None:
        iv = report.wer_interval
        lines.append(f"95% bootstrap interval of WER ({iv.replications} replications): "
                     f"[{100 * iv.low:.2f}, {100 * iv.high:.2f}]")
    return "\n".join(lines)
