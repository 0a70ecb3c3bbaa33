"""OpenFst text format (``fstcompile`` / ``fstprint``) for lattices.

Lines are ``src dst ilabel [olabel] [weight]`` (arcs) and ``state [weight]`` (finals); the source
state of the first line is the start state.  Acceptor lines have one label, transducer lines two
(input label, output label = word).  A weight is either a single cost (tropical/log semiring:
read into ``graph_cost``, ``acoustic_cost = 0``) or a Kaldi pair ``graph,acoustic``.  Labels are
integers, or words when a symbol table is given / words appear in the file (a table is then built
from the words seen, epsilon ``<eps>`` = 0).  OpenFst text has no times: ``t0 = t1 = -1``.

Acceptor vs transducer: 3 columns mean acceptor, 5 transducer; a file whose arc lines all have 4
columns is ambiguous (``src dst label weight`` vs ``src dst ilabel olabel``) -- it is read as an
acceptor when the 4th column is not an integer, else as a transducer.  Pass ``acceptor=`` to
decide explicitly.
"""
from __future__ import annotations

import math
import os
import re

import numpy as np

from ...core._budget import check_memory
from ...core.errors import FormatError, LatticeError, SymbolError
from ...core.files import atomic_write, read_text_lines
from ...core.lattice import Lattice
from ...core.symbols import SymbolTable

# ASCII decimal only: str.isdigit() also takes "²" and "①", which int() rejects, and int() takes
# "٣" and "1_000", which OpenFst does not.  OpenFst's standard arcs store labels and states as int32.
_INT = re.compile(r"-?[0-9]+\Z")
_INT32_MAX = 2 ** 31 - 1


def _is_int(s: str) -> bool:
    return _INT.match(s) is not None


def _int32(s: str, what: str, path: str, lineno: int) -> int:
    """``s`` (an ASCII integer) as a non-negative int32, else FormatError naming the line."""
    x = int(s) if len(s) <= 40 else _INT32_MAX + 1
    if not 0 <= x <= _INT32_MAX:
        raise FormatError(f"{what} {s[:40]} is outside 0..{_INT32_MAX} (OpenFst stores it as int32)",
                          path=path, line=lineno)
    return x


