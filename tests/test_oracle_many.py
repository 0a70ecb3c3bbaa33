"""lattice_oracle_many (the DP of each lattice, sclite's tie rules for all of them in one batched scorer call) gives
each lattice the result it has alone (lattice_oracle), on random lattices and references with optional words."""
from __future__ import annotations

import numpy as np
import pytest
from _oracle_helpers import VOCAB, random_lattice

from lattice_tools.oracle.api import lattice_oracle, lattice_oracle_many


def _reference(rng) -> str:
    words = [VOCAB[int(rng.integers(0, len(VOCAB)))] for _ in range(int(rng.integers(0, 7)))]
    return " ".join(f"({w})" if rng.random() < 0.2 else w for w in words)


@pytest.mark.parametrize("mode,optional_deletable", [("sclite", False), ("sclite", True), ("levenshtein", False)])
def test_batch_equals_one_at_a_time(mode, optional_deletable):
    rng = np.random.default_rng(17)
    lats = [random_lattice(rng, int(rng.integers(2, 9)), int(rng.integers(0, 10))) for _ in range(120)]
    refs = [_reference(rng) for _ in lats]
    many = lattice_oracle_many(lats, refs, mode=mode, optional_deletable=optional_deletable)
    alone = [lattice_oracle(lat, ref, mode=mode, optional_deletable=optional_deletable)
             for lat, ref in zip(lats, refs, strict=True)]
    assert len(many) == len(alone)
    for got, want in zip(many, alone, strict=True):
        assert got.counts == want.counts and got.cost == want.cost and got.words == want.words
        assert got.alignment == want.alignment
    assert len({r.counts.errors for r in many}) > 2  # the references differ from the lattices' words


def test_lengths_must_agree():
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError):
        lattice_oracle_many([random_lattice(rng, 3, 1)], [])
