"""Inputs of the metrics commands: transcripts and per-utterance annotations.

Transcripts come through the scorer's one door (:mod:`lattice_tools.scoring.inputs`), as ``score`` reads
them: :func:`read_references` (an STM, trn or Kaldi ``text``; gzip allowed, ``-`` = stdin; the format
detected by :func:`lattice_tools.io.transcripts.detect.detect_transcript_format` unless given; GLMs on
both sides) and :func:`read_hypotheses` (trn or Kaldi ``text``, matched to the reference with the one
meaning of ``allow_missing``).

Annotations (``read_annotations``), keyed by utterance id, fields all optional:

* ``lang``     -- target language (BCP-47 / ISO 639 / name), e.g. ``hi``, ``ml-IN``, ``tam``;
* ``entities`` -- list of reference named-entity strings (NE-WER / NE-FNR);
* ``cs``       -- code-switching language pair, e.g. ``hin-eng`` (CMI, switch points, WER_CS).

Formats: JSON object ``{"utt1": {"lang": "hi", "entities": ["..."], "cs": "hin-eng"}, ...}``, a JSON
list of objects with an ``id`` field, JSON lines (one such object per line, ``.jsonl``), or TSV
with a header line naming the columns ``id`` (required), ``lang``, ``entities`` (entities separated
by `` | ``) and ``cs``.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import FormatError
from ..core.files import read_text_lines


def read_references(path: str, fmt: str = "auto", *, glms: Sequence[str] = (), encoding: str = "utf-8"):
    """The reference as ``(Reference, {key: transcript})``, read through the scorer's door
    (:func:`lattice_tools.scoring.inputs.read_reference`: the one format detection, STM/trn/Kaldi text, the
    GLMs applied as csrfilt does, an empty reference refused; :func:`~lattice_tools.scoring.inputs.reference_transcripts`:
    trn/text keyed by utterance id, an STM by recording file).  ``fmt``: ``auto`` (detected), ``stm``,
    ``trn`` or ``text``."""
    from ..scoring.inputs import read_reference, reference_transcripts

    reference = read_reference(path, None if fmt == "auto" else fmt, glms=glms, encoding=encoding)
    return reference, {k: " ".join(v.split()) for k, v in reference_transcripts(reference).items()}


def read_hypotheses(path: str, reference, refs: dict, fmt: str = "auto", *, glms: Sequence[str] = (),
                    encoding: str = "utf-8", allow_missing: bool = False, warnings: list | None = None) -> dict:
    """One system's ``{key: transcript}`` (trn or Kaldi text, detected as ``score`` detects it), filtered by
    the same ``glms`` as the reference, matched to ``refs`` as ``score`` matches
    (:func:`lattice_tools.scoring.inputs.match_keys`): a hypothesis without reference, or a reference
    without hypothesis, is a MismatchError unless ``allow_missing``; then the former is left out and the
    latter is not covered (trn/text: left out of every error rate, counted in ``coverage``) or, against an
    STM, scored as all deletions (an empty hypothesis), as ``score --allow-missing`` does; ``warnings``
    gets what was left out."""
    from ..scoring.inputs import hypothesis_format, hypothesis_transcripts, match_keys, read_hypothesis

    hfmt = hypothesis_format(path, None if fmt in ("auto", "stm") else fmt, reference=reference.format,
                             encoding=encoding)
    if hfmt == "ctm":
        raise FormatError("metrics compare transcripts utterance by utterance: give the hypothesis as trn or Kaldi "
                          "text ('lattice-tools score' scores a CTM against an STM)", path=path)
    records, notes = read_hypothesis(path, hfmt, glms=glms, encoding=encoding)
    hyps = {k: " ".join(v.split()) for k, v in hypothesis_transcripts(records, path).items()}
    notes = list(notes)
    missing = match_keys(hyps, refs, allow_missing=allow_missing, warnings=notes, hyp_name=path,
                         ref_name=reference.path, ref_format=reference.format, show=repr)
    hyps = {k: v for k, v in hyps.items() if k in refs}
    if reference.format == "stm":
        hyps.update({k: "" for k in missing})
    if warnings is not None:
        warnings.extend(notes)
    return hyps


@dataclass(frozen=True)
class Annotation:
    lang: str | None = None
    entities: tuple[str, ...] = ()
    cs: str | None = None
    extra: dict = field(default_factory=dict, compare=False)


def _annotation(obj, path, line, key) -> Annotation:
    if not isinstance(obj, dict):
        raise FormatError("expected an object with lang/entities/cs fields", path=path, line=line, key=key)
    ents = obj.get("entities", ()) or ()
    if isinstance(ents, str):
        ents = [e.strip() for e in ents.split("|") if e.strip()]
    if not isinstance(ents, (list, tuple)) or not all(isinstance(e, str) for e in ents):
        raise FormatError("'entities' must be a list of strings", path=path, line=line, key=key)
    lang = obj.get("lang") or obj.get("language") or None
    cs = obj.get("cs") or obj.get("pair") or None
    for name, v in (("lang", lang), ("cs", cs)):
        if v is not None and not isinstance(v, str):
            raise FormatError(f"'{name}' must be a string", path=path, line=line, key=key)
    extra = {k: v for k, v in obj.items() if k not in ("id", "lang", "language", "entities", "cs", "pair")}
    return Annotation(lang, tuple(ents), cs, extra)


def read_annotations(path: str, encoding: str = "utf-8") -> dict[str, Annotation]:
    """Per-utterance annotations from JSON, JSON lines or TSV (see module docstring)."""
    lines = list(read_text_lines(path, encoding))
    text = "\n".join(ln for _, ln in lines).strip()
    out: dict[str, Annotation] = {}
    if not text:
        return out
    if text[0] in "[{":
        try:
            data = json.loads(text)
            rows: list[tuple[int | None, Any]] = [(None, data)]
        except json.JSONDecodeError:
            rows = []
            for n, ln in lines:
                if ln.strip():
                    try:
                        rows.append((n, json.loads(ln)))
                    except json.JSONDecodeError as exc:
                        raise FormatError(f"not valid JSON ({exc.msg})", path=path, line=n) from None
            rows = [(n, [obj]) for n, obj in rows]
        for row_line, data in rows:
            if isinstance(data, dict) and "id" not in data:
                for key, obj in data.items():
                    out[str(key)] = _annotation(obj, path, row_line, str(key))
            else:
                items = data if isinstance(data, list) else [data]
                for obj in items:
                    if not isinstance(obj, dict) or "id" not in obj:
                        raise FormatError("each annotation object needs an 'id' field", path=path, line=row_line)
                    key = str(obj["id"])
                    if key in out:
                        raise FormatError(f"duplicate annotation for {key!r}", path=path, line=row_line, key=key)
                    out[key] = _annotation(obj, path, row_line, key)
        return out
    header = None
    for n, ln in lines:
        if not ln.strip() or ln.startswith("#"):
            continue
        cols = ln.split("\t")
        if header is None:
            header = [c.strip().lower() for c in cols]
            if "id" not in header:
                raise FormatError(f"TSV annotations need a header line with an 'id' column, got {header}",
                                  path=path, line=n)
            continue
        if len(cols) > len(header):
            raise FormatError(f"{len(cols)} columns for a header of {len(header)}", path=path, line=n)
        row = dict(zip(header, (c.strip() for c in cols), strict=False))
        key = row["id"]
        if key in out:
            raise FormatError(f"duplicate annotation for {key!r}", path=path, line=n, key=key)
        out[key] = _annotation({k: v for k, v in row.items() if v != ""}, path, n, key)
    return out
