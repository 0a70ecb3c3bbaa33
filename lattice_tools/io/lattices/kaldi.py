"""Kaldi lattice archives: rspecifiers/wspecifiers, text and binary ``Lattice`` / ``CompactLattice``.

Formats (as written by Kaldi's ``LatticeHolder`` / ``CompactLatticeHolder``, ``src/lat/kaldi-lattice.cc``):

* **Archive framing**: ``key`` + one space, then the object.  Lattice holders write *no* ``\\0B``
  binary marker (unlike matrices): a binary object starts directly with the OpenFst magic number
  (first byte ``\\xd6``), a text object starts with a newline.  (We also accept a stray ``\\0B``.)
* **Text**: OpenFst text lines, then one empty line.  ``Lattice`` (transducer):
  ``src dst ilabel olabel graph,acoustic`` and finals ``state graph,acoustic``.  ``CompactLattice``
  (acceptor): ``src dst word graph,acoustic,tid_tid_...`` and finals ``state graph,acoustic,tids``.
  A weight equal to One is omitted by OpenFst's printer (``src dst word`` / ``state``).  As in
  Kaldi's ``LatticeReader::ReadText``, the type is inferred from the columns.
* **Binary**: an OpenFst ``FstHeader`` (int32 magic 2125659606, string fst type ``vector``,
  string arc type ``lattice4`` / ``compactlattice44`` (float) or ``lattice8`` /
  ``compactlattice84`` (double), int32 version, int32 flags, uint64 properties, int64 start,
  int64 #states, int64 #arcs) followed, per state, by the final weight, an int64 arc count and
  the arcs (int32 ilabel, int32 olabel, weight, int32 nextstate).  ``LatticeWeight`` = two
  floats (graph, acoustic); ``CompactLatticeWeight`` = a LatticeWeight, an int32 length and that
  many int32 transition ids.  Arc type ``standard`` (tropical, one float: read as a graph cost)
  is accepted too, so archives of Kaldi ``VectorFst`` objects load as well.

Hub conversion:

* ``Lattice`` (frame level, ilabel = transition id) -> ``word_aligned=False``; each arc with a
  non-zero ilabel spans one frame; frames are accumulated along paths (every path must reach a
  state at the same frame, which holds for Kaldi lattices; otherwise LatticeError).
* ``CompactLattice`` -> ``word_aligned=True``; an arc spans ``len(tids)`` frames; the tid strings
  are kept per arc as ``lat.attrs["tid_span"]`` (int64 ``[start, end)``) into ``lat.attrs["tid_pool"]``
  (the lattice's int32 array of all of them): :func:`transition_ids` lists them.  A final weight with a
  non-empty tid string becomes an epsilon arc to a new final state carrying the final costs
  and tids, so times and totals are preserved.
* ``CompactLattice`` -> ``lat.attrs["kaldi"]`` (int64, one row per arc): the arc's position in the
  archive (-1 for the final-string arcs above), its stored source and destination state, and
  whether Kaldi considers the stored numbering topologically sorted (text: every arc goes to a
  higher state; binary: the header's ``kTopSorted`` bit).  Algorithms whose result depends on
  Kaldi's order of states (best paths, MBR / sausages: ``lattice_tools.algorithms.kaldi_order``) use it.
* Writing a word-aligned lattice as CompactLattice uses its tid strings when present; otherwise
  the durations are written as ``t1 - t0`` copies of ``placeholder_tid`` (default 1) -- only the
  *length* of those strings is meaningful (times), not the ids.  Document this when you hand such
  lattices to Kaldi tools that interpret transition ids (e.g. ``lattice-align-words``).

Specifiers: ``ark:``, ``scp:``, with options (``t``, ``b``, ``s``, ``cs``, ``o``, ``p``, ``f``,
``nf``, ...) as in ``ark,t:`` / ``ark,s,cs:``; ``ark,scp:a.ark,a.scp`` when writing.  Paths may be
``-`` (stdin/stdout), plain or ``.gz`` files (gzip detected by magic bytes), or the pipes
``gunzip -c F |`` / ``gzip -cd F |`` / ``zcat F |`` (read with Python's gzip -- no shell is ever
run) and ``| gzip -c > F`` for writing.  Any other pipe raises FormatError.
"""
from __future__ import annotations

import gzip
import math
import os
import re
import struct
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, NamedTuple

import numpy as np

from ..._ext import native
from ...core._budget import bytes_left, check_allocation, check_memory
from ...core.errors import FormatError, LatticeError, MismatchError
from ...core.files import atomic_write, open_binary_input
from ...core.lattice import Lattice
from ...core.symbols import SymbolTable
from ._kaldi_lattice import TRANSITION_ID_ATTRS as TRANSITION_ID_ATTRS  # (public: part of this module's API)
from ._kaldi_lattice import lattice_to_raw, raw_to_lattice
from ._kaldi_lattice import transition_ids as transition_ids  # (public: part of this module's API)
from ._kaldi_text import RawFst, format_text_fst, parse_text_block

FST_MAGIC = 2125659606
_MAGIC_BYTES = struct.pack("<i", FST_MAGIC)
_READ_OPTIONS = {"o", "no", "s", "ns", "cs", "ncs", "p", "np", "t", "b", "bg"}
_WRITE_OPTIONS = {"t", "b", "f", "nf", "p", "np"}

# arc type -> (kind, float size)
_ARC_TYPES = {"lattice4": ("lattice", 4), "lattice8": ("lattice", 8), "compactlattice44": ("compact", 4),
              "compactlattice84": ("compact", 8), "standard": ("standard", 4)}


