"""The text level of SLF files, shared by the SLF reader (:mod:`lattice_tools.io.lattices.slf`) and the Sphinx
DAG reader (:mod:`lattice_tools.io.lattices.sphinx_dag`): loading (gzip, streams, stdin), ``name=value``
fields, numbers, splitting a file into lattices, the lines of a lattice, and the filler words.
"""
from __future__ import annotations

import math
import os
import re
import warnings

from ...core.errors import FormatError
from ...core.files import read_text_bytes

# Non-words of HTK (!NULL, HVite's !SENT_START/!SENT_END, the HTK book's !ENTER/!EXIT and
# SENT-START/SENT-END), SRILM (<s>, </s>, the pause -pau-) and Sphinx (<s>, </s>, <sil>).
DEFAULT_FILLERS = frozenset({"!NULL", "!SENT_START", "!SENT_END", "!ENTER", "!EXIT", "SENT-START", "SENT-END",
                             "<s>", "</s>", "<sil>", "-pau-"})
# Sphinx filler dictionaries also hold noise words: [NOISE], ++BREATH++, <sil>, and "(null)".
SPHINX_FILLER = re.compile(r"^(\[.*\]|\+\+.*\+\+|<.*>|\(null\))$")


class SlfWarning(UserWarning):
    """An SLF file was read with a documented guess (e.g. which dead-end node is the end)."""


def warn_at(message: str, path: str, line: int | None) -> None:
    """Warn as ``path:line: SlfWarning: message`` (the lattice file's place, not the reader's)."""
    warnings.warn_explicit(message, SlfWarning, filename=str(path), lineno=line or 0)


def is_filler(word: str, variant: str = "htk") -> bool:
    """Whether ``word`` is a non-word of SLF ``variant`` (it becomes an epsilon arc)."""
    return word in DEFAULT_FILLERS or (variant != "htk" and SPHINX_FILLER.match(word) is not None)


# Full HTK field names and their one-letter forms.
FIELD_ALIASES = {"NODE": "I", "LINK": "J", "TIME": "t", "time": "t", "WORD": "W", "START": "S", "END": "E",
            "acoustic": "a", "language": "l", "ngram": "n", "NODES": "N", "LINKS": "L", "var": "v",
            "div": "d", "V": "VERSION", "U": "UTTERANCE"}
# Scores a link may carry and the header field that scales each one, with the default scale when
# the header does not give one (HTK HNet.c/HLat.c and SRILM HTKLattice.cc agree on these):
# total log-likelihood = sum(scale * score) + wdpenalty.
SCORE_SCALES = {"a": ("acscale", 1.0), "l": ("lmscale", 1.0), "n": ("ngscale", 1.0), "r": ("prscale", 1.0),
                "ds": ("duscale", 0.0), **{f"x{i}": (f"x{i}scale", 0.0) for i in range(1, 10)}}
SCORE_KEYS = tuple(SCORE_SCALES)
PRON_VARIANT = re.compile(r"\(\d+\)$")
QUOTED_VALUE = re.compile(r"""=(['"])[^\n]*?\1(?=[ \t]|$)""", re.M)

# A number whose magnitude exceeds this is refused: ids and counts must fit int64 arrays, and no
# real lattice has 2^53 nodes.
MAX_INT = 2 ** 53


def clean_word(word: str, variant: str) -> str:
    if variant != "htk":
        word = PRON_VARIANT.sub("", word)
    return word


def load_text(path_or_text) -> tuple[str, str]:
    """Return ``(text, name)``; accepts a path, ``-``, raw SLF text, or a text/binary stream."""
    if hasattr(path_or_text, "read"):
        data = path_or_text.read()
        name = getattr(path_or_text, "name", "<stream>")
        if isinstance(data, bytes):
            data = decode_utf8(data, str(name))
        return data, str(name)
    s = os.fspath(path_or_text)
    if isinstance(s, str) and ("\n" in s or "=" in s) and not os.path.exists(s):
        return s, "<text>"
    return decode_utf8(read_text_bytes(s, what="lattice"), s), s


