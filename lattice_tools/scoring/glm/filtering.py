"""The entry points of GLM filtering: text in/out (:func:`filter_text`), records in/out
(:func:`apply_glm`), files (:func:`filter_file`).  Each reads and selects the GLM, runs csrfilt.sh
(:func:`~.csrfilt.csrfilt_text`) on the input's bytes, then the opt-in repairs; all of them take one
:class:`~.options.GlmFilterOptions`."""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

from ...core.errors import FormatError
from ...core.files import atomic_write, decode_error, read_text_bytes
from ...io.transcripts.ctm import CtmWord, format_ctm_item, format_ctm_word, parse_ctm_lines
from ...io.transcripts.glm import Glm, read_glm
from ...io.transcripts.stm import Stm, StmSegment, format_stm_segment, parse_stm_line
from ...io.transcripts.trn import TrnUtterances, format_trn_utterance, parse_trn_line
from .csrfilt import csrfilt_text
from .options import FORMATS, GlmFilterOptions
from .repairs import count_nested_blocks, drop_ctm_words, optionalize_words, repair_optional_alternations
from .rfilter import CompiledGlm

_DEFAULT = GlmFilterOptions()


def load_glm(glm, fmt: str, options: GlmFilterOptions) -> Glm | CompiledGlm:
    """The GLM (a :class:`Glm` or a file name) restricted to what csrfilt keeps for ``-i fmt`` and
    ``-t purpose``, compiled for rfilter1 (an unknown ``fmt`` is left to :func:`csrfilt_text` to
    report)."""
    if isinstance(glm, Glm):
        selected = glm.select(fmt, options.purpose)
    else:
        selected = read_glm(glm, encoding=options.encoding, input_type=fmt, purpose=options.purpose)
    return CompiledGlm(selected) if fmt in FORMATS else selected


def filter_text(text: str, glm, fmt: str, options: GlmFilterOptions | None = None, *, path: str = "<input>") -> str:
    """csrfilt.sh on a Python string (encoded with ``options.encoding`` as csrfilt would see the
    bytes), then the opt-in repairs of ``options``.  With no repair the result is byte-identical to
    csrfilt.sh.  ``glm``: a :class:`~lattice_tools.io.transcripts.glm.Glm` or a GLM file name."""
    options = options or _DEFAULT
    options.check_repairs(fmt)
    compiled = load_glm(glm, fmt, options)
    encoding = options.encoding
    out = csrfilt_text(text.encode(encoding).decode("latin-1"), compiled, fmt, options, path=path)
    try:
        out = out.encode("latin-1").decode(encoding)
    except UnicodeDecodeError as exc:
        raise FormatError(f"filtered text is not valid {encoding} ({exc.reason}); a GLM rule split a "
                          "multi-byte character", path=path) from None
    if fmt == "ctm" and (options.flatten_alternations or options.exclude_words):
        out = _repair_ctm_text(out, path, options)
    elif fmt in ("stm", "trn", "txt") and (options.repair_optional or options.optional_words):
        out = _repair_transcripts(out, fmt, options)
    return out