# ----------------------------------------------------------------------------------------------
# specifiers
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Specifier:
    """A parsed Kaldi rspecifier / wspecifier."""

    kind: str  # "ark", "scp" or "ark,scp"
    options: frozenset
    path: str  # file path, "-" or a decoded gzip pipe target
    gzip_pipe: bool = False
    scp_path: str | None = None  # for "ark,scp:" wspecifiers

    @property
    def text(self) -> bool:
        return "t" in self.options


_GUNZIP = re.compile(r"^\s*(?:gunzip\s+-c|gzip\s+-(?:cd|dc)|zcat)\s+(\S+)\s*\|\s*$")
_GZIP_OUT = re.compile(r"^\s*\|\s*gzip\s+-c\s*>\s*(\S+)\s*$")


def parse_specifier(spec: str, write: bool = False) -> Specifier:
    """Parse ``ark[,opts]:path`` / ``scp[,opts]:path`` / ``ark,scp[,opts]:ark_path,scp_path``."""
    spec = str(spec)
    if ":" not in spec:
        raise FormatError(f"not a Kaldi {'w' if write else 'r'}specifier (expected 'ark:...' or 'scp:...'): {spec!r}")
    head, _, path = spec.partition(":")
    parts = [p.strip() for p in head.split(",") if p.strip()]
    kinds = [p for p in parts if p in ("ark", "scp")]
    opts = frozenset(p for p in parts if p not in ("ark", "scp"))
    allowed = _WRITE_OPTIONS if write else _READ_OPTIONS
    bad = sorted(opts - allowed)
    if bad:
        raise FormatError(f"unknown option(s) {','.join(bad)} in {'w' if write else 'r'}specifier {spec!r}")
    if kinds == ["ark"] or kinds == ["scp"]:
        kind = kinds[0]
    elif write and kinds == ["ark", "scp"]:
        kind = "ark,scp"
    else:
        raise FormatError(f"specifier {spec!r} must start with 'ark' or 'scp'" + (" (or 'ark,scp')" if write else ""))
    scp_path = None
    if kind == "ark,scp":
        if "," not in path:
            raise FormatError(f"'ark,scp:' needs two paths 'ark_path,scp_path': {spec!r}")
        path, scp_path = path.split(",", 1)
    path = path.strip()
    gz = False
    if "|" in path:
        m = (_GZIP_OUT if write else _GUNZIP).match(path)
        if not m:
            raise FormatError(f"unsupported pipe in {spec!r}: only '{'| gzip -c > F' if write else 'gunzip -c F |'}' "
                              "is understood (no shell commands are run)")
        path, gz = m.group(1), True
    if not path:
        raise FormatError(f"empty path in specifier {spec!r}")
    return Specifier(kind, opts, path, gz, scp_path)


# ----------------------------------------------------------------------------------------------
# a small buffered byte reader (peek / exact reads / lines) over any binary stream
# ----------------------------------------------------------------------------------------------
class _Reader:
    # The buffer is a bytearray: appending a chunk and dropping what was consumed (from the front,
    # which CPython does in O(1)) copy nothing, and a text block goes to the parser as a view of it.
    def __init__(self, f: IO[bytes], name: str):
        self.f, self.name = f, name
        self.buf = bytearray()
        self.pos = 0
        self.offset = 0  # absolute offset of buf[0]
        self.lineno = 1

    def _fill(self, n: int) -> bool:
        while len(self.buf) - self.pos < n:
            try:
                # bounded chunks: a corrupt length field must not allocate gigabytes before EOF
                chunk = self.f.read(min(max(1 << 20, n - (len(self.buf) - self.pos)), 1 << 24))
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise FormatError(f"truncated or corrupt gzip data ({exc})", path=self.name) from None
            if not chunk:
                return False
            self.offset += self.pos
            del self.buf[:self.pos]
            self.buf += chunk
            self.pos = 0
        return True

    def tell(self) -> int:
        return self.offset + self.pos

    def peek(self, n: int = 1) -> bytearray:
        self._fill(n)
        return self.buf[self.pos:self.pos + n]

    def read(self, n: int, what: str, key: str | None) -> bytearray:
        if not self._fill(n):
            raise FormatError(f"truncated archive: end of file reading {what} (byte {self.tell()})", path=self.name,
                              key=key)
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def readline(self) -> bytearray | None:
        while True:
            i = self.buf.find(b"\n", self.pos)
            if i >= 0:
                line = self.buf[self.pos:i]
                self.pos = i + 1
                self.lineno += 1
                return line
            if not self._fill(len(self.buf) - self.pos + 1):
                if self.pos < len(self.buf):
                    line = self.buf[self.pos:]
                    self.pos = len(self.buf)
                    return line
                return None

    _BLANK_LINE = re.compile(rb"\n[ \t\r]*\n")
    _FIRST_LINE = re.compile(rb"[ \t\r]*(\n|[^ \t\r])")

    def read_text_block(self) -> tuple[memoryview, bool]:
        """The bytes up to (not including) the next blank line, which is consumed; ``(block, True)``
        if a blank line was found, else the rest of the input and ``False``.  Line numbers advance.
        The block is a view of the buffer: release it (drop it) before reading on."""
        while True:  # an empty block: the first line is blank
            m = self._FIRST_LINE.match(self.buf, self.pos)
            if m is not None or not self._fill(len(self.buf) - self.pos + 1):
                break
        if m is not None and m.group(1) == b"\n":
            self.pos = m.end()
            self.lineno += 1
            return memoryview(self.buf)[self.pos:self.pos], True
        searched = self.pos  # no blank line starts before this (a match starts at a newline)
        while True:
            m = self._BLANK_LINE.search(self.buf, searched)
            if m is not None:
                start, end, self.pos = self.pos, m.start(), m.end()
                self.lineno += self.buf.count(b"\n", start, end) + 2
                return memoryview(self.buf)[start:end], True
            have = len(self.buf) - self.pos
            searched = max(self.pos, self.buf.rfind(b"\n", self.pos)) - self.pos
            self._fill(have + max(have, 1 << 20))  # doubling: a long block is read in O(log) steps
            searched += self.pos
            if len(self.buf) - self.pos == have:  # end of input
                start, self.pos = self.pos, len(self.buf)
                self.lineno += self.buf.count(b"\n", start)
                return memoryview(self.buf)[start:], False

    def skip_whitespace(self) -> None:
        while True:
            c = self.peek(1)
            if not c or not c.isspace():
                return
            if c == b"\n":
                self.lineno += 1
            self.pos += 1

    def read_token(self) -> bytes:
        """The bytes up to the next whitespace (a key): refused past :data:`MAX_TOKEN_BYTES` or at a NUL
        byte (``ark:/dev/zero``, a binary file where a key should be), which no key holds."""
        while True:
            m = _SPACE.search(self.buf, self.pos)
            end = m.start() if m is not None else len(self.buf)
            if b"\0" in self.buf[self.pos:end]:
                raise FormatError(f"binary data (a NUL byte) where a key should be (byte {self.tell()}); not a "
                                  "Kaldi archive?", path=self.name)
            if end - self.pos > MAX_TOKEN_BYTES:
                raise FormatError(f"a key longer than {MAX_TOKEN_BYTES} bytes (byte {self.tell()}); not a Kaldi "
                                  "archive?", path=self.name)
            if m is not None or not self._fill(end - self.pos + 1):
                token = bytes(self.buf[self.pos:end])
                self.pos = end
                return token


