"""NIST GLM rule files ("global mapping" files read by SCTK's ``rfilter1``/``csrfilt.sh``).

A GLM is a list of string-rewriting rules::

    ;; comment (the comment flag is the first token of the FIRST line)
    * name "en20030506.glm"          <- header ("auxiliary") lines start with '*'
    * max_nrules = '2500'
    * copy_no_hit = 'T'
    * case_sensitive = 'F'
    HUH-UH  =>  %BCNACK    / [ ] __ [ ] ;; negative token
    [I'M] => [{I'M / I AM}] / [ ] __ [ ]
    ;; INPUT_DEPENDENT_APPLICATION = "ctm"   <- rules below only for `-i ctm` (csrfilt.sh)

Rules are ``LHS => RHS [/ LEFT __ RIGHT]``; each part may be wrapped in ``[...]`` or ``"..."`` to
keep leading/trailing blanks.  Rules are parsed here, never evaluated; :mod:`lattice_tools.scoring.glm`
applies them.

The parser reproduces rfilter1 exactly, quirks included, because a GLM means whatever rfilter1 makes
of it: lines are read in chunks of at most 131 bytes (rfilter1's ``fgets`` buffer); the *first* line
only defines the comment flag and is never a rule; a rule's context separator is the *last* ``/`` of
the line unless it sits inside ``[ ]`` (so ``X => { A / B }`` without brackets means ``X => "{ A"``
-- :attr:`GlmRule.warnings` flags such cases); a header keyword is recognised anywhere in its line;
single quotes do not delimit rule strings.  Lines rfilter1 rejects raise :class:`FormatError`
naming ``file:line``: a rule without ``=>``, an indented comment (blank rule after comment
removal), a header line without a quoted value, more rules than ``max_nrules``, and rules in a file
whose ``format`` is not ``NIST1`` (the only format rfilter1 can apply).
"""
from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ...core.errors import FormatError
from ...core.files import read_text_bytes

# rfilter1 reads rule lines with fgets(buf, 132): at most 131 bytes per read.
RFILTER1_LINE_BYTES = 131
DEFAULT_MAX_NRULES = 400
_C_SPACE = " \t\n\v\f\r"
_IDA = re.compile(r'^;;\s+INPUT_DEPENDENT_APPLICATION\s*=\s*"([^"]*)"', re.ASCII)


@dataclass(frozen=True)
class GlmRule:
    """One rule ``lhs => rhs / left_context __ right_context`` (contexts "" when absent).

    Strings are exactly what rfilter1 matches (boundary ``[ ]``/``" "`` removed, inner blanks kept).
    ``section`` is the INPUT_DEPENDENT_APPLICATION regular expression in force (None = all inputs).
    """

    lhs: str
    rhs: str
    left_context: str = ""
    right_context: str = ""
    lineno: int = 0
    section: str | None = None
    text: str = field(default="", compare=False)  # the rule line as read (comment removed)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_context_sensitive(self) -> bool:
        return bool(self.left_context or self.right_context)


@dataclass(frozen=True)
class Glm:
    """A parsed GLM: header values and rules in file order."""

    rules: tuple[GlmRule, ...]
    name: str = ""
    desc: str = ""
    format: str = "NIST1"
    max_nrules: int = DEFAULT_MAX_NRULES
    copy_no_hit: bool = True
    case_sensitive: bool = True
    comment_flag: str = ""
    path: str = ""
    # (lineno, regexp) of every ';; INPUT_DEPENDENT_APPLICATION = "regexp"' line.
    sections: tuple[tuple[int, str], ...] = ()
    encoding: str = "utf-8"

    def select(self, input_type: str, purpose: str | None = None) -> Glm:
        """The rules csrfilt.sh keeps for ``-i input_type`` (and ``-t purpose``): a rule applies when
        no INPUT_DEPENDENT_APPLICATION line precedes it, or the last one's regexp (lower-cased)
        matches the lower-cased input type or purpose (Perl ``=~`` semantics: a search)."""
        return replace(self, rules=tuple(r for r in self.rules if section_applies(r.section, input_type, purpose)))


