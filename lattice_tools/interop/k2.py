"""Conversions between k2 ``Fsa`` objects and the hub :class:`~lattice_tools.core.lattice.Lattice`.

Needs k2, which has no PyPI wheel for Python 3.11: ``pip install 'lattice-tools[torch]'`` gives torch,
and k2 itself is built from source (``docs/k2-and-ctc.md``, "Building k2 locally").  Reading and writing k2 *files* does not need k2:
see :mod:`lattice_tools.io.lattices.k2file`.

The conversions are defined *through* the k2-free file format, so they follow exactly the
conventions of :func:`lattice_tools.io.lattices.k2file.read_k2_lattices` (scores, ``lm_scores``,
``aux_labels`` as int tensor or ragged, ``tokens``, ``frame``, k2's super-final state) and
:func:`lattice_tools.io.lattices.k2file.write_k2_lattice`:

* ``from_k2_batch(fsa)`` = ``read_k2_lattices(torch.save(fsa.as_dict()))``; ``from_k2(fsa)`` is its one
  lattice for a single Fsa; the ``*_with_maps`` variants add the k2 arc of each hub arc
* ``to_k2(lat)``   = ``k2.Fsa.from_dict(torch.load(write_k2_lattice(lat)))``

so ``from_k2(to_k2(x))`` equals ``x`` whenever ``x`` has the shape those functions produce
(costs rounded to float32, as k2 stores them).

Decoding graphs (k2 ``HLG.pt`` <-> OpenFst) are converted in :mod:`lattice_tools.ctc.k2_graphs`.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

import numpy as np

from ..core.errors import LatticeToolsError, MismatchError, MissingDependencyError, require
from ..core.lattice import Lattice
from ..core.symbols import SymbolTable
from ..io.lattices.k2file import KEYS_ENTRY, MappedLattice, read_k2_lattices_with_maps, write_k2_lattice


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


def from_k2(fsa, words=None, frame_shift: float = 0.04, subsampling: int = 1, *, key: str | None = None) -> Lattice:
    """Convert one k2 ``Fsa`` (2-D, a single FSA) to a hub lattice.

    Args:
      fsa: a single k2 ``Fsa``; an FsaVec or a list of Fsas goes to :func:`from_k2_batch`.
      words: word table (:class:`SymbolTable` or a ``words.txt`` path) for the word ids
        (``aux_labels``, or the labels of an acceptor); ``None`` names ids by their decimal string.
      frame_shift: seconds per frame of the network *input* features times ``subsampling``; the
        hub lattice gets ``frame_shift * subsampling`` seconds per k2 frame (k2 frame indices are
        kept, so :func:`to_k2` gives them back).
      key: the lattice's key; default: the key the Fsa holds (``keys`` and ``key_index``, as in a file
        :func:`save_k2` or :func:`lattice_tools.io.lattices.k2file.write_k2_lattice` wrote and
        ``k2.Fsa.from_dict`` read), else ``"0"``.

    Conventions are those of :func:`lattice_tools.io.lattices.k2file.read_k2_lattices`: ``graph_cost =
    -lm_scores``, ``acoustic_cost = -(scores - lm_scores)``, ``ilabel`` = k2 label (token id),
    ``word`` = aux label, ``t0 = frame``, ``t1 = frame + 1``, other attributes in ``attrs``.
    """
    return from_k2_with_maps(fsa, words, frame_shift, subsampling, key=key).lattice


def from_k2_with_maps(fsa, words=None, frame_shift: float = 0.04, subsampling: int = 1, *,
                      key: str | None = None) -> MappedLattice:
    """:func:`from_k2` plus the k2 arc index of each hub arc (:class:`MappedLattice` ``(lattice, arc_map)``)."""
    _k2()  # a missing k2 is reported before the argument is looked at
    if isinstance(fsa, (list, tuple)) or _is_fsa_vec(fsa):
        raise TypeError("from_k2 converts one Fsa (2-D); for an FsaVec or a list of Fsas use from_k2_batch, "
                        "which returns a list of lattices")
    (mapped,) = _convert(fsa, words, frame_shift, subsampling, None if key is None else [str(key)])
    return mapped


def from_k2_batch(fsas, words=None, frame_shift: float = 0.04, subsampling: int = 1, *,
                  keys: Sequence[str] | None = None) -> list[Lattice]:
    """Convert an FsaVec (3-D), a list of single Fsas or one single Fsa to a list of hub lattices (one per FSA).

    ``keys``: one key per FSA (default: the keys the FSAs hold, as for :func:`from_k2`, else ``"0"``, ``"1"``,
    ...); the other arguments and the conventions are those of :func:`from_k2`.
    """
    return [m.lattice for m in from_k2_batch_with_maps(fsas, words, frame_shift, subsampling, keys=keys)]


def from_k2_batch_with_maps(fsas, words=None, frame_shift: float = 0.04, subsampling: int = 1, *,
                            keys: Sequence[str] | None = None) -> list[MappedLattice]:
    """:func:`from_k2_batch` plus, per lattice, the k2 arc index (local to its FSA) of each hub arc."""
    return _convert(fsas, words, frame_shift, subsampling, keys)


def _holds_keys(fsa) -> bool:
    """Whether a k2 Fsa holds the keys of a lattice-tools file (see :mod:`lattice_tools.io.lattices.k2file`)."""
    return any(name == KEYS_ENTRY for name, _ in fsa.named_non_tensor_attr())


def _convert(fsa, words, frame_shift: float, subsampling: int, keys: Sequence[str] | None) -> list[MappedLattice]:
    _k2()
    torch = require("torch", "torch")

    if int(subsampling) < 1:
        raise LatticeToolsError(f"subsampling must be a positive integer, got {subsampling}")
    if isinstance(fsa, (list, tuple)):
        if not fsa:
            raise LatticeToolsError("from_k2_batch got an empty list")
        if keys is not None and len(keys) != len(fsa):
            raise LatticeToolsError(f"{len(keys)} keys given for {len(fsa)} FSAs")
        if any(_is_fsa_vec(one) for one in fsa):
            raise TypeError("from_k2_batch takes an FsaVec or a list of single Fsas, not a list of FsaVecs")
        if isinstance(words, (str, os.PathLike)):
            words = SymbolTable.read(os.fspath(words))  # (read once: the lattices share one table)
        # one at a time, not through k2.create_fsa_vec: it refuses FSAs whose non-tensor attributes differ (the
        # keys of FSAs from different files), and each FSA keeps the key it holds
        out: list[MappedLattice] = []
        for i, one in enumerate(fsa):
            # the key given, else the key the FSA holds, else its position in the list
            key = keys[i] if keys is not None else None if _holds_keys(one) else str(i)
            out += _convert(one, words, frame_shift, subsampling, None if key is None else [key])
        first: dict[str, int] = {}
        for i, m in enumerate(out):
            if first.setdefault(m.lattice.key, i) != i:
                raise MismatchError(f"FSAs {first[m.lattice.key]} and {i} of the list have the same key "
                                    f"{m.lattice.key!r}: give keys", key=m.lattice.key)
        if words is None:  # one table for all, as the reader makes for an FsaVec: each id named by its decimal string
            ids = sorted({int(w) for m in out for w in np.unique(m.lattice.word) if w != 0})
            table = SymbolTable({str(w): w for w in ids})
            out = [MappedLattice(m.lattice.with_symbols(table), m.arc_map) for m in out]
        return out
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fsa.pt")
        torch.save(fsa.as_dict(), path)
        return read_k2_lattices_with_maps(path, symbols=words, frame_shift=float(frame_shift) * int(subsampling),
                                          keys=keys)


def to_k2(lattice, *, aux_labels: str = "tensor"):
    """Convert a hub :class:`Lattice` (-> single ``Fsa``) or a list of them (-> FsaVec) to k2.

    ``aux_labels``: ``"tensor"`` (int32, -1 on final arcs) or ``"ragged"`` (icefall HLG-lattice
    style).  Conventions are those of :func:`lattice_tools.io.lattices.k2file.write_k2_lattice` (costs rounded
    to float32; a super-final state is added unless the lattice already has k2's shape), except that the Fsa
    carries no keys: k2 refuses to put FSAs with different non-tensor attributes into one FsaVec
    (``k2.create_fsa_vec``), so the keys stay with the caller (:func:`save_k2` writes them to the file).
    """
    return _to_k2(lattice, aux_labels, with_keys=False)


def _to_k2(lattice, aux_labels: str, *, with_keys: bool):
    k2 = _k2()
    torch = require("torch", "torch")
    if not isinstance(lattice, Lattice):
        lattice = list(lattice)
        if not lattice:
            raise LatticeToolsError("to_k2 got an empty list")
    if not with_keys:  # (lattices without keys are written without them)
        lattice = lattice.with_key("") if isinstance(lattice, Lattice) else [lat.with_key("") for lat in lattice]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fsa.pt")
        write_k2_lattice(lattice, path, aux_labels=aux_labels)
        d = torch.load(path, map_location="cpu", weights_only=False)
    return k2.Fsa.from_dict(d)


def load_k2(path, words=None, frame_shift: float = 0.04, subsampling: int = 1) -> list[Lattice]:
    """Read an icefall-style ``torch.save(fsa.as_dict())`` file with k2 (``k2.Fsa.from_dict``) and
    convert it with :func:`from_k2_batch` (a single Fsa gives a list of one lattice; the keys the file holds
    name the lattices)."""
    k2 = _k2()
    torch = require("torch", "torch")
    fsa = k2.Fsa.from_dict(torch.load(str(path), map_location="cpu", weights_only=False))
    return from_k2_batch(fsa, words=words, frame_shift=frame_shift, subsampling=subsampling)


def save_k2(lattices, path, *, aux_labels: str = "tensor") -> None:
    """Write lattices through k2: ``torch.save(fsa.as_dict(), path)`` (atomically) of the Fsa :func:`to_k2` makes,
    with the lattices' keys as :func:`lattice_tools.io.lattices.k2file.write_k2_lattice` writes them."""
    torch = require("torch", "torch")
    from ..core.files import atomic_write

    fsa = _to_k2(lattices, aux_labels, with_keys=True)
    with atomic_write(str(path), "wb", compress=False) as f:
        torch.save(fsa.as_dict(), f)


__all__ = ["MappedLattice", "from_k2", "from_k2_with_maps", "from_k2_batch", "from_k2_batch_with_maps", "to_k2",
           "load_k2", "save_k2"]