#: The longest key of an archive (Kaldi keys are utterance ids: tens of bytes).
MAX_TOKEN_BYTES = 1 << 16
_SPACE = re.compile(rb"[ \t\n\r\v\f]")


def _read_string(r: _Reader, key) -> str:
    (n,) = struct.unpack("<i", r.read(4, "FST header string length", key))
    if not 0 <= n <= 256:
        raise FormatError(f"corrupt FST header (string length {n}) at byte {r.tell() - 4}", path=r.name, key=key)
    return r.read(n, "FST header string", key).decode("latin-1")




#: Arcs read between two checks of the memory budget (a few megabytes of arrays and lists at most).
_CHECK_EVERY_ARCS = 8192
#: What parsing a text lattice allocates per byte of its text at its peak, with room to spare.
_TEXT_PARSE_BYTES_PER_BYTE = 12




def read_binary_fst(r: _Reader, key: str | None, compact: CompiledReader | None = None) -> RawFst | tuple:
    """Read one OpenFst binary ``vector`` FST of a lattice arc type from the reader.  ``compact``: a compiled
    reader of CompactLattice bodies (see :func:`read_kaldi_lattices`); what it made of a CompactLattice is
    returned (a tuple) in place of the RawFst, unless it leaves the lattice to this reader."""
    at = r.tell()
    (magic,) = struct.unpack("<i", r.read(4, "FST magic number", key))
    if magic != FST_MAGIC:
        raise FormatError(f"bad FST magic number {magic} at byte {at} (expected {FST_MAGIC})", path=r.name, key=key)
    fst_type = _read_string(r, key)
    arc_type = _read_string(r, key)
    if fst_type != "vector":
        raise FormatError(f"FST type {fst_type!r} is not supported (only 'vector', as Kaldi writes)", path=r.name, key=key)
    if arc_type not in _ARC_TYPES:
        raise FormatError(f"arc type {arc_type!r} is not a Kaldi lattice type (expected one of "
                          f"{', '.join(_ARC_TYPES)})", path=r.name, key=key)
    kind, fsize = _ARC_TYPES[arc_type]
    reading = f"reading the lattice {key!r} of {r.name}" if key else f"reading {r.name}"  # what a budget refusal names
    version, flags, props, start, num_states, _num_arcs = struct.unpack("<iiQqqq", r.read(40, "FST header", key))
    if flags & 3:
        raise FormatError("FSTs with embedded symbol tables are not supported", path=r.name, key=key)
    if num_states < 0:
        raise FormatError("FST header has an unknown number of states (stream-written FST); not supported",
                          path=r.name, key=key)
    if num_states >= 1 << 31:
        raise FormatError(f"corrupt FST header ({num_states} states)", path=r.name, key=key)
    if kind == "compact" and compact is not None:
        made = _compiled_compact_body(r, compact.body, start, num_states, fsize)
        if made is not None:  # (what it allocated is freed: the readers' callers check the budget per lattice)
            return made
    if kind == "compact":
        raw = _read_compact_body(r, key, start, num_states, fsize, props)
        # the compiled parse allocated the arrays of the whole body: the budget in force, if any, now
        check_memory(reading, key, advice="")
        _check_raw(raw, r, key)
        return raw
    ff = "f" if fsize == 4 else "d"
    nw = 1 if kind == "standard" else 2
    wfmt = "<" + ff * nw
    wsize = struct.calcsize(wfmt)
    # Lists, not arrays of num_states: a corrupt count then fails at end of file, not in malloc.
    fw1: list[float] = []
    fw2: list[float] = []
    srcs, dsts, ils, ols, w1s, w2s = [], [], [], [], [], []
    arc_dtype = np.dtype([("il", "<i4"), ("ol", "<i4")] + [(f"w{i}", "<" + ff + str(fsize)) for i in range(nw)]
                         + [("ns", "<i4")])
    read_since_check = 0
    for s in range(num_states):
        if read_since_check >= _CHECK_EVERY_ARCS:  # the memory budget in force (--max-memory), if any
            check_memory(reading, key, advice="")
            read_since_check = 0
        w = struct.unpack(wfmt, r.read(wsize, f"final weight of state {s}", key))
        if not math.isinf(w[0]):
            fw1.append(w[0])
            fw2.append(w[1] if nw == 2 else 0.0)
        else:
            fw1.append(math.inf)
            fw2.append(math.inf)
        (narcs,) = struct.unpack("<q", r.read(8, f"arc count of state {s}", key))
        if not 0 <= narcs < 1 << 31:
            raise FormatError(f"corrupt arc count {narcs} at state {s}", path=r.name, key=key)
        read_since_check += narcs + 1
        a = np.frombuffer(r.read(narcs * arc_dtype.itemsize, f"arcs of state {s}", key), dtype=arc_dtype)
        srcs.append(np.full(narcs, s, np.int64))
        dsts.append(a["ns"].astype(np.int64))
        ils.append(a["il"].astype(np.int64))
        ols.append(a["ol"].astype(np.int64))
        w1s.append(a["w0"].astype(np.float64))
        w2s.append(a["w1"].astype(np.float64) if nw == 2 else np.zeros(narcs))
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
    final1, final2 = np.array(fw1, np.float64), np.array(fw2, np.float64)
    raw = RawFst(kind, start, num_states, cat(srcs, np.int64), cat(dsts, np.int64), cat(ils, np.int64),
                 cat(ols, np.int64), cat(w1s, np.float64), cat(w2s, np.float64), final1, final2, props=props)
    _check_raw(raw, r, key)
    return raw


