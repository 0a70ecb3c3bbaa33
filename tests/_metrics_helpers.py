"""Helpers shared by the tests/test_metrics_*.py files."""
from __future__ import annotations

import itertools
import random

from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot


def random_pairs(n: int, seed: int = 0, vocab: str = "abcde", max_len: int = 12):
    rng = random.Random(seed)
    for _ in range(n):
        ref = [rng.choice(vocab) for _ in range(rng.randint(1, max_len))]
        hyp = [rng.choice(vocab) for _ in range(rng.randint(0, max_len))]
        yield ref, hyp


def random_network(rng: random.Random, vocab: str = "abcd", max_slots: int = 4, max_alts: int = 3,
                   max_words: int = 3) -> Alternatives:
    slots = []
    for s in range(rng.randint(1, max_slots)):
        alts = [Alternative(tuple(rng.choice(vocab) for _ in range(rng.randint(0, max_words))))
                for _ in range(rng.randint(1, max_alts))]
        slots.append(Slot(float(s), float(s + 1), alts))
    return Alternatives("utt", slots, kind="phrase")


def all_paths(net: Alternatives, k: int | None = None):
    net = net.truncated(k)
    for combo in itertools.product(*[s.alternatives for s in net.slots]):
        yield [w for a in combo for w in a.words]


def brute_edit_distance(a, b) -> int:
    """Textbook O(nm) Levenshtein, independent of kaldialign."""
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
        prev = cur
    return prev[-1]


def brute_substring_distance(entity, hyp) -> int:
    """Minimum edit distance between ``entity`` and any contiguous span of ``hyp``."""
    return min(brute_edit_distance(entity, hyp[s:e]) for s in range(len(hyp) + 1) for e in range(s, len(hyp) + 1))


def require_metrics_extras():
    """Skip a test module when the ``metrics`` extra is not installed (CI installs it)."""
    import pytest

    for module in ("regex", "indicnlp", "metaphone", "Stemmer", "jiwer"):
        pytest.importorskip(module, reason="needs the metrics extra: pip install 'lattice-tools[metrics]'")
