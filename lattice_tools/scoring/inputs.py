"""The one door through which references and hypotheses reach ``score``, ``oracle``, ``study`` and ``metrics``.

Every command that compares a hypothesis with a reference reads, checks and matches its inputs
here, so that the same file gives the same words, the same errors and the same number everywhere:

* :func:`read_reference` -- the format (:func:`lattice_tools.io.transcripts.detect.detect_transcript_format`:
  explicit, extension, else content; an STM or CTM named ``text`` is refused, since a Kaldi text
  would score its time fields as words), the records, refusal of an empty reference, and the GLMs
  applied as ``csrfilt.sh -i stm|trn`` does for a reference;
* :func:`read_hypothesis` / :func:`filter_hypothesis_items` -- the same for a hypothesis (CTM with
  ALT blocks, trn, text); the GLMs are applied to the hypothesis as to the reference, never to one
  side only;
* :func:`reference_transcripts` -- a reference as ``{key: transcript}`` for per-utterance inputs
  (lattices, an alt-CTM against a trn, the metrics' transcripts): trn/text by utterance id, STM by
  recording file; :func:`hypothesis_transcripts` the same of a trn/text hypothesis;
* :func:`match_keys` -- which hypothesis keys have no reference and which references have no
  hypothesis, with one meaning of ``allow_missing`` in both directions: without it both are a
  :class:`~lattice_tools.core.errors.MismatchError`; with it a hypothesis without reference is left
  out and a reference without hypothesis is scored as all deletions (STM, as sclite does) or left
  out (trn/text, as sclite does), each with a warning.
"""
from __future__ import annotations

import codecs
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.errors import FormatError, LatticeToolsError, MismatchError
from ..io.transcripts.ctm import CtmAltBlock, CtmItems
from ..io.transcripts.detect import detect_transcript_format
from ..io.transcripts.stm import Stm
from ..io.transcripts.trn import TrnUtterances
from .network import IGNORE_TAGS

REFERENCE_FORMATS = ("stm", "trn", "text")
HYPOTHESIS_FORMATS = ("ctm", "trn", "text")