#: what the compiled parse of a CompactLattice was reading when the input ended (its ``what`` codes)
_SHORT_READS = ("final weight of state {}", "final string of state {}", "arc count of state {}", "arc of state {}")


_CORRUPT_LENGTHS = ("corrupt string length {1} at state {0}", "corrupt arc count {1} at state {0}",
                    "corrupt string length {1} in an arc of state {0}")


def _limit() -> int:
    """What a compiled reader may allocate: what the memory budget leaves (-1: no budget)."""
    left = bytes_left()
    return -1 if left is None else left


def _compiled_compact_body(r: _Reader, body: Callable, start: int, num_states: int, fsize: int) -> tuple | None:
    """``body(buf, pos, num_states, fsize, start)`` (:class:`CompiledReader`) on the body of a binary CompactLattice
    at the reader's position, the buffer growing (doubling) until the body is in it: its result (the reader moved
    past the body), or None -- the reader left where it was -- for a lattice it leaves to
    :func:`_read_compact_body` (which reports what is wrong with it, the truncation of the archive included)."""
    while True:
        res = body(r.buf, r.pos, num_states, fsize, start, _limit())
        if res[0] == 0:
            r.pos += res[1]
            return res[2]
        if res[0] != 1:
            return None
        have = len(r.buf) - r.pos
        if not r._fill(have + max(have, 1 << 20)):
            return None


def _read_compact_body(r: _Reader, key: str | None, start: int, num_states: int, fsize: int, props: int) -> RawFst:
    """The states and arcs of a binary CompactLattice, parsed in C (``lattice_tools/_ext/kaldi_binary.c``) from
    the reader's buffer, which grows (doubling) until the FST is in it; the errors of the reads one by one."""
    parse = native("kaldi_binary").compact_body
    at_end = False
    while True:
        res = parse(r.buf, r.pos, num_states, fsize)
        if res[0] == 0:
            break
        if res[0] == 2:
            raise FormatError(_CORRUPT_LENGTHS[res[2]].format(res[1], res[3]), path=r.name, key=key)
        if at_end:
            _, state, what, at = res
            raise FormatError(f"truncated archive: end of file reading {_SHORT_READS[what].format(state)} "
                              f"(byte {r.tell() + at})", path=r.name, key=key)
        have = len(r.buf) - r.pos
        at_end = not r._fill(have + max(have, 1 << 20))
    (_, consumed, fw1, fw2, finals, src, dst, il, ol, w1, w2, tids, offsets) = res
    r.pos += consumed
    ints = (lambda b: np.frombuffer(b, np.int64).copy())  # noqa: E731  (writable, as the arrays read before)
    reals = (lambda b: np.frombuffer(b, np.float64).copy())  # noqa: E731
    raw = RawFst("compact", start, num_states, ints(src), ints(dst), ints(il), ints(ol), reals(w1), reals(w2),
                 reals(fw1), reals(fw2), final_strings={s: np.frombuffer(t, "<i4").astype(np.int32) for s, t in finals},
                 props=props)
    raw.tids = np.frombuffer(tids, "<i4").astype(np.int32)
    raw.tid_offsets = ints(offsets)
    return raw


def _check_raw(raw: RawFst, r: _Reader, key: str | None) -> None:
    """What every binary lattice must satisfy: finite arc weights, no NaN final weight, states in range."""
    num_states, start = raw.num_states, raw.start
    for name in ("w1", "w2"):
        arr = getattr(raw, name)
        if not np.all(np.isfinite(arr)):
            raise FormatError("arc with a non-finite weight (NaN or Zero)", path=r.name, key=key)
    if np.isnan(raw.final_w1).any() or np.isnan(raw.final_w2).any():
        raise FormatError("NaN final weight", path=r.name, key=key)
    if len(raw.dst) and (raw.dst.min() < 0 or raw.dst.max() >= num_states):
        raise FormatError(f"arc to state {raw.dst.max()} outside 0..{num_states - 1}", path=r.name, key=key)
    if num_states and not 0 <= start < num_states:
        raise FormatError(f"start state {start} outside 0..{num_states - 1}", path=r.name, key=key)


