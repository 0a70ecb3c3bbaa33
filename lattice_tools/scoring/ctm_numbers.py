"""Exact parsing of CTM numbers on the bytes of a file, for the columnar reader
(:mod:`lattice_tools.scoring.ctm_columns`): ``[-]digits[.digits]`` tokens of at most 8 characters read
as 8-byte words (SWAR: the digits combined pairwise into an integer mantissa, divided by a power of
ten -- both exact doubles, so the quotient is the correctly rounded value ``float()`` gives)."""
from __future__ import annotations

import numpy as np

MASK = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], np.uint64)


_NUM_CHUNK = 1 << 15


def parse_numbers(u64, starts, lens):
    """float64 per token; NaN for '*'; None when a token is not ``*`` or ``[-]digits[.digits]`` of
    at most 8 characters.  Works in chunks of tokens whose temporaries stay in the CPU cache (the
    parse is a few dozen passes over its arrays: memory-bound on whole-file arrays)."""
    n = len(starts)
    if n <= _NUM_CHUNK:
        return _numbers_chunk(u64, starts, lens)
    out = np.empty(n, np.float64)
    for a in range(0, n, _NUM_CHUNK):
        part = _numbers_chunk(u64, starts[a:a + _NUM_CHUNK], lens[a:a + _NUM_CHUNK])
        if part is None:
            return None
        out[a:a + _NUM_CHUNK] = part
    return out


def _numbers_chunk(u64, starts, lens):
    """float64 per token; NaN for '*'; None when a token is not ``*`` or ``[-]digits[.digits]`` of
    at most 8 characters (then the exact reader decides).

    SWAR on the token's 8 bytes held in one uint64 (little-endian: first character in the lowest
    byte), about twenty whole-array operations whatever the token length: the '-' is shifted out,
    the first '.' is found with the zero-byte trick and cut out, the digits are right-aligned
    behind '0' padding, checked to be ASCII digits, and combined pairwise (2, 4, 8 digits) into
    the integer mantissa (at most 8 digits: exact), divided by a power of ten (exact double ->
    correctly rounded quotient, as ``float()`` gives)."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, np.float64)
    if int(lens.max()) > 8 or int(lens.min()) < 1:
        return None
    length = lens.astype(np.int64)
    v = u64[starts]
    v &= MASK[length]
    first = (v & np.uint64(0xFF)).astype(np.uint8)
    star = first == 42
    star &= length == 1
    neg = first == 45
    v >>= neg.astype(np.uint64) << np.uint64(3)               # '-' shifted out
    length -= neg
    with np.errstate(over="ignore"):
        x = v ^ _B(0x2E)                                      # '.' bytes become 0 (padding: 0x2E)
        zero = x - _B(0x01)
        zero &= ~x
        zero &= _B(0x80)                                      # lowest set bit: the first '.' (exact)
        zero &= -zero                                         # (two's complement: lowest bit only)
    has_dot = zero != 0
    # frexp of 2**(8p+7) is (0.5, 8p+8): p = position of the first '.', 0 without one
    dot = np.frexp(zero.astype(np.float64))[1].astype(np.int64)
    dot >>= 3
    dot -= has_dot
    frac = np.where(has_dot, length - 1 - dot, 0)
    n_dig = length - has_dot
    # a dot needs digits on both sides; at least one digit
    ok = (n_dig >= 1) & (~has_dot | ((dot >= 1) & (frac >= 1)))
    dot_c = np.minimum(dot, 6).astype(np.uint64)
    dot_c <<= np.uint64(3)
    cut = v >> (dot_c + np.uint64(8))
    cut <<= dot_c
    cut |= v & MASK[dot_c >> np.uint64(3)]
    v = np.where(has_dot, cut, v)
    pad = (8 - np.clip(n_dig, 1, 8)).astype(np.uint64)
    w = v << (pad << np.uint64(3))
    w |= _B(0x30) & MASK[pad]
    with np.errstate(over="ignore"):
        ok &= ((w & _B(0xF0)) == _B(0x30)) & (((w + _B(0x06)) & _B(0xF0)) == _B(0x30))
    ok |= star
    if not ok.all():
        return None
    with np.errstate(over="ignore"):
        w -= _B(0x30)
        w &= _B(0x0F)
        w *= np.uint64(2561)
        w >>= np.uint64(8)
        w &= np.uint64(0x00FF00FF00FF00FF)
        w *= np.uint64(6553601)
        w >>= np.uint64(16)
        w &= np.uint64(0x0000FFFF0000FFFF)
        w *= np.uint64(42949672960001)
        w >>= np.uint64(32)
    value = w.astype(np.float64) / _POW10[frac]
    value[neg] *= -1.0
    value[star] = np.nan
    return value


def _B(byte):
    """``byte`` repeated in all 8 bytes of a uint64."""
    return np.uint64(byte * 0x0101010101010101)


_POW10 = np.array([10.0 ** k for k in range(16)])
