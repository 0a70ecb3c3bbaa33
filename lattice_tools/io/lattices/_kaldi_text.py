"""Kaldi text lattices: the ``RawFst`` they are read into, the reader of their lines and their
writer (:func:`format_text_fst`; internal helper of :mod:`lattice_tools.io.lattices.kaldi`).

One reader, :func:`parse_text_block`: the bytes of one lattice (its lines up to the blank line that
ends it) go to the C kernel ``lattice_tools._ext.kaldi_text`` (lattice_tools/_ext/kaldi_text/),
which reads them in one pass into the arrays of a :class:`RawFst` -- a 10 MB archive in a few
hundredths of a second -- or, for bad input, reports the first error; this module turns that
report into a :class:`~lattice_tools.core.errors.FormatError` naming the line and what was expected.
The errors are the ones the Python line parser this replaced reported, in the same order (its
transcription is the oracle of tests/test_kaldi_text_reader.py: tests/_reference/kaldi_text.py).

What is read (as OpenFst's printer and Kaldi's ``LatticeReader::ReadText`` write and read them):
``src dst word [graph,acoustic,tid_tid_...]`` and ``state [graph,acoustic,tids]`` lines of a
``CompactLattice``, ``src dst ilabel olabel [graph,acoustic]`` and ``state [graph,acoustic]`` of a
``Lattice`` (the type inferred from the columns unless given), columns separated by ASCII
whitespace (CR included, so CRLF files read), integers in ASCII decimal within int32, weights as
Python's ``float`` reads them (but without ``_`` separators; ``inf`` for Zero, never NaN),
converted correctly rounded whatever the user's locale.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..._ext import native
from ...core.errors import FormatError

INT32_MAX = 2 ** 31 - 1


@dataclass
class RawFst:
    """A Kaldi lattice exactly as stored (state ids as in the file).

    A ``CompactLattice``'s transition-id strings are kept flat: arc ``i``'s string is
    ``tids[tid_offsets[i]:tid_offsets[i + 1]]`` (:meth:`string`; ``strings`` lists them all)."""

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
    tids: np.ndarray | None = None  # compact: every arc's tid string, concatenated (int32)
    tid_offsets: np.ndarray | None = None  # compact: int64, one more than the arcs
    final_strings: dict = field(default_factory=dict)  # compact: state -> tid array (non-empty only)
    props: int | None = None  # binary: the OpenFst header's property bits (None: text)

    def string(self, i: int) -> np.ndarray:
        """The tid string of arc ``i`` (int32; a view)."""
        assert self.tids is not None and self.tid_offsets is not None, "a CompactLattice has tid strings"
        return self.tids[self.tid_offsets[i]:self.tid_offsets[i + 1]]

    @property
    def strings(self) -> list[np.ndarray] | None:
        """Every arc's tid string (None unless compact)."""
        if self.tids is None or self.tid_offsets is None:
            return None
        bounds = self.tid_offsets.tolist()
        return [self.tids[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def set_strings(self, strings: list) -> None:
        """Store per-arc tid strings (sequences of ints) in the flat form."""
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
        self.tid_offsets = np.zeros(len(strings) + 1, np.int64)
        np.cumsum(lengths, out=self.tid_offsets[1:])
        self.tids = (np.concatenate([np.asarray(s, np.int32) for s in strings]).astype(np.int32, copy=False)
                     if len(strings) else np.zeros(0, np.int32))


def _ffmt(x: float) -> str:
    """Shortest text that reads back to exactly ``x`` (float32 text for float32 values, as read
    from binary archives, so they print like Kaldi's ``36.657368`` rather than 17 digits)."""
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    f32 = np.float32(x)
    if float(f32) == x:  # a float32 value (binary archives): float32 shortest text, as Kaldi reads it back
        return str(f32)
    return repr(float(x))


def format_text_fst(raw: RawFst) -> str:
    """Kaldi text form of one lattice (without the key, without the terminating blank line)."""
    out = []
    order = np.argsort(raw.src, kind="stable")
    compact = raw.kind == "compact"
    # OpenFst prints states in order starting with the start state (start = 0 here).
    for i in order.tolist():
        w = f"{_ffmt(raw.w1[i])},{_ffmt(raw.w2[i])}"
        if compact:
            t = raw.string(i)
            out.append(f"{raw.src[i]}\t{raw.dst[i]}\t{raw.olabel[i]}\t{w},{'_'.join(map(str, t.tolist()))}")
        else:
            out.append(f"{raw.src[i]}\t{raw.dst[i]}\t{raw.ilabel[i]}\t{raw.olabel[i]}\t{w}")
    for s in np.nonzero(np.isfinite(raw.final_w1))[0].tolist():
        w = f"{_ffmt(raw.final_w1[s])},{_ffmt(raw.final_w2[s])}"
        if compact:
            final_string = raw.final_strings.get(s)
            w += "," + ("" if final_string is None else "_".join(map(str, final_string.tolist())))
        out.append(f"{s}\t{w}")
    return "\n".join(out) + "\n"


_KINDS = {"auto": 0, "compact": 1, "lattice": 2}
_KIND_NAMES = {1: "compact", 2: "lattice"}
_FIELDS = {1: "state id", 2: "label", 3: "input label", 4: "output label", 5: "transition id"}
_WANT = {"compact": "'src dst word [graph,acoustic,tids]' or 'state [graph,acoustic,tids]'",
         "lattice": "'src dst ilabel olabel [graph,acoustic]' or 'state [graph,acoustic]'"}
(_E_COLUMNS, _E_EMPTY, _E_VOTE, _E_STATE, _E_BADLINE, _E_TWO_FINALS, _E_INF_ARC, _E_BIG_STATE) = range(1, 9)

_kernel = None


def _parse(block, kind: int):
    global _kernel
    if _kernel is None:
        _kernel = native("kaldi_text")
    return _kernel.parse_block(block, kind)


def parse_text_block(block: bytes | memoryview, first_line: int | None, name: str, key: str | None,
                     lattice_type: str = "auto", errors: str = "strict") -> RawFst:
    """One text lattice: ``block`` holds its lines (the first is line ``first_line`` of the file;
    None: the lattice has no lines) without the blank line that ends it.  Bad input raises
    FormatError naming the file, the line and the key; ``errors="replace"`` quotes undecodable
    bytes instead of refusing them as binary data."""
    if lattice_type not in _KINDS:
        raise ValueError(f"lattice_type must be 'auto', 'compact' or 'lattice', not {lattice_type!r}")
    res = _parse(block, _KINDS[lattice_type])
    if len(res) == 7:
        _raise(res, block, first_line, name, key, errors)
    (kind, start, num_states, src, dst, il, ol, w1, w2, tid_end, tids, fstate, fw1, fw2, ft_start, ft_end,
     ftids) = res
    kind = _KIND_NAMES[kind]
    w1, w2 = np.frombuffer(w1, np.float64), np.frombuffer(w2, np.float64)
    raw = RawFst(kind, start, num_states, np.frombuffer(src, np.int64), np.frombuffer(dst, np.int64),
                 np.frombuffer(il, np.int64), np.frombuffer(ol, np.int64), w1, w2,
                 np.full(num_states, np.inf), np.full(num_states, np.inf))
    fstate, fw1, fw2 = np.frombuffer(fstate, np.int64), np.frombuffer(fw1, np.float64), np.frombuffer(fw2, np.float64)
    final = np.isfinite(fw1) & np.isfinite(fw2)  # a Zero final weight (inf) means not final
    raw.final_w1[fstate[final]] = fw1[final]
    raw.final_w2[fstate[final]] = fw2[final]
    if kind == "compact":
        raw.tids = np.frombuffer(tids, np.int32)
        raw.tid_offsets = np.zeros(len(src) // 8 + 1, np.int64)
        raw.tid_offsets[1:] = np.frombuffer(tid_end, np.int64)
        ftids = np.frombuffer(ftids, np.int32)
        bounds = zip(fstate[final].tolist(), np.frombuffer(ft_start, np.int64)[final].tolist(),
                     np.frombuffer(ft_end, np.int64)[final].tolist(), strict=True)
        raw.final_strings = {s: ftids[a:b] for s, a, b in bounds if b > a}
    return raw


def _raise(err: tuple, block: bytes | memoryview, first_line: int | None, name: str, key: str | None, errors: str):
    """The FormatError of the kernel's error report ``err`` (see lattice_tools/_ext/kaldi_text/lines.c)."""
    block = bytes(block)  # (may be a view)
    def fail(message: str, line: int | None):
        raise FormatError(message, path=name, line=None if line is None or first_line is None else first_line + line,
                          key=key)

    lines = block.split(b"\n")
    if errors == "strict" and not block.isascii():
        for i, line in enumerate(lines):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                fail("not valid text (binary data in a text lattice?)", i)

    def token(start: int, end: int) -> str:
        return block[start:end].decode("utf-8", errors)

    def bad_integer(what: str, reason: int, start: int, end: int) -> str:
        text = token(start, end)[:40]
        if reason == 1:
            return f"{what} {text!r} is not an integer"
        return f"{what} {text} is outside 0..{INT32_MAX} (Kaldi stores it as int32)"

    code, *v = err
    if code == _E_COLUMNS:
        fail(f"expected at most 5 columns (src dst ilabel olabel weight), got {v[1]}", v[0])
    if code == _E_EMPTY:
        fail("empty lattice (no lines before the terminating blank line)", 0)
    if code == _E_VOTE:
        line, kind, first, first_kind = v[:4]
        fail(f"line looks like a Kaldi {_KIND_NAMES[kind]} line but earlier lines (line {(first_line or 0) + first}) "
             f"look like {_KIND_NAMES[first_kind]} lines", line)
    line, kind = v[0], _KIND_NAMES[v[1]]
    if code == _E_STATE:
        fail(bad_integer("state id", *v[2:5]), line)
    if code == _E_BADLINE:
        why = f" ({bad_integer(_FIELDS[v[2]], *v[3:6])})" if v[2] else ""
        cols = lines[line].decode("utf-8", "replace").split()
        fail(f"bad Kaldi {kind} line {' '.join(cols)[:200]!r}{why}: expected {_WANT[kind]} (numbers, no NaN)", line)
    if code == _E_TWO_FINALS:
        fail(f"state {v[2]} has two final weights", line)
    if code == _E_INF_ARC:
        fail("arc weight is infinite (Zero); arcs must have finite weights", line)
    if code == _E_BIG_STATE:
        text = str(v[2])  # the first line that has it in its first two columns, spelled that way
        first = next((i for i, x in enumerate(lines) if text in x.decode("utf-8", "replace").split()[:2]), None)
        fail(f"state id {text} is implausibly large for a lattice of {v[3]} lines", first)
    raise AssertionError(f"unknown error report {err!r} from the Kaldi text kernel")
