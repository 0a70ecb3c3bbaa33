"""Reading CTC log-probabilities (``[T, V]`` per utterance; column 0 is the blank).

Accepted inputs (:func:`read_logprobs`):

* ``.npy``: ``[T, V]`` (one utterance) or ``[N, T, V]`` (padded batch; ``lengths`` gives the
  valid frames of each row, default all ``T``).
* ``.npz``: one ``[T, V]`` array per utterance key.
* ``.pt`` (needs torch): a tensor like the ``.npy`` case, or a dict with ``nnet_output``
  ``[N, T, V]`` and icefall ``supervision_segments`` (rows ``[sequence_index, start_frame,
  num_frames]``), or a dict with ``logprobs`` and optional ``lengths`` / ``keys``.
* Kaldi matrix archives: ``ark:path`` / ``ark,t:path`` / a path ending in ``.ark``: text
  (``key  [`` rows ``]``) or binary (``\\0B`` + ``FM``/``DM`` matrices) entries.

Values must be finite or ``-inf`` (log 0); ``NaN`` and ``+inf`` raise :class:`FormatError`.
"""
from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator

import numpy as np

from ..core.errors import FormatError, MismatchError, require
from ..core.files import open_binary_input

_ARK_PREFIX = re.compile(r"^ark(,[a-z]+)*:")


def _check(key: str, a: np.ndarray, path: str) -> np.ndarray:
    if a.ndim != 2:
        raise FormatError(f"log-probabilities must be [T, V], got shape {a.shape}", path=path, key=key)
    if a.shape[0] == 0 or a.shape[1] < 2:
        raise FormatError(f"log-probabilities must have at least 1 frame and 2 columns, got {a.shape}",
                          path=path, key=key)
    if np.isnan(a).any() or np.isposinf(a).any():
        raise FormatError("log-probabilities contain NaN or +inf", path=path, key=key)
    return np.ascontiguousarray(a, dtype=np.float32)


def _split_batch(arr: np.ndarray, lengths, keys, stem: str, path: str) -> list[tuple[str, np.ndarray]]:
    if arr.ndim == 2:
        return [(keys[0] if keys else stem, _check(keys[0] if keys else stem, arr, path))]
    if arr.ndim != 3:
        raise FormatError(f"expected [T, V] or [N, T, V] log-probabilities, got shape {arr.shape}", path=path)
    n, t = arr.shape[:2]
    if lengths is None:
        lengths = [t] * n
    lengths = [int(x) for x in np.asarray(lengths).reshape(-1)]
    if len(lengths) != n:
        raise MismatchError(f"{len(lengths)} lengths for a batch of {n} utterances", path=path)
    if keys is not None and len(keys) != n:
        raise MismatchError(f"{len(keys)} keys for a batch of {n} utterances", path=path)
    out = []
    for i, length in enumerate(lengths):
        key = keys[i] if keys is not None else f"{stem}-{i}"
        if not 0 < length <= t:
            raise FormatError(f"length {length} outside 1..{t}", path=path, key=key)
        out.append((key, _check(key, arr[i, :length], path)))
    return out


def read_logprobs(path, lengths=None, keys=None) -> list[tuple[str, np.ndarray]]:
    """All utterances of ``path`` as ``(key, float32 [T, V])`` pairs, in file order.

    ``lengths``: valid frames per row of a padded ``[N, T, V]`` batch (a sequence, or a path to a
    ``.npy``/text file of integers).  ``keys``: names for the utterances of a batch (default
    ``<file stem>-<index>``; a single ``[T, V]`` array is named after the file stem).
    """
    return list(iter_logprobs(path, lengths=lengths, keys=keys))


def iter_logprobs(path, lengths=None, keys=None) -> Iterator[tuple[str, np.ndarray]]:
    """Stream ``(key, [T, V])`` pairs (Kaldi archives are read one matrix at a time)."""
    spec = str(path)
    if isinstance(lengths, (str, os.PathLike)):
        lp = str(lengths)
        lengths = np.load(lp) if lp.endswith(".npy") else np.loadtxt(lp, dtype=np.int64, ndmin=1)
    keys = list(keys) if keys is not None else None
    if _ARK_PREFIX.match(spec) or spec.endswith(".ark") or spec.endswith(".ark.gz"):
        yield from _iter_kaldi_matrices(_ARK_PREFIX.sub("", spec))
        return
    if not os.path.exists(spec):
        raise FormatError("no such file", path=spec)
    stem = os.path.basename(spec).split(".")[0]
    if spec.endswith(".npy"):
        try:
            arr = np.load(spec, allow_pickle=False)
        except ValueError as exc:
            raise FormatError(f"not a numeric .npy array ({exc})", path=spec) from None
        yield from _split_batch(arr, lengths, keys, stem, spec)
    elif spec.endswith(".npz"):
        with np.load(spec, allow_pickle=False) as z:
            for key in z.files:
                yield key, _check(key, z[key], spec)
    elif spec.endswith(".pt"):
        yield from _read_pt(spec, lengths, keys, stem)
    else:
        raise FormatError("unknown log-probability format; expected .npy, .npz, .pt or a Kaldi matrix "
                          "archive (ark:, ark,t:, *.ark)", path=spec)


