"""SLF writer: a :class:`~lattice_tools.core.lattice.Lattice` as standard HTK SLF (words on links).

Re-exported by :mod:`lattice_tools.io.lattices.slf` (``from lattice_tools.io.lattices.slf import write_slf``).
"""
from __future__ import annotations

import io
import os

import numpy as np

from ...core.errors import LatticeError
from ...core.files import atomic_write
from ...core.lattice import Lattice


def _state_times(lat: Lattice) -> np.ndarray | None:
    """Time (frame) of each state from arc times, or None if times are unknown.

    Raises LatticeError when arcs disagree about a state's time (SLF nodes have one time).
    """
    if not lat.has_times or lat.num_arcs == 0:
        return None
    t = np.full(lat.num_states, -1, dtype=np.int64)
    t[lat.src] = lat.t0
    t[lat.dst] = lat.t1
    bad = np.nonzero((t[lat.src] != lat.t0) | (t[lat.dst] != lat.t1))[0]
    if len(bad):
        a = int(bad[0])
        raise LatticeError(f"arc {a} ({lat.src[a]}->{lat.dst[a]}, frames {lat.t0[a]}-{lat.t1[a]}) disagrees with "
                           "other arcs about a state's time; SLF nodes carry a single time", key=lat.key or None)
    t[0] = max(t[0], 0) if t[0] < 0 else t[0]
    return t


def _fmt(x: float) -> str:
    return repr(float(x)) if x != int(x) or abs(x) >= 1e15 else str(int(x))


def format_slf(lat: Lattice, *, lmscale: float | None = None, wdpenalty: float | None = None,
               acscale: float | None = None, utterance: str | None = None, null_word: str = "!NULL") -> str:
    """SLF text of ``lat`` (standard HTK, words on links); see :func:`write_slf`."""
    times = _state_times(lat)
    n = lat.num_states
    finals = lat.final_states
    single_end = (len(finals) == 1 and lat.final_graph_cost[finals[0]] == 0
                  and lat.final_acoustic_cost[finals[0]] == 0
                  and not np.any(lat.src == finals[0]))
    end = int(finals[0]) if single_end else n
    n_nodes = n if single_end else n + 1
    n_links = lat.num_arcs + (0 if single_end else len(finals))
    out = io.StringIO()
    w = out.write
    w("VERSION=1.0\n")
    utt = utterance if utterance is not None else lat.key
    if utt:
        if any(c.isspace() for c in utt):
            raise LatticeError(f"utterance name {utt!r} contains whitespace", key=utt)
        w(f"UTTERANCE={utt}\n")
    for name, val in (("lmscale", lmscale), ("wdpenalty", wdpenalty), ("acscale", acscale)):
        if val is not None:
            w(f"{name}={_fmt(val)}\n")
    w(f"start=0\nend={end}\n")
    w(f"N={n_nodes}\tL={n_links}\n")
    fs = lat.frame_shift
    # Centisecond frame shifts print exactly with 2 decimals; others need more to round-trip.
    tfmt = "{:.2f}" if abs(fs * 100 - round(fs * 100)) < 1e-9 else "{:.6f}"
    node_times = None
    if times is not None:
        node_times = list(times) + ([] if single_end else [int(times[finals].max())])
    for i in range(n_nodes):
        if node_times is not None and node_times[i] >= 0:
            w(f"I={i}\tt={tfmt.format(node_times[i] * fs)}\n")
        else:
            w(f"I={i}\n")
    wordstr = {}
    for wid in np.unique(lat.word):
        s = null_word if wid == 0 else lat.symbols.word(int(wid))
        if not s or any(c.isspace() for c in s):
            raise LatticeError(f"word {s!r} cannot be written to SLF (empty or contains whitespace)", key=lat.key or None)
        wordstr[int(wid)] = s
    p = lat.attrs.get("p")
    r = lat.attrs.get("r")
    has_l = bool(np.any(lat.graph_cost != 0)) or bool(np.any(lat.final_graph_cost[finals] != 0))
    for j in range(lat.num_arcs):
        line = (f"J={j}\tS={lat.src[j]}\tE={lat.dst[j]}\tW={wordstr[int(lat.word[j])]}"
                f"\ta={_fmt(-lat.acoustic_cost[j])}")
        if has_l:
            line += f"\tl={_fmt(-lat.graph_cost[j])}"
        if r is not None:
            line += f"\tr={_fmt(r[j])}"
        if p is not None:
            line += f"\tp={_fmt(p[j])}"
        w(line + "\n")
    if not single_end:
        for k, s in enumerate(finals):
            line = (f"J={lat.num_arcs + k}\tS={s}\tE={n}\tW={null_word}\ta={_fmt(-lat.final_acoustic_cost[s])}")
            if has_l:
                line += f"\tl={_fmt(-lat.final_graph_cost[s])}"
            if r is not None:
                line += "\tr=0"
            if p is not None:
                line += "\tp=0"
            w(line + "\n")
    return out.getvalue()


def write_slf(lat: Lattice, path_or_stream, *, lmscale: float | None = None, wdpenalty: float | None = None,
              acscale: float | None = None, utterance: str | None = None, null_word: str = "!NULL") -> None:
    """Write ``lat`` as standard HTK SLF with words on links.

    Nodes are the lattice states (``start=0``), each with ``t=`` = the state's time in seconds
    (the end time of every word entering it); links carry ``W=`` (``!NULL`` for epsilon),
    ``a = -acoustic_cost``, ``l = -graph_cost`` (written when any graph cost is non-zero) and,
    when present in ``lat.attrs``, ``r=`` and ``p=``.  Scores are natural-log (no ``base=``).
    If the lattice has several final states or a non-zero final cost, a new end node is added
    and joined to each final state by a ``!NULL`` link carrying the final costs.

    ``lmscale``/``wdpenalty``/``acscale`` are written to the header when given: HTK, SRILM and
    :func:`read_slf` apply them to the link scores, so give them only for costs that do not include
    them already (a lattice read with ``scales="raw"``, to round-trip its file).  ``path_or_stream``: a path (``.gz`` compresses,
    ``-`` = stdout; written atomically) or a text stream.

    Raises LatticeError when times disagree at a state (SLF nodes carry one time).
    """
    text = format_slf(lat, lmscale=lmscale, wdpenalty=wdpenalty, acscale=acscale, utterance=utterance,
                      null_word=null_word)
    if hasattr(path_or_stream, "write"):
        path_or_stream.write(text)
        return
    with atomic_write(os.fspath(path_or_stream)) as f:
        f.write(text)
