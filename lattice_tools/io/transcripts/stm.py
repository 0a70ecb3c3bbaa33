"""NIST STM reference transcripts (sclite ``-r file.stm stm``).

One segment per line::

    <file> <channel> <speaker> <start> <end> [<label,label,...>] transcript text...

``;;`` lines are comments (they carry ``CATEGORY``/``LABEL`` definitions and are kept verbatim in
:attr:`Stm.header`).  The transcript is kept *raw*: alternations ``{ a b / c / @ }`` (possibly
nested), optional words ``(uh)``, fragments ``pla-`` and ``IGNORE_TIME_SEGMENT_IN_SCORING`` are not
interpreted here -- the scorer and the GLM filter tokenize it with :func:`tokenize_transcript`.

Round trip: every parsed segment remembers its source line; :func:`write_stm` re-emits that line
byte for byte as long as the segment still equals what the line parses to (so an unmodified file is
reproduced exactly, while a segment changed with ``dataclasses.replace`` is written canonically).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...core.errors import FormatError
from ...core.files import atomic_write, read_text_lines

IGNORE_TIME_SEGMENT = "IGNORE_TIME_SEGMENT_IN_SCORING"

# Alternations are expanded recursively (one Python frame or two per level); real transcripts nest
# two or three deep, a corrupt line can nest a thousand deep and exhaust the interpreter's stack.
MAX_ALTERNATION_DEPTH = 50

# sclite reads times into a C float: a larger number would be infinite there.
FLT_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class StmSegment:
    """One STM line.  ``labels`` is the ``<o,f0,male>`` tag text without brackets (or None)."""

    file: str
    channel: str
    speaker: str
    start: float
    end: float
    labels: str | None
    text: str
    lineno: int = 0
    # Source line for exact round trips; not part of equality.
    raw: str | None = field(default=None, compare=False, repr=False)

    @property
    def is_ignore_time_segment(self) -> bool:
        """True when the segment's text is ``IGNORE_TIME_SEGMENT_IN_SCORING`` (sclite skips its span)."""
        return self.text.strip().upper() == IGNORE_TIME_SEGMENT

    @property
    def label_list(self) -> tuple[str, ...]:
        return () if not self.labels else tuple(x for x in self.labels.split(",") if x)


@dataclass(frozen=True)
class Stm:
    segments: tuple[StmSegment, ...]
    header: tuple[str, ...] = ()  # ';;' comment lines incl. CATEGORY/LABEL lines, verbatim
    path: str = ""
    # Where each comment or blank line was in the file: (index of the segment it preceded, line).
    # Only used to rewrite a file exactly; when empty, write_stm puts the header first.
    layout: tuple[tuple[int, str], ...] = field(default=(), compare=False, repr=False)


def _parse_time(token: str, what: str, path, lineno: int) -> float:
    try:
        value = float(token)
    except ValueError:
        raise FormatError(f"expected a number for the {what} time, got {token!r}", path=path, line=lineno) from None
    if not -FLT_MAX <= value <= FLT_MAX:
        raise FormatError(f"expected a finite {what} time within a C float's range (sclite reads times as "
                          f"float), got {token!r}", path=path, line=lineno)
    return value


def alternation_depth(text: str) -> int:
    """How deep the ``{ ... }`` pairs of ``text`` nest (0: none).  Only matched pairs count, so
    a lone ``{`` (a letter in Buckwalter transliteration) does not."""
    if "{" not in text:
        return 0
    stack, matched = [], set()
    for i, ch in enumerate(text):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            matched.add(stack.pop())
            matched.add(i)
    depth = deepest = 0
    for i in sorted(matched):
        depth += 1 if text[i] == "{" else -1
        deepest = max(deepest, depth)
    return deepest


def check_alternation_depth(text: str, path=None, lineno: int | None = None) -> None:
    """FormatError when the alternations of ``text`` nest deeper than :data:`MAX_ALTERNATION_DEPTH`."""
    if "{" in text and text.count("{") > MAX_ALTERNATION_DEPTH:
        depth = alternation_depth(text)
        if depth > MAX_ALTERNATION_DEPTH:
            raise FormatError(f"alternations '{{ ... }}' nested {depth} deep (at most {MAX_ALTERNATION_DEPTH} "
                              "are read)", path=path, line=lineno)


