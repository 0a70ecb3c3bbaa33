"""The posting lists of the term index (lattice_tools.kws.postings): lossless, and every damaged list refused
the same way by the one-list decoder and the many-list check of a merge."""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.kws.postings import (
    MAX_MICROSECONDS,
    decode_postings,
    encode_postings,
    first_bad_posting,
    posting_problem,
)

_HIT = st.tuples(st.integers(0, 10**11), st.integers(0, 10**7), st.floats(0, 2, allow_nan=False))
_LISTS = st.lists(st.lists(_HIT, min_size=1, max_size=6), min_size=1, max_size=6)


def _encode(lists, scale=1):
    rows = [sorted((b * scale, d * scale, s) for b, d, s in hits) for hits in lists]
    flat = [h for r in rows for h in r]
    starts = np.cumsum([0] + [len(r) for r in rows[:-1]])
    count, tick, data, offs = encode_postings(starts, np.array([h[0] for h in flat], dtype=np.int64),
                                              np.array([h[1] for h in flat], dtype=np.int64),
                                              np.array([h[2] for h in flat]))
    return rows, count.tolist(), tick.tolist(), [data[offs[i]:offs[i + 1]] for i in range(len(rows))]


@settings(max_examples=100, deadline=None)
@given(lists=_LISTS, scale=st.sampled_from([1, 3, 10_000]))
def test_round_trip_is_exact(lists, scale):
    rows, count, tick, blobs = _encode(lists, scale)
    for r, c, t, b in zip(rows, count, tick, blobs, strict=True):
        tb, du, sc = decode_postings(c, t, b)
        assert [(int(x), int(y), float(z)) for x, y, z in zip(tb, du, sc, strict=True)] == r
        assert t % scale == 0 or not any(h[0] or h[1] for h in r)  # the tick takes out the common factor
    assert first_bad_posting(count, tick, blobs) is None


@settings(max_examples=150, deadline=None)
@given(lists=_LISTS, edits=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 400), st.integers(0, 255)),
                                    min_size=1, max_size=4),
       cut=st.integers(-3, 3), bump=st.integers(-1, 1), tick=st.sampled_from([None, 1, 2**40, MAX_MICROSECONDS]))
def test_damaged_lists_are_refused_by_both_checks(lists, edits, cut, bump, tick):
    _, count, ticks, blobs = _encode(lists)
    blobs = [bytearray(b) for b in blobs]
    for row, pos, value in edits:
        b = blobs[row % len(blobs)]
        b[pos % len(b)] = value
    blobs[0] = blobs[0][:len(blobs[0]) + cut] if cut < 0 else blobs[0] + bytes(cut)
    count[-1] = max(1, count[-1] + bump)
    if tick is not None:
        ticks[0] = tick
    blobs = [bytes(b) for b in blobs]
    first_bad = None
    for i, (c, t, b) in enumerate(zip(count, ticks, blobs, strict=True)):
        try:
            tb, du, sc = decode_postings(c, t, b)
        except ValueError:
            first_bad = i
            break
        assert all(0 <= x <= MAX_MICROSECONDS for x in tb) and all(0 <= x <= MAX_MICROSECONDS for x in du)
        assert all(math.isfinite(x) and x >= 0 for x in sc)
    assert first_bad_posting(count, ticks, blobs) == first_bad


@pytest.mark.parametrize("count, tick, data, words", [
    (0, 1, b"\0" * 10, "count"), (1, 0, b"\0" * 10, "tick"), (1, 1, "text", "blob"),
    (2, 1, b"\0" * 10, "too short"), (2 ** 70, 1, b"\0" * 10, "too short"), (1, 1, b"\x80\x80" + b"\0" * 8, "does not hold"),
    (1, 1, b"\0\0" + np.array([np.inf]).tobytes(), "score"), (1, 1, b"\0\0" + np.array([-1.0]).tobytes(), "score")])
def test_each_fault_says_what_is_wrong(count, tick, data, words):
    with pytest.raises(ValueError, match=words):
        decode_postings(count, tick, data)