def section_applies(section: str | None, input_type: str, purpose: str | None = None) -> bool:
    if section is None:
        return True
    try:
        pattern = re.compile(section.lower())
    except re.error as exc:
        raise FormatError(f"INPUT_DEPENDENT_APPLICATION regexp {section!r} is invalid ({exc})") from None
    return bool(pattern.search(input_type.lower()) or pattern.search((purpose or "").lower()))


def _fgets_chunks(data: bytes):
    """Yield ``(lineno, chunk)`` as rfilter1's fgets loop sees them (chunk keeps its newline)."""
    lineno = 1
    pos = 0
    n = len(data)
    while pos < n:
        newline = data.find(b"\n", pos, pos + RFILTER1_LINE_BYTES)
        end = pos + RFILTER1_LINE_BYTES if newline < 0 else newline + 1
        end = min(end, n)
        chunk = data[pos:end]
        yield lineno, chunk
        if chunk.endswith(b"\n"):
            lineno += 1
        pos = end


def _rtrim(s: str) -> str:
    return s.rstrip(_C_SPACE)


def _strip_boundary(s: str) -> str:
    """rfilter1 drops one '[' ... ']' or '"' ... '"' pair around a field."""
    if len(s) >= 1 and ((s[0] == "[" and s[-1] == "]") or (s[0] == '"' and s[-1] == '"')):
        return s[1:-1] if len(s) >= 2 else ""
    return s


def _field_after_token(line: str, start: int, end: int) -> str:
    """rfilter1's way to read the field in ``line[start..end]`` (inclusive end): skip the marker
    token at ``start`` (``=>``, ``/`` or ``__`` plus anything glued to it), then blanks, then remove
    one boundary pair."""
    i = start
    while i < end and line[i] not in _C_SPACE:
        i += 1
    if not i < end:
        return ""
    while line[i] in _C_SPACE:
        i += 1
    return _strip_boundary(line[i:end + 1])


def _last_nonspace(line: str, upto: int, floor: int) -> int:
    """Index of the last non-blank char at or before ``upto`` but not before ``floor``."""
    i = upto
    while i > floor and line[i] in _C_SPACE:
        i -= 1
    return i


def parse_rule_line(line: str, path: str = "<string>", lineno: int = 0, section: str | None = None) -> GlmRule:
    """Parse one rule line (comment already blanked out) the way rfilter1's NIST1 reader does."""
    if not line.strip(_C_SPACE):
        raise FormatError("expected a rule 'LHS => RHS [/ LEFT __ RIGHT]', got a blank line "
                          "(rfilter1 rejects an indented comment)", path=path, line=lineno)
    ieq = line.find("=>")
    if ieq < 0:
        raise FormatError(f"expected '=>' in the rule {line.strip()!r}", path=path, line=lineno)
    warnings = []
    # The context marker is the last '/' unless it sits inside [ ... ].
    icontext = line.rfind("/")
    islot = -1
    if icontext >= 0:
        irmark = line.find("]", icontext)
        ilmark = line.find("[", icontext)
        # C compares pointers: NULL (absent) sorts before any found position.
        r_key = -1 if irmark < 0 else irmark
        l_key = -1 if ilmark < 0 else ilmark
        if r_key < l_key:
            icontext = -1
        else:
            islot = line.find("_", icontext)
    if icontext >= 0 and icontext < ieq:
        warnings.append("the last '/' precedes '=>'; rfilter1 takes it as the context separator")
    # Left-hand side.
    lhs = ""
    start = len(line) - len(line.lstrip(_C_SPACE))
    if start < ieq:
        end = _last_nonspace(line, ieq - 1, start)
        lhs = _strip_boundary(line[start:end + 1])
    # Right-hand side.
    last = len(_rtrim(line)) - 1
    if icontext < 0:
        rhs_end = last
    else:
        rhs_end = _last_nonspace(line, icontext - 1, ieq)
    rhs = _field_after_token(line, ieq, rhs_end)
    left = right = ""
    if icontext >= 0 and islot >= 0:
        left_end = _last_nonspace(line, islot - 1, icontext)
        left = _field_after_token(line, icontext, left_end)
        right = _field_after_token(line, islot, last)
    elif icontext >= 0:
        warnings.append("a '/' outside [ ] without '__' cuts the right-hand side there "
                        "(wrap an alternation in [ ] to keep it)")
    if rhs.count("{") != rhs.count("}"):
        warnings.append(f"unbalanced braces in the right-hand side {rhs!r}")
    return GlmRule(lhs, rhs, left, right, lineno, section, line.rstrip(_C_SPACE), tuple(warnings))