def apply_glm(glm, items_or_path, *, fmt: str, options: GlmFilterOptions | None = None, utterance_map=None,
              nested: str = "error"):
    """Apply a GLM like ``csrfilt.sh`` and return parsed records.

    Args:
      glm: a :class:`~lattice_tools.io.transcripts.glm.Glm` or a GLM file name.
      items_or_path: a file name (for ``txt``: a ``Path``; a ``str`` is the text itself), or
        records: an :class:`Stm` or StmSegments (``fmt='stm'``), CtmWord/CtmAltBlock items
        (``'ctm'``), TrnUtterances (``'trn'``), or a list of lines (``'txt'``).
      fmt: ``stm``, ``ctm``, ``trn`` or ``txt`` (csrfilt's ``-i``).
      options: csrfilt's flags and the opt-in repairs (:class:`GlmFilterOptions`).
      utterance_map: csrfilt's optional second map file.  csrfilt.sh 1.17 checks that it exists and
        then never applies it to stm/ctm/trn/txt input (its only use is in a branch no ``-i``
        value reaches); the same is done here.
      nested: (ctm) what to do with the nested ALT blocks csrfilt's output can have:
        ``"error"`` raises FormatError (sclite would mis-score them), ``"flatten"`` reads each
        outer block as the Cartesian product of its alternatives in listed order (so sclite's
        ties still favour the earlier alternative; :func:`~lattice_tools.io.transcripts.ctm.flatten_nested_block`),
        keeping csrfilt's times.  ``options.flatten_alternations`` implies ``"flatten"``.

    Returns: an :class:`Stm` (stm), a :class:`CtmItems` list (ctm), a ``TrnUtterances`` list
    (trn) or the filtered text (txt).
    """
    if nested not in ("error", "flatten"):
        raise ValueError(f"nested must be 'error' or 'flatten', not {nested!r}")
    options = options or _DEFAULT
    _check_utterance_map(utterance_map)
    text, path = render_input(items_or_path, fmt, options.encoding)
    out = filter_text(text, glm, fmt, options, path=path)
    return parse_output(out, fmt, path, options.max_alternatives, nested)


def filter_file(glm_path, in_path, out_path, fmt: str, options: GlmFilterOptions | None = None, *,
                utterance_map=None) -> None:
    """``csrfilt.sh [-dh] -i fmt glm_path [utterance_map] < in_path > out_path`` plus the opt-in
    repairs of ``options``.  Without repairs the output is byte-identical to csrfilt.sh.
    ``in_path``/``out_path`` may be ``-``; the output is written atomically."""
    options = options or _DEFAULT
    _check_utterance_map(utterance_map)
    text, path = render_input(Path("-" if str(in_path) == "-" else in_path), fmt, options.encoding)
    out = filter_text(text, glm_path, fmt, options, path=path)
    with atomic_write(str(out_path), "w", encoding=options.encoding) as f:
        f.write(out)


def _check_utterance_map(utterance_map) -> None:
    if utterance_map is not None and not os.path.isfile(str(utterance_map)):
        raise FormatError("utterance map file does not exist", path=str(utterance_map))


# ----------------------------------------------------------------------------------------------
# Records -> the text csrfilt reads, and its output -> records

def _same_ctm_number(token: str, value, allow_star: bool) -> bool:
    """``io.transcripts.ctm._parse_number(token) == value`` without raising (a token it rejects: False)."""
    if token == "*":
        return allow_star and value is None
    try:
        number = float(token)
    except ValueError:
        return False
    return math.isfinite(number) and number == value


def _render_ctm_word(w: CtmWord) -> str:
    """``format_ctm_item(w, time_format=None, conf_format="%r")[0]`` for a CtmWord: its source
    line when ``parse_ctm_line(w.raw) == w`` (the same test, without building a CtmWord),
    else the canonical line."""
    raw = w.raw
    if raw is not None:
        parts = raw.rstrip("\r\n").split()
        n = len(parts)
        if (n == 5 or n == 6) and parts[0] == w.file and parts[1] == w.channel and parts[4] == w.word \
                and not parts[0].startswith(";;") \
                and _same_ctm_number(parts[2], w.start, True) and _same_ctm_number(parts[3], w.duration, True) \
                and (_same_ctm_number(parts[5], w.confidence, False) if n == 6 else w.confidence is None):
            return raw
    return format_ctm_word(w, time_format=None, conf_format="%r")


def render_input(items_or_path, fmt: str, encoding: str) -> tuple[str, str]:
    """The text csrfilt would read and the name errors give it: a file's content (``-``: standard
    input), or records written in their format."""
    if isinstance(items_or_path, os.PathLike) or (isinstance(items_or_path, str) and fmt != "txt"):
        path = str(items_or_path)
        data = read_text_bytes(path, encoding)
        try:
            return data.decode(encoding), path
        except UnicodeDecodeError as exc:
            raise decode_error(path, encoding, exc, data) from None
    items = items_or_path
    if fmt == "txt":
        if isinstance(items, str):
            return items, "<text>"
        return "".join(line.rstrip("\n") + "\n" for line in items), "<text>"
    lines: list[str] = []
    if fmt == "stm":
        if isinstance(items, Stm):
            lines.extend(items.header)
            items = items.segments
        lines.extend(format_stm_segment(s) for s in items)
    elif fmt == "ctm":
        for item in items:
            # lossless times: csrfilt copies time fields through as text
            if type(item) is CtmWord:
                lines.append(_render_ctm_word(item))
            else:
                lines.extend(format_ctm_item(item, time_format=None, conf_format="%r"))
    elif fmt == "trn":
        lines.extend(format_trn_utterance(u) for u in items)
    return "".join(line + "\n" for line in lines), f"<{fmt} records>"


