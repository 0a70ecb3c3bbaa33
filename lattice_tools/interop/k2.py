"""Conversions between k2 ``Fsa`` objects and the hub :class:`~lattice_tools.lattice.Lattice`.

Needs k2, which has no PyPI wheel for Python 3.11: ``pip install 'lattice-tools[torch]'`` gives torch,
and k2 itself is built from source (``docs/k2-and-ctc.md``, "Building k2 locally").  Reading and writing k2 *files* does not need k2:
see :mod:`lattice_tools.io.k2file`.

The conversions are defined *through* the k2-free file format, so they follow exactly the
conventions of :func:`lattice_tools.io.k2file.read_k2_lattices` (scores, ``lm_scores``,
``aux_labels`` as int tensor or ragged, ``tokens``, ``frame``, k2's super-final state) and
:func:`lattice_tools.io.k2file.write_k2_lattice`:

* ``from_k2(fsa)`` = ``read_k2_lattices(torch.save(fsa.as_dict()))``
* ``to_k2(lat)``   = ``k2.Fsa.from_dict(torch.load(write_k2_lattice(lat)))``

so ``from_k2(to_k2(x))`` equals ``x`` whenever ``x`` has the shape those functions produce
(costs rounded to float32, as k2 stores them).

Graphs: :func:`k2_graph_to_fst_arrays` turns a k2 decoding graph (icefall ``HLG.pt``: token
labels with 0 = blank, ragged word ``aux_labels``) into OpenFst arrays for kaldi-decoder (input
label = token + 1); :func:`fst_graph_to_k2` goes the other way, removing input epsilons with k2.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

import numpy as np

from ..errors import FormatError, LatticeToolsError, MissingDependencyError, require
from ..lattice import Lattice


def _k2():
    try:
        import k2
    except ImportError as exc:
        raise MissingDependencyError(
            "this feature needs k2, which has no PyPI wheel for Python 3.11: build it from source as described "
            f"in docs/k2-and-ctc.md (pip install 'lattice-tools[torch]' provides torch) ({exc})") from None
    return k2


def _is_fsa_vec(fsa) -> bool:
    return len(fsa.shape) == 3


def from_k2(fsa, words=None, frame_shift: float = 0.04, subsampling: int = 1, *, keys: Sequence[str] | None = None,
            return_arc_maps: bool = False):
    """Convert a k2 ``Fsa`` (single or FsaVec) or a list of single Fsas to hub lattices.

    Args:
      fsa: a k2 ``Fsa``: 2-D (single) or 3-D (FsaVec), or a list of single Fsas.
      words: word table (:class:`SymbolTable` or a ``words.txt`` path) for the word ids
        (``aux_labels``, or the labels of an acceptor); ``None`` names ids by their decimal string.
      frame_shift: seconds per frame of the network *input* features times ``subsampling``; the
        hub lattice gets ``frame_shift * subsampling`` seconds per k2 frame (k2 frame indices are
        kept, so :func:`to_k2` gives them back).
      keys: one key per FSA (default ``"0"``, ``"1"``, ...).
      return_arc_maps: also return, per lattice, the k2 arc index (local to its FSA) of each hub arc.

    Returns:
      A :class:`Lattice` for a single Fsa, a list for an FsaVec or a list input (plus arc maps).

    Conventions are those of :func:`lattice_tools.io.k2file.read_k2_lattices`: ``graph_cost =
    -lm_scores``, ``acoustic_cost = -(scores - lm_scores)``, ``ilabel`` = k2 label (token id),
    ``word`` = aux label, ``t0 = frame``, ``t1 = frame + 1``, other attributes in ``attrs``.
    """
    k2 = _k2()
    torch = require("torch", "torch")
    from ..io.k2file import read_k2_lattices

    if int(subsampling) < 1:
        raise LatticeToolsError(f"subsampling must be a positive integer, got {subsampling}")
    single = not isinstance(fsa, (list, tuple)) and not _is_fsa_vec(fsa)
    if isinstance(fsa, (list, tuple)):
        if not fsa:
            raise LatticeToolsError("from_k2 got an empty list")
        fsa = k2.create_fsa_vec(list(fsa))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fsa.pt")
        torch.save(fsa.as_dict(), path)
        res = read_k2_lattices(path, symbols=words, frame_shift=float(frame_shift) * int(subsampling), keys=keys,
                               return_arc_maps=return_arc_maps)
    if return_arc_maps:
        lats, maps = res
        return (lats[0], maps[0]) if single else (lats, maps)
    return res[0] if single else res


def to_k2(lattice, *, aux_labels: str = "tensor"):
    """Convert a hub :class:`Lattice` (-> single ``Fsa``) or a list of them (-> FsaVec) to k2.

    ``aux_labels``: ``"tensor"`` (int32, -1 on final arcs) or ``"ragged"`` (icefall HLG-lattice
    style).  Conventions are those of :func:`lattice_tools.io.k2file.write_k2_lattice` (costs rounded
    to float32; a super-final state is added unless the lattice already has k2's shape).
    """
    k2 = _k2()
    torch = require("torch", "torch")
    from ..io.k2file import write_k2_lattice

    if not isinstance(lattice, Lattice):
        lattice = list(lattice)
        if not lattice:
            raise LatticeToolsError("to_k2 got an empty list")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fsa.pt")
        write_k2_lattice(lattice, path, aux_labels=aux_labels)
        d = torch.load(path, map_location="cpu", weights_only=False)
    return k2.Fsa.from_dict(d)


def load_k2(path, words=None, frame_shift: float = 0.04, subsampling: int = 1):
    """Read an icefall-style ``torch.save(fsa.as_dict())`` file with k2 (``k2.Fsa.from_dict``) and
    convert it with :func:`from_k2` (a single Fsa gives a list of one lattice)."""
    k2 = _k2()
    torch = require("torch", "torch")
    fsa = k2.Fsa.from_dict(torch.load(str(path), map_location="cpu", weights_only=False))
    out = from_k2(fsa, words=words, frame_shift=frame_shift, subsampling=subsampling)
    return [out] if isinstance(out, Lattice) else out


def save_k2(lattices, path, *, aux_labels: str = "tensor") -> None:
    """Write lattices through k2: ``torch.save(to_k2(lattices).as_dict(), path)`` (atomically)."""
    torch = require("torch", "torch")
    from ..io.common import atomic_write

    fsa = to_k2(lattices, aux_labels=aux_labels)
    with atomic_write(str(path), "wb", compress=False) as f:
        torch.save(fsa.as_dict(), f)


# ----------------------------------------------------------------------------------------------
# Decoding graphs
# ----------------------------------------------------------------------------------------------
def k2_graph_to_fst_arrays(path):
    """A k2 CTC decoding graph file (icefall ``HLG.pt``/``H.pt``; read without k2) as OpenFst arrays
    for kaldi-decoder.

    Semiring: tropical; costs are ``-scores``.  Arc ``label`` ``l >= 0`` (0 = blank) becomes input
    label ``l + 1``; the words of the arc (ragged row or int aux label; none = epsilon) become
    the output label of the arc and, for 2+ words, of a chain of input-epsilon arcs after it.
    Arcs labelled -1 (into k2's final state) become final costs of their source state (the
    minimum, if several).  The result is not connected or sorted.
    """
    from ..ctc._fst import FstArrays
    from ..io.k2file import Ragged, load_k2_dict

    path = str(path)
    d = load_k2_dict(path)
    arcs = d["arcs"]
    if arcs.ndim != 2 or arcs.shape[1] != 4:
        raise FormatError(f"a decoding graph must be a single Fsa (2-D arcs [num_arcs, 4]), got shape {arcs.shape}",
                          path=path)
    src = arcs[:, 0].astype(np.int64)
    dst = arcs[:, 1].astype(np.int64)
    label = arcs[:, 2].astype(np.int64)
    cost = -np.ascontiguousarray(arcs[:, 3]).view(np.float32).astype(np.float64)
    n_arcs = len(arcs)
    num_states = int(arcs[:, :2].max()) + 1 if n_arcs else 0
    aux = d.get("aux_labels")
    if aux is None:
        rows = [[] if label[i] <= 0 else [int(label[i])] for i in range(n_arcs)]  # an acceptor
    elif isinstance(aux, Ragged):
        if aux.num_rows != n_arcs:
            raise FormatError(f"ragged aux_labels has {aux.num_rows} rows for {n_arcs} arcs", path=path)
        rows = [[int(w) for w in aux.row(i) if w > 0] for i in range(n_arcs)]
    else:
        rows = [[int(w)] if w > 0 else [] for w in aux.tolist()]
    final = np.full(num_states, np.inf)
    out_src, out_dst, out_il, out_ol, out_w = [], [], [], [], []
    nxt = num_states
    finals_extra = []
    for i in range(n_arcs):
        s, t, lab, c, ws = int(src[i]), int(dst[i]), int(label[i]), float(cost[i]), rows[i]
        if lab == -1:
            if not ws:
                final[s] = min(final[s], c)
                continue
            # words on a final arc: emit them on epsilon arcs into a new final state
            cur = s
            for j, w in enumerate(ws):
                out_src.append(cur)
                out_dst.append(nxt)
                out_il.append(0)
                out_ol.append(w)
                out_w.append(c if j == 0 else 0.0)
                cur, nxt = nxt, nxt + 1
            finals_extra.append(cur)
            continue
        if lab < -1:
            raise FormatError(f"arc {i} has label {lab} < -1", path=path)
        first = ws[0] if ws else 0
        chain_dst = t if len(ws) <= 1 else nxt
        out_src.append(s)
        out_dst.append(chain_dst)
        out_il.append(lab + 1)
        out_ol.append(first)
        out_w.append(c)
        if len(ws) > 1:
            cur = nxt
            nxt += 1
            for j, w in enumerate(ws[1:]):
                last = j == len(ws) - 2
                out_src.append(cur)
                out_dst.append(t if last else nxt)
                out_il.append(0)
                out_ol.append(w)
                out_w.append(0.0)
                if not last:
                    cur, nxt = nxt, nxt + 1
    final = np.concatenate([final, np.full(nxt - num_states, np.inf)])
    for s in finals_extra:
        final[s] = 0.0
    return FstArrays(nxt, 0, np.array(out_src, np.int64), np.array(out_dst, np.int64), np.array(out_il, np.int64),
                     np.array(out_ol, np.int64), np.array(out_w, np.float64), final)


def fst_graph_to_k2(path):
    """An OpenFst CTC graph (input label = token + 1, 0 = epsilon) as a k2 Fsa for
    ``intersect_dense_pruned``: input-epsilon arcs are removed with ``k2.remove_epsilon``
    (tropical; their words move into ragged ``aux_labels``), labels become token ids (0 = blank)."""
    k2 = _k2()
    import kaldifst

    from ..ctc._fst import fst_to_arrays

    fst = kaldifst.StdVectorFst.read(str(path))
    if fst is None or fst.num_states == 0:
        raise FormatError("not a readable, non-empty OpenFst StdVectorFst", path=str(path))
    a = fst_to_arrays(fst)
    # k2 needs start state 0 and the final state last: renumber start <-> 0 and add a super-final.
    perm = np.arange(a.num_states)
    perm[[0, a.start]] = perm[[a.start, 0]]
    final_state = a.num_states
    lines = [f"{perm[s]} {perm[d]} {i} {o} {-w!r}" for s, d, i, o, w in
             zip(a.src.tolist(), a.dst.tolist(), a.ilabel.tolist(), a.olabel.tolist(), a.weight.tolist(), strict=False)]
    lines += [f"{perm[s]} {final_state} -1 -1 {-float(a.final[s])!r}" for s in np.nonzero(np.isfinite(a.final))[0]]
    lines.sort(key=lambda x: int(x.split()[0]))
    lines.append(str(final_state))
    fsa = k2.Fsa.from_str("\n".join(lines), acceptor=False)
    fsa = k2.remove_epsilon(fsa)
    fsa = k2.connect(fsa)
    labels = fsa.labels.clone()
    labels[labels > 0] -= 1
    fsa.labels = labels
    if isinstance(fsa.aux_labels, k2.RaggedTensor):
        fsa.aux_labels = fsa.aux_labels.remove_values_leq(0)
    return k2.arc_sort(fsa)


__all__ = ["from_k2", "to_k2", "load_k2", "save_k2", "k2_graph_to_fst_arrays", "fst_graph_to_k2"]
