"""A lean alt-CTM reader for scoring large files (millions of lines) quickly.

:func:`lattice_tools.io.ctm.read_ctm` keeps every line for byte-exact round trips, which costs
~20 us per line; scoring needs only ``(file, channel, start, duration, word)`` and the block
structure.  This reader returns plain tuples, validates what scoring relies on (5 or 6 fields,
numeric or ``*`` times, balanced, non-nested ``<ALT_BEGIN>``/``<ALT>``/``<ALT_END>``, one
file/channel per block) and raises :class:`FormatError` naming the file and line otherwise.

Items, per ``(file, channel)`` side in file order:

* ``("w", start, duration, word, lineno)`` -- a plain word;
* ``("b", start, end, alternatives, lineno)`` -- an ALT block; ``alternatives`` is a list of lists
  of ``(start, duration, word)``; an alternative that is only ``@`` is the empty list.

Times are floats (NaN for ``*``); a block's start/end are the min start / max end of its words.
"""
from __future__ import annotations

import math

from ..errors import FormatError
from ..io.common import open_binary_input

_NAN = float("nan")


def _num(tok: str, what: str, path: str, lineno: int) -> float:
    if tok == "*":
        return _NAN
    try:
        v = float(tok)
    except ValueError:
        raise FormatError(f"expected a number or * for the {what}, got {tok!r}", path=path, line=lineno) from None
    if not math.isfinite(v):
        raise FormatError(f"expected a finite {what}, got {tok!r}", path=path, line=lineno)
    return v


def read_scoring_ctm(path: str) -> dict:
    """``{(file, channel_lowercase): [item, ...]}`` (see the module docstring)."""
    path = str(path)
    with open_binary_input(path) as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not valid utf-8 text ({exc.reason} at byte {exc.start})", path=path) from None
    sides: dict = {}
    block = None          # [side, alternatives, lineno]
    for lineno, line in enumerate(text.split("\n"), 1):
        parts = line.split()
        if not parts or parts[0].startswith(";;"):
            if block is not None and parts:
                raise FormatError("expected no comment inside an ALT block", path=path, line=lineno)
            continue
        n = len(parts)
        if n != 5 and n != 6:
            raise FormatError(f"expected '<file> <channel> <start> <duration> <word> [<confidence>]', got {n} fields",
                              path=path, line=lineno)
        word = parts[4]
        side = (parts[0], parts[1])
        if block is not None and side != block[0]:
            raise FormatError(f"expected file/channel {block[0][0]} {block[0][1]} inside the ALT block opened on "
                              f"line {block[2]}, got {parts[0]} {parts[1]}", path=path, line=lineno)
        if word[0] == "<" and word in ("<ALT_BEGIN>", "<ALT>", "<ALT_END>"):
            if word == "<ALT_BEGIN>":
                if block is not None:
                    raise FormatError(f"nested <ALT_BEGIN> inside the ALT block opened on line {block[2]}",
                                      path=path, line=lineno)
                block = [side, [[]], lineno]
            elif word == "<ALT>":
                if block is None:
                    raise FormatError("<ALT> outside an ALT block (expected <ALT_BEGIN> first)", path=path, line=lineno)
                block[1].append([])
            else:
                if block is None:
                    raise FormatError("<ALT_END> outside an ALT block (expected <ALT_BEGIN> first)",
                                      path=path, line=lineno)
                alts = block[1]
                lo, hi = math.inf, -math.inf
                for k, alt in enumerate(alts):
                    if len(alt) == 1 and alt[0][2] == "@":
                        alts[k] = []
                        continue
                    for s, d, _ in alt:
                        if s == s:  # not NaN
                            lo = min(lo, s)
                            if d == d:
                                hi = max(hi, s + d)
                sides.setdefault(block[0], []).append(
                    ("b", lo if lo != math.inf else _NAN, hi if hi != -math.inf else _NAN, alts, block[2]))
                block = None
            continue
        # float() inline (the hot loop of big files); _num only to build the error message
        try:
            p2, p3 = parts[2], parts[3]
            start = _NAN if p2 == "*" else float(p2)
            dur = _NAN if p3 == "*" else float(p3)
            if n == 6:
                float(parts[5])
        except ValueError:
            _num(parts[2], "start time", path, lineno)
            _num(parts[3], "duration", path, lineno)
            if n == 6 and parts[5] != "*":
                _num(parts[5], "confidence", path, lineno)
            raise FormatError("expected a number for the confidence, got '*'", path=path, line=lineno) from None
        if start - start != 0 and start == start or dur - dur != 0 and dur == dur:  # +-inf
            raise FormatError("expected finite times", path=path, line=lineno)
        if block is not None:
            block[1][-1].append((start, dur, word))
        else:
            if word == "@":
                raise FormatError("expected '@' only inside an ALT block", path=path, line=lineno)
            sides.setdefault(side, []).append(("w", start, dur, word, lineno))
    if block is not None:
        raise FormatError(f"end of file inside the ALT block opened on line {block[2]} (expected <ALT_END>)", path=path)
    merged: dict = {}
    for (f, ch), items in sides.items():  # sclite compares channels case-insensitively
        merged.setdefault((f, ch.lower()), []).extend(items)
    return merged
