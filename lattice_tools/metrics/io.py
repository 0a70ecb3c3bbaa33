"""Inputs of the metrics commands: transcripts and per-utterance annotations.

Transcripts (``read_transcripts``), one utterance per line, gzip allowed, ``-`` = stdin:

* ``text``: ``utterance-id<whitespace>words ...`` (Kaldi ``text``; an id alone = empty transcript);
* ``trn``:  ``words ... (utterance-id)`` (sclite trn, read by :func:`lattice_tools.io.transcripts.trn.read_trn`);
* ``auto``: ``trn`` if every non-blank, non-``;;`` line ends with ``)`` and has a ``(``, else ``text``.

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
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import FormatError, MismatchError
from ..core.files import read_text_lines
from ..io.transcripts.detect import detect_transcript_format
from ..io.transcripts.trn import parse_trn_line


def read_transcripts(path: str, fmt: str = "auto", encoding: str = "utf-8") -> dict[str, str]:
    """``{utterance_id: text}`` in file order; duplicate ids are an error naming both lines.  ``auto``:
    the toolkit's one detection rule (:func:`lattice_tools.io.transcripts.detect.detect_transcript_format`; an STM
    or CTM is refused rather than read as text).  ``encoding``: the file's text encoding."""
    if fmt in ("auto", "trn", "text"):  # (an explicit 'text' is checked too: an STM is never read as text)
        fmt = detect_transcript_format(path, None if fmt == "auto" else fmt, allowed=("trn", "text"),
                                       role="transcript", option="--format", empty="text", encoding=encoding)
    lines = [(n, ln) for n, ln in read_text_lines(path, encoding) if ln.strip() and not ln.lstrip().startswith(";;")]
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    if fmt == "trn":
        for n, ln in lines:
            utt = parse_trn_line(ln, str(path), n)
            if utt is None:
                continue
            if utt.utt_id in seen:
                raise FormatError(f"duplicate utterance id {utt.utt_id!r} (first on line {seen[utt.utt_id]})",
                                  path=path, line=n)
            seen[utt.utt_id] = n
            out[utt.utt_id] = " ".join(utt.text.split())
        return out
    if fmt != "text":
        raise FormatError(f"unknown transcript format {fmt!r} (expected auto, text or trn)", path=path)
    for n, ln in lines:
        parts = ln.strip().split(maxsplit=1)
        key = parts[0]
        if key in seen:
            raise FormatError(f"duplicate utterance id {key!r} (first on line {seen[key]})", path=path, line=n)
        seen[key] = n
        out[key] = parts[1] if len(parts) > 1 else ""
    return out


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


def check_keys(refs: dict, hyps: dict, path: str):
    """Hypothesis ids must be reference ids (a hypothesis for an unknown utterance is a mistake)."""
    extra = [k for k in hyps if k not in refs]
    if extra:
        raise MismatchError(f"{len(extra)} hypothesis ids are not in the reference, e.g. {extra[0]!r}", path=path)