def _weight(s: str, path: str, lineno: int) -> tuple[float, float]:
    parts = s.split(",")
    try:
        if len(parts) == 1:
            g, a = float(parts[0]), 0.0
        elif len(parts) == 2:
            g, a = float(parts[0]), float(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise FormatError(f"weight {s!r} is not a cost or a 'graph,acoustic' pair", path=path, line=lineno) from None
    if math.isnan(g) or math.isnan(a):
        raise FormatError(f"weight {s!r} is NaN", path=path, line=lineno)
    return g, a


#: Lines read between two checks of the memory budget.
_CHECK_EVERY_LINES = 8192


def read_openfst(path: str, symbols: SymbolTable | None = None, *, isymbols: SymbolTable | None = None,
                 acceptor: bool | None = None, frame_shift: float = 0.01, key: str | None = None,
                 word_aligned: bool | None = None) -> Lattice:
    """Read an OpenFst text FST (``fstprint`` output) into a :class:`Lattice`.

    Args:
      path: file path (``.gz`` ok, ``-`` = stdin).
      symbols: output-label (word) table; labels that are not integers are looked up in it.
        Without it, integer labels get a numeric table (word ``"17"`` for id 17) and word labels
        a table built from the words seen.
      isymbols: input-label table for transducers with symbolic input labels.
      acceptor: force acceptor (True) / transducer (False) parsing; None = infer (module doc).
      key: lattice key (default: file name without extension).
      word_aligned: default True for acceptors, False for transducers.
    Raises:
      FormatError naming file:line for malformed lines, NaN weights, infinite arc weights,
      unknown words (when ``symbols`` is given); LatticeError for cycles or no final state.
    """
    rows = []
    for n, line in read_text_lines(path):
        cols = line.split()
        if cols:
            rows.append((n, cols))
        if n % _CHECK_EVERY_LINES == 0:  # the memory budget in force (--max-memory), if any: ~200 bytes a line
            check_memory(f"reading {path} (line {n:,})", advice="")
    if not rows:
        raise FormatError("empty file: expected OpenFst text lines", path=path, line=1)
    for n, c in rows:
        if len(c) > 5:
            raise FormatError(f"expected at most 5 columns, got {len(c)}", path=path, line=n)
    if acceptor is None:
        if any(len(c) == 5 for _, c in rows):
            acceptor = False
        elif any(len(c) == 3 for _, c in rows):
            acceptor = True
        else:
            four = [c for _, c in rows if len(c) == 4]
            acceptor = bool(four) and any(not _is_int(c[3]) for c in four)
    src, dst, ilab, olab, g, a = [], [], [], [], [], []
    finals: dict[int, tuple[float, float]] = {}
    start: int | None = None
    arc_cols = (3, 4) if acceptor else (4, 5)
    for n, c in rows:
        if not _is_int(c[0]):
            raise FormatError(f"state {c[0][:40]!r} is not a non-negative integer", path=path, line=n)
        s = _int32(c[0], "state id", path, n)
        if start is None:
            start = s
        if len(c) <= 2:
            if s in finals:
                raise FormatError(f"state {s} has two final weights", path=path, line=n)
            finals[s] = (0.0, 0.0) if len(c) == 1 else _weight(c[1], path, n)
            continue
        if len(c) not in arc_cols:
            kind = "acceptor" if acceptor else "transducer"
            want = "src dst label [weight]" if acceptor else "src dst ilabel olabel [weight]"
            raise FormatError(f"{len(c)} columns in {'an' if acceptor else 'a'} {kind} file: expected '{want}' or 'state [weight]'",
                              path=path, line=n)
        if not _is_int(c[1]):
            raise FormatError(f"destination state {c[1][:40]!r} is not a non-negative integer", path=path, line=n)
        src.append(s)
        dst.append(_int32(c[1], "destination state", path, n))
        il = c[2]
        ol = c[2] if acceptor else c[3]
        ilab.append(il)
        olab.append(ol)
        wcol = 3 if acceptor else 4
        w = _weight(c[wcol], path, n) if len(c) > wcol else (0.0, 0.0)
        if math.isinf(w[0]) or math.isinf(w[1]):
            raise FormatError("arc weight is infinite; arcs must have finite weights", path=path, line=n)
        g.append(w[0])
        a.append(w[1])
    line_of_arc = [n for n, c in rows if len(c) > 2]

    def to_ids(labels: list[str], table: SymbolTable | None, what: str):
        if all(_is_int(x) for x in labels):
            ids = np.array([_int32(x, f"{what} label", path, line_of_arc[i]) for i, x in enumerate(labels)],
                           dtype=np.int64)
            if table is None:
                table = SymbolTable({str(int(i)): int(i) for i in np.unique(ids) if i != 0})
            else:
                for i, x in enumerate(ids):
                    if x != 0 and int(x) not in table:
                        raise SymbolError(f"{what} id {x} is not in the symbol table", path=path, line=line_of_arc[i])
            return ids, table
        if table is None:
            table = SymbolTable.from_words(sorted({x for x in labels if x not in ("<eps>", "0")}))
        out = np.zeros(len(labels), dtype=np.int64)
        for i, x in enumerate(labels):
            if x == "0" or x == table.epsilon:
                continue
            idx = table.get_id(x)
            if idx is None:
                if _is_int(x):
                    idx = _int32(x, f"{what} label", path, line_of_arc[i])
                else:
                    raise SymbolError(f"{what} {x!r} is not in the symbol table", path=path, line=line_of_arc[i])
            out[i] = idx
        return out, table

    word, syms = to_ids(olab, symbols, "word")
    if acceptor:
        ilabel = word
    else:
        ilabel, _ = to_ids(ilab, isymbols, "input")
    assert start is not None, "rows is not empty"
    n_states = max([start] + src + dst + list(finals)) + 1
    if n_states > max(4 * len(rows), 1 << 20):
        raise FormatError(f"state id {n_states - 1} is implausibly large for {len(rows)} lines", path=path)
    fg = np.full(n_states, np.inf)
    fa = np.full(n_states, np.inf)
    for s, (x, y) in finals.items():
        if not (math.isinf(x) or math.isinf(y)):
            fg[s], fa[s] = x, y
    if key is None:
        base = os.path.basename(str(path))
        if base.endswith(".gz"):
            base = base[:-3]
        key = os.path.splitext(base)[0] if path != "-" else ""
    try:
        return Lattice.from_arcs(src=src, dst=dst, word=word, ilabel=ilabel, symbols=syms, final_graph_cost=fg,
                                 final_acoustic_cost=fa, num_states=n_states, start=start, graph_cost=g,
                                 acoustic_cost=a, frame_shift=frame_shift, key=key,
                                 word_aligned=acceptor if word_aligned is None else word_aligned)
    except LatticeError as exc:
        raise LatticeError(exc.message, path=str(path), key=key or None) from None


def _num(x: float) -> str:
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


def format_openfst(lat: Lattice, *, acceptor: bool | None = None, weights: str = "pair",
                   words: bool = False) -> str:
    """OpenFst text of ``lat`` (see :func:`write_openfst`)."""
    if acceptor is None:
        acceptor = bool(np.array_equal(lat.ilabel, lat.word))
    if weights not in ("pair", "total"):
        raise ValueError("weights must be 'pair' or 'total'")

    def w(gc, ac):
        return f"{_num(gc)},{_num(ac)}" if weights == "pair" else _num(gc + ac)

    def lab(i):
        return lat.symbols.word(int(i)) if words and i != 0 else str(int(i))

    out = []
    for i in range(lat.num_arcs):
        labels = lab(lat.word[i]) if acceptor else f"{int(lat.ilabel[i])}\t{lab(lat.word[i])}"
        out.append(f"{lat.src[i]}\t{lat.dst[i]}\t{labels}\t{w(lat.graph_cost[i], lat.acoustic_cost[i])}")
    for s in lat.final_states.tolist():
        out.append(f"{s}\t{w(lat.final_graph_cost[s], lat.final_acoustic_cost[s])}")
    return "\n".join(out) + "\n"


def write_openfst(lat: Lattice, path: str, *, acceptor: bool | None = None, weights: str = "pair",
                  words: bool = False, symbols_path: str | None = None) -> None:
    """Write ``lat`` as OpenFst text (start state 0 first; atomic; ``-`` = stdout).

    Args:
      acceptor: one label per arc (words) when True; ``ilabel word`` when False; default: acceptor
        iff every ilabel equals its word.
      weights: ``"pair"`` writes Kaldi's ``graph,acoustic``; ``"total"`` one cost ``graph + acoustic``
        (for ``fstcompile`` with the standard/log arc type).
      words: write word strings instead of ids for the output labels.
      symbols_path: also write the word table (``words.txt`` format) there.
    Times are not representable and are dropped.
    """
    text = format_openfst(lat, acceptor=acceptor, weights=weights, words=words)
    with atomic_write(path) as f:
        f.write(text)
    if symbols_path:
        lat.symbols.write(symbols_path)
