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
wrong (the store turns it into a FormatError naming the index).
"""
from __future__ import annotations

import numpy as np

from .._ext import native

#: Largest time in microseconds a posting list holds (2^53: every such integer is an exact float64).
MAX_MICROSECONDS = 2 ** 53
_SCORE = np.dtype("<f8")
_decode = native("postings").decode
#: Below this a float sum of a list's times is surely within :data:`MAX_MICROSECONDS` (relative error far
#: below 1e-6 for any list a blob can hold); above it the exact check decides.
_NEAR_LIMIT = MAX_MICROSECONDS * (1 - 1e-6)


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


def first_bad_posting(counts, ticks, blobs) -> int | None:
    """The index of the first of many posting lists that :func:`decode_postings` refuses (None: all are
    good), checked at once with numpy (a merge checks every row of a shard this way, about a microsecond
    per hit).  ``counts`` and ``ticks`` must already be integers >= 1 and ``blobs`` bytes (the merge's
    SQL checks them first)."""
    n = len(blobs)
    if not n:
        return None
    cnt = np.array(counts, dtype=np.int64)
    tick = np.array(ticks, dtype=np.int64)
    lens = np.fromiter(map(len, blobs), dtype=np.int64, count=n)
    nv = lens - 8 * cnt
    short = nv < 2 * cnt
    if short.any():  # the first short one, unless one before it is bad otherwise
        k = int(np.flatnonzero(short)[0])
        before = first_bad_posting(counts[:k], ticks[:k], blobs[:k]) if k else None
        return k if before is None else before
    big = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    rows = np.arange(n)

    def region(starts, sizes):
        owner = np.repeat(rows, sizes)
        return owner, starts[owner] + np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes)

    _, spos = region(off[:-1] + nv, 8 * cnt)
    scores = big[spos].view(_SCORE)
    vown, vpos = region(off[:-1], nv)
    vb = big[vpos]
    term = vb < 0x80
    broken = (np.bincount(vown[term], minlength=n) != 2 * cnt) | ~term[np.cumsum(nv) - 1]
    if broken.any():  # the first list whose varints do not parse, unless one before it is bad otherwise
        k = int(np.flatnonzero(broken)[0])
        before = first_bad_posting(counts[:k], ticks[:k], blobs[:k]) if k else None
        return k if before is None else before
    bad = np.zeros(n, dtype=bool)
    bad[np.repeat(rows, cnt)[~(np.isfinite(scores) & (scores >= 0))]] = True
    last = np.flatnonzero(term)
    first = np.r_[0, last[:-1] + 1]
    tok_row = vown[last]
    bad[tok_row[(last - first) > 7]] = True  # more than 8 bytes: beyond any time
    k = np.minimum(np.arange(len(vb)) - np.repeat(first, last - first + 1), 8).astype(np.uint64)
    values = np.add.reduceat((vb & 0x7F).astype(np.uint64) << (np.uint64(7) * k), first).astype(np.float64)
    in_row = np.arange(len(last)) - np.repeat(np.cumsum(2 * cnt) - 2 * cnt, 2 * cnt)
    is_delta = in_row < cnt[tok_row]
    total = np.bincount(tok_row[is_delta], weights=values[is_delta], minlength=n)
    longest = np.zeros(n)
    np.maximum.at(longest, tok_row[~is_delta], values[~is_delta])
    # the float sums round: a list near the limit is decided by the decoder's exact integers
    near = ~bad & ((total * tick > _NEAR_LIMIT) | (longest * tick > _NEAR_LIMIT))
    for k in np.flatnonzero(near).tolist():
        try:
            decode_postings(int(cnt[k]), int(tick[k]), blobs[k])
        except ValueError:
            bad[k] = True
    return int(np.flatnonzero(bad)[0]) if bad.any() else None