def _read_object(r: _Reader, key: str | None, lattice_type: str, compact: CompiledReader | None = None
                 ) -> RawFst | tuple:
    """Read one lattice (text or binary, detected as Kaldi does) from the reader's position (``compact``: see
    :func:`read_binary_fst`)."""
    c = r.peek(2)
    if c == b"\0B":
        r.read(2, "binary marker", key)
        c = r.peek(2)
    if not c:
        raise FormatError("unexpected end of file: expected a lattice", path=r.name, key=key)
    if c[:1] == _MAGIC_BYTES[:1]:
        raw = read_binary_fst(r, key, compact if lattice_type in ("auto", "compact") else None)
        if isinstance(raw, tuple):
            return raw
    elif c[:1].isspace():
        # text: rest of the key line, then lines up to an empty line
        while r.peek(1) in (b" ", b"\t", b"\r"):
            r.pos += 1
        if r.peek(1) != b"\n":
            raise FormatError("expected a newline after the key of a text lattice", path=r.name, line=r.lineno, key=key)
        r.readline()
        start_line = r.lineno
        block, terminated = r.read_text_block()
        # under a memory budget (--max-memory) a text lattice whose parse cannot fit is refused before it is
        # parsed (measured: ~9 bytes per byte of its text at the peak, the lattice built included)
        check_allocation(_TEXT_PARSE_BYTES_PER_BYTE * len(block), f"parsing the text lattice {key!r} at line "
                         f"{start_line} of {r.name} ({len(block):,} bytes)" if key else
                         f"parsing the text lattice at line {start_line} of {r.name}", key=key)
        with block:  # (released even on an error, so the reader's buffer can grow again)
            if terminated:
                return parse_text_block(block, start_line, r.name, key, lattice_type)
            # Kaldi ends every text lattice with an empty line; without it the archive was cut, and a cut
            # at a line boundary (or inside a weight) would otherwise read as a smaller lattice
            try:
                parse_text_block(block, start_line, r.name, key, lattice_type)
            except FormatError as exc:
                raise FormatError(f"truncated archive (the file ends inside this lattice): {exc.message}",
                                  path=r.name, line=exc.line, key=key) from None
            raise FormatError(f"truncated archive: the text lattice that starts at line {start_line} has no empty "
                              "line after it (Kaldi ends every text lattice with one; add it if the file is complete)",
                              path=r.name, line=r.lineno, key=key)
    else:
        raise FormatError(f"does not look like a lattice (neither text nor OpenFst binary) at byte {r.tell()}",
                          path=r.name, line=r.lineno, key=key)
    if lattice_type != "auto" and raw.kind != lattice_type and raw.kind != "standard":
        raise FormatError(f"expected a Kaldi {lattice_type} but the archive holds a {raw.kind}", path=r.name, key=key)
    return raw


def _open_input(path: str, gz_pipe: bool) -> IO[bytes]:
    f = open_binary_input(path)
    if gz_pipe and not isinstance(f, gzip.GzipFile):
        raise FormatError("'gunzip -c' pipe on a file that is not gzip-compressed", path=path)
    return f


def iter_archive_raw(path: str, *, gz_pipe: bool = False, lattice_type: str = "auto",
                     compact: CompiledReader | None = None) -> Iterator[tuple[str, RawFst | tuple]]:
    """Yield ``(key, RawFst)`` from a Kaldi archive, one object at a time (``compact``: see
    :func:`read_kaldi_lattices`; its results come as tuples in place of RawFst objects)."""
    f = _open_input(path, gz_pipe)
    if lattice_type not in ("auto", "compact"):
        compact = None
    try:
        r = _Reader(f, path)
        seen: set[str] = set()
        while True:
            if compact is not None:  # the usual records, as many as the buffer holds, in one compiled call each
                yield from _compiled_records(r, compact, seen)
            r.skip_whitespace()
            if not r.peek(1):
                return
            line_of_key = r.lineno
            tok = r.read_token()
            try:
                key = tok.decode("utf-8")
            except UnicodeDecodeError:
                raise FormatError(f"archive key is not valid text at byte {r.tell()}", path=path) from None
            if key in seen:
                raise MismatchError(f"duplicate key {key!r} in archive", path=path, line=line_of_key, key=key)
            seen.add(key)
            c = r.peek(1)
            if c in (b" ", b"\t"):
                r.pos += 1
            elif c != b"\n":
                raise FormatError(f"expected a space after key {key!r}", path=path, line=line_of_key, key=key)
            yield key, _read_object(r, key, lattice_type, compact)
    finally:
        if f is not sys.stdin.buffer:
            f.close()


def _compiled_records(r: _Reader, compact: CompiledReader, seen: set) -> Iterator[tuple[str, tuple]]:
    """``compact.records`` on the archive from the reader's position, the buffer refilled (1 MB more, or
    doubled) until it stops at a record it leaves to the reader, or the input ends: ``(key, result)`` of each
    record it took, keys checked for repeats as the reader checks them; the reader is left at the next record."""
    at_end = False
    while True:
        stopped, consumed, records = compact.records(r.buf, r.pos, _limit())
        line = r.lineno
        for key_bytes, newlines, value in records:
            line += newlines
            key = key_bytes.decode("ascii")
            if key in seen:
                raise MismatchError(f"duplicate key {key!r} in archive", path=r.name, line=line, key=key)
            seen.add(key)
            yield key, value
        r.pos += consumed
        r.lineno = line
        if stopped or at_end:
            return
        have = len(r.buf) - r.pos
        at_end = not r._fill(have + max(have, 1 << 20))


