"""Which transcript format a reference or hypothesis file is in: STM, trn, CTM or Kaldi ``text``.

One function, :func:`detect_transcript_format`, used by every command that reads references or
hypotheses (``score``, ``oracle``, ``study``), so that they all agree.

The rule, in order:

1. an explicit format (``--ref-format``/``--hyp-format``) wins;
2. a name ending in ``.stm``, ``.trn`` or ``.ctm`` (optionally ``.gz``) is that format;
3. otherwise the *content* decides -- Kaldi's ``data/eval/stm``, csrfilt's ``ref.stm.filt``, a
   Kaldi ``text`` file and ``-`` (stdin) have no telling extension.  The first
   :data:`SNIFF_LINES` non-blank, non-``;;`` lines are tried with the readers' own line parsers:
   a structured format (STM, trn, CTM) fits when *every* sampled line parses as it.  Exactly one
   structured format fitting decides; two fitting (e.g. five-field lines that are both a CTM
   word with a numeric speaker-like field and an STM segment) is ambiguous and refused with an
   error naming the option; none fitting means Kaldi ``text`` (``key word word ...``), which
   accepts any line, when the caller allows it.
   An empty input cannot be told apart: the caller says what it is (an empty hypothesis is all
   deletions) or it is refused (name the format).
"""
from __future__ import annotations

import gzip
import io
import os
import sys
import zlib

from ...core.errors import FormatError

TRANSCRIPT_FORMATS = ("stm", "trn", "ctm", "text")
SNIFF_LINES = 200
_SNIFF_BYTES = 1 << 16
_EXTENSIONS = ("stm", "trn", "ctm")


def format_from_name(path: str) -> str | None:
    """``stm``/``trn``/``ctm`` when the file name ends in that extension (``.gz`` allowed), else None."""
    name = os.path.basename(str(path)).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for fmt in _EXTENSIONS:
        if name.endswith("." + fmt):
            return fmt
    return None


def _sample_lines(path: str, encoding: str) -> list[str]:
    """The first :data:`SNIFF_LINES` content lines (no blank or ``;;`` lines); stdin is read and
    replaced by an in-memory copy, so the reader still sees all of it."""
    if str(path) == "-":
        # A pipe cannot be rewound and a peek may end mid-line: read it all (the readers would
        # anyway) and put it back as sys.stdin for the reader that follows.
        from ...core.files import read_text_bytes

        data = read_text_bytes("-", encoding)  # gzip decompressed; NUL bytes and endless lines refused
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)), encoding=encoding)
        lines = data[:_SNIFF_BYTES].decode(encoding, errors="replace").split("\n")
        if len(data) > _SNIFF_BYTES:
            lines.pop()                # cut mid-line
    else:
        from ...core.files import bounded_lines, open_binary_input

        lines = []
        try:
            with open_binary_input(str(path)) as f:
                for raw_line in bounded_lines(f, str(path)):  # NUL bytes and endless lines refused
                    lines.append(raw_line.decode(encoding, errors="replace"))
                    if len(lines) >= 4 * SNIFF_LINES:
                        break
        except (EOFError, zlib.error, gzip.BadGzipFile):
            pass                       # a corrupt gzip stream: the reader reports it with its own message
    out = []
    for line in lines:
        s = line.strip()
        if not s or s.startswith(";;"):
            continue
        out.append(line.rstrip("\r\n"))
        if len(out) >= SNIFF_LINES:
            break
    return out


def _line_words(fmt: str):
    """A function from one line of a ``fmt`` transcript to its words, raising FormatError when the
    line is not one; None for Kaldi ``text``, which any line is."""
    if fmt == "stm":
        from .stm import parse_stm_line

        return lambda line: seg.text.split() if (seg := parse_stm_line(line)) else []
    if fmt == "trn":
        from .trn import parse_trn_line

        return lambda line: utt.text.split() if (utt := parse_trn_line(line)) else []
    if fmt == "ctm":
        from .ctm import parse_ctm_line

        return lambda line: [item.word] if (item := parse_ctm_line(line)) else []
    return None