def parse_stm_line(line: str, path: str = "<string>", lineno: int = 0) -> StmSegment | None:
    """Parse one STM line; returns None for blank lines and ``;;`` comments.

    Raises FormatError (naming ``path:lineno``) when fewer than five fields are present, a time is
    not a number, the end precedes the start, or a ``<label`` tag is not closed by ``>``.
    """
    line = line.rstrip("\r\n")
    stripped = line.strip()
    if not stripped or stripped.startswith(";;"):
        return None
    parts = stripped.split(None, 5)
    if len(parts) < 5:
        raise FormatError(
            f"expected '<file> <channel> <speaker> <start> <end> [<labels>] text', got {len(parts)} field(s)",
            path=path, line=lineno)
    file, channel, speaker, start_s, end_s = parts[:5]
    rest = parts[5] if len(parts) > 5 else ""
    start = _parse_time(start_s, "start", path, lineno)
    end = _parse_time(end_s, "end", path, lineno)
    if end < start:
        raise FormatError(f"segment end {end_s} precedes its start {start_s}", path=path, line=lineno)
    labels = None
    if rest.startswith("<"):
        close = rest.find(">")
        if close < 0:
            raise FormatError("expected '>' closing the '<labels>' tag", path=path, line=lineno)
        labels = rest[1:close]
        if any(c.isspace() for c in labels):
            raise FormatError(f"expected no blanks inside the '<labels>' tag, got {rest[:close + 1]!r}",
                              path=path, line=lineno)
        rest = rest[close + 1:]
    check_alternation_depth(rest, path, lineno)
    return StmSegment(file, channel, speaker, start, end, labels, rest.strip(), lineno, raw=line)


def read_stm(path, encoding: str = "utf-8") -> Stm:
    """Read an STM file (gzip detected, ``-`` = stdin).  Comments before the first segment and
    anywhere else go to :attr:`Stm.header` in order; segments keep file order."""
    segments: list[StmSegment] = []
    header: list[str] = []
    layout: list[tuple[int, str]] = []
    for lineno, line in read_text_lines(str(path), encoding):
        seg = parse_stm_line(line, str(path), lineno)
        if seg is None:
            if line.strip().startswith(";;"):
                header.append(line)
            layout.append((len(segments), line))
            continue
        segments.append(seg)
    return Stm(tuple(segments), tuple(header), str(path), tuple(layout))


def _format_time(value: float) -> str:
    """Shortest text that reads back as ``value`` (no exponent notation)."""
    text = repr(float(value))
    if "e" in text or "E" in text:
        text = f"{value:.9f}".rstrip("0")
        text = text + "0" if text.endswith(".") else text
    return text


def format_stm_segment(seg: StmSegment) -> str:
    """The STM line for ``seg``: its source line if unchanged, else a canonical line."""
    if seg.raw is not None:
        try:
            if parse_stm_line(seg.raw, "<raw>", seg.lineno) == seg:
                return seg.raw
        except FormatError:
            pass
    fields = [seg.file, seg.channel, seg.speaker, _format_time(seg.start), _format_time(seg.end)]
    if seg.labels is not None:
        fields.append(f"<{seg.labels}>")
    if seg.text:
        fields.append(seg.text)
    return " ".join(fields)


def write_stm(path, stm_or_segments: Stm | Iterable[StmSegment], encoding: str = "utf-8") -> None:
    """Write an STM file atomically: header comment lines first, then one line per segment."""
    layout: tuple[tuple[int, str], ...] = ()
    if isinstance(stm_or_segments, Stm):
        header, segments = stm_or_segments.header, stm_or_segments.segments
        # The remembered layout is only valid for the header it was read with.
        if tuple(line for _, line in stm_or_segments.layout if line.strip().startswith(";;")) == header:
            layout = stm_or_segments.layout
    else:
        header, segments = (), tuple(stm_or_segments)
    if not layout:
        layout = tuple((0, line) for line in header)
    by_index: dict[int, list[str]] = {}
    for index, line in layout:
        by_index.setdefault(min(index, len(segments)), []).append(line)
    with atomic_write(str(path), "w", encoding=encoding) as out:
        for i, seg in enumerate(segments):
            for line in by_index.get(i, ()):
                out.write(line + "\n")
            out.write(format_stm_segment(seg) + "\n")
        for line in by_index.get(len(segments), ()):
            out.write(line + "\n")


def tokenize_transcript(text: str) -> list[str]:
    """Split a raw STM/trn transcript into sclite tokens.

    Returns words, optional words as written (``(uh)``), and the alternation marks ``{``, ``/``
    and ``}`` as separate tokens (also when glued to words, as GLM output writes them:
    ``{I'M / I AM}``).  ``@`` (the empty alternative) is kept as a token.  A ``/`` outside braces
    is part of a word.  Raises nothing; balance is checked by the consumer (see
    :func:`lattice_tools.scoring.glm.expand_alternation`).
    """
    tokens: list[str] = []
    depth = 0
    for raw in text.split():
        word = ""
        for ch in raw:
            if ch == "{" or ch == "}" or (ch == "/" and depth > 0):
                if word:
                    tokens.append(word)
                    word = ""
                tokens.append(ch)
                depth += 1 if ch == "{" else -1 if ch == "}" else 0
            else:
                word += ch
        if word:
            tokens.append(word)
    return tokens
