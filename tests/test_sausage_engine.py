"""One sausage engine: ``sausage()`` (what alt-CTMs, oracles and keyword indexes use) has exactly the bins of
``mbr_decode()`` (what ``lattice-tools mbr-decode`` prints, byte-identical to Kaldi's ``lattice-mbr-decode`` in
tests/test_kaldi_parity.py): the same bins in the same order, the same words with the same posteriors and times,
at any scale.  Differential tests over every real lattice the tests vendor (Kaldi archives, SLF / Sphinx files,
k2 lattices) at random scales, and over hypothesis-generated lattices that hold silence words."""
from __future__ import annotations

import math
import random

import pytest
from _alt_helpers import K2, lattice_strategy
from _data import TEST_DATA
from _kaldi_helpers import INPUTS
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives._common import is_silence
from lattice_tools.alternatives.sausages import mbr_decode, sausage
from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable
from lattice_tools.io import read_lattices
from lattice_tools.io.lattices.k2file import read_k2_lattices

SLF = TEST_DATA / "slf"
SLF_FILES = ["htk_lmscale.slf", "ws97_style_ngram.slf", "sphinx3_pittsburgh.slf", "kaldi_kgraph_utt8.slf.gz",
             "pocketsphinx_cards_002.lat.gz", "pocketsphinx_cards_002.dag.gz"]


def _real_lattices() -> list[tuple[str, Lattice]]:
    out = []
    for name, spec in INPUTS.items():
        out += [(f"{name}/{lat.key}", lat) for lat in read_lattices(spec)]
    for name in SLF_FILES:
        with pytest.warns() if name == "sphinx3_pittsburgh.slf" else _no_warning():
            out += [(f"{name}/{lat.key}", lat) for lat in read_lattices(str(SLF / name))]
    words = SymbolTable.read(str(K2 / "words.txt"))
    for name in ("hlg_lattice.pt", "word_lattice.pt"):
        out += [(f"{name}/{lat.key}", lat) for lat in read_k2_lattices(K2 / name, symbols=words)]
    return out


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def assert_one_engine(lat: Lattice, acoustic_scale: float, lm_scale: float = 1.0) -> int:
    """sausage() at these scales against mbr_decode()'s bins; returns the number of slots compared."""
    scales = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    res = mbr_decode(lat, **scales, strict_times=False)
    fs = lat.frame_shift
    # every word shown: exactly Kaldi's bins that hold a word
    word_bins = [q for q, b in enumerate(res.bins) if any(w != 0 for w, _ in b)]
    every = sausage(lat, **scales, silence_words=())
    assert list(every.meta["kaldi_bins"]) == word_bins
    assert every.meta["risk"] == res.bayes_risk
    for slot, q in zip(every.slots, word_bins, strict=True):
        want = [(w, p) for w, p in res.bins[q] if p > 0]
        got = [(lat.symbols.id(a.words[0]) if a.words else 0, a.posterior) for a in slot.alternatives]
        assert got == want  # same entries, same order, the same float32 posteriors
        if lat.has_times:
            assert (slot.start, slot.end) == (round(res.bin_times[q][0] * fs, 6), round(res.bin_times[q][1] * fs, 6))
            times = dict(zip((w for w, _ in res.bins[q]), res.word_times[q], strict=True))
            for a in slot.alternatives:
                if a.words:
                    assert a.starts[0] == round(times[lat.symbols.id(a.words[0])][0] * fs, 6)
    # lattice-tools' default: silence words shown as epsilon, never moved to another bin
    shown = sausage(lat, **scales)

    def silent(w):
        return w == 0 or is_silence(lat.symbols.word(w))

    real_bins = [q for q in word_bins if not all(silent(w) for w, _ in res.bins[q])]
    assert list(shown.meta["kaldi_bins"]) == real_bins
    for slot, q in zip(shown.slots, real_bins, strict=True):
        words = [(lat.symbols.id(a.words[0]), a.posterior) for a in slot.alternatives if a.words]
        assert words == [(w, p) for w, p in res.bins[q] if p > 0 and not silent(w)]
        eps = [a.posterior for a in slot.alternatives if not a.words]
        rest = math.fsum(p for w, p in res.bins[q] if silent(w))
        assert eps == ([rest] if rest > 0 else [])
    return len(every.slots)


REAL = _real_lattices()


def test_the_real_lattices_cover_every_reader():
    names = {name.split("/")[0] for name, _ in REAL}
    assert len(REAL) >= 25 and len(names) == len(INPUTS) + len(SLF_FILES) + 2


@pytest.mark.parametrize("index", range(len(REAL)), ids=[name for name, _ in REAL])
def test_sausage_is_mbr_decode_on_real_lattices_at_random_scales(index):
    name, lat = REAL[index]
    rng = random.Random(f"one engine {name}")
    slots = assert_one_engine(lat, 1.0)
    for _ in range(2):
        assert_one_engine(lat, rng.choice([0.05, 0.0833, 0.1, 0.5, 2.0]), rng.choice([1.0, 0.5, 2.0]))
    assert slots > 0


@settings(max_examples=150, deadline=None)
@given(lattice_strategy(), st.sampled_from([1.0, 0.1, 0.37, 3.0]), st.sampled_from([1.0, 0.5, 2.0]))
def test_sausage_is_mbr_decode_on_generated_lattices_with_silence(lat, acoustic_scale, lm_scale):
    """The generated lattices use the words a..d and <sil>: a silence word is aligned as Kaldi aligns it
    (it used to be turned into epsilon before the alignment, which moved neighbouring words to other bins)."""
    assert_one_engine(lat, acoustic_scale, lm_scale)


def test_the_engine_trims_a_lattice_built_with_the_plain_constructor():
    """Readers trim lattices when they build them; a lattice built with the plain constructor may keep a
    dead-end arc, which mbr_decode (and so sausage) trims first instead of giving its word a bin."""
    import numpy as np

    syms = SymbolTable.from_words(["a", "b", "dead"])
    inf = np.array([np.inf, np.inf, 0.0, np.inf])
    # 0 -a-> 1 -b-> 2 (final); 1 -dead-> 3 (a dead end, cheaper than b)
    lat = Lattice(num_states=4, src=np.array([0, 1, 1]), dst=np.array([1, 2, 3]), word=np.array([1, 2, 3]),
                  ilabel=np.array([1, 2, 3]), t0=np.array([0, 5, 5]), t1=np.array([5, 9, 9]),
                  graph_cost=np.array([0.0, 2.0, 0.0]), acoustic_cost=np.zeros(3), final_graph_cost=inf,
                  final_acoustic_cost=inf, symbols=syms)
    res = mbr_decode(lat)
    assert [syms.word(w) for w in res.words] == ["a", "b"]
    assert all(w != 3 for b in res.bins for w, _ in b)
    assert [[a.words for a in slot.alternatives] for slot in sausage(lat).slots] == [[("a",)], [("b",)]]