def _skip_to(f: IO[bytes], offset: int, target: str, path: str, lineno: int, key: str) -> None:
    """Position ``f`` at byte ``offset`` of ``target`` (an scp ``file:offset``), or FormatError
    naming the scp line when the offset is past the end (a seek there would "succeed" and the
    lattice would then look empty, or fail with a bare "Invalid argument" from the OS)."""
    if isinstance(f, gzip.GzipFile):
        remaining = offset
        try:
            while remaining:
                chunk = f.read(min(remaining, 1 << 20))  # bounded: the offset is not trusted
                if not chunk:
                    break
                remaining -= len(chunk)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise FormatError(f"truncated or corrupt gzip data ({exc})", path=target, key=key) from None
        if remaining:
            raise FormatError(f"offset {offset} is past the end of {target!r} ({offset - remaining} bytes "
                              "uncompressed)", path=path, line=lineno, key=key)
        return
    size = os.fstat(f.fileno()).st_size
    if offset >= size:
        raise FormatError(f"offset {offset} is past the end of {target!r} ({size} bytes)", path=path, line=lineno,
                          key=key)
    f.seek(offset)


def _iter_scp(path: str, lattice_type: str, compact: CompiledReader | None = None
              ) -> Iterator[tuple[str, RawFst | tuple]]:
    from ...core.files import read_text_lines

    seen = set()
    for lineno, line in read_text_lines(path):
        if not line.strip():
            continue
        parts = line.split(None, 1)
        if len(parts) != 2:
            raise FormatError("expected 'key rxfilename'", path=path, line=lineno)
        key, target = parts[0], parts[1].strip()
        if key in seen:
            raise MismatchError(f"duplicate key {key!r} in script file", path=path, line=lineno, key=key)
        seen.add(key)
        if target.endswith("]"):
            raise FormatError("range specifiers '[...]' are not supported", path=path, line=lineno, key=key)
        offset = None
        m = re.match(r"^(.*):([0-9]+)$", target)
        if m and not os.path.exists(target):
            target, offset = m.group(1), int(m.group(2))
        gz = False
        if "|" in target:
            m2 = _GUNZIP.match(target)
            if not m2:
                raise FormatError(f"unsupported pipe {target!r} (only 'gunzip -c F |')", path=path, line=lineno, key=key)
            target, gz = m2.group(1), True
        if not os.path.exists(target):
            raise FormatError(f"file {target!r} does not exist", path=path, line=lineno, key=key)
        f = _open_input(target, gz)
        try:
            if offset is not None:
                _skip_to(f, offset, target, path, lineno, key)
            r = _Reader(f, target)
            c = r.peek(1)
            if c and c[:1].isspace():
                raw = _read_object(r, key, lattice_type)
            elif c == _MAGIC_BYTES[:1] or r.peek(2) == b"\0B":
                raw = _read_object(r, key, lattice_type, compact)
            else:
                # a whole file holding "key lattice" is not Kaldi's convention; a text FST file is
                first, lines = r.lineno, []
                while True:
                    line2 = r.readline()
                    if line2 is None or not line2.strip():
                        break
                    lines.append(line2)
                raw = parse_text_block(b"\n".join(lines), first if lines else None, target, key, lattice_type,
                                       errors="replace")
        finally:
            f.close()
        yield key, raw


def iter_raw(spec: str, lattice_type: str = "auto", compact: CompiledReader | None = None
             ) -> Iterator[tuple[str, RawFst | tuple]]:
    """Yield ``(key, RawFst)`` for an rspecifier (``compact``: see :func:`read_binary_fst`)."""
    sp = parse_specifier(spec)
    if sp.kind == "ark":
        yield from iter_archive_raw(sp.path, gz_pipe=sp.gzip_pipe, lattice_type=lattice_type, compact=compact)
    else:
        yield from _iter_scp(sp.path, lattice_type, compact)


# ----------------------------------------------------------------------------------------------
# writing
# ----------------------------------------------------------------------------------------------
def format_binary_fst(raw: RawFst, double: bool = False) -> bytes:
    """OpenFst binary ``vector`` FST of arc type lattice4/compactlattice44 (or the 8-byte forms)."""
    ff = "d" if double else "f"
    arc_type = ("compactlattice8" if double else "compactlattice4") + "4" if raw.kind == "compact" else \
        ("lattice8" if double else "lattice4")
    parts = [struct.pack("<i", FST_MAGIC)]
    for name in ("vector", arc_type):
        text = name.encode()
        parts.append(struct.pack("<i", len(text)) + text)
    # version 2 (VectorFst), no flags, properties = kExpanded|kMutable (nothing else claimed)
    parts.append(struct.pack("<iiQqqq", 2, 0, 3, 0, raw.num_states, len(raw.src)))
    order = np.argsort(raw.src, kind="stable")
    offsets = np.searchsorted(raw.src[order], np.arange(raw.num_states + 1))
    if raw.kind == "compact":  # one pass in numpy (tests/_reference/kaldi_binary_writer.py: the same bytes)
        parts.append(_compact_body(raw, order, offsets, double))
        return b"".join(parts)
    inf = float("inf")
    arc_dtype = np.dtype([("il", "<i4"), ("ol", "<i4"), ("g", "<" + ff), ("a", "<" + ff), ("ns", "<i4")])
    arcs = np.zeros(len(order), dtype=arc_dtype)
    arcs["il"] = raw.ilabel[order]
    arcs["ol"] = raw.olabel[order]
    arcs["g"] = raw.w1[order]
    arcs["a"] = raw.w2[order]
    arcs["ns"] = raw.dst[order]
    wfmt = struct.Struct("<" + ff + ff)
    for s in range(raw.num_states):
        fin = np.isfinite(raw.final_w1[s])
        parts.append(wfmt.pack(raw.final_w1[s], raw.final_w2[s]) if fin else wfmt.pack(inf, inf))
        lo, hi = offsets[s], offsets[s + 1]
        parts.append(struct.pack("<q", hi - lo))
        parts.append(arcs[lo:hi].tobytes())
    return b"".join(parts)


