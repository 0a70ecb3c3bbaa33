"""The generic TSV reader's word times (all pairs of a line converted at once) read and refuse what the pair by
pair parse does, with the same message; and a hypothesis with starts but no ends is a FormatError."""
from __future__ import annotations

import math
import random

import pytest

from lattice_tools.core.errors import FormatError
from lattice_tools.io.transcripts.nbest import NbestHypothesis, _word_times, make_nbest


def _pair_by_pair(pairs, path, lineno):
    """The plain transcription: each pair split at its first ':', start then end read as finite numbers."""
    starts, ends = [], []
    for pair in pairs:
        a, sep, b = pair.partition(":")
        if not sep:
            return f"word time {pair!r} is not start:end"
        for text, what, out in ((a, "start time", starts), (b, "end time", ends)):
            try:
                value = float(text)
            except ValueError:
                return f"{what} {text!r} is not a number"
            if not math.isfinite(value):
                return f"{what} {text!r} is not finite"
            out.append(value)
    return tuple(starts), tuple(ends)


PIECES = ["0", "1.5", "0.25", "12", "1e3", "-1", "nan", "inf", "x", "", "1_0", "+2", ".5", "1:2", "3::"]


def test_word_times_equal_the_pair_by_pair_parse():
    rng = random.Random(3)
    outcomes = set()
    for _trial in range(4000):
        pairs = []
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.85:
                pairs.append(f"{rng.choice(PIECES[:5])}:{rng.choice(PIECES[:5])}")
            else:  # a bad or odd pair
                pairs.append(rng.choice([f"{rng.choice(PIECES)}:{rng.choice(PIECES)}", rng.choice(PIECES),
                                         ":".join(rng.choice(PIECES) for _ in range(3))]))
        pairs = [p for p in pairs if p] or ["0:1"]
        want = _pair_by_pair(pairs, "f.tsv", 7)
        if isinstance(want, str):
            with pytest.raises(FormatError) as err:
                _word_times(pairs, "f.tsv", 7)
            assert str(err.value) == f"f.tsv:7: {want}", (pairs, want)
            outcomes.add("error")
        else:
            assert _word_times(pairs, "f.tsv", 7) == want, pairs
            outcomes.add("read")
    assert outcomes == {"error", "read"}


def test_starts_without_ends_are_refused():
    hyp = NbestHypothesis(("a", "b"), -1.0, 1, starts=(0.0, 0.5), ends=(), path="x.tsv", line=3)
    with pytest.raises(FormatError, match="starts without ends"):
        make_nbest("u", [hyp], "logprob")
