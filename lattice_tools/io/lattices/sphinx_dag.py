"""Sphinx's native word lattice ("DAG") format, as written by pocketsphinx ``Lattice.write()``
(``ps_lattice_write``) and Sphinx-III (``dag_write``)::

    # getcwd: /this/is/bogus
    # -logbase 1.000100e+00
    Frames 108
    Nodes 135 (NODEID WORD STARTFRAME FIRST-ENDFRAME LAST-ENDFRAME)
    0 </s> 96 107 107 ; 0
    ...
    Initial 134
    Final 0
    BestSegAscr 0 (NODEID ENDFRAME ASCORE)
    Edges (FROM-NODEID TO-NODEID ASCORE)
    1 0 -288768
    ...
    End

Semantics (those of ``ps_lattice_read``): a node is a word hypothesis starting at frame
``STARTFRAME``; an edge ``u v ascr`` is the word of node ``u`` from ``sf[u]`` to ``sf[v]`` (its
last frame is ``sf[v] - 1``) with acoustic log-likelihood ``ascr`` in units of ``log(logbase)``
(the ``# -logbase`` comment).  The file carries no language-model score and no posterior: the
lattice has acoustic costs only (``acoustic_cost = -ascr * ln(logbase)``, ``graph_cost = 0``).
The final node's own word (``</s>``) is on no edge.  Repeated ``u v`` edges keep the best score
(``ps_lattice_link``).  Pronunciation variants ``word(2)`` become ``word``; Sphinx fillers
(``<s>``, ``</s>``, ``<sil>``, ``[NOISE]``, ``++BREATH++``) become epsilon arcs.  Nodes that cannot
reach the final node are dropped (pocketsphinx's HTK writer drops them too).
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable

import numpy as np

from ...core.errors import FormatError, LatticeError
from ...core.lattice import Lattice, reachable_mask
from ...core.symbols import SymbolTable
from .slf_text import clean_word, is_filler, load_text

_MAX_INT = 2 ** 53


def looks_like_sphinx_dag(text: str) -> bool:
    """Whether the first line that is not a comment starts a Sphinx DAG (``Frames``/``Nodes``)."""
    pos = 0
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end].strip()
        if line and not line.startswith("#"):
            return line.split(None, 1)[0] in ("Frames", "Nodes")
        pos = end + 1
    return False


def _int(tok: str, what: str, path: str, lineno: int) -> int:
    body = tok[1:] if tok[:1] in "+-" else tok
    if not (body.isascii() and body.isdigit()) or len(body) > 16:
        raise FormatError(f"{what} {tok!r} is not an integer", path=path, line=lineno)
    v = int(tok)
    if abs(v) > _MAX_INT:
        raise FormatError(f"{what} {tok} is out of range", path=path, line=lineno)
    return v


def _node_word_ids(words: list[str], fillers: Iterable[str] | None, symbols: SymbolTable | None,
                   extend_symbols: bool, nodes_line: int, path: str) -> tuple[np.ndarray, SymbolTable]:
    """Each node's word id (0 for fillers) and the word table (built, extended or checked)."""
    cleaned = [clean_word(w, "sphinx3") for w in words]
    fill = frozenset(fillers) if fillers is not None else None
    is_fill = [(c in fill) if fill is not None else is_filler(c, "sphinx3") for c in cleaned]
    if symbols is None:
        symbols = SymbolTable.from_words(sorted({c for c, f in zip(cleaned, is_fill, strict=False) if not f}))
    elif extend_symbols:
        symbols = symbols.with_words(sorted({c for c, f in zip(cleaned, is_fill, strict=False) if not f and c not in symbols}))
    node_word = np.zeros(len(words), dtype=np.int64)
    for n, (c, f) in enumerate(zip(cleaned, is_fill, strict=False)):
        if f:
            continue
        wid = symbols.get_id(c)
        if wid is None:
            raise FormatError(f"word {c!r} is not in the symbol table", path=path, line=nodes_line + 2 + n)
        node_word[n] = wid
    return node_word, symbols