def _halves(values: np.ndarray, double: bool) -> np.ndarray:
    """Weights as the 32-bit words of their little-endian float32 (one column) or float64 (two) form; a
    finite value beyond float32's range raises struct's OverflowError (what packing it one by one did)."""
    values = np.asarray(values, np.float64)
    if double:
        return values.astype("<f8").view("<i4").reshape(-1, 2)
    with np.errstate(over="ignore"):
        single = values.astype("<f4")
    if (np.isinf(single) & np.isfinite(values)).any():
        raise OverflowError("float too large to pack with f format")
    return single.view("<i4").reshape(-1, 1)


def _compact_body(raw: RawFst, order: np.ndarray, offsets: np.ndarray, double: bool) -> bytes:
    """The states and arcs of a CompactLattice in OpenFst's binary layout, built as one array of 32-bit
    words: per state its final weight (inf, inf when not final), its final tid string (length, tids), its
    arc count (int64), then per arc (by source state, stable) olabel, olabel, weight, string length,
    tids, next state."""
    wsz = 2 if double else 1
    n = raw.num_states
    fin = np.isfinite(np.asarray(raw.final_w1, np.float64))
    final_strings = [np.zeros(0, np.int32)] * n
    for st, t in raw.final_strings.items():
        if fin[st] and t is not None:
            final_strings[st] = np.asarray(t, "<i4")
    final_len = np.fromiter((len(t) for t in final_strings), np.int64, count=n)
    counts = np.diff(offsets).astype(np.int64)
    assert raw.tid_offsets is not None and raw.tids is not None, "a CompactLattice has its strings"
    lengths = (raw.tid_offsets[1:] - raw.tid_offsets[:-1])[order].astype(np.int64)
    arc_words = 4 + 2 * wsz + lengths
    head_words = 2 * wsz + 1 + final_len + 2
    # each state's block: its header, then its arcs
    arc_cum = np.zeros(len(order) + 1, np.int64)
    np.cumsum(arc_words, out=arc_cum[1:])
    block = head_words + (arc_cum[offsets[1:]] - arc_cum[offsets[:-1]])
    state_pos = np.zeros(n + 1, np.int64)
    np.cumsum(block, out=state_pos[1:])
    out = np.zeros(int(state_pos[-1]), "<i4")
    pos = state_pos[:-1]
    w1 = np.where(fin, raw.final_w1, np.inf)
    w2 = np.where(fin, raw.final_w2, np.inf)
    h1, h2 = _halves(w1, double), _halves(w2, double)
    for k in range(wsz):
        out[pos + k] = h1[:, k]
        out[pos + wsz + k] = h2[:, k]
    out[pos + 2 * wsz] = final_len
    for st in np.flatnonzero(final_len):
        p = int(pos[st]) + 2 * wsz + 1
        out[p:p + final_len[st]] = final_strings[st]
    count_at = pos + 2 * wsz + 1 + final_len
    halves = counts.astype("<i8").view("<i4").reshape(-1, 2)
    out[count_at] = halves[:, 0]
    out[count_at + 1] = halves[:, 1]
    if len(order):
        # an arc's position: its state's arcs start after the header; arcs of a state are consecutive
        state_of = np.repeat(np.arange(n), counts)
        arc_pos = pos[state_of] + head_words[state_of] + arc_cum[:-1] - arc_cum[offsets[:-1]][state_of]
        ol = raw.olabel[order].astype(np.int64)
        out[arc_pos] = ol
        out[arc_pos + 1] = ol
        a1, a2 = _halves(raw.w1[order], double), _halves(raw.w2[order], double)
        for k in range(wsz):
            out[arc_pos + 2 + k] = a1[:, k]
            out[arc_pos + 2 + wsz + k] = a2[:, k]
        out[arc_pos + 2 + 2 * wsz] = lengths
        total = int(lengths.sum())
        if total:
            before = np.zeros(len(order), np.int64)
            np.cumsum(lengths[:-1], out=before[1:])
            step = np.arange(total) - np.repeat(before, lengths)
            src_idx = np.repeat(raw.tid_offsets[:-1][order].astype(np.int64), lengths) + step
            dst_idx = np.repeat(arc_pos + 3 + 2 * wsz, lengths) + step
            out[dst_idx] = raw.tids[src_idx]
        out[arc_pos + 3 + 2 * wsz + lengths] = raw.dst[order]
    return out.tobytes()


def format_kaldi_record(lat: Lattice, *, binary: bool, lattice_type: str = "auto", placeholder_tid: int = 1,
                        double: bool = False) -> bytes:
    """The body of ``lat``'s archive record (what follows ``key `` in the archive), binary or text."""
    raw = lattice_to_raw(lat, lattice_type, placeholder_tid)
    return format_binary_fst(raw, double) if binary else ("\n" + format_text_fst(raw) + "\n").encode()


def _format_kaldi_records(binary: bool, lattice_type: str, placeholder_tid: int, double: bool,
                          lattices) -> list[bytes]:
    # one shard's records, on a worker (module level: it is pickled)
    return [format_kaldi_record(lat, binary=binary, lattice_type=lattice_type, placeholder_tid=placeholder_tid,
                                double=double) for lat in lattices]