def sample_words(path: str, fmt: str, encoding: str = "utf-8") -> list[str]:
    """The words of a transcript's first :data:`SNIFF_LINES` lines (``stm``, ``trn``, ``ctm`` or
    ``text``), for sanity checks before scoring; tags, ``@`` and ALT-block lines are left out and
    lines that do not parse are skipped (the reader reports them)."""
    words_of = _line_words(fmt) or (lambda line: line.split()[1:])
    words: list[str] = []
    for line in _sample_lines(path, encoding):
        try:
            found = words_of(line)
        except FormatError:
            continue
        words += [w for w in found if not w.startswith(("<", "@", "{", "/", "}"))]
    return words


def _fits(fmt: str, lines: list[str]) -> bool:
    words_of = _line_words(fmt)
    if words_of is None:
        return True
    try:
        for line in lines:
            words_of(line)
    except FormatError:
        return False
    return True


def _refuse_structured_as_text(path: str, role: str, option: str, encoding: str) -> None:
    """Kaldi ``text`` takes any line, so an STM or CTM read as text would score its channel, speaker
    and time fields as words (a wrong WER, no error): content whose every sampled line is an STM
    segment or a CTM word, with decimal times, is refused as ``text``.  A trn line is not refused:
    its last token ``(id)`` cannot be told from a word of a Kaldi text."""
    lines = _sample_lines(path, encoding)
    # (a text of integer word ids can parse as STM lines too: its "times" have no decimal point)
    time_fields = {"stm": slice(3, 5), "ctm": slice(2, 4)}
    fits = [f for f in ("stm", "ctm") if lines and _fits(f, lines)
            and any("." in field for line in lines for field in line.split()[time_fields[f]])]
    if fits:
        raise FormatError(f"{option} text, but its first {len(lines)} line(s) parse as "
                          f"{' and as '.join(f.upper() for f in fits)} lines with decimal times, which a Kaldi "
                          f"text would score as words; pass {option} {fits[0]}", path=path)


def detect_transcript_format(path: str, explicit: str | None = None, *, allowed=TRANSCRIPT_FORMATS,
                             role: str = "reference", option: str = "--ref-format",
                             encoding: str = "utf-8", empty: str | None = None) -> str:
    """The format of the transcript file ``path`` (see the module docstring for the rule).

    Args:
      explicit: the user's choice (returned after checking it is in ``allowed``).
      allowed: the formats the caller can read (a subset of :data:`TRANSCRIPT_FORMATS`).
      role, option: how errors name the file's role and the option that fixes them.
      empty: the format of an input without content lines (any format reads it as nothing; a
        hypothesis takes the one its reference pairs with); None refuses it.
    Raises:
      FormatError when the format is not allowed, the content fits several formats, or fits none
      that is allowed.
    """
    allowed = tuple(allowed)
    if explicit:
        if explicit not in allowed:
            raise FormatError(f"{option} {explicit} is not a {role} format here (expected one of "
                              f"{', '.join(allowed)})", path=path)
        if explicit == "text":
            _refuse_structured_as_text(path, role, option, encoding)
        return explicit
    by_name = format_from_name(path)
    if by_name is not None:
        if by_name not in allowed:
            raise FormatError(f"a {by_name.upper()} file is not supported as the {role} (expected "
                              f"{', '.join(allowed)}; {option} overrides the extension)", path=path)
        return by_name
    lines = _sample_lines(path, encoding)
    if not lines and empty is not None:
        return empty
    if not lines:
        raise FormatError(f"cannot tell the {role} format of an empty or unreadable input; pass {option} "
                          f"({'|'.join(allowed)})", path=path)
    structured = [f for f in ("stm", "trn", "ctm") if _fits(f, lines)]
    if len(structured) > 1:
        raise FormatError(f"the {role} fits several formats ({', '.join(structured)}) in its first "
                          f"{len(lines)} line(s); pass {option}", path=path)
    if structured:
        fmt = structured[0]
        if fmt not in allowed:
            raise FormatError(f"the {role} looks like a {fmt.upper()} file, which is not supported here "
                              f"(expected {', '.join(allowed)}); pass {option} if it is not a {fmt.upper()}",
                              path=path)
        return fmt
    if "text" in allowed:
        return "text"
    raise FormatError(f"the {role} is none of {', '.join(allowed)} (its first lines fit no format); "
                      f"pass {option} to read it as one and see the error", path=path)


__all__ = ["detect_transcript_format", "format_from_name", "TRANSCRIPT_FORMATS"]
