"""NIST CTM hypothesis files (sclite ``-h file.ctm ctm``), including alternation blocks.

One word per line::

    <file> <channel> <start> <duration> <word> [<confidence>]

``;;`` lines are comments.  Alternatives (Faria et al., section 3.5; what csrfilt writes when a GLM rule
has an alternation) are spelled with tag lines whose times are ``*``::

    sw_4390 A * * <ALT_BEGIN>
    sw_4390 A 4.49 0.66 UM
    sw_4390 A * * <ALT>
    sw_4390 A 4.49 0.66 I'M
    sw_4390 A * * <ALT_END>

An alternative consisting of the single word ``@`` is the empty alternative (read as ``()``).
sclite mis-scores nested blocks silently, so :func:`read_ctm` rejects them unless asked to
flatten them (``nested="flatten"``: Cartesian product, see :func:`flatten_nested_block`).

Round trip: items remember their source lines and comments are kept with their position, so an
unmodified file is rewritten byte for byte by :func:`write_ctm`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ...core.errors import BudgetExceededError, FormatError
from ...core.files import atomic_write, read_text_lines
from .stm import FLT_MAX, MAX_ALTERNATION_DEPTH

ALT_BEGIN = "<ALT_BEGIN>"
ALT_SEP = "<ALT>"
ALT_END = "<ALT_END>"
EMPTY_WORD = "@"
ALT_TAGS = (ALT_BEGIN, ALT_SEP, ALT_END)


@dataclass(frozen=True)
class CtmWord:
    """One CTM word line.  ``start``/``duration`` are None for ``*``."""

    file: str
    channel: str
    start: float | None
    duration: float | None
    word: str
    confidence: float | None = None
    lineno: int = 0
    raw: str | None = field(default=None, compare=False, repr=False)
    # NIST RT CTM (8 fields): token type (lex, frag, fp, un-lex, for-lex, non-lex) and speaker
    type: str | None = None
    speaker: str | None = None

    @property
    def end(self) -> float | None:
        if self.start is None or self.duration is None:
            return None
        return self.start + self.duration


@dataclass(frozen=True)
class CtmAltBlock:
    """An ``<ALT_BEGIN> ... <ALT> ... <ALT_END>`` block; each alternative is a word sequence,
    ``()`` being the empty alternative (written ``@``)."""

    file: str
    channel: str
    alternatives: tuple[tuple[CtmWord, ...], ...]
    lineno: int = 0
    # Source lines of the whole block (tag lines included) for exact round trips.
    raw: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def start(self) -> float | None:
        starts = [w.start for alt in self.alternatives for w in alt if w.start is not None]
        return min(starts) if starts else None

    @property
    def end(self) -> float | None:
        ends = [w.end for alt in self.alternatives for w in alt if w.end is not None]
        return max(ends) if ends else None


CtmItem = CtmWord | CtmAltBlock


class CtmItems(list):
    """``list`` of :data:`CtmItem` that also remembers comment lines: ``comments`` is a list of
    ``(index, line)`` meaning *line* came just before item *index* (``len(self)`` = at the end)."""

    nested_blocks: int = 0  # set by a GLM filter: how many nested ALT blocks it flattened

    def __init__(self, items: Iterable = (), comments: Iterable[tuple[int, str]] = (), path: str = ""):
        super().__init__(items)
        self.comments = list(comments)
        self.path = path


def _parse_number(token: str, what: str, path, lineno: int, allow_star: bool) -> float | None:
    if token == "*":
        if allow_star:
            return None
        raise FormatError(f"expected a number for the {what}, got '*'", path=path, line=lineno)
    try:
        value = float(token)
    except ValueError:
        raise FormatError(f"expected a number{' or *' if allow_star else ''} for the {what}, got {token!r}",
                          path=path, line=lineno) from None
    if not -FLT_MAX <= value <= FLT_MAX:
        raise FormatError(f"expected a finite {what} within a C float's range (sclite reads it as float), "
                          f"got {token!r}", path=path, line=lineno)
    return value


RT_TOKEN_TYPES = ("lex", "frag", "fp", "un-lex", "for-lex", "non-lex")


def _parse_rt_fields(parts: list, path, lineno: int):
    """(confidence, type, speaker) of a 7- or 8-field NIST RT CTM line; the confidence may be
    ``NA`` (none), as sclite and hubscr accept."""
    conf = None if parts[5].upper() == "NA" else _parse_number(parts[5], "confidence", path, lineno, allow_star=False)
    if parts[6] not in RT_TOKEN_TYPES:
        raise FormatError(f"expected a token type ({', '.join(RT_TOKEN_TYPES)}) in field 7, got {parts[6]!r}",
                          path=path, line=lineno)
    return conf, parts[6], (parts[7] if len(parts) == 8 else None)


def parse_ctm_line(line: str, path: str = "<string>", lineno: int = 0) -> CtmWord | None:
    """Parse one CTM line into a :class:`CtmWord` (tag lines too: their ``word`` is the tag).

    Returns None for blank and ``;;`` lines.  Raises FormatError unless the line has 5 or 6
    fields with numeric (or ``*``) start and duration and a numeric confidence, or is a NIST RT
    CTM line of 7 or 8 fields: ``... <confidence or NA> <type> [<speaker>]``.
    """
    line = line.rstrip("\r\n")
    parts = line.split()                    # (str.split and str.strip agree on what is white space)
    if not parts or parts[0].startswith(";;"):
        return None
    if len(parts) in (7, 8):
        conf, typ, speaker = _parse_rt_fields(parts, path, lineno)
        start = _parse_number(parts[2], "start time", path, lineno, allow_star=True)
        duration = _parse_number(parts[3], "duration", path, lineno, allow_star=True)
        return CtmWord(parts[0], parts[1], start, duration, parts[4], conf, lineno, raw=line, type=typ,
                       speaker=speaker)
    if len(parts) not in (5, 6):
        raise FormatError(
            f"expected '<file> <channel> <start> <duration> <word> [<confidence> [<type> [<speaker>]]]', "
            f"got {len(parts)} fields", path=path, line=lineno)
    # the usual line in one go; anything else through _parse_number, which names the problem
    try:
        start = None if parts[2] == "*" else float(parts[2])
        duration = None if parts[3] == "*" else float(parts[3])
        confidence = float(parts[5]) if len(parts) == 6 else None
    except ValueError:
        start = math.nan
    else:
        # (chained comparisons: False for NaN and infinities, like isfinite, and for float overflow)
        if (start is None or -FLT_MAX <= start <= FLT_MAX) and (duration is None or -FLT_MAX <= duration <= FLT_MAX) \
                and (confidence is None or -FLT_MAX <= confidence <= FLT_MAX):
            return CtmWord(parts[0], parts[1], start, duration, parts[4], confidence, lineno, raw=line)
    start = _parse_number(parts[2], "start time", path, lineno, allow_star=True)
    duration = _parse_number(parts[3], "duration", path, lineno, allow_star=True)
    # Negative durations occur in NIST's own test data (tima_hyp.ctm) and sclite accepts them.
    confidence = None
    if len(parts) == 6 and parts[5].upper() != "NA":  # NA: no confidence, as sclite reads it
        confidence = _parse_number(parts[5], "confidence", path, lineno, allow_star=False)
    return CtmWord(parts[0], parts[1], start, duration, parts[4], confidence, lineno, raw=line)


class _Frame:
    """An open ALT block while reading: alternatives collected so far."""

    def __init__(self, tag: CtmWord):
        self.tag = tag
        self.alternatives: list[list] = [[]]
        self.raw: list[str] = [tag.raw or ""]


def _finish_alternative(words: list, path, lineno) -> tuple:
    # '@' alone is the empty alternative; '@' mixed with words is meaningless to sclite.
    if any(isinstance(w, CtmWord) and w.word == EMPTY_WORD for w in words):
        if len(words) != 1:
            raise FormatError("expected '@' (empty alternative) to be the only word of its alternative",
                              path=path, line=lineno)
        return ()
    return tuple(words)


def read_ctm(path, encoding: str = "utf-8", *, nested: str = "error", max_alternatives: int = 10000) -> CtmItems:
    """Read a CTM file into a :class:`CtmItems` list of :class:`CtmWord` and :class:`CtmAltBlock`.

    Args:
      path: file name (gzip detected, ``-`` = stdin).
      nested: what to do with an ALT block inside an ALT block, which sclite silently mis-scores:
        ``"error"`` raises FormatError naming the line, ``"flatten"`` replaces the outer block by
        the Cartesian product of its alternatives (see :func:`flatten_nested_block`).
      max_alternatives: budget for flattening (BudgetExceededError beyond it).

    Caveats: tag lines must carry the same file/channel as the block they belong to; unterminated
    blocks, stray ``<ALT>``/``<ALT_END>`` and file/channel changes inside a block are FormatErrors.
    """
    if nested not in ("error", "flatten"):
        raise ValueError(f"nested must be 'error' or 'flatten', not {nested!r}")
    return parse_ctm_lines(read_text_lines(str(path), encoding), str(path), nested=nested,
                           max_alternatives=max_alternatives)


def parse_ctm_lines(numbered_lines: Iterable[tuple[int, str]], path: str = "<string>", *, nested: str = "error",
                    max_alternatives: int = 10000) -> CtmItems:
    """:func:`read_ctm` on already read ``(lineno, line)`` pairs."""
    items = CtmItems(path=path)
    stack: list[_Frame] = []
    for lineno, line in numbered_lines:
        rec = parse_ctm_line(line, path, lineno)
        if rec is None:
            if stack:
                if line.strip().startswith(";;"):
                    raise FormatError("expected no comment inside an ALT block", path=path, line=lineno)
                stack[-1].raw.append(line)
                continue
            if line.strip().startswith(";;") or line.strip() == "":
                items.comments.append((len(items), line))
            continue
        if stack and (rec.file, rec.channel) != (stack[-1].tag.file, stack[-1].tag.channel):
            raise FormatError(
                f"expected file/channel {stack[-1].tag.file} {stack[-1].tag.channel} inside the ALT block "
                f"opened on line {stack[-1].tag.lineno}, got {rec.file} {rec.channel}", path=path, line=lineno)
        word = rec.word
        if word == ALT_BEGIN:
            if stack and nested == "error":
                raise FormatError(
                    f"nested <ALT_BEGIN> inside the ALT block opened on line {stack[-1].tag.lineno} "
                    "(sclite mis-scores nested blocks; filter --flatten-alternations flattens them)",
                    path=path, line=lineno)
            if len(stack) >= MAX_ALTERNATION_DEPTH:
                # flattening recurses once per level: bound the depth before it can exhaust the stack
                raise FormatError(f"ALT blocks nested more than {MAX_ALTERNATION_DEPTH} deep", path=path, line=lineno)
            stack.append(_Frame(rec))
        elif word == ALT_SEP:
            if not stack:
                raise FormatError("<ALT> outside an ALT block (expected <ALT_BEGIN> first)", path=path, line=lineno)
            stack[-1].alternatives.append([])
            stack[-1].raw.append(line)
        elif word == ALT_END:
            if not stack:
                raise FormatError("<ALT_END> outside an ALT block (expected <ALT_BEGIN> first)",
                                  path=path, line=lineno)
            frame = stack.pop()
            frame.raw.append(line)
            alts = tuple(_finish_alternative(a, path, lineno) for a in frame.alternatives)
            block = CtmAltBlock(frame.tag.file, frame.tag.channel, alts, frame.tag.lineno, raw=tuple(frame.raw))
            if stack:
                block = flatten_nested_block(block, max_alternatives=max_alternatives)
                stack[-1].alternatives[-1].append(block)
                stack[-1].raw.extend(frame.raw)
            else:
                if any(isinstance(w, CtmAltBlock) for alt in alts for w in alt):
                    block = flatten_nested_block(block, max_alternatives=max_alternatives)
                items.append(block)
        else:
            if stack:
                stack[-1].alternatives[-1].append(rec)
                stack[-1].raw.append(line)
            else:
                # a bare '@' outside a block is a word line sclite reads as the null word (nothing)
                items.append(rec)
    if stack:
        raise FormatError(f"end of file inside the ALT block opened on line {stack[-1].tag.lineno} "
                          "(expected <ALT_END>)", path=path)
    return items


#: Bytes a word of a flattened ALT block costs: its tuple slot (14 measured) and the arc of the scoring
#: network made of it (130 measured); the alignment table is checked where it is allocated.
_FLAT_WORD_BYTES = 160


def flatten_nested_block(block: CtmAltBlock, *, max_alternatives: int = 10000) -> CtmAltBlock:
    """Expand ALT blocks nested inside ``block`` into a flat block (no block inside any alternative).

    Each alternative that contains inner blocks becomes the Cartesian product of the inner
    blocks' (recursively flattened) alternatives, in listed order, so the first listed
    alternative of every block stays first (sclite prefers the first one on ties).  Duplicate
    word sequences (same words, ignoring times) are removed, keeping the first.

    Raises BudgetExceededError when more than ``max_alternatives`` alternatives would result, or when
    their words would not fit in the memory budget (:func:`lattice_tools.core._budget.memory_budget`,
    ``--max-memory``): both are counted before the product is made.
    """
    from ...core._budget import check_allocation

    out: list[tuple[CtmWord, ...]] = []
    seen: set[tuple[str, ...]] = set()
    where = f"the nested ALT block of {block.file} {block.channel} (line {block.lineno})"
    done_words = 0
    for alt in block.alternatives:
        # each alternative is a list of runs (tuples of words): extending one costs a run, not its words
        partial: list[list[tuple[CtmWord, ...]]] = [[]]
        count, words_total = 1, 0   # alternatives so far and their words in all
        run: list[CtmWord] = []
        for element in alt:
            if not isinstance(element, CtmAltBlock):
                run.append(element)
                words_total += count
                continue
            inner = flatten_nested_block(element, max_alternatives=max_alternatives).alternatives
            if count * len(inner) > max_alternatives:
                raise BudgetExceededError(f"flattening {where} needs more than {max_alternatives} alternatives")
            words_total = words_total * len(inner) + count * sum(len(i) for i in inner)
            count *= len(inner)
            head = [tuple(run)] if run else []
            run = []
            partial = [p + head + [i] for p in partial for i in inner]
        if run:
            tail = tuple(run)
            partial = [p + [tail] for p in partial]
        # a word of a flat alternative costs a tuple slot and, scored, an arc of the network: counted
        # before the alternatives are made
        done_words += words_total
        check_allocation(done_words * _FLAT_WORD_BYTES, f"flattening {where} ({len(out) + count:,} alternatives, "
                         f"{done_words:,} words in all)", advice=" or cut the ALT block's depth")
        for runs in partial:
            p = tuple(w for r in runs for w in r)
            words = tuple(w.word for w in p)
            if words in seen:
                continue
            seen.add(words)
            out.append(p)
            if len(out) > max_alternatives:
                raise BudgetExceededError(
                    f"flattening the nested ALT block of {block.file} {block.channel} (line {block.lineno}) "
                    f"needs more than {max_alternatives} alternatives")
    return CtmAltBlock(block.file, block.channel, tuple(out), block.lineno)


def _format_value(value: float | None, time_format: str | None) -> str:
    if value is None:
        return "*"
    if time_format is None:  # shortest text that reads back as the same float
        from .stm import _format_time
        return _format_time(value)
    return time_format % value


def format_ctm_word(w: CtmWord, time_format: str | None = "%.2f", conf_format: str = "%.3f") -> str:
    """The CTM line for ``w``: its source line if unchanged, else a canonical line (``time_format=None``:
    the shortest text that reads back as the same time)."""
    if w.raw is not None:
        try:
            if parse_ctm_line(w.raw, "<raw>", w.lineno) == w:
                return w.raw
        except FormatError:
            pass
    fields = [w.file, w.channel, _format_value(w.start, time_format), _format_value(w.duration, time_format), w.word]
    if w.confidence is not None:
        fields.append(conf_format % w.confidence)
    if w.type is not None:  # NIST RT CTM
        if w.confidence is None:
            fields.append("NA")
        fields.append(w.type)
        if w.speaker is not None:
            fields.append(w.speaker)
    return " ".join(fields)


def format_ctm_item(item: CtmItem, time_format: str | None = "%.2f", conf_format: str = "%.3f") -> list[str]:
    """Lines of one item; an ALT block is written flat with ``*`` times on tag lines and ``@``
    for an empty alternative.  Nested blocks are flattened first (sclite cannot score them)."""
    if isinstance(item, CtmWord):
        return [format_ctm_word(item, time_format, conf_format)]
    if item.raw is not None:
        try:
            if _reparse_block(item.raw, item.lineno) == item:
                return list(item.raw)
        except FormatError:
            pass
    if any(isinstance(w, CtmAltBlock) for alt in item.alternatives for w in alt):
        item = flatten_nested_block(item)
    tag = f"{item.file} {item.channel} * *"
    lines = [f"{tag} {ALT_BEGIN}"]
    for k, alt in enumerate(item.alternatives):
        if k:
            lines.append(f"{tag} {ALT_SEP}")
        if not alt:
            lines.append(f"{tag} {EMPTY_WORD}")
        for w in alt:
            lines.append(format_ctm_word(w, time_format, conf_format))
    lines.append(f"{tag} {ALT_END}")
    return lines


def _reparse_block(raw: Sequence[str], lineno: int) -> CtmAltBlock | None:
    """Parse the source lines of a block again (to check that the block is unchanged)."""
    items = parse_ctm_lines(enumerate(raw, lineno), "<raw>", nested="flatten")
    return items[0] if len(items) == 1 and isinstance(items[0], CtmAltBlock) else None


def write_ctm(path, items: Iterable[CtmItem], *, time_format: str = "%.2f", conf_format: str = "%.3f",
              encoding: str = "utf-8") -> None:
    """Write CTM items atomically.  Comments remembered by a :class:`CtmItems` are written at
    their original positions; items read from a file and left unchanged keep their exact lines."""
    comments = getattr(items, "comments", [])
    items = list(items)
    by_index: dict[int, list[str]] = {}
    for index, line in comments:
        by_index.setdefault(index, []).append(line)
    with atomic_write(str(path), "w", encoding=encoding) as out:
        for i, item in enumerate(items):
            for line in by_index.get(i, ()):
                out.write(line + "\n")
            for line in format_ctm_item(item, time_format, conf_format):
                out.write(line + "\n")
        for line in by_index.get(len(items), ()):
            out.write(line + "\n")