def parse_sphinx_dag(text: str, path: str, symbols: SymbolTable | None = None, frame_shift: float = 0.01, *,
                     key: str = "", fillers: Iterable[str] | None = None, extend_symbols: bool = True,
                     logbase: float | None = None) -> Lattice:
    """Parse Sphinx DAG ``text`` (``path`` names it in errors); see :func:`read_sphinx_dag`."""
    lines = text.split("\n")
    n_lines = len(lines)
    i = 0
    file_logbase = None

    def next_line(what):
        """Index of the next line that is not empty or a comment; FormatError at the end."""
        nonlocal i, file_logbase
        while i < n_lines:
            s = lines[i].strip()
            if s.startswith("#"):
                parts = s[1:].split()
                if len(parts) >= 2 and parts[0] == "-logbase":
                    try:
                        file_logbase = float(parts[1])
                    except ValueError:
                        raise FormatError(f"-logbase {parts[1]!r} is not a number", path=path, line=i + 1) from None
            elif s:
                i += 1
                return i - 1
            i += 1
        raise FormatError(f"truncated Sphinx DAG: expected {what}", path=path, line=n_lines)

    def param(name):
        k = next_line(f"'{name} N'")
        toks = lines[k].split()
        if toks[0] != name or len(toks) < 2:
            raise FormatError(f"expected '{name} N', got {lines[k].strip()[:60]!r}", path=path, line=k + 1)
        return _int(toks[1], name, path, k + 1), k

    n_frames, _ = param("Frames")
    n_nodes, nodes_line = param("Nodes")
    if n_nodes <= 0 or n_nodes > n_lines - i:
        # bound the allocation by the file itself: every node needs a line
        raise FormatError(f"Nodes {n_nodes}: expected between 1 and the {n_lines - i} lines left in the file",
                          path=path, line=nodes_line + 1)
    words: list[str] = []
    sf = np.empty(n_nodes, dtype=np.int64)
    for n in range(n_nodes):
        k = next_line(f"node line {n} of {n_nodes}")
        toks = lines[k].split()
        if len(toks) < 5 or (len(toks) > 5 and toks[5] != ";"):
            raise FormatError("expected a node line 'NODEID WORD STARTFRAME FIRST-ENDFRAME LAST-ENDFRAME'",
                              path=path, line=k + 1)
        if _int(toks[0], "node id", path, k + 1) != n:
            raise FormatError(f"node id {toks[0]}: expected {n} (node lines are numbered in order)",
                              path=path, line=k + 1)
        start_frame = _int(toks[2], "start frame", path, k + 1)
        for t in toks[3:5]:
            _int(t, "end frame", path, k + 1)
        if not 0 <= start_frame < 2 ** 31:
            raise FormatError(f"start frame {start_frame} is out of range", path=path, line=k + 1)
        words.append(toks[1])
        sf[n] = start_frame
    initial, initial_line = param("Initial")
    final, final_line = param("Final")
    for name, v, ln in (("Initial", initial, initial_line), ("Final", final, final_line)):
        if not 0 <= v < n_nodes:
            raise FormatError(f"{name} {v} is not a node (0..{n_nodes - 1})", path=path, line=ln + 1)
    n_best, best_line = param("BestSegAscr")
    if not 0 <= n_best <= n_lines - i:
        raise FormatError(f"BestSegAscr {n_best}: more entries than lines left", path=path, line=best_line + 1)
    for _ in range(n_best):
        next_line("a BestSegAscr entry")
    k = next_line("'Edges'")
    if lines[k].split()[0] != "Edges":
        raise FormatError(f"expected 'Edges (FROM-NODEID TO-NODEID ASCORE)', got {lines[k].strip()[:60]!r}",
                          path=path, line=k + 1)
    edges: dict[tuple[int, int], tuple[int, int]] = {}
    while True:
        k = next_line("the edges and the closing 'End'")
        toks = lines[k].split()
        if toks == ["End"]:
            break
        if len(toks) != 3:
            raise FormatError("expected an edge line 'FROM-NODEID TO-NODEID ASCORE' or 'End'", path=path, line=k + 1)
        u = _int(toks[0], "edge start node", path, k + 1)
        v = _int(toks[1], "edge end node", path, k + 1)
        score = _int(toks[2], "acoustic score", path, k + 1)
        for x in (u, v):
            if not 0 <= x < n_nodes:
                raise FormatError(f"edge node {x} is not a node (0..{n_nodes - 1})", path=path, line=k + 1)
        if u == v:
            raise FormatError(f"edge {u}->{v} is a self-loop (lattices are acyclic)", path=path, line=k + 1)
        old = edges.get((u, v))
        if old is None or score > old[0]:
            edges[(u, v)] = (score, k + 1)
    if logbase is None:
        logbase = file_logbase
    if logbase is None:
        raise FormatError("no '# -logbase' line: the scores' log base is unknown; pass logbase= "
                          "(pocketsphinx writes 1.0001, Sphinx-III 1.0003)", path=path, line=1)
    if not (math.isfinite(logbase) and logbase > 0 and logbase != 1):
        raise FormatError(f"-logbase {logbase} is not a usable log base (> 0, != 1)", path=path, line=1)
    if n_frames < 0:
        raise FormatError(f"Frames {n_frames} is negative", path=path, line=1)

    pairs = list(edges.items())
    src = np.array([p[0][0] for p in pairs], dtype=np.int64)
    dst = np.array([p[0][1] for p in pairs], dtype=np.int64)
    ascr = np.array([p[1][0] for p in pairs], dtype=np.float64)
    node_word, symbols = _node_word_ids(words, fillers, symbols, extend_symbols, nodes_line, path)
    if not reachable_mask(n_nodes, src, dst, initial)[final]:
        raise FormatError(f"Final node {final} is not reachable from the Initial node {initial}", path=path,
                          line=final_line + 1)
    final_cost = np.full(n_nodes, np.inf)
    final_cost[final] = 0.0
    try:
        lat = Lattice.from_arcs(src=src, dst=dst, word=node_word[src], symbols=symbols, final_graph_cost=final_cost,
                                num_states=n_nodes, start=initial, t0=sf[src], t1=sf[dst],
                                acoustic_cost=-ascr * math.log(logbase), frame_shift=frame_shift, key=key,
                                word_aligned=True)
    except LatticeError as exc:
        raise FormatError(exc.message, path=path, line=nodes_line + 1, key=key or None) from None
    return lat  # (trimmed to its complete paths by from_arcs)


