"""weights_from_posteriors: a lattice whose arc posteriors equal given (consistent) posteriors."""
import numpy as np
import pytest
from _algo_helpers import lattices
from hypothesis import given, settings

from lattice_tools.algorithms import arc_posteriors, total_log_prob, weights_from_posteriors
from lattice_tools.errors import LatticeError


@settings(max_examples=60, deadline=None)
@given(lattices())
def test_posteriors_are_reproduced_exactly(lat):
    post = arc_posteriors(lat)
    rew = weights_from_posteriors(lat, post)
    assert total_log_prob(rew) == pytest.approx(0.0, abs=1e-9)
    kept = post > 0
    assert rew.num_arcs == int(kept.sum())
    # posteriors of the surviving arcs, in order, equal the given ones; acoustic part is zero
    assert np.allclose(arc_posteriors(rew), post[kept], atol=1e-9)
    assert np.all(rew.acoustic_cost == 0)
    assert np.allclose(rew.attrs["orig_graph_cost"], lat.graph_cost[kept])


def test_bad_posteriors_rejected():
    from _algo_helpers import random_lattice

    lat = random_lattice(np.random.default_rng(0), 6, 10)
    with pytest.raises(LatticeError, match="expected"):
        weights_from_posteriors(lat, np.ones(3))
    with pytest.raises(LatticeError, match="finite"):
        weights_from_posteriors(lat, np.full(lat.num_arcs, np.nan))