def write_kaldi_lattices(lattices: Iterable[Lattice], wspecifier: str, *, lattice_type: str = "auto",
                         placeholder_tid: int = 1, double: bool = False, executor=None) -> int:
    """Write lattices to a Kaldi archive (``ark:``, ``ark,t:``, ``ark,scp:A,S``).

    Each lattice's ``key`` is its archive key (must be non-empty, without whitespace, unique).
    Binary unless the ``t`` option is given.  Returns the number of lattices written.  The
    archive is written atomically (temporary file + rename); ``-`` writes to stdout.

    ``executor`` (a ``concurrent.futures`` executor or a ``dask.distributed`` client; None: here): the
    records are formatted on its workers in shards of whole utterances (:mod:`lattice_tools.core.parallel`)
    and written here in input order, so the archive is the same bytes for any number of workers.
    """
    sp = parse_specifier(wspecifier, write=True)
    if sp.kind == "scp":
        raise FormatError(f"cannot write to an 'scp:' wspecifier alone; use 'ark,scp:ark,scp' ({wspecifier!r})")
    binary = not sp.text
    compress = sp.gzip_pipe or sp.path.endswith(".gz")
    if sp.scp_path and (compress or sp.path == "-"):
        raise FormatError("'ark,scp:' needs a plain archive file (byte offsets), not gzip or stdout")
    seen = set()

    def checked():
        for lat in lattices:
            key = lat.key
            if not key or any(c.isspace() for c in key):
                raise LatticeError(f"archive key {key!r} is empty or contains whitespace", key=key or None)
            if key in seen:
                raise MismatchError(f"duplicate key {key!r}", key=key)
            seen.add(key)
            yield lat

    def records():
        if executor is None:
            for lat in checked():
                yield lat.key, format_kaldi_record(lat, binary=binary, lattice_type=lattice_type,
                                                   placeholder_tid=placeholder_tid, double=double)
            return
        from ...core.parallel import run_shards, shard_lattices

        for shard, bodies in run_shards(_format_kaldi_records, shard_lattices(checked()), executor=executor,
                                        args=(binary, lattice_type, placeholder_tid, double)):
            yield from zip(shard.keys, bodies, strict=True)

    count = 0
    scp_lines = []
    with atomic_write(sp.path, "wb", compress=compress) as f:
        pos = 0
        for key, body in records():
            head = (key + " ").encode()
            f.write(head)
            scp_lines.append(f"{key} {sp.path}:{pos + len(head)}\n")
            f.write(body)
            pos += len(head) + len(body)
            count += 1
    if sp.scp_path:
        with atomic_write(sp.scp_path) as g:
            g.writelines(scp_lines)
    return count


class CompiledReader(NamedTuple):
    """A compiled reader of binary CompactLattices (``compact`` of :func:`read_kaldi_lattices`): ``body(buffer,
    position, num_states, float_size, start, limit)`` on the body of one (the bytes after its FST header), returning
    ``(0, bytes consumed, result)``, ``(1, ...)`` when the buffer ends inside the lattice (called again with
    more) or ``(2,)`` to leave the lattice to the reader; ``records(buffer, position, limit)`` on the archive's records
    from ``position`` on, returning ``(stopped, bytes consumed, [(key bytes, newlines before the key, result),
    ...])`` for the records it takes, ``stopped`` true when it stops at a record it leaves to the reader (else
    at the end of the buffer).  ``limit``: the bytes it may allocate (what the memory budget leaves; -1: no
    budget): a lattice that needs more is left to the reader, which refuses it naming it."""

    body: Callable
    records: Callable


@dataclass(frozen=True)
class CompiledRecord:
    """What a compiled reader of CompactLattice bodies (``compact`` of :func:`read_kaldi_lattices`) made of one
    lattice, in place of the lattice: its archive key, the reader's result and the lattices' frame shift."""

    key: str
    value: tuple
    frame_shift: float

    def with_key(self, key: str) -> CompiledRecord:
        return CompiledRecord(key, self.value, self.frame_shift)


def read_kaldi_lattices(rspecifier: str, symbols: SymbolTable | None = None, frame_shift: float = 0.01, *,
                        lattice_type: str = "auto", compact: CompiledReader | None = None
                        ) -> Iterator[Lattice | CompiledRecord]:
    """Read lattices from a Kaldi rspecifier, one utterance at a time.

    Args:
      rspecifier: e.g. ``ark:lat.1.ark``, ``ark,t:-``, ``scp:lat.scp``, ``ark:gunzip -c lat.1.gz |``.
      symbols: ``words.txt`` table; ids not in it raise SymbolError.  ``None``: numeric symbols
        (the word of id 17 is ``"17"``).
      frame_shift: seconds per frame of the hub lattices.
      lattice_type: ``"auto"`` (as stored), ``"lattice"`` or ``"compact"`` (error if different).
      compact: a compiled reader of binary CompactLattices (:class:`CompiledReader`, e.g.
        :func:`lattice_tools.algorithms.kaldi_ops.compact_best_path_reader`, which takes only the lattices this
        reader would keep as they are and leaves the others to it); its results come as
        :class:`CompiledRecord` objects in place of the lattices.
    Yields:
      hub :class:`Lattice` objects with ``key`` = archive key (see module docstring for the
      conversion).  Duplicate keys raise MismatchError.
    """
    sp = parse_specifier(rspecifier)
    name = sp.path
    for key, raw in iter_raw(rspecifier, lattice_type, compact):
        if isinstance(raw, tuple):
            yield CompiledRecord(key, raw, frame_shift)
        else:
            yield raw_to_lattice(raw, key, symbols, frame_shift, name=name)