def _bool_value(value: str) -> bool:
    return value.upper() in ("T", "YES", "TRUE")


def _quoted_value(line: str) -> str | None:
    """rfilter1's sstok2(line, "\\"'"): text after the first quote up to the next quote (or end)."""
    for i, ch in enumerate(line):
        if ch in "\"'":
            rest = line[i + 1:]
            for j, ch2 in enumerate(rest):
                if ch2 in "\"'":
                    return rest[:j]
            return rest
    return None


def parse_glm_bytes(data: bytes, path: str = "<string>", *, encoding: str = "utf-8",
                    input_type: str | None = None, purpose: str | None = None) -> Glm:
    """Parse GLM file content.  With ``input_type`` only the lines csrfilt.sh keeps for that
    ``-i`` type (and ``-t purpose``) are read, exactly as its INPUT_DEPENDENT_APPLICATION
    preprocessing does; otherwise every rule is kept with its ``section``."""
    if not data:
        raise FormatError("the GLM file is empty (rfilter1 needs at least the comment-flag line)", path=path)
    # csrfilt.sh drops whole physical lines of non-applying sections before rfilter1 reads them.
    physical = data.split(b"\n")
    kept: list[bytes] = []
    linenos: list[int] = []
    section: str | None = None
    line_section: list[str | None] = []
    sections: list[tuple[int, str]] = []
    applies = True
    for number, raw in enumerate(physical, 1):
        if number == len(physical) and raw == b"":
            break
        m = _IDA.match(raw.decode("latin-1"))
        if m:
            section = m.group(1).encode("latin-1").decode(encoding, errors="replace")
            sections.append((number, section))
            if input_type is not None:
                applies = section_applies(section, input_type, purpose)
        if applies:
            kept.append(raw + (b"\n" if number < len(physical) else b""))
            linenos.append(number)
            line_section.append(section)
    stream = b"".join(kept)
    try:
        ascii_identity = codecs.lookup(encoding).name in ("utf-8", "ascii", "iso8859-1")
    except LookupError:
        ascii_identity = False  # _decode reports the unknown encoding as before
    # Map each fgets chunk back to its physical line number.
    header: dict[str, Any] = {"name": "", "desc": "", "format": "NIST1", "max_nrules": DEFAULT_MAX_NRULES,
              "copy_no_hit": True, "case_sensitive": True}
    rules: list[GlmRule] = []
    comment_flag = None
    for chunk_index, chunk in _fgets_chunks(stream):
        lineno = linenos[chunk_index - 1] if chunk_index - 1 < len(linenos) else chunk_index
        sec = line_section[chunk_index - 1] if chunk_index - 1 < len(line_section) else None
        text = chunk.decode("latin-1")
        if comment_flag is None:
            # The first line only gives the comment flag: its leading printable (isgraph) chars.
            flag = []
            for ch in text:
                if "\x21" <= ch <= "\x7e":
                    flag.append(ch)
                else:
                    break
            comment_flag = "".join(flag)
            continue
        line = _rtrim(text.rstrip("\n"))
        if not line:
            continue
        if comment_flag and line.startswith(comment_flag):
            continue
        if line[0] == "*":
            value = _quoted_value(line)
            if value is None:
                raise FormatError(f"expected a quoted value in the header line {line!r}", path=path, line=lineno)
            upper = line.upper()
            if "NAME" in upper:
                header["name"] = value
            if "DESC" in upper:
                header["desc"] = value
            if "FORMAT" in upper:
                header["format"] = value
            if "MAX_NRULES" in upper:
                m = re.match(r"[ \t\n\v\f\r]*([+-]?\d+)", value)
                header["max_nrules"] = int(m.group(1)) if m else 0
            if "COPY_NO_HIT" in upper:
                header["copy_no_hit"] = _bool_value(value)
            if "CASE_SENSITIVE" in upper:
                header["case_sensitive"] = _bool_value(value)
            continue
        if comment_flag:
            at = line.find(comment_flag)
            if at >= 0:
                line = line[:at] + " " * (len(line) - at)
        if header["format"] != "NIST1":
            raise FormatError(f"rule found but the GLM format is {header['format']!r}; rfilter1 can only "
                              "apply 'NIST1' rules", path=path, line=lineno)
        rule = parse_rule_line(line, path, lineno, sec)
        if len(rules) >= header["max_nrules"]:
            raise FormatError(f"more rules than max_nrules = {header['max_nrules']} (raise it in the header "
                              "with * max_nrules = 'N')", path=path, line=lineno)
        # decoding ASCII text with an ASCII-compatible codec changes nothing (skipped for speed)
        if not (ascii_identity and line.isascii()):
            try:
                rule = replace(rule, lhs=_decode(rule.lhs, encoding), rhs=_decode(rule.rhs, encoding),
                               left_context=_decode(rule.left_context, encoding),
                               right_context=_decode(rule.right_context, encoding),
                               text=_decode(rule.text, encoding))
            except UnicodeDecodeError as exc:
                raise FormatError(f"rule text is not valid {encoding} ({exc.reason}); give the file's encoding "
                                  "with --encoding (e.g. latin-1, gb2312); note that rfilter1 "
                                  f"splits lines longer than {RFILTER1_LINE_BYTES} bytes", path=path,
                                  line=lineno) from None
        rules.append(rule)
    if comment_flag is None:
        comment_flag = ""
    return Glm(tuple(rules), header["name"], header["desc"], header["format"], header["max_nrules"],
               header["copy_no_hit"], header["case_sensitive"], comment_flag, path, tuple(sections), encoding)


