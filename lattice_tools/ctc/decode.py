"""Decode CTC log-probabilities into lattices with Kaldi's or k2's lattice decoder.

* ``backend="kaldi"`` (always available): kaldi-decoder's ``LatticeSimpleDecoder`` over
  ``DecodableCtc`` on an OpenFst graph (``HLG.fst`` from :func:`~lattice_tools.ctc.graph.build_graph`;
  a k2 ``HLG.pt`` is converted).  The raw state-level lattice (``GetRawLattice``, pruned with
  ``lattice_beam``, final costs included) becomes a frame-level hub :class:`Lattice` exactly like
  a Kaldi ``Lattice`` archive entry (:func:`lattice_tools.io.lattices.kaldi.raw_to_lattice`): ``ilabel`` =
  graph input label (token id + 1; 0 = non-emitting arc), ``word`` = output label,
  ``graph_cost`` = graph cost, ``acoustic_cost`` = ``-log_prob`` of the emitted token.
* ``backend="k2"`` (needs k2): ``k2.intersect_dense_pruned`` on a k2 ``HLG.pt`` with icefall's
  conventions (``HLG.lm_scores = HLG.scores``, ``frame_idx_name="frame"``); the lattice goes
  through :func:`lattice_tools.interop.k2.from_k2_batch` (the conventions of
  :func:`lattice_tools.io.lattices.k2file.read_k2_lattices`: ``ilabel`` = token id, 0 = blank).

In both, ``total cost = graph_cost + acoustic_cost`` of a path = ``-(graph log-prob + sum of
frame log-probs)``, so totals and posteriors of the two backends are comparable (the k2 lattice
has one more arc per path, the final ``-1`` arc with score 0, and keeps dead-end arcs).

With ``word_align=True`` (default) each lattice is passed through
:func:`lattice_tools.alternatives.word_align` so that every word arc spans its word.

Caveats:
  * ``LatticeSimpleDecoder`` has no max-active/min-active limits: it keeps every token within
    ``beam``.  ``max_active``/``min_active`` apply to the k2 backend only (k2's
    ``max_active_states``/``min_active_states``); passing them with ``backend="kaldi"`` raises.
  * Beams of the two decoders are not identical algorithms: Kaldi prunes the raw lattice with
    ``lattice_beam`` relative to the best complete path; k2 prunes with ``output_beam`` in its
    forward-backward pruning.  Lattices differ in their low-probability tails.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.errors import FormatError, LatticeError, LatticeToolsError, MismatchError, require
from ..core.lattice import Lattice
from ..core.symbols import SymbolTable
from .graph import GRAPH_FILES, _require_k2

BACKENDS = ("kaldi", "k2")


@dataclass
class CtcGraph:
    """A decoding graph loaded for one backend (``fst``: kaldifst ``StdVectorFst``; or a k2 Fsa).

    ``num_tokens`` is the number of log-probability columns the graph can consume
    (largest token id + 1).
    """

    backend: str
    graph: object
    words: SymbolTable
    num_tokens: int
    path: str = ""
    extra: dict = field(default_factory=dict)


def _find_graph_file(path: Path, backend: str) -> Path:
    if path.is_file():
        return path
    if not path.is_dir():
        raise FormatError("graph not found (expected a directory from build-graph or an .fst/.pt file)",
                          path=str(path))
    prefer = GRAPH_FILES["kaldifst" if backend == "kaldi" else "k2"]
    other = GRAPH_FILES["k2" if backend == "kaldi" else "kaldifst"]
    for name in prefer + other:
        if (path / name).is_file():
            return path / name
    raise FormatError(f"no graph file ({', '.join(prefer + other)}) in the directory", path=str(path))


def load_graph(graph, *, backend: str = "kaldi", words=None) -> CtcGraph:
    """Load a decoding graph for ``backend``.

    ``graph``: a directory written by :func:`~lattice_tools.ctc.graph.build_graph`, an OpenFst
    ``.fst`` (input labels token + 1) or a k2 ``.pt`` (icefall ``HLG.pt``); a :class:`CtcGraph` is
    returned as is.  ``words``: the word table (path or :class:`SymbolTable`); default the
    ``words.txt`` beside the graph file.
    """
    if isinstance(graph, CtcGraph):
        if graph.backend != backend:
            raise LatticeToolsError(f"graph was loaded for backend {graph.backend!r}, not {backend!r}")
        return graph
    if backend not in BACKENDS:
        raise LatticeToolsError(f"unknown decoding backend {backend!r}; expected 'kaldi' or 'k2'")
    gpath = _find_graph_file(Path(graph), backend)
    if words is None:
        wpath = gpath.parent / "words.txt"
        if not wpath.is_file():
            raise FormatError("no words.txt beside the graph; pass words=", path=str(gpath))
        words = SymbolTable.read(str(wpath))
    elif not isinstance(words, SymbolTable):
        words = SymbolTable.read(str(words))
    is_k2_file = gpath.suffix == ".pt"
    if backend == "kaldi":
        from ..core._optional import kaldifst as _kaldifst

        kaldifst = _kaldifst()

        if is_k2_file:
            from ._fst import arrays_to_fst
            from .k2_graphs import k2_graph_to_fst_arrays

            fst = arrays_to_fst(k2_graph_to_fst_arrays(str(gpath)))
            kaldifst.connect(fst)
            kaldifst.arcsort(fst, sort_type="ilabel")
        else:
            fst = kaldifst.StdVectorFst.read(str(gpath))
            if fst is None or fst.num_states == 0:
                raise FormatError("not a readable, non-empty OpenFst StdVectorFst", path=str(gpath))
        from ._fst import fst_to_arrays

        max_ilabel = int(fst_to_arrays(fst).ilabel.max(initial=0))
        return CtcGraph("kaldi", fst, words, num_tokens=max_ilabel, path=str(gpath))
    k2 = _require_k2()
    torch = require("torch", "k2")
    if is_k2_file:
        fsa = k2.Fsa.from_dict(torch.load(str(gpath), map_location="cpu", weights_only=False))
    else:
        from .k2_graphs import fst_graph_to_k2

        fsa = fst_graph_to_k2(str(gpath))
    fsa = k2.arc_sort(fsa)
    fsa.lm_scores = fsa.scores.clone()
    max_label = int(fsa.labels.max().item())
    return CtcGraph("k2", fsa, words, num_tokens=max_label + 1, path=str(gpath))


def decode_ctc(graph, logprobs, *, backend: str = "kaldi", beam: float = 20.0, lattice_beam: float = 8.0,
               max_active: int | None = None, min_active: int | None = None, words=None,
               frame_shift: float = 0.04, lengths=None, keys=None, word_align: bool = True,
               progress: bool = False) -> list[Lattice]:
    """Decode CTC log-probabilities into lattices.

    Args:
      graph: see :func:`load_graph` (a path or a loaded :class:`CtcGraph`).
      logprobs: a path (see :mod:`lattice_tools.ctc.logprobs`), one ``[T, V]`` array, or a
        sequence of ``(key, [T, V])`` pairs.  Column 0 is the blank; log-probabilities (natural
        log), not logits.
      backend: ``"kaldi"`` (kaldi-decoder ``LatticeSimpleDecoder``) or ``"k2"``
        (``k2.intersect_dense_pruned``).
      beam: search beam (Kaldi ``beam``, k2 ``search_beam``).
      lattice_beam: lattice pruning beam (Kaldi ``lattice_beam``, k2 ``output_beam``).
      max_active, min_active: k2 only (defaults 10000 and 30, icefall's).
      words: word table when it is not beside the graph.
      frame_shift: seconds per log-probability frame (0.04 = 10 ms features, subsampling 4).
      lengths, keys: for padded ``[N, T, V]`` inputs, see :func:`~lattice_tools.ctc.logprobs.read_logprobs`.
      word_align: pass each lattice through :func:`lattice_tools.alternatives.word_align`.
      progress: show a tqdm bar on stderr.

    Returns:
      One :class:`Lattice` per utterance, in input order, keyed by the utterance key.
      An utterance for which the decoder finds no complete path raises :class:`LatticeError`.
    """
    return list(iter_decode_ctc(graph, logprobs, backend=backend, beam=beam, lattice_beam=lattice_beam,
                                max_active=max_active, min_active=min_active, words=words, frame_shift=frame_shift,
                                lengths=lengths, keys=keys, word_align=word_align, progress=progress))


def iter_decode_ctc(graph, logprobs, *, backend: str = "kaldi", beam: float = 20.0, lattice_beam: float = 8.0,
                    max_active: int | None = None, min_active: int | None = None, words=None,
                    frame_shift: float = 0.04, lengths=None, keys=None, word_align: bool = True,
                    progress: bool = False) -> Iterator[Lattice]:
    """:func:`decode_ctc` as a generator: one lattice at a time (Kaldi archives of log-probs are
    read one matrix at a time), so memory does not grow with the number of utterances.
    The graph is loaded and the arguments are checked before the first utterance."""
    if backend not in BACKENDS:
        raise LatticeToolsError(f"unknown decoding backend {backend!r}; expected 'kaldi' or 'k2'")
    if backend == "kaldi" and (max_active is not None or min_active is not None):
        raise LatticeToolsError("the kaldi backend (LatticeSimpleDecoder) has no max-active/min-active limits; "
                                "use --backend k2 or leave them unset")
    if beam <= 0 or lattice_beam <= 0:
        raise LatticeToolsError(f"beams must be positive, got beam={beam}, lattice_beam={lattice_beam}")
    g = load_graph(graph, backend=backend, words=words)
    items = _as_items(logprobs, lengths, keys)
    if progress:
        from tqdm import tqdm

        items = tqdm(items, desc="decode-ctc", unit="utt")
    return _decode_items(g, items, backend, beam, lattice_beam, max_active, min_active, frame_shift, word_align)


def _decode_items(g, items, backend, beam, lattice_beam, max_active, min_active, frame_shift, word_align):
    for key, lp in items:
        if lp.shape[1] < g.num_tokens:
            raise MismatchError(f"log-probabilities have {lp.shape[1]} columns but the graph uses token ids up to "
                                f"{g.num_tokens - 1} (needs at least {g.num_tokens} columns)", key=key)
        if backend == "kaldi":
            lat = _decode_kaldi(g, key, lp, beam, lattice_beam, frame_shift)
        else:
            lat = _decode_k2(g, key, lp, beam, lattice_beam, 10000 if max_active is None else max_active,
                             30 if min_active is None else min_active, frame_shift)
        if word_align:
            from ..alternatives.word_alignment import word_align as _word_align

            lat = _word_align(lat)
        yield lat


def _as_items(logprobs, lengths, keys):
    if isinstance(logprobs, (str, os.PathLike)):
        from .logprobs import iter_logprobs

        return iter_logprobs(logprobs, lengths=lengths, keys=keys)
    if isinstance(logprobs, np.ndarray) or hasattr(logprobs, "detach"):
        arr = logprobs.detach().cpu().numpy() if hasattr(logprobs, "detach") else logprobs
        from .logprobs import _split_batch

        return _split_batch(np.asarray(arr), lengths, list(keys) if keys is not None else None, "utt", "<array>")
    from .logprobs import _check

    return [(str(k), _check(str(k), np.asarray(a), "<array>")) for k, a in logprobs]


def _decode_kaldi(g: CtcGraph, key: str, lp: np.ndarray, beam: float, lattice_beam: float,
                  frame_shift: float) -> Lattice:
    from ..core._optional import kaldi_decoder as _kaldi_decoder

    kaldi_decoder = _kaldi_decoder()

    from ..io.lattices.kaldi import raw_to_lattice

    cfg = kaldi_decoder.LatticeSimpleDecoderConfig(beam=float(beam), lattice_beam=float(lattice_beam))
    decoder = kaldi_decoder.LatticeSimpleDecoder(g.graph, cfg)
    # -inf (log 0) is fine for Kaldi's decoder; it only needs float32.
    decoder.decode(kaldi_decoder.DecodableCtc(np.ascontiguousarray(lp, dtype=np.float32)))
    ok, lat = decoder.get_raw_lattice(use_final_probs=True)
    if not ok or lat.num_states == 0:
        raise LatticeError("the decoder found no path reaching a final state of the graph (beam too small, or the "
                           "graph cannot produce this many frames)", key=key)
    raw = _kaldi_lattice_to_raw(lat, key)
    return raw_to_lattice(raw, key, symbols=g.words, frame_shift=frame_shift)


def _decode_k2(g: CtcGraph, key: str, lp: np.ndarray, beam: float, lattice_beam: float, max_active: int,
               min_active: int, frame_shift: float) -> Lattice:
    k2 = _require_k2()
    torch = require("torch", "k2")
    from ..interop.k2 import from_k2_batch

    nnet_output = torch.from_numpy(np.ascontiguousarray(lp, dtype=np.float32)).unsqueeze(0)
    segs = torch.tensor([[0, 0, lp.shape[0]]], dtype=torch.int32)
    dense = k2.DenseFsaVec(nnet_output, segs)
    lattice = k2.intersect_dense_pruned(g.graph, dense, search_beam=float(beam), output_beam=float(lattice_beam),
                                        min_active_states=int(min_active), max_active_states=int(max_active),
                                        frame_idx_name="frame")
    if lattice.shape[0] != 1 or lattice[0].num_arcs == 0:
        raise LatticeError("k2 found no path reaching a final state of the graph", key=key)
    (lat,) = from_k2_batch(lattice, words=g.words, frame_shift=frame_shift, keys=[key])
    return lat


def _kaldi_lattice_to_raw(lat, key: str):
    """A kaldifst ``Lattice`` as :class:`lattice_tools.io.lattices.kaldi.RawFst` (float32 weights exact).

    The lattice is written with Kaldi/OpenFst's binary writer (``vector`` FST, arc type
    ``lattice4``) and parsed here: one ``struct`` call per state, then all arcs at once with numpy
    (per-arc access through kaldifst's iterator is ~30x slower)."""
    import struct
    import tempfile

    from ..io.lattices.kaldi import RawFst

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lattice.fst")
        if not lat.write(path):
            raise LatticeError("kaldifst could not write the decoded lattice", key=key)
        with open(path, "rb") as f:
            data = f.read()
    pos = 4  # magic number
    strings = []
    for _ in range(2):  # fst type, arc type
        (n,) = struct.unpack_from("<i", data, pos)
        strings.append(data[pos + 4:pos + 4 + n].decode("ascii"))
        pos += 4 + n
    if strings != ["vector", "lattice4"]:
        raise LatticeError(f"unexpected lattice FST type {strings}", key=key)
    _version, flags, _props, start, num_states, num_arcs = struct.unpack_from("<iiQqqq", data, pos)
    pos += 40
    if flags & 3 or num_states < 0:
        raise LatticeError("unexpected lattice FST header", key=key)
    final = np.empty((num_states, 2), dtype=np.float64)
    arc_start = np.empty(num_states, dtype=np.int64)
    arc_count = np.empty(num_states, dtype=np.int64)
    unpack = struct.Struct("<ffq").unpack_from
    for st in range(num_states):
        g, a, narcs = unpack(data, pos)
        final[st] = g, a
        arc_start[st] = pos + 16
        arc_count[st] = narcs
        pos += 16 + 20 * narcs
    total = int(arc_count.sum())
    src = np.repeat(np.arange(num_states, dtype=np.int64), arc_count)
    first = np.repeat(arc_start, arc_count)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(arc_count) - arc_count, arc_count)
    offsets = first + 20 * within
    buf = np.frombuffer(data, dtype=np.uint8)
    rec = buf[offsets[:, None] + np.arange(20)].copy()
    arcs = rec.view(np.dtype([("il", "<i4"), ("ol", "<i4"), ("w1", "<f4"), ("w2", "<f4"), ("ns", "<i4")])).reshape(-1)
    is_final = np.isfinite(final[:, 0]) & np.isfinite(final[:, 1])
    return RawFst(kind="lattice", start=int(start), num_states=int(num_states), src=src,
                  dst=arcs["ns"].astype(np.int64), ilabel=arcs["il"].astype(np.int64),
                  olabel=arcs["ol"].astype(np.int64), w1=arcs["w1"].astype(np.float64),
                  w2=arcs["w2"].astype(np.float64), final_w1=np.where(is_final, final[:, 0], np.inf),
                  final_w2=np.where(is_final, final[:, 1], np.inf))
