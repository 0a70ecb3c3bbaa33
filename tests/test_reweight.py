"""weights_from_posteriors: a lattice whose arc posteriors equal given (consistent) posteriors."""
import numpy as np
import pytest
from _algo_helpers import lattices
from hypothesis import given, settings

from lattice_tools.algorithms import arc_posteriors, total_log_prob, weights_from_posteriors
from lattice_tools.core.errors import LatticeError


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


def test_link_posteriors_that_are_not_posteriors_are_refused(tmp_path):
    """pocketsphinx writes p=1 on every link when its lattice is taken before its hypothesis: weights made
    from such "posteriors" would be a silent random walk (and so flat that exact searches exhaust their
    budgets), so the reader refuses the file, naming it; the file pocketsphinx wrote after its hypothesis
    (the same lattice with its real posteriors) is read, and its posteriors pass through no node more
    than probability 1."""
    import gzip
    import re
    from pathlib import Path

    from lattice_tools.core.errors import FormatError
    from lattice_tools.core.reweight import posterior_flow_error
    from lattice_tools.io.lattices.slf import read_slf

    text = gzip.open(Path(__file__).parent / "data" / "slf" / "pocketsphinx_cards_002.lat.gz", "rt").read()
    real = read_slf(text, weights="raw")
    excess, _ = posterior_flow_error(real, real.attrs["p"])
    assert 0.0 <= excess < 0.01
    assert read_slf(text).num_arcs > 0
    ones = tmp_path / "ones.lat"
    ones.write_text(re.sub(r"\tp=[^\t\n]*", "\tp=1.000000", text))
    with pytest.raises(FormatError, match=r"ones\.lat.*not posteriors.*before hyp\(\)"):
        read_slf(str(ones))
    assert read_slf(str(ones), weights="raw").num_arcs == real.num_arcs  # the raw scores stay readable
