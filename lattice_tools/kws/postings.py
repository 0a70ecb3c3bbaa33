"""The posting lists of the term index: the hits of one term in one utterance as one compact blob.

A posting list of ``count`` hits, sorted by (start, duration, score), is stored as ``(count, tick, data)``:

* ``tick``: the greatest common divisor (in microseconds, >= 1) of the hits' starts and durations -- 10,000
  for a lattice of 10 ms frames placed at a whole number of frames -- so that the numbers below are small;
* ``data``: ``count`` unsigned LEB128 varints of the starts in ticks, the first absolute and the others the
  difference to the previous start (>= 0: sorted), then ``count`` varints of the durations in ticks, then
  the ``count`` scores as IEEE float64, little-endian.

Times are whole microseconds (the index's time unit: a start is ``round(seconds, 6)``), scores exact float64:
the posting list gives back every hit bit for bit.  On the 138k-link bench lattice the exact 3-word index
takes about 11 bytes per hit instead of about 70 as a row of (term, utterance, start, duration, score).

:func:`encode_postings` encodes the posting lists of many terms at once (numpy, no Python loop per hit);
:func:`decode_postings` decodes one (compiled: a look-up decodes a list of one or two hits, where numpy's
fixed cost per call was most of the time), checking every byte: a damaged blob is a ValueError saying what is
wrong (the store turns it into a FormatError naming the index); :func:`posting_problem` is the same check
without the decoding (what a merge runs on every row of its shards).
"""
from __future__ import annotations

import numpy as np

from .._ext import native

#: Largest time in microseconds a posting list holds (2^53: every such integer is an exact float64).
MAX_MICROSECONDS = 2 ** 53
_SCORE = np.dtype("<f8")
_decode = native("postings").decode


def _varint_lengths(values: np.ndarray) -> np.ndarray:
    """Bytes of the LEB128 encoding of each (uint64) value."""
    n = np.ones(len(values), dtype=np.int64)
    for k in range(1, 10):
        n += values >= (np.uint64(1) << np.uint64(7 * k))
    return n


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The LEB128 bytes of ``values`` (uint64) one after the other, and each value's first byte offset
    (length len(values) + 1)."""
    lengths = _varint_lengths(values)
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    owner = np.repeat(np.arange(len(values)), lengths)
    k = np.arange(total, dtype=np.int64) - offsets[owner]  # byte number within its value
    v = values[owner]
    out = ((v >> (np.uint64(7) * k.astype(np.uint64))) & np.uint64(0x7F)).astype(np.uint8)
    out |= np.where(k < lengths[owner] - 1, 0x80, 0).astype(np.uint8)
    return out, offsets


def encode_postings(starts: np.ndarray, tbeg: np.ndarray, dur: np.ndarray, score: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, bytes, np.ndarray]:
    """Encode consecutive posting lists at once.

    ``tbeg``/``dur`` (whole microseconds, int64 >= 0, at most :data:`MAX_MICROSECONDS`) and ``score``
    (float64) are the hits, each list's hits contiguous and sorted by (start, duration, score);
    ``starts`` is the first hit of each list (sorted, ``starts[0] == 0``).  Returns ``(count, tick, data,
    offsets)``: per list its number of hits and tick, and one byte string of all lists' data, list ``i``
    being ``data[offsets[i]:offsets[i + 1]]``."""
    n = len(tbeg)
    g = len(starts)
    ends = np.r_[starts[1:], n].astype(np.int64)
    count = ends - starts
    if not g:
        return count, np.zeros(0, dtype=np.int64), b"", np.zeros(1, dtype=np.int64)
    tick = np.gcd(np.gcd.reduceat(tbeg, starts), np.gcd.reduceat(dur, starts))
    tick = np.where(tick > 0, tick, 1)
    owner = np.repeat(np.arange(g), count)
    t = tbeg // tick[owner]
    first = np.zeros(n, dtype=bool)
    first[starts] = True
    delta = np.where(first, t, t - np.r_[0, t[:-1]])
    # one token stream: list i's deltas at [2 s_i, s_i + e_i), its durations at [s_i + e_i, 2 e_i)
    idx = np.arange(n, dtype=np.int64)
    tokens = np.empty(2 * n, dtype=np.uint64)
    tokens[starts[owner] + idx] = delta.astype(np.uint64)
    tokens[ends[owner] + idx] = (dur // tick[owner]).astype(np.uint64)
    vbytes, voff = _varints(tokens)
    vlen = voff[2 * ends] - voff[2 * starts]  # varint bytes of each list
    size = vlen + 8 * count
    offsets = np.zeros(g + 1, dtype=np.int64)
    np.cumsum(size, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    # varint bytes: list i's go to offsets[i] + (position - voff[2 s_i])
    byte_owner = np.repeat(np.arange(g), vlen)
    out[offsets[byte_owner] + np.arange(len(vbytes)) - voff[2 * starts][byte_owner]] = vbytes
    # score bytes: after them
    sbytes = np.ascontiguousarray(score, dtype=_SCORE).view(np.uint8)
    sb_owner = np.repeat(np.arange(g), 8 * count)
    out[offsets[sb_owner] + vlen[sb_owner] + np.arange(8 * n) - 8 * starts[sb_owner]] = sbytes
    return count, tick, out.tobytes(), offsets


def decode_postings(count, tick, data) -> tuple[list[int], list[int], list[float]]:
    """``(tbeg, dur, score)`` of one posting list as lists (times in whole microseconds), every field
    checked: a ValueError says what is wrong with a damaged one.

    The bytes are decoded by a compiled kernel (``lattice_tools/_ext/postings.c``) for lists of every size:
    nearly every list of a term index holds one or two hits, where numpy's fixed cost per call (or a Python
    loop over the bytes) was most of a look-up."""
    if type(count) is not int or count < 1:
        raise ValueError(f"hit count {count!r} is not an integer >= 1")
    if type(tick) is not int or not 1 <= tick <= MAX_MICROSECONDS:
        raise ValueError(f"time tick {tick!r} is not an integer in [1, 2^53]")
    if not isinstance(data, bytes):
        raise ValueError(f"posting data is {type(data).__name__}, not a blob")
    return _decode(count, tick, data)


#: ``posting_problem(count, tick, data) -> str | None``: what :func:`decode_postings` would refuse in one posting
#: list, in its words, or None when nothing -- the same compiled check, without building the lists.  It takes
#: any values (those of an SQLite row: a count or tick that is not an integer in range, or data that is not a
#: blob, is a problem).  The compiled function itself, with no Python frame around it: a merge registers it
#: as an SQL function (``sqlite3.Connection.create_function``) that SQLite runs on every row of a shard.
posting_problem = native("postings").problem


def first_bad_posting(counts, ticks, blobs) -> int | None:
    """The index of the first of many posting lists that :func:`decode_postings` refuses (None: all are
    good), by :func:`posting_problem`."""
    rows = enumerate(zip(counts, ticks, blobs, strict=True))
    return next((i for i, row in rows if posting_problem(*row) is not None), None)