def _leb128(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


@pytest.mark.parametrize("deltas, good", [
    ([MAX_MICROSECONDS - 1, 1], True), ([MAX_MICROSECONDS, 0], True),
    # 2^53 + 1 as a float sum is 2^53: the bound is on the exact sum of the starts
    ([MAX_MICROSECONDS, 1], False), ([MAX_MICROSECONDS // 2, MAX_MICROSECONDS // 2 + 1], False)])
def test_the_time_bound_is_exact(deltas, good):
    data = b"".join(map(_leb128, deltas)) + _leb128(0) * 2 + struct.pack("<2d", 0.5, 0.25)
    assert first_bad_posting([2], [1], [data]) == (None if good else 0)
    if good:
        assert decode_postings(2, 1, data) == ([deltas[0], sum(deltas)], [0, 0], [0.5, 0.25])
    else:
        with pytest.raises(ValueError, match="beyond 2"):
            decode_postings(2, 1, data)


def test_a_long_run_of_continuation_bytes_is_refused_quickly():
    data = b"\xff" * 2_000_000 + b"\x01\x00" + bytes(8)
    with pytest.raises(ValueError, match="too large"):
        decode_postings(1, 1, data)
    assert first_bad_posting([1], [1], [data]) == 0


def _reference_decode(count, tick, data):
    """The posting format decoded in plain Python, byte by byte (the oracle of the compiled decoder)."""
    nv = len(data) - 8 * count
    if nv < 2 * count:
        raise ValueError("too short")
    values, value, shift, too_long = [], 0, 0, False
    for byte in data[:nv]:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            too_long |= shift > 56
            values.append(value)
            value = shift = 0
    if len(values) != 2 * count or shift:
        raise ValueError("does not hold")
    if too_long:
        raise ValueError("too large")
    starts = [sum(values[:i + 1]) for i in range(count)]
    if max(starts + values[count:]) * tick > MAX_MICROSECONDS:
        raise ValueError("beyond 2")
    scores = list(struct.unpack(f"<{count}d", data[nv:]))
    for x in scores:
        if not (math.isfinite(x) and x >= 0):
            raise ValueError("score")
    return [t * tick for t in starts], [d * tick for d in values[count:]], scores


@settings(max_examples=400, deadline=None)
@given(lists=_LISTS, edits=st.lists(st.tuples(st.integers(0, 400), st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, 0xF0])),
                                    max_size=3),
       raw=st.one_of(st.none(), st.binary(min_size=0, max_size=60)), count=st.integers(1, 6),
       tick=st.sampled_from([1, 10_000, 2**40, MAX_MICROSECONDS]))
def test_the_decoder_agrees_with_a_byte_by_byte_reference(lists, edits, raw, count, tick):
    """Every list, good or damaged (bytes edited, or random bytes), decodes to the reference's hits or is
    refused for the same reason."""
    if raw is None:
        _, counts, _, blobs = _encode(lists[:1])
        count, data = counts[0], bytearray(blobs[0])
        for pos, value in edits:
            data[pos % len(data)] = value
        data = bytes(data)
    else:
        data = raw
    try:
        expected = _reference_decode(count, tick, data)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)) as refused:
            decode_postings(count, tick, data)
        assert posting_problem(count, tick, data) == str(refused.value)  # the merge's check: the same words
    else:
        assert decode_postings(count, tick, data) == expected
        assert posting_problem(count, tick, data) is None


@pytest.mark.parametrize("count, tick, data", [
    (1, 1, b"\0" * 10), (1.0, 1, b"\0" * 10), ("1", 1, b"\0" * 10), (None, 1, b"\0" * 10), (0, 1, b"\0" * 10),
    (2 ** 63 - 1, 1, b"\0" * 10), (1, 1.0, b"\0" * 10), (1, "1", b"\0" * 10), (1, None, b"\0" * 10),
    (1, 0, b"\0" * 10), (1, MAX_MICROSECONDS + 1, b"\0" * 10), (1, 1, "0" * 10), (1, 1, None), (1, 1, 5),
    (1, 1, b"\0\0" + struct.pack("<d", math.nan))])
def test_the_sql_function_says_what_the_decoder_says(count, tick, data):
    """``posting_problem`` run by SQLite on values of every SQLite type (what a merge does with a shard's rows)
    refuses what ``decode_postings`` refuses, in its words."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.create_function("posting_problem", 3, posting_problem, deterministic=True)
    (problem,) = conn.execute("SELECT posting_problem(?, ?, ?)", (count, tick, data)).fetchone()
    try:
        decode_postings(count, tick, data)
    except ValueError as exc:
        assert problem == str(exc)
    else:
        assert problem is None
