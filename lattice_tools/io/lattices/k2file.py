"""Read and write k2/icefall lattice files (``torch.save(fsa.as_dict(), path)``) without k2.

Reading needs neither k2 nor torch: a ``torch.save`` file is a zip archive holding a pickle
(``<name>/data.pkl``) plus one raw little-endian buffer per tensor storage (``<name>/data/<key>``).
:func:`load_k2_dict` unpickles ``data.pkl`` with a *restricted* unpickler that resolves only an
allow-list of globals -- ``torch._utils._rebuild_tensor_v2``, the typed storage classes
(``torch.FloatStorage`` ...), ``collections.OrderedDict`` and k2's ``_k2.ragged.RaggedTensor``
(replaced by the stand-in :class:`Ragged`) -- and builds numpy arrays straight from the storage
buffers.  Nothing else can be instantiated, so a hostile file cannot run code.  With
``engine="torch"`` the same file is read with ``torch.load(weights_only=True)`` and the ragged
stand-in allow-listed through ``torch.serialization.safe_globals``.

Layout of an ``as_dict()`` (see tests/data/k2-fixtures/README.md):

* ``arcs``: int32.  A single Fsa is 2-D ``[num_arcs, 4]`` (``src, dst, label, score_bits``); an
  FsaVec is 1-D ``[num_fsas, 0, state_splits(num_fsas+1), arc_splits(num_fsas+1), src, dst,
  label, score_bits, ...]`` with state ids local to each FSA.  ``score_bits`` is the float32 score
  bit-cast to int32.  The final state is the highest-numbered state; only arcs labelled -1 enter it.
* ``aux_labels``: int32 tensor (-1 on final arcs) or ragged ``[arc][word]`` (empty on final arcs).
* any other per-arc tensor (``lm_scores``, ``tokens``, ``frame``...).
* the lattices' keys, which k2 FSAs do not have (written by :func:`write_k2_lattice`, read back by
  :func:`read_k2_lattices`): ``keys``, a list of str (a non-tensor attribute to k2, so ``torch.load`` with
  ``weights_only=True`` and ``k2.Fsa.from_dict`` accept it), and ``key_index``, an int32 per-arc tensor: the
  position in ``keys`` of the FSA the arc belongs to.  k2 carries a per-arc tensor through indexing, ``index_fsa``
  and the other operations that keep arcs, but copies a non-tensor attribute unchanged to every FSA it makes, so
  each FSA's key is read through its arcs' ``key_index``, never from its position.  A ``key_index`` without
  ``keys`` names nothing (``k2.create_fsa_vec`` refuses FSAs whose non-tensor attributes differ, so k2 users
  joining FSAs of several files delete ``keys``): the lattices are then numbered by position.
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import zipfile
import zlib
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ...core._budget import check_allocation
from ...core.errors import FormatError, LatticeError, MismatchError, SymbolError, require
from ...core.files import atomic_write, open_binary_input
from ...core.lattice import Lattice, connect_with_maps
from ...core.symbols import SymbolTable

__all__ = ["MappedLattice", "Ragged", "load_k2_dict", "read_k2_lattices", "read_k2_lattices_with_maps",
           "write_k2_lattice"]

# 2**24 frames = 186 hours at icefall's 40 ms: no lattice is longer.
MAX_FRAMES = 1 << 24

#: The entries that hold the lattices' keys (see the module docstring): the keys, and per arc its FSA's key's index.
KEYS_ENTRY = "keys"
KEY_INDEX_ENTRY = "key_index"


class MappedLattice(NamedTuple):
    """A hub lattice converted from one k2 FSA, with the k2 arc of each of its arcs.

    ``arc_map[i]`` (int64) is the index, *local to its FSA*, of the k2 arc that hub arc ``i`` comes from
    (``arc_offset`` + that index is the FsaVec-global one); the pieces of a split multi-word arc share it.
    """

    lattice: Lattice
    arc_map: np.ndarray


class Ragged:
    """Stand-in for k2's 2-axis ``RaggedTensor``: ``row(i) = values[row_splits[i]:row_splits[i+1]]``.

    Unpickling sets it from k2's pickled state ``(row_splits1, 'row_ids1', values)``.
    """

    def __init__(self, row_splits: ArrayLike, values: ArrayLike):
        self.row_splits: np.ndarray = np.asarray(row_splits)
        self.values: np.ndarray = np.asarray(values)

    def __setstate__(self, state):
        # k2 pickles (row_splits1, 'row_ids1', values) for 2 axes; 3+ axes give a longer tuple.
        if not isinstance(state, tuple) or len(state) != 3:
            raise FormatError(f"unsupported ragged tensor state (expected a 2-axis ragged tensor, got "
                              f"{type(state).__name__} of length {len(state) if isinstance(state, tuple) else '?'})")
        self.row_splits, self.values = state[0], state[2]

    @property
    def num_rows(self) -> int:
        return len(self.row_splits) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(np.asarray(self.row_splits, dtype=np.int64))

    def row(self, i: int) -> np.ndarray:
        return self.values[self.row_splits[i]:self.row_splits[i + 1]]

    def tolist(self) -> list[list[int]]:
        return [self.row(i).tolist() for i in range(self.num_rows)]

    def __repr__(self) -> str:
        return f"Ragged(rows={self.num_rows}, values={len(self.values)})"


# ---------------------------------------------------------------------------------------------
# Restricted zip/pickle reader (no torch needed)

_STORAGE_DTYPES = {
    "DoubleStorage": np.float64, "FloatStorage": np.float32, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16, "CharStorage": np.int8,
    "ByteStorage": np.uint8, "BoolStorage": np.bool_, "BFloat16Storage": "bfloat16",
}


class _StorageType:
    def __init__(self, name):
        self.name = name
        self.dtype = _STORAGE_DTYPES[name]


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    """numpy version of torch._utils._rebuild_tensor_v2: a strided view of the storage, copied."""
    if not isinstance(storage, np.ndarray):
        raise FormatError(f"tensor storage is {type(storage).__name__}, expected a storage record")
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride) or any(s < 0 for s in size) or any(s < 0 for s in stride) or storage_offset < 0:
        raise FormatError(f"bad tensor geometry: size {size}, stride {stride}, offset {storage_offset}")
    if len(size) > 32:
        raise FormatError(f"tensor with {len(size)} dimensions")
    if 0 in size:
        return np.zeros(size, dtype=storage.dtype)
    numel = 1
    for n in size:
        numel *= n
    # The copy below allocates numel elements: a tensor cannot have more elements than its storage
    # unless its strides overlap (stride 0 = torch's expand), which k2 never saves.
    if numel > len(storage):
        raise FormatError(f"tensor of size {size} has {numel} elements, more than its storage ({len(storage)})")
    last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride, strict=False))
    if last >= len(storage):
        raise FormatError(f"tensor of size {size} needs {last + 1} storage elements, the storage has {len(storage)}")
    base = storage[storage_offset:]
    view = np.lib.stride_tricks.as_strided(base, shape=size, strides=[s * storage.itemsize for s in stride],
                                           writeable=False)
    return np.array(view, copy=True)


class _RestrictedUnpickler(pickle.Unpickler):
    _ALLOWED = {("collections", "OrderedDict"): collections.OrderedDict,
                ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
                ("_k2.ragged", "RaggedTensor"): Ragged,
                ("k2.ragged", "RaggedTensor"): Ragged}

    def __init__(self, file, zf: zipfile.ZipFile, prefix: str, byteorder: str, path: str):
        super().__init__(file)
        self._zf = zf
        self._prefix = prefix
        self._byteorder = byteorder
        self._path = path
        self._storages: dict[str, np.ndarray] = {}

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return self._ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise FormatError(f"refusing to load '{module}.{name}': not a tensor, storage or k2 ragged tensor "
                          "(only plain k2 as_dict() files are read)", path=self._path)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)
                and isinstance(pid[2], str) and type(pid[4]) is int and pid[4] >= 0):
            # type names only: the repr of a hostile object can be huge, multi-line or recursive
            what = (f"a tuple of {', '.join(type(x).__name__ for x in pid[:6])}" if isinstance(pid, tuple)
                    else f"a {type(pid).__name__}")
            raise FormatError(f"unsupported persistent id in the pickle ({what}; expected ('storage', storage "
                              "type, key, location, element count))", path=self._path)
        _, storage_type, key, _location, numel = pid
        if key in self._storages:
            return self._storages[key]
        record = f"{self._prefix}data/{key}"
        try:
            raw = self._zf.read(record)
        except KeyError:
            raise FormatError(f"storage record '{record}' is missing from the archive", path=self._path) from None
        dtype = storage_type.dtype
        bf16 = dtype == "bfloat16"
        np_dtype = np.dtype(np.uint16 if bf16 else dtype).newbyteorder("<" if self._byteorder == "little" else ">")
        if len(raw) < numel * np_dtype.itemsize:
            raise FormatError(f"storage record '{record}' has {len(raw)} bytes, expected "
                              f"{numel * np_dtype.itemsize} ({numel} x {storage_type.name})", path=self._path)
        arr = np.frombuffer(raw, dtype=np_dtype, count=numel).astype(np_dtype.newbyteorder("="))
        if bf16:
            arr = (arr.astype(np.uint32) << 16).view(np.float32)
        self._storages[key] = arr
        return arr


def _load_zip(path: str) -> dict:
    try:
        with open_binary_input(path) as f:
            data = f.read(2)  # the magic first: a file of NULs (/dev/zero) is refused before it is read
            if data == b"PK":
                data += f.read()
    except (OSError, EOFError) as exc:
        raise FormatError(f"cannot read: {exc}", path=path) from None
    if data[:2] != b"PK":
        hint = " (legacy torch.save format without zip is not supported)" if data[:1] == b"\x80" else ""
        raise FormatError(f"not a torch.save zip archive{hint}", path=path)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        names = zf.namelist()
        pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
        if len(pkl) != 1:
            raise FormatError(f"expected exactly one '<name>/data.pkl' record, found {len(pkl)}", path=path)
        prefix = pkl[0][: -len("data.pkl")]
        byteorder = "little"
        if f"{prefix}byteorder" in names:
            byteorder = zf.read(f"{prefix}byteorder").decode("ascii", "replace").strip()
            if byteorder not in ("little", "big"):
                raise FormatError(f"unknown byteorder record {byteorder!r}", path=path)
        pickled = zf.read(pkl[0])
        _check_pickle(pickled, path)
        unpickler = _RestrictedUnpickler(io.BytesIO(pickled), zf, prefix, byteorder, path)
        obj = unpickler.load()
    except FormatError as exc:
        if exc.path is None:
            exc = FormatError(exc.message, path=path)
        raise exc from None
    except NotImplementedError as exc:  # zipfile: an entry's zip version or compression method
        raise FormatError(f"unsupported zip archive ({exc}); torch.save writes stored (uncompressed) entries",
                          path=path) from None
    # MemoryError is deliberately not caught: sizes are checked before anything is allocated, so
    # running out of memory here would be a bug to fix, not bad input to report.
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, pickle.UnpicklingError, ValueError, TypeError,
            KeyError, IndexError, AttributeError, OverflowError, RuntimeError, zlib.error, struct.error) as exc:
        message = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise FormatError(f"truncated or corrupt torch.save archive ({type(exc).__name__}: {message})",
                          path=path) from None
    return obj


def _check_pickle(data: bytes, path: str) -> None:
    """Walk the opcodes of ``data.pkl`` before unpickling it.

    The C unpickler grows its memo table to the largest memo index it is told to store, so a
    127-byte pickle asking for index 2**31 makes it allocate gigabytes before anything fails.
    A pickler numbers its memo entries 0, 1, 2, ...: an index beyond the number of opcodes is
    corrupt.  (pickletools also rejects truncated and unknown opcodes here, with a message.)
    """
    import pickletools

    limit = len(data)
    try:
        for opcode, arg, _pos in pickletools.genops(data):
            if opcode.name in ("PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET"):
                assert arg is not None, "memo opcodes carry their index"
                index = int(arg)
                if not 0 <= index <= limit:
                    raise FormatError(f"corrupt pickle: memo index {index} in a {limit}-byte pickle", path=path)
    except FormatError:
        raise
    except (ValueError, TypeError, IndexError, OverflowError, struct.error) as exc:
        message = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise FormatError(f"corrupt pickle in the torch.save archive ({type(exc).__name__}: {message})",
                          path=path) from None


def _load_torch(path: str) -> dict:
    torch = require("torch", "torch")

    class RaggedTensor(Ragged):
        pass

    RaggedTensor.__module__ = "_k2.ragged"
    try:
        with torch.serialization.safe_globals([(RaggedTensor, "_k2.ragged.RaggedTensor")]):
            obj = torch.load(path, weights_only=True, map_location="cpu")
    except FileNotFoundError as exc:
        raise FormatError(f"cannot open for reading: {exc.strerror}", path=path) from None
    except Exception as exc:  # torch raises RuntimeError / UnpicklingError / EOFError on bad files
        raise FormatError(f"torch.load failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                          path=path) from None

    def to_numpy(v):
        if isinstance(v, torch.Tensor):
            return v.detach().cpu().numpy().copy()
        if isinstance(v, Ragged):
            return Ragged(to_numpy(v.row_splits), to_numpy(v.values))
        return v

    if isinstance(obj, dict):
        obj = {k: to_numpy(v) for k, v in obj.items()}
    return obj


#: What loading a k2 file and building its lattices allocates per byte of the file at its peak, with room.
_LOAD_BYTES_PER_BYTE = 6


def load_k2_dict(path: str, *, engine: str = "numpy") -> dict:
    """Load a k2 ``as_dict()`` file into ``{name: numpy array | Ragged}`` without k2.

    Args:
      path: a ``torch.save`` zip file (gzip-compressed is accepted; ``-`` = stdin).
      engine: ``"numpy"`` (default): the built-in restricted unpickler, no torch needed;
        ``"torch"``: ``torch.load(weights_only=True)`` with the ragged stand-in allow-listed.

    Returns:
      The raw dict: ``arcs`` int32 (2-D or 1-D layout as stored), tensors as numpy arrays of
      their stored dtype, ragged tensors as :class:`Ragged` (numpy ``row_splits``/``values``), the
      lattices' keys (``keys``) as a list of str.

    Raises :class:`FormatError` (naming the file) for anything that is not such a dict: a
    truncated/corrupt archive, a global outside the allow-list, a missing storage record.
    """
    path = str(path)
    if os.path.isfile(path) and not path.endswith(".gz"):
        # under a memory budget (--max-memory) a file whose lattices cannot fit is refused before it is loaded
        # (measured: ~5.5 bytes per byte of the file at the peak of loading it and building its lattices)
        check_allocation(_LOAD_BYTES_PER_BYTE * os.path.getsize(path),
                         f"loading the k2 file {path} ({os.path.getsize(path):,} bytes)")
    if engine == "numpy":
        obj = _load_zip(path)
    elif engine == "torch":
        obj = _load_torch(path)
    else:
        raise ValueError(f"engine must be 'numpy' or 'torch', got {engine!r}")
    if not isinstance(obj, dict):
        raise FormatError(f"expected a dict saved by torch.save(fsa.as_dict()), found {type(obj).__name__}", path=path)
    for name, value in obj.items():
        if not isinstance(name, str):
            raise FormatError(f"dict key {name!r} is not a string", path=path)
        if isinstance(value, Ragged):
            rs, vals = value.row_splits, value.values
            if not (isinstance(rs, np.ndarray) and isinstance(vals, np.ndarray) and rs.ndim == 1 and vals.ndim == 1
                    and len(rs) >= 1 and rs[0] == 0 and rs[-1] == len(vals) and np.all(np.diff(rs) >= 0)):
                raise FormatError(f"ragged attribute {name!r} has inconsistent row_splits/values", path=path)
        elif name == KEYS_ENTRY:
            if not (isinstance(value, list) and all(isinstance(k, str) for k in value)):
                raise FormatError(f"the {KEYS_ENTRY!r} entry is a {type(value).__name__}, expected a list of str "
                                  "(the lattices' keys)", path=path, key=KEYS_ENTRY)
        elif not isinstance(value, np.ndarray):
            raise FormatError(f"attribute {name!r} is a {type(value).__name__}; only tensors, ragged tensors and the "
                              f"list of keys ({KEYS_ENTRY!r}) are supported", path=path)
    if "arcs" not in obj:
        raise FormatError("no 'arcs' entry: not a k2 Fsa.as_dict() file", path=path)
    return dict(obj)


# ---------------------------------------------------------------------------------------------
# k2 dict -> Lattice

def _split_fsas(arcs: np.ndarray, path: str):
    """``[(num_states, arcs_2d)]`` for a 2-D single Fsa or a 1-D FsaVec ``arcs`` tensor."""
    if arcs.dtype != np.int32:
        raise FormatError(f"'arcs' has dtype {arcs.dtype}, expected int32", path=path, key="arcs")
    if arcs.ndim == 2:
        if arcs.shape[1] != 4:
            raise FormatError(f"2-D 'arcs' has shape {arcs.shape}, expected [num_arcs, 4]", path=path, key="arcs")
        num_states = int(arcs[:, :2].max()) + 1 if len(arcs) else 0
        _check_num_states(num_states, len(arcs), 1, path)
        return [(num_states, arcs)], [0, len(arcs)]
    if arcs.ndim != 1 or len(arcs) < 2:
        raise FormatError(f"'arcs' has shape {arcs.shape}, expected [num_arcs, 4] or the 1-D FsaVec layout",
                          path=path, key="arcs")
    num_fsas = int(arcs[0])
    header = 2 + 2 * (num_fsas + 1)
    if num_fsas < 0 or arcs[1] != 0 or len(arcs) < header:
        raise FormatError(f"1-D 'arcs' does not start with [num_fsas, 0, state_splits, arc_splits] "
                          f"(got {arcs[:4].tolist()}...)", path=path, key="arcs")
    state_splits = arcs[2:3 + num_fsas].astype(np.int64)
    arc_splits = arcs[3 + num_fsas:header].astype(np.int64)
    num_arcs = int(arc_splits[-1])
    if (state_splits[0] != 0 or arc_splits[0] != 0 or np.any(np.diff(state_splits) < 0)
            or np.any(np.diff(arc_splits) < 0) or len(arcs) != header + 4 * num_arcs):
        raise FormatError(f"1-D 'arcs' has inconsistent splits: state_splits {state_splits.tolist()}, arc_splits "
                          f"{arc_splits.tolist()}, {len(arcs) - header} values for {num_arcs} arcs",
                          path=path, key="arcs")
    body = arcs[header:].reshape(num_arcs, 4)
    fsas = [(int(state_splits[i + 1] - state_splits[i]), body[arc_splits[i]:arc_splits[i + 1]])
            for i in range(num_fsas)]
    _check_num_states(int(state_splits[-1]), num_arcs, num_fsas, path)
    return fsas, arc_splits.tolist()


# Arrays of num_states entries are allocated per FSA: bound them by the file's size first.
# k2 numbers states 0..n-1 and every state but the start is entered by an arc, so a real FSA has
# at most num_arcs + 1 states; a state id far beyond that is a corrupt file, not a big lattice.
def _check_num_states(num_states: int, num_arcs: int, num_fsas: int, path: str) -> None:
    if num_states > max(4 * (num_arcs + num_fsas), 1 << 20):
        raise FormatError(f"{num_states} states for {num_arcs} arcs: implausibly many (corrupt state id or "
                          "state_splits)", path=path, key="arcs")


def read_k2_lattices(path: str, symbols: SymbolTable | str | None = None, frame_shift: float = 0.04,
                     keys: Sequence[str] | None = None, *, engine: str = "numpy") -> list[Lattice]:
    """Read a k2 lattice file (one Fsa or an FsaVec) into hub :class:`Lattice` objects, without k2.

    The same as :func:`read_k2_lattices_with_maps` without the arc maps; its docstring has the arguments
    and the conversion rules.
    """
    return [m.lattice for m in read_k2_lattices_with_maps(path, symbols, frame_shift, keys, engine=engine)]


def read_k2_lattices_with_maps(path: str, symbols: SymbolTable | str | None = None, frame_shift: float = 0.04,
                               keys: Sequence[str] | None = None, *, engine: str = "numpy") -> list[MappedLattice]:
    """Read a k2 lattice file (one Fsa or an FsaVec) into hub lattices with their arc maps, without k2.

    Args:
      path: a ``torch.save(fsa.as_dict())`` file.
      symbols: the word table (a :class:`SymbolTable` or a ``words.txt`` path) for the word ids
        (the ``aux_labels``, or the ``labels`` of an acceptor).  ``None`` makes a table naming
        each id by its decimal string.  Every word id must be in the table (:class:`SymbolError`).
      frame_shift: seconds per k2 frame (0.04 = icefall's 10 ms x subsampling 4).
      keys: one key per FSA; default: the keys the file holds (``keys`` and ``key_index``, as
        :func:`write_k2_lattice` writes them), else ``"0"``, ``"1"``, ... by position.
      engine: see :func:`load_k2_dict`.

    Returns:
      one :class:`MappedLattice` ``(lattice, arc_map)`` per FSA, in the file's order: ``arc_map`` gives for
      each hub arc the index of its k2 arc *local to its FSA* (``arc_offset`` + that index is the
      FsaVec-global one).

    Conversion rules:
      * Scores: k2 scores are log-probs (higher is better).  ``graph_cost = -lm_scores`` and
        ``acoustic_cost = -(scores - lm_scores)`` (float32 values widened to float64, so
        ``graph_cost + acoustic_cost == -scores`` exactly); without ``lm_scores``, graph cost 0 and
        acoustic cost ``-scores``.  Total/arc posteriors computed on the hub lattice therefore equal
        k2's ``get_tot_scores``/``get_arc_post`` with double scores.
      * States keep k2's numbering (k2 lattices are top-sorted), except that the states of split
        multi-word arcs (below) are inserted right after their source state; k2's super-final state stays a
        normal state, final with cost 0, entered by the k2 final arcs (label -1), which become
        epsilon arcs (``word = ilabel = 0``).  Unreachable and dead-end states (``intersect_dense_pruned``
        leaves dead ends: partial paths cut by the beam; k2 gives their arcs posterior 0) are dropped with
        their arcs, as :meth:`Lattice.from_arcs` drops them for every reader (``Lattice.trimmed_arcs``
        counts them; the arc map says which k2 arcs are kept).  If k2's numbering is not topological
        the lattice is renumbered with :meth:`Lattice.from_arcs`.
      * Arcs map 1:1 to k2 arcs (hub arcs are sorted by ``(src, dst)``, see the arc map), EXCEPT
        arcs whose ragged ``aux_labels`` hold 2+ words: such an arc becomes a chain of arcs
        through new states, one word each; the first carries the score, the ``ilabel`` and all
        attributes, the others have cost 0, ``ilabel`` 0, attributes 0 except ``frame``.  The first
        piece spans the arc's frame, the others no frame at its end (``t0 = t1 = frame + 1``): every
        state then has one frame, as Kaldi lattices need (``convert --to kaldi``), and the words get
        distinct times in order.  Each piece maps to the same k2 arc.
      * ``word`` = the aux_label word id (0 if none, and for -1); for an acceptor (no
        ``aux_labels``) the label.  ``ilabel`` = the k2 label (token id; -1 becomes 0).
      * Times: with a ``frame`` attribute every arc spans one frame, ``t0 = frame``,
        ``t1 = frame + 1`` (the final arc consumes the frame after the last one); without it
        times are -1.
      * ``word_aligned`` is True only for a word acceptor (no ``aux_labels`` and no ``frame``);
        HLG/CTC lattices carry words on single frame arcs, so they are not word-aligned.
      * ``attrs`` keeps every other per-arc tensor as stored (``tokens``, ``frame``,
        ``lm_scores``...).  Ragged attributes other than ``aux_labels`` are rejected.
    """
    path = str(path)
    d = load_k2_dict(path, engine=engine)
    fsas, arc_splits = _split_fsas(d["arcs"], path)
    total_arcs = arc_splits[-1]
    if isinstance(symbols, (str, os.PathLike)):
        symbols = SymbolTable.read(str(symbols))
    if keys is not None:
        keys = [str(k) for k in keys]
        if len(keys) != len(fsas):
            raise FormatError(f"{len(keys)} keys given for {len(fsas)} FSAs", path=path)
    else:
        keys = _stored_keys(d, arc_splits, path)

    aux = d.get("aux_labels")
    attrs_all = {}
    for name, value in d.items():
        if name in ("arcs", "aux_labels", KEYS_ENTRY, KEY_INDEX_ENTRY):
            continue
        if isinstance(value, Ragged):
            raise FormatError(f"ragged attribute {name!r} is not supported (only aux_labels may be ragged)",
                              path=path, key=name)
        if value.ndim == 0 or value.shape[0] != total_arcs:
            raise FormatError(f"attribute {name!r} has shape {value.shape}, expected {total_arcs} rows (one per arc)",
                              path=path, key=name)
        attrs_all[name] = value
    if aux is not None:
        if isinstance(aux, Ragged):
            if aux.num_rows != total_arcs:
                raise FormatError(f"ragged aux_labels has {aux.num_rows} rows, expected {total_arcs}",
                                  path=path, key="aux_labels")
        elif aux.shape != (total_arcs,) or aux.dtype.kind not in "iu":
            raise FormatError(f"aux_labels has shape {aux.shape} and dtype {aux.dtype}, expected int [{total_arcs}]",
                              path=path, key="aux_labels")
    lm = attrs_all.get("lm_scores")
    if lm is not None and (lm.ndim != 1 or lm.dtype.kind != "f"):
        raise FormatError(f"lm_scores has shape {lm.shape} and dtype {lm.dtype}, expected float [{total_arcs}]",
                          path=path, key="lm_scores")
    frame = attrs_all.get("frame")
    if frame is not None and (frame.ndim != 1 or frame.dtype.kind not in "iu"):
        raise FormatError(f"frame has shape {frame.shape} and dtype {frame.dtype}, expected int [{total_arcs}]",
                          path=path, key="frame")
    # Times become per-frame arrays downstream (depth, posterior sanity): a corrupt frame index
    # must stop here, not as a multi-gigabyte allocation in an algorithm.
    if frame is not None and frame.size and not (0 <= int(frame.min()) and int(frame.max()) <= MAX_FRAMES):
        bad = int(frame.min()) if int(frame.min()) < 0 else int(frame.max())
        raise FormatError(f"frame index {bad} is outside 0..{MAX_FRAMES}", path=path, key="frame")
    word_aligned = aux is None and frame is None

    lattices, arc_maps, used_ids = [], [], set()
    for i, (num_states, arcs) in enumerate(fsas):
        a0, a1 = arc_splits[i], arc_splits[i + 1]
        key = keys[i]
        if aux is None:
            words = None
        elif isinstance(aux, Ragged):
            rs = aux.row_splits[a0:a1 + 1].astype(np.int64)
            words = Ragged(rs - rs[0], aux.values[rs[0]:rs[-1]])
        else:
            words = aux[a0:a1]
        lat, arc_map = _fsa_to_lattice(path, key, num_states, arcs, words,
                                       {k: v[a0:a1] for k, v in attrs_all.items()}, frame_shift, word_aligned)
        used_ids.update(np.unique(lat.word).tolist())
        lattices.append(lat)
        arc_maps.append(arc_map)

    if symbols is None:
        symbols = SymbolTable({str(w): w for w in sorted(used_ids) if w != 0})
    else:
        for lat in lattices:
            for w in np.unique(lat.word).tolist():
                if w not in symbols:
                    arc = int(np.nonzero(lat.word == w)[0][0])
                    raise SymbolError(f"word id {w} (hub arc {arc}) is not in the symbol table", path=path, key=lat.key)
    return [MappedLattice(lat.with_symbols(symbols), arc_map) for lat, arc_map in zip(lattices, arc_maps, strict=True)]


def _stored_keys(d: dict, arc_splits: list[int], path: str) -> list[str]:
    """The FSAs' keys the file holds (``keys`` + ``key_index``, see the module docstring), else ``"0"``, ``"1"``..."""
    num_fsas = len(arc_splits) - 1
    stored, index = d.get(KEYS_ENTRY), d.get(KEY_INDEX_ENTRY)
    if stored is None:  # (a key_index alone names nothing: k2 users delete the keys to join FSAs of several files)
        return [str(i) for i in range(num_fsas)]
    if index is None:
        raise FormatError(f"the file has a {KEYS_ENTRY!r} entry but no {KEY_INDEX_ENTRY!r}: which FSA has which key "
                          "is unknown (name the lattices with keys / --keys FILE)", path=path, key=KEY_INDEX_ENTRY)
    if not isinstance(index, np.ndarray) or index.shape != (arc_splits[-1],) or index.dtype.kind not in "iu":
        raise FormatError(f"{KEY_INDEX_ENTRY!r} must be an int tensor with one entry per arc ({arc_splits[-1]})",
                          path=path, key=KEY_INDEX_ENTRY)
    keys: list[str] = []
    first: dict[str, int] = {}
    for i in range(num_fsas):
        ids = index[arc_splits[i]:arc_splits[i + 1]]
        if len(ids) == 0 or np.any(ids != ids[0]):
            raise FormatError(f"the arcs of FSA {i} do not name one key ({KEY_INDEX_ENTRY!r} values "
                              f"{np.unique(ids)[:4].tolist()})", path=path, key=KEY_INDEX_ENTRY)
        k = int(ids[0])
        if not 0 <= k < len(stored):
            raise FormatError(f"FSA {i} has {KEY_INDEX_ENTRY} {k}, outside the {len(stored)} keys of the file",
                              path=path, key=KEY_INDEX_ENTRY)
        key = stored[k]
        if not key or any(c.isspace() for c in key):
            raise FormatError(f"key {key!r} of FSA {i} is empty or contains whitespace", path=path, key=KEYS_ENTRY)
        if key in first:
            raise FormatError(f"FSAs {first[key]} and {i} have the same key {key!r} (the same FSA taken twice out of "
                              "an FsaVec?): name the lattices with keys / --keys FILE", path=path, key=key)
        first[key] = i
        keys.append(key)
    return keys


def _fsa_to_lattice(path, key, num_states, arcs, words, attrs, frame_shift, word_aligned):
    num_arcs = len(arcs)
    if num_states == 0:
        raise FormatError("FSA is empty (no states; k2 gives this when decoding found no path)", path=path, key=key)
    src = arcs[:, 0].astype(np.int64)
    dst = arcs[:, 1].astype(np.int64)
    label = arcs[:, 2].astype(np.int64)
    with np.errstate(invalid="ignore"):  # a signalling-NaN bit pattern warns when widened; refused below
        scores = np.ascontiguousarray(arcs[:, 3]).view(np.float32).astype(np.float64)
    if num_arcs:
        if src.min() < 0 or dst.min() < 0 or src.max() >= num_states or dst.max() >= num_states:
            raise FormatError(f"arc state id outside 0..{num_states - 1}", path=path, key=key)
        if np.any(np.diff(src) < 0):
            raise FormatError("arcs are not grouped by source state (not a valid k2 Fsa)", path=path, key=key)
        if label.min() < -1:
            raise FormatError(f"label {int(label.min())} < -1", path=path, key=key)
        if np.any(np.isnan(scores)):
            raise FormatError(f"arc {int(np.nonzero(np.isnan(scores))[0][0])} has a NaN score", path=path, key=key)
    ilabel = np.maximum(label, 0)
    # Words per arc: first word (or 0) and, for ragged rows with 2+ words, the rest.
    extra_words: dict[int, np.ndarray] = {}
    if words is None:
        word = ilabel.copy()
    elif isinstance(words, Ragged):
        vals = words.values.astype(np.int64)
        if vals.size and vals.min() < -1:
            raise FormatError(f"aux_labels value {int(vals.min())} < -1", path=path, key=key)
        lengths = words.lengths
        positive = vals > 0
        if not positive.all():
            # Drop 0 / -1 entries (k2's remove_values_leq(0)), rebuilding the row lengths.
            row_of_value = np.repeat(np.arange(num_arcs), lengths)
            lengths = np.bincount(row_of_value[positive], minlength=num_arcs)
            vals = vals[positive]
        splits = np.concatenate([[0], np.cumsum(lengths)])
        word = np.zeros(num_arcs, dtype=np.int64)
        has = lengths > 0
        word[has] = vals[splits[:-1][has]]
        for a in np.nonzero(lengths > 1)[0].tolist():
            extra_words[a] = vals[splits[a] + 1:splits[a + 1]]
    else:
        w = words.astype(np.int64)
        if w.size and w.min() < -1:
            raise FormatError(f"aux_labels value {int(w.min())} < -1", path=path, key=key)
        word = np.maximum(w, 0)

    lm = attrs.get("lm_scores")
    if lm is not None:
        with np.errstate(invalid="ignore"):
            lm64 = lm.astype(np.float64)
        if np.any(np.isnan(lm64)):
            raise FormatError(f"lm_scores of arc {int(np.nonzero(np.isnan(lm64))[0][0])} is NaN", path=path, key=key)
        graph_cost = -lm64
        acoustic_cost = -(scores - lm64)
    else:
        graph_cost = np.zeros(num_arcs)
        acoustic_cost = -scores
    frame = attrs.get("frame")
    if frame is not None:
        t0 = frame.astype(np.int64)
        t1 = t0 + 1
    else:
        t0 = np.full(num_arcs, -1, dtype=np.int64)
        t1 = t0.copy()
    final_cost = np.full(num_states, np.inf)
    final_cost[num_states - 1] = 0.0
    arc_map = np.arange(num_arcs, dtype=np.int64)
    attrs = {k: np.asarray(v) for k, v in attrs.items()}

    if extra_words:
        # Chain states are numbered right after their source state, so src < dst still holds
        # whenever it held in k2's numbering: new_id(s) = s + (chain states of arcs leaving
        # states < s); the chain of arc a starts at src[a] + 1 + (chain states of arcs before a).
        extra = np.zeros(num_arcs, dtype=np.int64)
        for a, ws in extra_words.items():
            extra[a] = len(ws)
        before_arc = np.cumsum(extra) - extra
        per_state = np.bincount(src, weights=extra, minlength=num_states).astype(np.int64)
        new_id = np.arange(num_states) + np.cumsum(per_state) - per_state
        n_src, n_dst = new_id[src], new_id[dst]
        pieces_src: list[int] = []
        pieces_dst: list[int] = []
        pieces_word: list[int] = []
        arc_of_piece: list[int] = []
        for a, ws in sorted(extra_words.items()):
            first = int(src[a]) + 1 + int(before_arc[a])
            chain = list(range(first, first + len(ws)))
            orig_dst = int(n_dst[a])
            n_dst[a] = chain[0]
            pieces_src.extend(chain)
            pieces_dst.extend(chain[1:] + [orig_dst])
            pieces_word.extend(ws.tolist())
            arc_of_piece.extend([a] * len(ws))
        pieces_arc = np.array(arc_of_piece, dtype=np.int64)
        k = len(pieces_arc)
        src = np.concatenate([n_src, pieces_src]).astype(np.int64)
        dst = np.concatenate([n_dst, pieces_dst]).astype(np.int64)
        word = np.concatenate([word, pieces_word]).astype(np.int64)
        ilabel = np.concatenate([ilabel, np.zeros(k, dtype=np.int64)])
        graph_cost = np.concatenate([graph_cost, np.zeros(k)])
        acoustic_cost = np.concatenate([acoustic_cost, np.zeros(k)])
        # the first piece consumes the arc's frame; the others are input-epsilon arcs of no duration at its end,
        # so every state has one frame (Kaldi lattices need that) and the words get distinct times in order
        t0 = np.concatenate([t0, t1[pieces_arc]])
        t1 = np.concatenate([t1, t1[pieces_arc]])
        for name, v in list(attrs.items()):
            filler = v[pieces_arc] if name == "frame" else np.zeros((k,) + v.shape[1:], dtype=v.dtype)
            attrs[name] = np.concatenate([v, filler])
        arc_map = np.concatenate([arc_map, pieces_arc])
        new_final = np.full(num_states + int(extra.sum()), np.inf)
        new_final[new_id[num_states - 1]] = 0.0
        final_cost = new_final
        num_states = len(final_cost)

    try:
        if np.all(src < dst):
            order = np.lexsort((dst, src))
            lat = Lattice(num_states=num_states, src=src[order], dst=dst[order], word=word[order],
                          ilabel=ilabel[order], t0=t0[order], t1=t1[order], graph_cost=graph_cost[order],
                          acoustic_cost=acoustic_cost[order], final_graph_cost=final_cost,
                          final_acoustic_cost=final_cost.copy(), symbols=SymbolTable(), frame_shift=frame_shift,
                          key=key, word_aligned=word_aligned, attrs={k: v[order] for k, v in attrs.items()})
            # k2's pruned intersection leaves dead-end arcs (partial paths cut by the beam): trimmed here
            # as from_arcs trims every other reader's lattices
            lat, _state_map, kept = connect_with_maps(lat)
            return lat, arc_map[order][kept]
        lat, _state_map, arcs_kept = Lattice.from_arcs_with_maps(
            src=src, dst=dst, word=word, ilabel=ilabel, t0=t0, t1=t1, graph_cost=graph_cost,
            acoustic_cost=acoustic_cost, final_graph_cost=final_cost, num_states=num_states, symbols=SymbolTable(),
            frame_shift=frame_shift, key=key, word_aligned=word_aligned, attrs=attrs)
        return lat, arc_map[arcs_kept]
    except LatticeError as exc:
        raise FormatError(f"not a valid lattice: {exc.message}", path=path, key=key) from None


# ---------------------------------------------------------------------------------------------
# Lattice -> k2 dict -> torch.save

def _lattice_to_k2(lat: Lattice):
    """Arrays of one k2 FSA: (num_states, src, dst, label, scores f32, lm f32 | None, words, attrs)."""
    ns = lat.num_states
    final_states = lat.final_states
    f = int(final_states[0]) if len(final_states) == 1 else -1
    into_f = lat.dst == f
    reuse_final = (len(final_states) == 1 and f == ns - 1 and lat.final_graph_cost[f] == 0
                   and lat.final_acoustic_cost[f] == 0 and not np.any(lat.src == f)
                   and np.all(lat.word[into_f] == 0) and np.all(lat.ilabel[into_f] == 0))
    src = lat.src.astype(np.int64)
    dst = lat.dst.astype(np.int64)
    label = lat.ilabel.astype(np.int64)
    word = lat.word.astype(np.int64)
    graph = lat.graph_cost.astype(np.float64)
    acoustic = lat.acoustic_cost.astype(np.float64)
    attrs = {k: np.asarray(v) for k, v in lat.attrs.items() if k != "lm_scores"}
    is_final_arc = np.zeros(lat.num_arcs, dtype=bool)
    if reuse_final:
        is_final_arc = into_f
        num_states = ns
    else:
        # Add k2's super-final state, entered from every final state by a -1 arc carrying the final cost.
        fs = final_states.astype(np.int64)
        k = len(fs)
        num_states = ns + 1
        src = np.concatenate([src, fs])
        dst = np.concatenate([dst, np.full(k, ns)])
        label = np.concatenate([label, np.zeros(k, dtype=np.int64)])
        word = np.concatenate([word, np.zeros(k, dtype=np.int64)])
        graph = np.concatenate([graph, lat.final_graph_cost[fs]])
        acoustic = np.concatenate([acoustic, lat.final_acoustic_cost[fs]])
        is_final_arc = np.concatenate([is_final_arc, np.ones(k, dtype=bool)])
        for name, v in list(attrs.items()):
            if name == "frame":
                filler = np.full(k, lat.num_frames, dtype=v.dtype)
            elif name == "tokens":
                filler = np.full(k, -1, dtype=v.dtype)
            else:
                filler = np.zeros((k,) + v.shape[1:], dtype=v.dtype)
            attrs[name] = np.concatenate([v, filler])
        order = np.argsort(src, kind="stable")
        src, dst, label, word, is_final_arc = (x[order] for x in (src, dst, label, word, is_final_arc))
        graph, acoustic = graph[order], acoustic[order]
        attrs = {k: v[order] for k, v in attrs.items()}
    label = np.where(is_final_arc, -1, label)
    # "+ 0.0" turns -0.0 (from negating a zero cost) back into the 0.0 k2 writes.
    scores = (-(graph + acoustic) + 0.0).astype(np.float32)
    lm = (-graph + 0.0).astype(np.float32) if ("lm_scores" in lat.attrs or np.any(graph != 0)) else None
    return num_states, src, dst, label, scores, lm, word, is_final_arc, attrs


class _RaggedOut:
    """Pickles as k2's ``_k2.ragged.RaggedTensor`` (state ``(row_splits, 'row_ids1', values)``)."""

    def __init__(self, row_splits, values):
        self.state = (row_splits, "row_ids1", values)

    def __reduce_ex__(self, protocol):
        import copyreg

        # (copyreg.__newobj__ makes pickle write NEWOBJ, as for any new-style class; typeshed does not declare it)
        return copyreg.__newobj__, (_RaggedOut,), self.state  # type: ignore[attr-defined]


class _K2Pickler(pickle._Pickler):
    """Pure-Python pickler that writes the ragged stand-in as the global ``_k2.ragged.RaggedTensor``
    (so k2's ``Fsa.from_dict(torch.load(...))`` gets a real ragged tensor) without importing k2."""

    # pickle._Pickler (the pure-Python pickler) has write, memoize and save_global; typeshed declares none of them
    def save_global(self, obj, name=None):
        if obj is _RaggedOut:
            self.write(pickle.GLOBAL + b"_k2.ragged\nRaggedTensor\n")  # type: ignore[attr-defined]
            self.memoize(obj)  # type: ignore[attr-defined]
            return
        super().save_global(obj, name)  # type: ignore[misc]


class _K2PickleModule:
    Pickler = _K2Pickler
    Unpickler = pickle.Unpickler
    load = staticmethod(pickle.load)


def write_k2_lattice(lattices: Lattice | Sequence[Lattice], path: str, *, aux_labels: str = "tensor") -> None:
    """Write lattices as a k2 ``as_dict()`` file that ``k2.Fsa.from_dict(torch.load(path))`` accepts.

    Args:
      lattices: one :class:`Lattice` (written as a single Fsa, 2-D ``arcs``) or a sequence
        (written as an FsaVec, 1-D ``arcs``).
      path: output file (written atomically; needs torch).
      aux_labels: ``"tensor"`` (int32, -1 on final arcs) or ``"ragged"`` (k2 RaggedTensor, one
        word or none per arc, final rows empty, as in icefall HLG lattices).

    Conversion (the inverse of :func:`read_k2_lattices`):
      * ``scores = float32(-(graph_cost + acoustic_cost))``; ``lm_scores = float32(-graph_cost)``
        is written if the lattice has an ``lm_scores`` attribute or any non-zero graph cost.
        Costs are rounded to float32 (k2 stores float32).
      * If the lattice has one final state, it is the last state, has final cost 0 and no
        outgoing arcs, and only epsilon arcs (``word == ilabel == 0``) enter it (the shape
        :func:`read_k2_lattices` produces), it becomes k2's final state and those arcs the -1
        arcs.  Otherwise a super-final state is added, entered from each final state by a -1 arc
        carrying the final cost (``frame`` = ``num_frames``, ``tokens`` = -1, other attrs 0).
      * An acceptor (``ilabel == word`` on every arc) is written without ``aux_labels``.
      * The keys: when every lattice has one (``Lattice.key``), ``keys`` (the list of keys, in order) and
        ``key_index`` (per arc, its FSA's position in ``keys``), which :func:`read_k2_lattices` reads back and
        ``k2.Fsa.from_dict`` keeps (see the module docstring).  Keys must then be unique.
      * Labels are ``ilabel``; every numeric ``attrs`` array is written as a per-arc tensor.  An attribute
        of Python objects (the pool of transition-id strings of a lattice read from a Kaldi archive) has no
        tensor form and is not written: words, times and costs are, so a Kaldi lattice converts to k2.
    """
    torch = require("torch", "torch")
    if aux_labels not in ("tensor", "ragged"):
        raise ValueError(f"aux_labels must be 'tensor' or 'ragged', got {aux_labels!r}")
    single = isinstance(lattices, Lattice)
    lats = [lattices] if isinstance(lattices, Lattice) else list(lattices)
    if not lats:
        raise LatticeError("write_k2_lattice needs at least one lattice")
    names = set(lats[0].attrs)
    if names & {KEYS_ENTRY, KEY_INDEX_ENTRY}:
        raise LatticeError(f"the arc attributes {sorted(names & {KEYS_ENTRY, KEY_INDEX_ENTRY})} have the names of the "
                           "entries that hold the lattices' keys in a k2 file", key=lats[0].key or None)
    for lat in lats[1:]:
        if set(lat.attrs) != names:
            raise LatticeError(f"all lattices of an FsaVec must have the same attributes: {sorted(names)} vs "
                               f"{sorted(lat.attrs)}", key=lat.key or None)
    write_keys = all(lat.key for lat in lats)
    if write_keys:
        seen: set[str] = set()
        for lat in lats:
            if lat.key in seen:
                raise MismatchError(f"lattice key {lat.key!r} is given twice; the keys of a k2 file must be unique",
                                    key=lat.key)
            seen.add(lat.key)
    parts = [_lattice_to_k2(lat) for lat in lats]
    acceptor = all(np.array_equal(lat.ilabel, lat.word) for lat in lats)
    write_lm = any(p[5] is not None for p in parts)

    arc_rows = [np.stack([p[1], p[2], p[3], p[4].view(np.int32)], axis=1).astype(np.int32) for p in parts]
    if single:
        arcs = arc_rows[0]
    else:
        state_splits = np.concatenate([[0], np.cumsum([p[0] for p in parts])])
        arc_splits = np.concatenate([[0], np.cumsum([len(r) for r in arc_rows])])
        arcs = np.concatenate([[len(parts), 0], state_splits, arc_splits,
                               np.concatenate(arc_rows).reshape(-1) if arc_rows else []]).astype(np.int32)
    out = {"arcs": torch.from_numpy(np.ascontiguousarray(arcs))}
    if not acceptor:
        if aux_labels == "tensor":
            aux = np.concatenate([np.where(p[7], -1, p[6]) for p in parts]).astype(np.int32)
            out["aux_labels"] = torch.from_numpy(aux)
        else:
            words = np.concatenate([np.where(p[7], 0, p[6]) for p in parts])
            lengths = (words > 0).astype(np.int64)
            row_splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
            out["aux_labels"] = _RaggedOut(torch.from_numpy(row_splits),
                                           torch.from_numpy(words[words > 0].astype(np.int32)))
    for name in sorted(names - {"lm_scores"}):
        if any(np.asarray(lat.attrs[name]).dtype == object for lat in lats):
            continue  # (Kaldi's pool of transition-id strings: no tensor form in a k2 file; see the docstring)
        out[name] = torch.from_numpy(np.ascontiguousarray(np.concatenate([p[8][name] for p in parts])))
    if write_lm:
        lm = np.concatenate([p[5] if p[5] is not None else np.zeros(len(p[1]), np.float32) for p in parts])
        out["lm_scores"] = torch.from_numpy(lm.astype(np.float32))
    if write_keys:
        out[KEYS_ENTRY] = [lat.key for lat in lats]
        out[KEY_INDEX_ENTRY] = torch.from_numpy(np.concatenate([np.full(len(p[1]), i, dtype=np.int32)
                                                                for i, p in enumerate(parts)]))
    buf = io.BytesIO()
    torch.save(out, buf, pickle_module=_K2PickleModule, pickle_protocol=2)
    with atomic_write(str(path), "wb", compress=False) as f:
        f.write(buf.getvalue())