def decode_utf8(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not valid utf-8 text (byte {exc.start})", path=name) from None


def split_fields(line: str, path: str, lineno: int) -> dict[str, str]:
    """Parse ``name=value`` fields of one line (values may be quoted with ' or ")."""
    out: dict[str, str] = {}
    i, n = 0, len(line)
    while i < n:
        while i < n and line[i] in " \t":
            i += 1
        if i >= n:
            break
        eq = line.find("=", i)
        sp = min([p for p in (line.find(" ", i), line.find("\t", i)) if p >= 0], default=n)
        if eq < 0 or eq > sp:
            raise FormatError(f"expected name=value, got {line[i:sp]!r}", path=path, line=lineno)
        name = line[i:eq]
        j = eq + 1
        close = line.find(line[j], j + 1) if j < n and line[j] in "'\"" else -1
        if close > 0 and (close + 1 == n or line[close + 1] in " \t"):
            # HTK quoting ('it''s'-style words with spaces); an unmatched leading quote, as in
            # pocketsphinx's unquoted "'em", is taken literally.
            value = line[j + 1:close]
            i = close + 1
        else:
            end = min([p for p in (line.find(" ", j), line.find("\t", j)) if p >= 0], default=n)
            value = line[j:end]
            i = end
        name = FIELD_ALIASES.get(name, name)
        if name in out:
            raise FormatError(f"field {name!r} appears twice", path=path, line=lineno)
        out[name] = value
    return out


def parse_number(value: str, name: str, path: str, lineno: int, kind=float):
    what = "an integer" if kind is int else "a number"
    try:
        if not value.isascii() or "_" in value:  # int()/float() also take "1_000" and non-ASCII digits
            raise ValueError(value)
        x = kind(value)
    except ValueError:
        raise FormatError(f"field {name}={value!r} is not {what}", path=path, line=lineno) from None
    if kind is float and math.isnan(x):
        raise FormatError(f"field {name} is NaN", path=path, line=lineno)
    if kind is int and abs(x) > MAX_INT:
        raise FormatError(f"field {name}={value} is out of range (at most {MAX_INT})", path=path, line=lineno)
    return x


class Block:
    """One lattice of a file: its text and the 0-based index of its first line in the file."""

    def __init__(self, start: int, lines: list | None = None, text: str | None = None):
        self.start = start
        self._lines = lines
        self.text = text if text is not None else "\n".join(lines or ())

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            lines = self.text.split("\n")
            if self.text[:1] in (" ", "\t") or "\n " in self.text or "\n\t" in self.text:
                lines = [line.strip() for line in lines]
            self._lines = lines
        return self._lines


BODY_PREFIXES = ("I=", "J=", "NODE=", "LINK=")


def split_blocks(text: str) -> list[Block]:
    """Split a file into lattices: a header line after node/link lines starts a new one."""
    def count(field):
        return text.count("\n" + field) + text.startswith(field)

    if max(count("VERSION="), count("UTTERANCE="), count("N="), count("NODES=")) <= 1:
        return [Block(0, text=text)]  # one lattice (the common case): no need to look at every line
    lines = Block(0, text=text).lines
    # Header candidates: non-empty lines that are neither comments nor node/link lines.  They are
    # few, so only the gaps between consecutive candidates need looking at.
    cands = [i for i, line in enumerate(lines) if line and line[0] not in "#IJNL"]
    cands += [i for i, line in enumerate(lines) if line[:1] in ("N", "L", "I", "J")
              and not line.startswith(BODY_PREFIXES) and not line.startswith(("N=", "NODES=", "L=", "LINKS="))]
    cands.sort()
    starts = [0]
    prev = -1
    for h in cands:
        if h - prev > 1 and h > starts[-1] and any(lines[x].startswith(BODY_PREFIXES) for x in range(max(prev, starts[-1]) + 1, h)):
            starts.append(h)
        prev = h
    blocks = [Block(a, lines[a:b]) for a, b in zip(starts, starts[1:] + [len(lines)], strict=False)]
    return [b for b in blocks if any(x.strip() and not x.startswith("#") for x in b.lines)] or blocks[:1]


class LineItems:
    """The node (or link) lines of a lattice; their line numbers are computed only when an error
    message needs one."""

    def __init__(self, lines, base: int, prefixes: tuple, count: int | None = None):
        # ``lines`` is a list, or a Block whose lines are split only if an error needs them
        self._src, self._base, self._prefixes = lines, base, prefixes
        self._count = count
        self._text_lines: list[str] | None = None
        self._numbers: list[int] | None = None

    @property
    def _lines(self):
        return self._src.lines if isinstance(self._src, Block) else self._src

    @property
    def text_lines(self) -> list[str]:
        if self._text_lines is None:
            self._text_lines = [line for line in self._lines if line.startswith(self._prefixes)]
        return self._text_lines

    def __len__(self) -> int:
        return self._count if self._count is not None else len(self.text_lines)

    def numbers(self) -> list[int]:
        if self._numbers is None:
            self._numbers = [self._base + i for i, line in enumerate(self._lines) if line.startswith(self._prefixes)]
        return self._numbers

    def __getitem__(self, i):
        return self.numbers()[i], self.text_lines[i]

    def __iter__(self):
        return iter(zip(self.numbers(), self.text_lines, strict=False))