def _read_pt(path: str, lengths, keys, stem) -> list[tuple[str, np.ndarray]]:
    torch = require("torch", "torch")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise FormatError(f"cannot load with torch.load(weights_only=True): {exc}", path=path) from None
    if isinstance(obj, torch.Tensor):
        return _split_batch(obj.detach().float().numpy(), lengths, keys, stem, path)
    if not isinstance(obj, dict):
        raise FormatError(f"expected a tensor or a dict, got {type(obj).__name__}", path=path)
    if "nnet_output" in obj:
        out = obj["nnet_output"].detach().float().numpy()
        segs = obj.get("supervision_segments")
        if segs is None:
            return _split_batch(out, lengths, keys, stem, path)
        segs = np.asarray(segs, dtype=np.int64)
        if segs.ndim != 2 or segs.shape[1] != 3:
            raise FormatError(f"supervision_segments must be [N, 3], got {segs.shape}", path=path)
        if out.ndim != 3:
            raise FormatError(f"nnet_output must be [N, T, V], got {out.shape}", path=path)
        res = []
        for i, (seq, start, dur) in enumerate(segs.tolist()):
            key = keys[i] if keys is not None else f"{stem}-{i}"
            if not (0 <= seq < out.shape[0] and 0 <= start and dur > 0 and start + dur <= out.shape[1]):
                raise FormatError(f"supervision segment {[seq, start, dur]} outside nnet_output {out.shape}",
                                  path=path, key=key)
            res.append((key, _check(key, out[seq, start:start + dur], path)))
        return res
    if "logprobs" in obj:
        arr = obj["logprobs"]
        arr = arr.detach().float().numpy() if isinstance(arr, torch.Tensor) else np.asarray(arr)
        return _split_batch(arr, obj.get("lengths", lengths), obj.get("keys", keys), stem, path)
    raise FormatError(f"dict has none of the keys 'nnet_output', 'logprobs' (has {sorted(obj)})", path=path)


# -- Kaldi matrix archives -----------------------------------------------------------------------
def _iter_kaldi_matrices(path: str) -> Iterator[tuple[str, np.ndarray]]:
    f = open_binary_input(path)
    try:
        data = f.read()
    finally:
        if f is not getattr(__import__("sys").stdin, "buffer", None):
            f.close()
    pos, n = 0, len(data)
    while True:
        while pos < n and data[pos:pos + 1].isspace():
            pos += 1
        if pos >= n:
            return
        end = pos
        while end < n and not data[end:end + 1].isspace():
            end += 1
        key = data[pos:end].decode("utf-8", errors="replace")
        pos = end + 1  # the single space after the key
        if data[pos:pos + 2] == b"\0B":
            arr, pos = _binary_matrix(data, pos + 2, path, key)
        else:
            arr, pos = _text_matrix(data, pos, path, key)
        yield key, _check(key, arr, path)


def _binary_matrix(data: bytes, pos: int, path: str, key: str):
    tok_end = data.find(b" ", pos)
    token = data[pos:tok_end].decode("ascii", errors="replace")
    if token not in ("FM", "DM"):
        raise FormatError(f"expected a binary matrix token FM or DM, got {token!r}", path=path, key=key)
    pos = tok_end + 1
    try:
        size1, rows, size2, cols = struct.unpack_from("<bibi", data, pos)
    except struct.error:
        raise FormatError("truncated binary matrix header", path=path, key=key) from None
    if size1 != 4 or size2 != 4 or rows < 0 or cols < 0:
        raise FormatError("corrupt binary matrix header", path=path, key=key)
    pos += 10
    dtype = np.float32 if token == "FM" else np.float64
    nbytes = rows * cols * np.dtype(dtype).itemsize
    if pos + nbytes > len(data):
        raise FormatError(f"truncated binary matrix ({rows}x{cols})", path=path, key=key)
    arr = np.frombuffer(data, dtype=dtype, count=rows * cols, offset=pos).reshape(rows, cols)
    return arr, pos + nbytes


def _text_matrix(data: bytes, pos: int, path: str, key: str):
    open_b = data.find(b"[", pos)
    if open_b < 0 or data[pos:open_b].strip():
        raise FormatError("expected '[' starting a text matrix", path=path, key=key)
    close_b = data.find(b"]", open_b)
    if close_b < 0:
        raise FormatError("text matrix has no closing ']'", path=path, key=key)
    body = data[open_b + 1:close_b].decode("ascii", errors="replace")
    rows = [r.split() for r in body.strip().split("\n") if r.strip()]
    if not rows:
        raise FormatError("empty text matrix", path=path, key=key)
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise FormatError(f"row {i} has {len(r)} values, expected {width}", path=path, key=key)
    try:
        arr = np.array(rows, dtype=np.float64)
    except ValueError as exc:
        raise FormatError(f"non-numeric value in text matrix ({exc})", path=path, key=key) from None
    return arr, close_b + 1


def write_kaldi_text_matrices(path, items) -> None:
    """Write ``(key, [T, V])`` pairs as a Kaldi text matrix archive (``ark,t:``), e.g. for tests."""
    from ..core.files import atomic_write

    with atomic_write(str(path)) as f:
        for key, arr in items:
            arr = np.asarray(arr)
            f.write(f"{key}  [\n")
            for i, row in enumerate(arr):
                f.write("  " + " ".join(repr(float(x)) for x in row) + (" ]\n" if i == len(arr) - 1 else "\n"))