def _text_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse_output(out: str, fmt: str, path: str, max_alternatives: int, nested: str = "error"):
    """csrfilt's output read back as records of ``fmt`` (for ``txt``: the text itself)."""
    lines = _text_lines(out)
    where = path + " (filtered)"
    if fmt == "txt":
        return out
    if fmt == "ctm":
        items = parse_ctm_lines(enumerate(lines, 1), where, nested=nested, max_alternatives=max_alternatives)
        # how many blocks were flattened (a caller warns about them)
        items.nested_blocks = count_nested_blocks(lines) if nested == "flatten" and "<ALT_BEGIN>" in out else 0
        return items
    if fmt == "stm":
        segments: list[StmSegment] = []
        header: list[str] = []
        layout: list[tuple[int, str]] = []
        for n, line in enumerate(lines, 1):
            seg = parse_stm_line(line, where, n)
            if seg is None:
                if line.strip().startswith(";;"):
                    header.append(line)
                layout.append((len(segments), line))
            else:
                segments.append(seg)
        return Stm(tuple(segments), tuple(header), path, tuple(layout))
    utts = TrnUtterances(path=path)
    for n, line in enumerate(lines, 1):
        utt = parse_trn_line(line, where, n)
        if utt is None:
            utts.comments.append((len(utts), line))
        else:
            utts.append(utt)
    return utts


# ----------------------------------------------------------------------------------------------
# The repairs applied to csrfilt's output

def _repair_ctm_text(out: str, path: str, options: GlmFilterOptions) -> str:
    items = parse_ctm_lines(enumerate(_text_lines(out), 1), path + " (filtered)",
                            nested="flatten" if options.flatten_alternations else "error",
                            max_alternatives=options.max_alternatives)
    if options.exclude_words:
        items = drop_ctm_words(items, options.exclude_words)
    by_index: dict[int, list[str]] = {}
    for index, line in items.comments:
        by_index.setdefault(index, []).append(line)
    lines: list[str] = []
    for i, item in enumerate(items):
        lines.extend(by_index.get(i, ()))
        lines.extend(format_ctm_item(item, time_format="%.3f"))
    lines.extend(by_index.get(len(items), ()))
    return "".join(line + "\n" for line in lines)


def _repair_transcripts(out: str, fmt: str, options: GlmFilterOptions) -> str:
    fixed = []
    for line in _text_lines(out):
        if line.startswith(";;") or not line.strip():
            fixed.append(line)
            continue
        prefix, transcript, suffix = _split_record(line, fmt)
        if options.repair_optional:
            transcript = repair_optional_alternations(transcript, style=options.repair_optional)
        if options.optional_words:
            transcript = optionalize_words(transcript, options.optional_words, style=options.optional_style)
        fixed.append(" ".join(x for x in (prefix, transcript, suffix) if x))
    return "".join(line + "\n" for line in fixed)


def _split_record(line: str, fmt: str) -> tuple[str, str, str]:
    if fmt == "txt":
        return "", line.strip(), ""
    if fmt == "stm":
        m = re.match(r"^(\S+\s+\S+\s+\S+\s+\S+\s+\S+(?:\s+<[^>\s]*>)?)\s*(.*)$", line)
        if not m:
            raise FormatError(f"expected an STM record, got {line!r}")
        return m.group(1), m.group(2).strip(), ""
    m = re.match(r"^(.*?)\s*(\([^()]*\))\s*$", line)
    if not m:
        raise FormatError(f"expected a trn record, got {line!r}")
    return "", m.group(1).strip(), m.group(2)