def read_sphinx_dag(path_or_text, symbols: SymbolTable | None = None, frame_shift: float = 0.01, *,
                    key: str | None = None, fillers: Iterable[str] | None = None, extend_symbols: bool = True,
                    logbase: float | None = None) -> Lattice:
    """Read a Sphinx DAG lattice file (see the module docstring for the format and semantics).

    Args:
      path_or_text: a path (``.gz`` read transparently, ``-`` = stdin), a stream, or the text.
      symbols, extend_symbols, fillers: as for :func:`lattice_tools.io.lattices.slf.read_slf`.
      frame_shift: seconds per frame (Sphinx's default ``-frate 100``: 0.01).
      key: utterance key (default: the file name without extensions; the format has no name).
      logbase: the scores' log base when the file has no ``# -logbase`` comment.
    Raises:
      FormatError naming the file and line on anything malformed or truncated.
    """
    text, name = load_text(path_or_text)
    if key is None:
        key = ""
        if name not in ("<text>", "<stream>", "-"):
            base = os.path.basename(name)
            key = os.path.splitext(base[:-3] if base.endswith(".gz") else base)[0]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not looks_like_sphinx_dag(text):
        raise FormatError("not a Sphinx DAG lattice (expected 'Frames N' or 'Nodes N' after the comments)",
                          path=name, line=1)
    return parse_sphinx_dag(text, name, symbols, frame_shift, key=key, fillers=fillers,
                            extend_symbols=extend_symbols, logbase=logbase)


__all__ = ["read_sphinx_dag", "parse_sphinx_dag", "looks_like_sphinx_dag"]
