"""The Python line parser of Kaldi text lattices that lattice_tools.io.lattices._kaldi_text's C kernel
(lattice_tools/_ext/kaldi_text/) replaced: the oracle of tests/test_kaldi_text_reader.py, which
checks that the kernel gives the same lattice (field by field, :class:`ParsedFst` here) and the same errors (message, line) on valid, random
and mutated inputs.  It was the package's reader for every text lattice not in the layout Kaldi
writes (and for every error) until then; run uncompiled, on small inputs.

Differences the kernel makes on purpose: ``_`` inside numbers (Python's ``1_0``), non-ASCII
digits and non-ASCII whitespace are not numbers or separators to it (nor to Kaldi); the oracle
refuses the first two in weights as well (Python's ``float`` would take them).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from lattice_tools.core.errors import FormatError


@dataclass
class ParsedFst:
    """One lattice as the line parser read it: the fields of the package's RawFst, which the tests compare
    one by one (state ids as in the file; arrays int64 / float64, tid strings int32)."""

    kind: str  # "lattice" or "compact"
    start: int
    num_states: int
    src: np.ndarray
    dst: np.ndarray
    ilabel: np.ndarray
    olabel: np.ndarray
    w1: np.ndarray
    w2: np.ndarray
    final_w1: np.ndarray
    final_w2: np.ndarray
    final_strings: dict
    strings: list | None = None  # compact: each arc's tid string

    @property
    def tids(self) -> np.ndarray | None:
        """Every arc's tid string, concatenated (compact lattices)."""
        if self.strings is None:
            return None
        return np.array([t for s in self.strings for t in s], dtype=np.int32)

    @property
    def tid_offsets(self) -> np.ndarray | None:
        """Where each arc's tid string starts in :attr:`tids`, and where the last one ends."""
        if self.strings is None:
            return None
        ends = [0]
        for s in self.strings:
            ends.append(ends[-1] + len(s))
        return np.array(ends, dtype=np.int64)


def _parse_float(s: str):
    if "_" in s or not s.isascii():  # (what the C reader refuses on purpose: see the docstring)
        raise ValueError(s)
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


def parse_text_fst(lines: list[tuple[int, str]], name: str, key: str | None, lattice_type: str = "auto") -> ParsedFst:
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
                                      f"look like {next(iter(votes))} lines", path=name, line=lineno, key=key)
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
    return ParsedFst(kind, start, num_states, np.array(src, np.int64), np.array(dst, np.int64),
                     np.array(il, np.int64), np.array(ol, np.int64), np.array(w1, np.float64),
                     np.array(w2, np.float64), fw1, fw2, final_strings,
                     [np.asarray(x, np.int32) for x in strings] if compact else None)
