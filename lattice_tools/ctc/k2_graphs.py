"""Decoding graphs between k2 and OpenFst: a k2 CTC graph (icefall ``HLG.pt``: token labels with
0 = blank, ragged word ``aux_labels``) as OpenFst arrays for kaldi-decoder (input label = token + 1),
and an OpenFst CTC graph as a k2 ``Fsa`` for ``intersect_dense_pruned`` (input epsilons removed with k2).

Reading ``HLG.pt`` needs neither k2 nor torch (:mod:`lattice_tools.io.lattices.k2file`); the way back needs k2.
"""
from __future__ import annotations

import numpy as np

from ..core.errors import FormatError
from ..interop.k2 import _k2
from ..io.lattices.k2file import Ragged, load_k2_dict
from ._fst import FstArrays, fst_to_arrays


def k2_graph_to_fst_arrays(path):
    """A k2 CTC decoding graph file (icefall ``HLG.pt``/``H.pt``; read without k2) as OpenFst arrays
    for kaldi-decoder.

    Semiring: tropical; costs are ``-scores``.  Arc ``label`` ``l >= 0`` (0 = blank) becomes input
    label ``l + 1``; the words of the arc (ragged row or int aux label; none = epsilon) become
    the output label of the arc and, for 2+ words, of a chain of input-epsilon arcs after it.
    Arcs labelled -1 (into k2's final state) become final costs of their source state (the
    minimum, if several).  The result is not connected or sorted.
    """
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
    from ..core._optional import kaldifst as _kaldifst

    kaldifst = _kaldifst()

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