def check_encoding(encoding: str) -> None:
    """Refuse an unknown text encoding before any file is read."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise LatticeToolsError(f"unknown text encoding {encoding!r} (--encoding); e.g. utf-8, latin-1, "
                                "gb2312") from None


@dataclass(frozen=True)
class Reference:
    """A read (and GLM-filtered) reference: ``records`` is an :class:`~lattice_tools.io.transcripts.stm.Stm`
    (``format == "stm"``) or a list of :class:`~lattice_tools.io.transcripts.trn.TrnUtterance` (trn, text)."""

    path: str
    format: str
    records: Stm | TrnUtterances

    @property
    def segments(self) -> list:
        """STM segments or trn utterances, in file order."""
        return list(self.records.segments) if isinstance(self.records, Stm) else list(self.records)


def reference_format(path: str, explicit: str | None = None, *, encoding: str = "utf-8") -> str:
    """``stm``, ``trn`` or ``text``: the format of a reference file (``--ref-format`` names it)."""
    return detect_transcript_format(str(path), explicit, allowed=REFERENCE_FORMATS, role="reference",
                                    option="--ref-format", encoding=encoding)


def _read_records(path: str, fmt: str, encoding: str):
    from ..io.transcripts.ctm import read_ctm
    from ..io.transcripts.kaldi_data import read_kaldi_text
    from ..io.transcripts.stm import read_stm
    from ..io.transcripts.trn import read_trn

    # Kaldi text is trn without the parentheses: read as trn utterances, scored and filtered as trn
    return {"stm": read_stm, "trn": read_trn, "text": read_kaldi_text, "ctm": read_ctm}[fmt](str(path), encoding)


def _glm_format(fmt: str) -> str:
    return "trn" if fmt == "text" else fmt


def read_reference(path: str, fmt: str | None = None, *, glms: Sequence[str] = (),
                   encoding: str = "utf-8") -> Reference:
    """Read a reference file (STM, trn or Kaldi ``text``; ``fmt`` None: detected) and apply ``glms``
    in order as csrfilt does to a reference.  An empty reference is refused: a WER over nothing
    would look like a result (and sclite crashes on an empty trn)."""
    from .glm import GlmFilterOptions, apply_glm

    check_encoding(encoding)
    fmt = reference_format(path, fmt, encoding=encoding)
    records = _read_records(path, fmt, encoding)
    if not len(records.segments if fmt == "stm" else records):
        raise FormatError(f"expected at least one {'segment' if fmt == 'stm' else 'utterance'} in the "
                          "reference, found none", path=str(path))
    options = GlmFilterOptions(purpose="ref", encoding=encoding)
    for g in glms:
        records = apply_glm(g, records, fmt=_glm_format(fmt), options=options)
    return Reference(str(path), fmt, records)


def hypothesis_format(path: str, explicit: str | None = None, *, reference: str | None = None,
                      encoding: str = "utf-8") -> str:
    """``ctm``, ``trn`` or ``text``: the format of a hypothesis file (``--hyp-format`` names it); an
    empty file takes the format its reference (``reference``: ``stm``/``trn``/``text``) pairs with."""
    empty = None if reference is None else ("ctm" if reference == "stm" else reference)
    return detect_transcript_format(str(path), explicit, allowed=HYPOTHESIS_FORMATS, role="hypothesis",
                                    option="--hyp-format", encoding=encoding, empty=empty)


def filter_hypothesis_items(items, glms: Sequence[str], *, fmt: str = "ctm", encoding: str = "utf-8",
                            nested: str = "flatten", path: str = "") -> tuple[CtmItems | TrnUtterances, list[str]]:
    """Apply ``glms`` in order to hypothesis records as csrfilt does to a hypothesis (``fmt``:
    ``ctm`` items with ALT blocks, ``trn``/``text`` utterances).  A GLM that nests an ALT block
    inside another (which sclite mis-scores) is flattened (``nested="flatten"``, with a warning) or
    refused (``"error"``).  Returns (filtered records, warnings)."""
    from .glm import GlmFilterOptions, apply_glm

    warnings: list[str] = []
    if not glms:
        return items, warnings
    if fmt == "ctm":
        # csrfilt reads every field after the fifth as words: give it what hubscr gives it
        items = without_rt_fields(items)
    options = GlmFilterOptions(purpose="hyp", encoding=encoding)
    for g in glms:
        try:
            items = apply_glm(g, items, fmt=_glm_format(fmt), options=options, nested=nested)
        except FormatError as exc:
            if "nested <ALT_BEGIN>" not in str(exc):
                raise
            raise FormatError(f"the GLM {g} made a nested ALT block in the hypothesis (line {exc.line} of "
                              "its filtered CTM), which sclite mis-scores; expected no nesting, or "
                              "--nested-alternatives flatten to flatten them", path=path or None) from None
        n_nested = getattr(items, "nested_blocks", 0)
        if n_nested:
            warnings.append(f"the GLM {g} made {n_nested} nested ALT block(s) in the hypothesis; "
                            "they were flattened (alternatives in listed order, so ties still favour "
                            "the earlier one); sclite would mis-score them")
    return items, warnings


def read_hypothesis(path: str, fmt: str, *, glms: Sequence[str] = (), encoding: str = "utf-8",
                    ctm_types: Sequence[str] = (), nested: str = "flatten") -> tuple[CtmItems | TrnUtterances, list[str]]:
    """Read a hypothesis file in ``fmt`` (from :func:`hypothesis_format`), keep the NIST RT token
    types ``ctm_types`` (CTM; ``()`` = all, as sclite) and apply ``glms`` like csrfilt.  Returns
    (records, warnings)."""
    records = _read_records(path, fmt, encoding)
    warnings: list[str] = []
    if fmt == "ctm":
        records, note = select_ctm_types(records, ctm_types)
        if note:
            warnings.append(note)
    records, more = filter_hypothesis_items(records, glms, fmt=fmt, encoding=encoding, nested=nested, path=str(path))
    return records, warnings + more


def hypothesis_transcripts(records, path: str = "") -> dict:
    """``{utterance id: transcript}`` of a trn/text hypothesis (:func:`read_hypothesis`'s records), in file
    order; an id given twice is refused, naming both lines (it would be scored twice, as sclite refuses)."""
    out: dict = {}
    lines: dict = {}
    for u in records:
        if u.utt_id in lines:
            raise MismatchError(f"utterance id {u.utt_id!r} appears twice in the hypothesis (lines {lines[u.utt_id]} "
                                f"and {u.lineno})", path=path or None, line=u.lineno, key=u.utt_id)
        lines[u.utt_id] = u.lineno
        out[u.utt_id] = u.text
    return out


def _ctm_words(item) -> list:
    return [w for alt in item.alternatives for w in alt] if isinstance(item, CtmAltBlock) else [item]


def _map_ctm_words(items, fn):
    """``items`` with every word ``w`` replaced by ``fn(w)`` (None drops it); items and blocks that
    ``fn`` leaves alone are kept as they are (blocks keep their source lines, ``@`` times included)."""
    out = []
    for it in items:
        if isinstance(it, CtmAltBlock):
            alts = tuple(tuple(x for x in (fn(w) for w in alt) if x is not None) for alt in it.alternatives)
            same = all(len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=False)) for a, b in zip(alts, it.alternatives, strict=False))
            out.append(it if same else CtmAltBlock(it.file, it.channel, alts, it.lineno))
        else:
            w = fn(it)
            if w is not None:
                out.append(w)
    return CtmItems(out, list(getattr(items, "comments", [])) if len(out) == len(items) else [],
                    getattr(items, "path", ""))


def select_ctm_types(items, types: Sequence[str] = ()):
    """NIST RT CTM token types: keep the words whose type is in ``types`` (a word without a type
    counts as ``lex``); ``()`` keeps everything, as sclite does (it ignores the type field).
    ``("lex",)`` is what ``hubscr.pl -h rt-stt`` scores.  Returns (items, note): the note says how
    many non-lexical tokens were scored or dropped (None when there were none)."""
    counts: dict = {}
    for it in items:
        for w in _ctm_words(it):
            if w.type is not None and w.type != "lex":
                counts[w.type] = counts.get(w.type, 0) + 1
    if not types:
        if not counts:
            return items, None
        what = ", ".join(f"{n} {t}" for t, n in sorted(counts.items()))
        return items, (f"the CTM has non-lexical tokens ({what}); they are scored as words, as sclite does "
                       "(hubscr -h rt-stt scores only 'lex' tokens: --ctm-type lex)")
    dropped = sum(1 for it in items for w in _ctm_words(it) if (w.type or "lex") not in types)
    if not dropped:
        return items, None
    kept = _map_ctm_words(items, lambda w: w if (w.type or "lex") in types else None)
    return kept, f"{dropped} CTM token(s) not of type {'/'.join(types)} left out"


def without_rt_fields(items):
    """CTM items with the type and speaker fields of NIST RT lines dropped (and an ``NA``
    confidence left out), as ``hubscr.pl`` cuts them before csrfilt: csrfilt would filter those
    fields as words."""
    if not any(w.type or w.speaker for it in items for w in _ctm_words(it)):
        return items
    return _map_ctm_words(items, lambda w: dataclasses.replace(w, type=None, speaker=None, raw=None)
                          if w.type or w.speaker else w)


def is_ignore(text: str) -> bool:
    """An STM segment marked ``IGNORE_TIME_SEGMENT_IN_SCORING`` (its words are not scored)."""
    up = text.upper()
    return "IGNORE" in up and any(t in up for t in IGNORE_TAGS)


def reference_transcripts(reference: Reference, segments: dict | None = None) -> dict:
    """``{key: transcript}`` for per-utterance hypotheses (lattices, alternatives): trn/text by
    utterance id (an id given twice with different words is refused, naming both lines); STM by
    recording file, the file's scored segments (``IGNORE_TIME_SEGMENT_IN_SCORING`` left out) joined
    in time order.  A file with segments on several channels is refused: a per-utterance
    hypothesis has no channel, and keeping one channel would drop the other's words.

    ``segments`` (a Kaldi ``segments`` file read by :func:`lattice_tools.io.transcripts.kaldi_data.read_segments`:
    ``{utt: (recording, start, end)}``) keys an STM by utterance instead (Kaldi's utterance-keyed
    lattices): each scored STM segment goes to the utterance of its recording it overlaps most (ties:
    the earlier utterance) and an utterance's reference is its segments' words in time order (no
    segment: empty, its words are insertions).  A segment that overlaps no utterance keeps its
    words under its own key ``"<file> <start>-<end>"``, a reference without hypothesis that
    :func:`match_keys` reports (scored as deletions with ``allow_missing``)."""
    if segments is not None:
        return _utterance_transcripts(reference, segments)
    refs: dict = {}
    if reference.format in ("trn", "text"):
        lines: dict = {}
        for u in reference.segments:
            if u.utt_id in refs and refs[u.utt_id] != u.text:
                raise MismatchError(f"utterance id {u.utt_id!r} appears twice in the reference with different "
                                    f"words (lines {lines[u.utt_id]} and {u.lineno})", path=reference.path,
                                    key=u.utt_id)
            refs[u.utt_id] = u.text
            lines.setdefault(u.utt_id, u.lineno)
        return refs
    channels: dict = {}
    segs: dict = {}
    for seg in reference.segments:
        channels.setdefault(seg.file, {}).setdefault(seg.channel, seg.lineno)
        if not is_ignore(seg.text):
            segs.setdefault(seg.file, []).append(seg)
    for f, chans in channels.items():
        if len(chans) > 1:
            (c1, l1), (c2, l2) = list(chans.items())[:2]
            raise MismatchError(f"file {f!r} has segments on channels {c1!r} (line {l1}) and {c2!r} (line {l2}); "
                                "a per-utterance hypothesis (lattice, alt-CTM keyed by file) has no channel: "
                                "split the STM by channel or score a CTM with 'score'", path=reference.path, key=f)
    for f, ss in segs.items():
        ss.sort(key=lambda s: s.start)
        refs[f] = " ".join(s.text for s in ss)
    return refs


def _utterance_transcripts(reference: Reference, segments: dict) -> dict:
    """:func:`reference_transcripts` of an STM keyed by the utterances of a Kaldi ``segments`` map."""
    if reference.format != "stm":
        raise FormatError(f"a segments file maps utterances to the recordings of an STM; this {reference.format} "
                          "reference is keyed by utterance already (leave --segments out)", path=reference.path)
    reference_transcripts(reference)   # the same refusal of files with segments on several channels
    utts: dict = {}
    for utt, (reco, start, end) in segments.items():
        utts.setdefault(reco, []).append((start, float("inf") if end == -1 else end, utt))
    for spans in utts.values():
        spans.sort()
    texts: dict = {utt: [] for utt, (reco, _s, _e) in segments.items() if reco in
                   {seg.file for seg in reference.segments}}
    refs: dict = {}
    for seg in sorted(reference.segments, key=lambda x: (x.file, x.start)):
        if is_ignore(seg.text):
            continue
        best, best_overlap = None, 0.0
        for start, end, utt in utts.get(seg.file, ()):
            overlap = min(end, seg.end) - max(start, seg.start)
            if overlap > best_overlap:
                best, best_overlap = utt, overlap
        if best is None:
            refs[f"{seg.file} {seg.start:.2f}-{seg.end:.2f}"] = seg.text
        else:
            texts[best].append(seg.text)
    for utt, parts in texts.items():
        refs[utt] = " ".join(parts)
    return refs


def match_keys(hyp_keys: Iterable, ref_keys: Iterable, *, allow_missing: bool, warnings: list,
               hyp_what: str = "hypothesis utterance", ref_what: str = "reference utterance",
               hyp_name: str = "", ref_name: str = "", ref_format: str = "trn", show=str) -> list:
    """Check that hypotheses and references correspond, both ways, with one meaning of
    ``allow_missing`` for every command (see the module docstring).  Returns the reference keys
    without hypothesis (the caller scores them as all deletions for an STM reference and leaves
    them out for trn/text); appends the warnings ``allow_missing`` turns errors into."""
    hyp_keys = list(dict.fromkeys(hyp_keys))
    ref_keys = list(dict.fromkeys(ref_keys))
    have_ref = set(ref_keys)
    have_hyp = set(hyp_keys)
    extra = [k for k in hyp_keys if k not in have_ref]
    missing = [k for k in ref_keys if k not in have_hyp]
    if extra:
        msg = (f"{len(extra)} {hyp_what}(s) have no reference (first: {show(extra[0])}); references are keyed by "
               f"utterance id (trn/text) or recording file (stm; utterance keys against an STM need --segments)")
        if not allow_missing:
            raise MismatchError(msg + " (--allow-missing leaves them out)", path=hyp_name or None,
                                key=show(extra[0]).strip("'"))
        warnings.append(msg + " (left out)")
    if missing:
        deletions = ref_format == "stm"
        msg = f"{len(missing)} {ref_what}(s) have no hypothesis (first: {show(missing[0])})"
        if not allow_missing:
            raise MismatchError(msg + (" (--allow-missing scores them as deletions, as sclite does)" if deletions
                                       else " (--allow-missing leaves them out of the WER, as sclite does)"),
                                path=ref_name or None, key=show(missing[0]).strip("'"))
        warnings.append(msg + (" (scored as deletions)" if deletions else " (left out of the WER)"))
    return missing


__all__ = ["HYPOTHESIS_FORMATS", "REFERENCE_FORMATS", "Reference", "check_encoding", "filter_hypothesis_items",
           "hypothesis_format", "hypothesis_transcripts", "match_keys", "read_hypothesis", "read_reference", "reference_format",
           "reference_transcripts", "select_ctm_types", "without_rt_fields"]
