"""The columnar CTM reader's number parser (SWAR on 8-byte words) against Python's float():
bit-identical values for every ``[-]digits[.digits]`` token of up to 8 characters, and None
(hand over to the exact reader) for anything else."""
from __future__ import annotations

import math
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.scoring.ctm_columns import _tokens
from lattice_tools.scoring.ctm_numbers import parse_numbers as _numbers


def _parse(tokens):
    raw = b" ".join(t.encode() for t in tokens) + b"\n"
    data = bytearray(raw + bytes(16))
    u64 = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    starts, pos = [], 0
    for t in tokens:
        starts.append(pos)
        pos += len(t.encode()) + 1
    return _numbers(u64, np.array(starts, np.int64), np.array([len(t.encode()) for t in tokens], np.int32))


def _valid(tok):
    body = tok[1:] if tok.startswith("-") else tok
    if not body or len(tok) > 8:
        return False
    ip, dot, fp = body.partition(".")
    return ip.isdigit() and ip.isascii() and (not dot or (fp.isdigit() and fp.isascii()))


def _same(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


def test_every_valid_shape_exact():
    rng = random.Random(7)
    tokens = ["*", "0", "-0", "0.0", "-0.00", "12345678", "9999999", "-9999999", "1.5", "0.01", "99999.99"]
    for _ in range(70000):  # > one chunk of _numbers
        sign = "-" if rng.random() < 0.2 else ""
        n = rng.randint(1, 8 - len(sign))
        digits = "".join(rng.choice("0123456789") for _ in range(n))
        if n >= 3 and rng.random() < 0.7:
            k = rng.randint(1, n - 1)
            digits = digits[:k] + "." + digits[k:]
            digits = digits[:8 - len(sign)]
            if digits.endswith("."):
                digits = digits[:-1]
        tokens.append(sign + digits)
    tokens = [t for t in tokens if t == "*" or _valid(t)]
    got = _parse(tokens)
    assert got is not None
    for t, g in zip(tokens, got.tolist(), strict=False):
        want = float("nan") if t == "*" else float(t)
        assert _same(g, want), (t, g, want)


def test_invalid_tokens_hand_over():
    for t in ["-", ".", "1.", ".5", "1..2", "1.2.3", "--1", "+1", "1e5", "abc", "12a", "*1", "**", "1-2",
              "123456789", "1/2", "1:2", "9.9:", "0x10", "1 ", "٣"]:
        assert _parse(["1.0", t, "2"]) is None, t


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="0123456789.-*/:a", min_size=1, max_size=8), min_size=1, max_size=20))
def test_random_tokens_match_float(tokens):
    got = _parse(tokens)
    if all(t == "*" or _valid(t) for t in tokens):
        assert got is not None
        for t, g in zip(tokens, got.tolist(), strict=False):
            assert _same(g, float("nan") if t == "*" else float(t)), (t, g)
    else:
        assert got is None


# ---------------------------------------------------------------- tokenizer (both layouts)
def _tokens_reference(raw: bytes):
    """Tokens as maximal runs of bytes > 32; line_last only for the canonical layout (single
    separator bytes, no leading white space, no blank line)."""
    import re

    spans = [(m.start(), m.end() - m.start()) for m in re.finditer(rb"[^\x00-\x20]+", raw)]
    n_ctrl = sum(1 for b in raw if b < 32)
    canonical = bool(spans) and spans[0][0] == 0 and all(
        s1 == s0 + l0 + 1 for (s0, l0), (s1, _) in zip(spans, spans[1:], strict=False)) and spans[-1][0] + spans[-1][1] == len(raw) - 1
    last = [i for i, (s, n) in enumerate(spans) if raw[s + n] == 10] if canonical else None
    return spans, n_ctrl, last


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "bb", " ", "  ", "\t", "\n", "\r\n", "\x01", "cccccccccc", "w x y\n"]),
                max_size=60),
       st.sampled_from([8, 16, 64, 1 << 22]))
def test_tokens_match_reference(parts, chunk):
    raw = "".join(parts).encode()
    if not raw.endswith(b"\n"):
        raw += b"\n"
    data = bytearray(raw + bytes(137))
    got = _tokens(np.frombuffer(data, np.uint8), len(raw), chunk_bytes=chunk)
    spans, n_ctrl, last = _tokens_reference(raw)
    assert got is not None
    starts, lens, ctrl, line_last = got
    assert list(zip(starts.tolist(), lens.tolist(), strict=False)) == spans
    assert ctrl == n_ctrl
    if last is None:
        assert line_last is None
    else:
        assert line_last is not None and line_last.tolist() == last
