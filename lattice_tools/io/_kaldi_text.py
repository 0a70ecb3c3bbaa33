"""Kaldi text lattices: the ``RawFst`` they are read into, the general line parser and the vectorized
reader of the layout Kaldi writes (internal helper of :mod:`lattice_tools.io.kaldi`).

Two readers, one dispatcher (:func:`parse_text_block`): a text ``CompactLattice`` in the layout
Kaldi's printer writes -- ``src dst word [g,a,tids]`` and ``state [g,a,tids]`` lines, decimal
integers, plain decimal weights -- is read by numpy in a few passes over its bytes
(:func:`parse_compact_text`, about 30x faster than line by line: a 10 MB archive in ~0.2 s).
Everything else (``Lattice`` text, other spellings, and every malformed input, whose error
message names its line) goes to the line parser :func:`parse_text_fst`.  The choice depends only
on the layout, which the vectorized reader checks before it converts anything; both give the same
``RawFst`` on what they both read (tests/test_kaldi_parity.py compares them).
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import FormatError


@dataclass
class RawFst:
    """A Kaldi lattice exactly as stored (state ids as in the file)."""

    kind: str  # "lattice", "compact" or "standard"
    start: int
    num_states: int
    src: np.ndarray
    dst: np.ndarray
    ilabel: np.ndarray
    olabel: np.ndarray
    w1: np.ndarray  # graph cost
    w2: np.ndarray  # acoustic cost
    final_w1: np.ndarray
    final_w2: np.ndarray
    strings: list | None = None  # compact: per-arc tid arrays
    final_strings: dict = field(default_factory=dict)  # compact: state -> tid array (non-empty only)
    props: int | None = None  # binary: the OpenFst header's property bits (None: text)


def _parse_float(s: str):
    x = float(s)  # accepts inf / Infinity / -inf
    if math.isnan(x):
        raise ValueError("nan")
    return x


# Kaldi/OpenFst store labels, state ids and transition ids as int32; its text reader takes ASCII
# digits only (``int()`` would also take "1_000", "٣" or a 10,000-digit number).
_INT_TEXT = re.compile(r"[+-]?[0-9]+\Z")
INT32_MAX = 2 ** 31 - 1


class _BadInteger(ValueError):
    """An integer field that is not ASCII decimal or out of int32 range (the message says which)."""


def _parse_int32(s: str, what: str) -> int:
    """A non-negative int32 in ASCII decimal; ValueError (with what was expected) otherwise."""
    if not _INT_TEXT.match(s):
        raise _BadInteger(f"{what} {s[:40]!r} is not an integer")
    x = int(s) if len(s) <= 40 else INT32_MAX + 1
    if not 0 <= x <= INT32_MAX:
        raise _BadInteger(f"{what} {s[:40]} is outside 0..{INT32_MAX} (Kaldi stores it as int32)")
    return x


def _parse_weight(s: str, compact: bool):
    """Parse ``g,a`` (LatticeWeight) or ``g,a,t1_t2`` (CompactLatticeWeight); ValueError if bad."""
    parts = s.split(",")
    if compact:
        if len(parts) not in (2, 3):
            raise ValueError(s)
        tids = parts[2] if len(parts) == 3 else ""
        ids = (np.array([_parse_int32(x, "transition id") for x in tids.split("_")], dtype=np.int32)
               if tids else np.zeros(0, np.int32))
        return _parse_float(parts[0]), _parse_float(parts[1]), ids
    if len(parts) != 2:
        raise ValueError(s)
    return _parse_float(parts[0]), _parse_float(parts[1]), None


def parse_text_fst(lines: list[tuple[int, str]], name: str, key: str | None, lattice_type: str = "auto") -> RawFst:
    """Parse the text lines of one Kaldi lattice (``(lineno, line)`` pairs, no terminating blank line)."""
    rows = []
    for lineno, line in lines:
        cols = line.split()
        if not cols:
            continue
        if len(cols) > 5:
            raise FormatError(f"expected at most 5 columns (src dst ilabel olabel weight), got {len(cols)}",
                              path=name, line=lineno, key=key)
        rows.append((lineno, cols))
    if not rows:
        raise FormatError("empty lattice (no lines before the terminating blank line)", path=name,
                          line=lines[0][0] if lines else None, key=key)
    kind = None if lattice_type == "auto" else lattice_type
    if kind is None:
        votes = {}
        for lineno, cols in rows:
            v = None
            if len(cols) == 3:
                v = "compact"
            elif len(cols) == 5:
                v = "lattice"
            elif len(cols) == 4:
                v = "compact" if "," in cols[3] else "lattice"
            elif len(cols) == 2 and cols[1].count(",") == 2:
                v = "compact"
            if v is not None:
                if votes and v not in votes:
                    raise FormatError(f"line looks like a Kaldi {v} line but earlier lines (line {next(iter(votes.values()))}) "
                                      f"look like a {next(iter(votes))}", path=name, line=lineno, key=key)
                votes.setdefault(v, lineno)
        kind = next(iter(votes), "compact")
    compact = kind == "compact"
    src, dst, il, ol, w1, w2, strings = [], [], [], [], [], [], []
    finals: dict[int, tuple] = {}
    start = None
    for lineno, cols in rows:
        try:
            s = _parse_int32(cols[0], "state id")
        except ValueError as exc:
            raise FormatError(str(exc), path=name, line=lineno, key=key) from None
        if start is None:
            start = s
        n = len(cols)
        try:
            if n <= 2:
                wt = (0.0, 0.0, np.zeros(0, np.int32) if compact else None) if n == 1 else _parse_weight(cols[1], compact)
                if s in finals:
                    raise FormatError(f"state {s} has two final weights", path=name, line=lineno, key=key)
                finals[s] = wt
                continue
            if compact:
                if n not in (3, 4):
                    raise ValueError("columns")
                d, lab = _parse_int32(cols[1], "state id"), _parse_int32(cols[2], "label")
                wt = (0.0, 0.0, np.zeros(0, np.int32)) if n == 3 else _parse_weight(cols[3], True)
                ilab = olab = lab
            else:
                if n not in (4, 5):
                    raise ValueError("columns")
                d = _parse_int32(cols[1], "state id")
                ilab, olab = _parse_int32(cols[2], "input label"), _parse_int32(cols[3], "output label")
                wt = (0.0, 0.0, None) if n == 4 else _parse_weight(cols[4], False)
        except ValueError as exc:
            want = ("'src dst word [graph,acoustic,tids]' or 'state [graph,acoustic,tids]'" if compact else
                    "'src dst ilabel olabel [graph,acoustic]' or 'state [graph,acoustic]'")
            why = f" ({exc})" if isinstance(exc, _BadInteger) else ""
            raise FormatError(f"bad Kaldi {kind} line {' '.join(cols)[:200]!r}{why}: expected {want} "
                              "(numbers, no NaN)", path=name, line=lineno, key=key) from None
        if math.isinf(wt[0]) or math.isinf(wt[1]):
            raise FormatError("arc weight is infinite (Zero); arcs must have finite weights", path=name, line=lineno, key=key)
        src.append(s)
        dst.append(d)
        il.append(ilab)
        ol.append(olab)
        w1.append(wt[0])
        w2.append(wt[1])
        strings.append(wt[2])
    num_states = max([start] + src + dst + list(finals)) + 1
    if num_states > max(4 * len(rows), 1 << 20):
        big = max([start] + src + dst + list(finals))
        line = next((n for n, c in rows if str(big) in c[:2]), None)
        raise FormatError(f"state id {big} is implausibly large for a lattice of {len(rows)} lines",
                          path=name, line=line, key=key)
    fw1 = np.full(num_states, np.inf)
    fw2 = np.full(num_states, np.inf)
    final_strings = {}
    for s, (a, b, tids) in finals.items():
        if math.isinf(a) or math.isinf(b):
            continue  # Zero final weight = not final
        fw1[s], fw2[s] = a, b
        if tids is not None and len(tids):
            final_strings[s] = tids
    return RawFst(kind, start, num_states, np.array(src, np.int64), np.array(dst, np.int64),
                  np.array(il, np.int64), np.array(ol, np.int64), np.array(w1, np.float64), np.array(w2, np.float64),
                  fw1, fw2, strings if compact else None, final_strings)


def parse_text_block(block: bytes, lines_of_block, name: str, key: str | None, lattice_type: str = "auto") -> RawFst:
    """One text lattice: the vectorized reader when the block has the layout Kaldi writes for a
    ``CompactLattice`` (and one is acceptable), else the line parser (``lines_of_block()`` gives its
    ``(lineno, line)`` pairs; it reports any error with its line)."""
    if lattice_type in ("auto", "compact"):
        raw = parse_compact_text(block)
        if raw is not None:
            return raw
    return parse_text_fst(lines_of_block(), name, key, lattice_type)


def _numbers(buf: np.ndarray, dtype, count: int) -> np.ndarray | None:
    """The ``count`` whitespace-separated numbers of ``buf`` (bytes) parsed in C (``strtod``, correctly
    rounded as Python's ``float``; decimal integers), or None if there are not exactly ``count``
    tokens that are each entirely a number."""
    if count == 0:  # (numpy reads a blank buffer as one number)
        return np.zeros(0, dtype) if not np.any((buf != 32) & (buf != 9) & (buf != 10)) else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # numpy < 2.3 only warns on unmatched data
        try:
            vals = np.fromstring(buf.tobytes(), dtype=dtype, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    return vals if len(vals) == count else None


def parse_compact_text(block: bytes) -> RawFst | None:
    """The ``CompactLattice`` of ``block`` read with numpy, or None when ``block`` is not exactly in the
    layout Kaldi writes (see the module docstring); the numbers are converted as the line parser
    converts them, so the result is the same ``RawFst``."""
    end = len(block)  # the last lattice of an archive may end without its blank line
    while end and block[end - 1] in b" \t\n":  # (not rstrip: that copies the block)
        end -= 1
    if not end or b"\r" in block or b"\x0b" in block or b"\x0c" in block:
        return None
    a = np.frombuffer(block, np.uint8, count=end)
    n = len(a)
    ws = (a == 32) | (a == 9) | (a == 10)
    before = np.concatenate([[True], ws[:-1]])
    after = np.concatenate([ws[1:], [True]])
    tok_start = np.flatnonzero(~ws & before)
    tok_end = np.flatnonzero(~ws & after) + 1
    nl = np.flatnonzero(a == 10)
    n_lines = len(nl) + 1
    line_bounds = np.concatenate([[0], nl + 1, [n]])
    commas = np.flatnonzero(a == 44)
    # per line: tokens and commas (counted between the line's bounds in the sorted positions)
    ntok = np.diff(np.searchsorted(tok_start, line_bounds))
    ncomma = np.diff(np.searchsorted(commas, line_bounds))
    arc_w = (ntok == 4) & (ncomma == 2)
    arc_nw = (ntok == 3) & (ncomma == 0)
    fin_w = (ntok == 2) & (ncomma == 2)
    if not np.all(arc_w | arc_nw | fin_w | ((ntok == 1) & (ncomma == 0))):
        return None
    first_tok = np.zeros(n_lines + 1, np.int64)
    np.cumsum(ntok, out=first_tok[1:])
    weighted = arc_w | fin_w
    last_tok = first_tok[1:][weighted] - 1
    w_start, w_end = tok_start[last_tok], tok_end[last_tok]
    c1, c2 = commas[0::2], commas[1::2]  # only weighted lines have commas, two each
    if np.any(c1 < w_start):
        return None  # a comma in another column
    # bytes: 0 = integer columns and whitespace, 1 = "graph,acoustic", 2 = ",tids"
    mark = np.zeros(n + 1, np.int8)
    mark[w_start] += 1
    mark[c2] += 1
    mark[w_end] -= 2
    code = np.cumsum(mark[:-1], dtype=np.int8)
    is_arc = arc_w | arc_nw
    n_arcs = int(is_arc.sum())
    ints = _numbers(a[code == 0], np.int64, 3 * n_arcs + n_lines - n_arcs)
    in_weight = code == 1
    in_weight[c2] = True  # the comma after the acoustic cost separates it from the next weight
    wbuf = a[in_weight].copy()
    wbuf[wbuf == 44] = 32
    weights = _numbers(wbuf, np.float64, 2 * len(w_start))
    tids = _tid_strings(a[code == 2])
    if (ints is None or weights is None or tids is None or not np.all(np.isfinite(weights))
            or (len(ints) and (ints.min() < 0 or ints.max() > INT32_MAX))):
        return None
    tid_vals, tid_off = tids
    # per line: its integers, its weight (One when absent) and its tid string (empty when absent)
    int_off = np.zeros(n_lines + 1, np.int64)
    np.cumsum(np.where(is_arc, 3, 1), out=int_off[1:])
    g = np.zeros(n_lines)
    ac = np.zeros(n_lines)
    g[weighted] = weights[0::2]
    ac[weighted] = weights[1::2]
    n_tids = np.zeros(n_lines, np.int64)
    n_tids[weighted] = np.diff(tid_off)
    line_tid_off = np.zeros(n_lines + 1, np.int64)
    np.cumsum(n_tids, out=line_tid_off[1:])
    arc_lines = np.flatnonzero(is_arc)
    fin_lines = np.flatnonzero(~is_arc)
    o = int_off[arc_lines]
    src, dst, word = ints[o], ints[o + 1], ints[o + 2]
    fstate = ints[int_off[fin_lines]]
    sorted_finals = np.sort(fstate)
    if np.any(sorted_finals[1:] == sorted_finals[:-1]):
        return None
    start = int(ints[0])
    num_states = int(max(start, src.max(initial=-1), dst.max(initial=-1), fstate.max(initial=-1))) + 1
    if num_states > max(4 * n_lines, 1 << 20):
        return None
    lo, hi = line_tid_off[arc_lines].tolist(), line_tid_off[arc_lines + 1].tolist()
    strings = [tid_vals[i:j] for i, j in zip(lo, hi, strict=True)]
    final_w1 = np.full(num_states, np.inf)
    final_w2 = np.full(num_states, np.inf)
    final_w1[fstate] = g[fin_lines]
    final_w2[fstate] = ac[fin_lines]
    final_strings = {s: tid_vals[line_tid_off[ln]:line_tid_off[ln + 1]]
                     for s, ln in zip(fstate.tolist(), fin_lines.tolist(), strict=True) if n_tids[ln]}
    return RawFst("compact", start, num_states, src, dst, word.copy(), word, g[arc_lines], ac[arc_lines], final_w1,
                  final_w2, strings, final_strings)


def _tid_strings(t: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The transition-id strings of ``t``: the bytes of every ``,t1_t2_...`` (each after its weight's
    second comma; possibly empty), concatenated.  Returns ``(all ids as int32, offsets per string)``,
    or None unless each string is decimal ids joined by single underscores."""
    comma = t == 44
    us = t == 95
    digit = (t >= 48) & (t <= 57)
    if not np.all(comma | us | digit):
        return None
    # every underscore between two digits (t[0] is a comma)
    if len(t) and (us[-1] or np.any(us[1:] & ~digit[:-1]) or np.any(us[:-1] & ~digit[1:])):
        return None
    starts = np.flatnonzero(comma)
    bounds = np.append(starts, len(t))
    nonempty = np.diff(bounds) > 1
    per_string = np.diff(np.searchsorted(np.flatnonzero(us), bounds)) + nonempty
    offsets = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(per_string, out=offsets[1:])
    if not np.any(digit[1:] & digit[:-1]):  # single-digit ids (e.g. written with a placeholder id)
        vals = t[digit].astype(np.int64) - 48
    else:
        vals = _numbers(np.where(digit, t, np.uint8(32)), np.int64, int(offsets[-1]))
    if vals is None or (len(vals) and vals.max() > INT32_MAX):
        return None
    return vals.astype(np.int32), offsets