def _decode(s: str, encoding: str) -> str:
    return s.encode("latin-1").decode(encoding)


def read_glm(path, *, encoding: str = "utf-8", input_type: str | None = None, purpose: str | None = None) -> Glm:
    """Read and parse a GLM file (gzip detected).  See :func:`parse_glm_bytes`."""
    data = read_text_bytes(str(path), encoding, what="GLM")
    return parse_glm_bytes(data, str(path), encoding=encoding, input_type=input_type, purpose=purpose)


def hesitation_words(glm: Glm, target: str = "%HESITATION") -> tuple[str, ...]:
    """Words the GLM maps to ``target`` (e.g. ``UH``, ``%UM``), plus ``target`` itself."""
    words = [target]
    for rule in glm.rules:
        if rule.rhs.strip().upper() == target.upper() and rule.lhs.strip() and " " not in rule.lhs.strip():
            if rule.lhs.strip().upper() not in (w.upper() for w in words):
                words.append(rule.lhs.strip())
    return tuple(words)


def backchannel_words(glm: Glm) -> tuple[str, ...]:
    """Backchannel words of a GLM: the left-hand sides of rules that map to ``%BCACK``/``%BCNACK``
    (the RT-03 GLM's backchannel classes), plus the two class tokens themselves."""
    words = ["%BCACK", "%BCNACK"]
    for rule in glm.rules:
        if rule.rhs.strip().upper() in ("%BCACK", "%BCNACK") and rule.lhs.strip() and " " not in rule.lhs.strip():
            if rule.lhs.strip().upper() not in (w.upper() for w in words):
                words.append(rule.lhs.strip())
    return tuple(words)
