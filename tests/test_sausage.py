"""Confusion networks (Xu et al. 2011 MBR recursion)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _alt_helpers import SYMS, lattice_strategy, ps_lattice
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives.sausages import sausage
from lattice_tools.lattice import Lattice


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(0.01, 1.0), min_size=1, max_size=3), min_size=1, max_size=5), st.integers(0, 2 ** 16))
def test_sausage_shaped_lattice_is_recovered_exactly(bins, seed):
    """A lattice that already is a confusion network: bins = positions, posteriors = arc posteriors."""
    rng = np.random.default_rng(seed)
    src, dst, word, cost, want = [], [], [], [], []
    for k, weights in enumerate(bins):
        p = np.asarray(weights) / sum(weights)
        words = rng.choice([1, 2, 3, 4], size=len(p), replace=False)
        for w, pw in zip(words, p, strict=False):
            src.append(k)
            dst.append(k + 1)
            word.append(int(w))
            cost.append(-math.log(pw))
        want.append({SYMS.word(int(w)): float(pw) for w, pw in zip(words, p, strict=False)})
    n = len(bins) + 1
    lat = Lattice.from_arcs(src=src, dst=dst, word=word, symbols=SYMS, final_graph_cost=[math.inf] * (n - 1) + [0.0],
                            graph_cost=cost, t0=[10 * s for s in src], t1=[10 * d for d in dst])
    sa = sausage(lat)
    assert len(sa.slots) == len(bins)
    for slot, w, k in zip(sa.slots, want, range(len(bins)), strict=False):
        got = {a.words[0]: a.posterior for a in slot.alternatives if a.words}
        assert got.keys() == w.keys()
        for word_, p in w.items():
            assert got[word_] == pytest.approx(p, abs=1e-4)  # Kaldi's tie-break delta is 1e-5 per arc
        assert slot.start == pytest.approx(k * 0.1) and slot.end == pytest.approx((k + 1) * 0.1)


@settings(max_examples=80, deadline=None)
@given(lattice_strategy(), st.integers(1, 3))
def test_bins_sum_to_one_and_depth_cut(lat, n):
    full = sausage(lat)
    for slot in full.slots:
        assert sum(a.posterior for a in slot.alternatives) == pytest.approx(1.0, abs=1e-6)
        post = [a.posterior for a in slot.alternatives]
        assert post == sorted(post, reverse=True)
    cut = sausage(lat, n)
    assert all(s.depth <= n for s in cut.slots)


def test_real_lattice():
    lat = ps_lattice()
    sa = sausage(lat, acoustic_scale=0.1)
    assert len(sa.slots) >= 5
    for slot in sa.slots:
        assert sum(a.posterior for a in slot.alternatives) == pytest.approx(1.0, abs=1e-6)
        assert slot.start <= slot.end
    starts = [s.start for s in sa.slots]
    assert starts == sorted(starts)
    one_best = sa.one_best()
    assert one_best and all(w for w in one_best)
    assert sa.meta["risk"] >= 0


@settings(max_examples=60, deadline=None)
@given(lattice_strategy(), st.sampled_from([1.0, 0.1, 3.0]))
def test_compiled_recursion_equals_literal_transcription_of_kaldi(lat, ac):
    """The numba kernels do Kaldi's floating-point operations in Kaldi's order: the MBR words, risk,
    bins, bin times, one-best times and confidences equal a literal, dict-based transcription of
    lat/sausages.cc exactly (tests/_mbr_reference.py)."""
    from _mbr_reference import reference_mbr

    from lattice_tools.alternatives.sausages import kaldi_order, mbr_decode

    got = mbr_decode(lat, acoustic_scale=ac, strict_times=False)
    words, risk, bins, stimes, obt, conf = reference_mbr(kaldi_order(lat, acoustic_scale=ac))
    assert got.words == words and got.bayes_risk == risk
    assert [list(b) for b in got.bins] == bins
    assert list(got.bin_times) == stimes
    assert [tuple(t) for t in got.one_best_times] == obt and list(got.confidences) == conf


def test_real_lattice_equals_literal_transcription():
    from _mbr_reference import reference_mbr

    from lattice_tools.alternatives.sausages import kaldi_order, mbr_decode

    lat = ps_lattice()
    got = mbr_decode(lat, acoustic_scale=0.1)
    words, risk, bins, stimes, _, _ = reference_mbr(kaldi_order(lat, acoustic_scale=0.1))
    assert got.words == words and got.bayes_risk == risk and [list(b) for b in got.bins] == bins
    assert list(got.bin_times) == stimes


def test_mbr_kernel_loads_without_the_blas_probe_and_leaves_scipy_importable():
    """skip_numba_probes() then load_compiled() (what mbr-decode does) skips numba's scipy.linalg
    import, yet scipy.linalg stays importable afterwards and the kernel gives the same statistics."""
    pytest.importorskip("scipy.linalg", reason="scipy is not installed (numba does not need it): nothing to keep importable")
    import subprocess
    import sys
    from pathlib import Path

    from lattice_tools.alternatives.sausages import mbr_decode
    from lattice_tools.io import read_lattices

    spec = "ark:tests/data/kaldi/lats/insertion.ark"
    code = f"""
import sys
from lattice_tools.alternatives._numba import skip_numba_probes
skip_numba_probes()
from lattice_tools.alternatives._mbr_kernels import load_compiled
load_compiled()
assert "scipy.linalg" not in sys.modules, "numba probed for a BLAS"
from lattice_tools.io import read_lattices
from lattice_tools.alternatives.sausages import mbr_decode
print(mbr_decode(next(iter(read_lattices({spec!r})))).bins)
import scipy.linalg.cython_blas  # still importable
"""
    repo = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(mbr_decode(next(iter(read_lattices(spec.replace(":", f":{repo}/", 1))))).bins)


def test_mbr_memory_budget_is_checked_before_a_pass(monkeypatch):
    """A pass that would need more memory than MAX_STATS_BYTES raises BudgetExceededError naming
    the sizes, instead of allocating."""
    from lattice_tools.alternatives import sausages
    from lattice_tools.errors import BudgetExceededError

    lat = ps_lattice()
    assert sausages.mbr_decode(lat, acoustic_scale=0.1).words
    monkeypatch.setattr(sausages, "MAX_STATS_BYTES", 10_000)
    with pytest.raises(BudgetExceededError, match=r"MBR statistics for \d+ bins x \d+ distinct words on \d+ states"):
        sausages.mbr_decode(lat, acoustic_scale=0.1)
