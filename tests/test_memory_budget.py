"""``--max-memory`` holds on every path: commands run in a subprocess whose address space is capped
(tests/_memory_cap.py) stop with the budget error, one line naming ``--max-memory``, and their peak
resident memory stays near the budget."""
from __future__ import annotations

from pathlib import Path

import pytest
from _memory_cap import BASE_MARGIN, assert_budget_refusal, run_capped

from lattice_tools.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.io.altctm import AlternativesCtmWriter, alternatives_to_ctm_items, iter_ctm_lines
from lattice_tools.io.ctm import format_ctm_item
from lattice_tools.io.inputs import read_lattice_inputs
from lattice_tools.io.lattice_files import write_lattices

DATA = Path(__file__).resolve().parent / "data"
MB = 1 << 20


@pytest.fixture(scope="module")
def long_lattice(tmp_path_factory) -> Path:
    """Utterance 005 of the vendored bundled archive alone: 100,000 distinct sequences of ~30 words
    (an N-best list of that depth needs ~175 MB resident)."""
    out = tmp_path_factory.mktemp("lat") / "005.ark"
    lats = [lat for lat in read_lattice_inputs([str(DATA / "kaldi/lats/bundled.ark.gz")]) if lat.key == "005"]
    assert len(lats) == 1
    write_lattices(lats, str(out))
    return out


def test_nbest_deep_list_stops_at_the_budget(long_lattice, tmp_path):
    budget = 80 * MB
    out = tmp_path / "nbest.ctm"
    result = run_capped(["nbest", "-n", "100000", "--max-memory", "80M", long_lattice, "-o", out],
                        cap=budget + BASE_MARGIN, timeout=60)
    assert_budget_refusal(result)
    assert result.peak_rss <= budget * 1.25, result.peak_rss / MB
    assert not out.exists()  # no half-written output
    assert not list(tmp_path.iterdir())  # and no temporary left beside it


def _alternatives() -> Alternatives:
    alts = (Alternative(("a", "b"), (0.1, 0.4), (0.3, 0.2), 0.6, (0.6, 0.6)),
            Alternative((), posterior=0.3),
            Alternative(("c",), (float("nan"),), (float("nan"),), 0.1, (0.1,)))
    one = (Alternative(("d",), (1.0,), (0.5,), 1.0, (1.0,)),)
    return Alternatives(key="u", slots=(Slot(0.0, 0.9, alts), Slot(1.0, 1.5, one)), kind="phrases",
                        file="f", channel="A")


@pytest.mark.parametrize("n", [None, 1, 2])
def test_streamed_alt_ctm_lines_equal_the_items_path(n, tmp_path):
    """The writer makes its lines one alternative at a time; they equal formatting the CTM items."""
    alts = _alternatives()
    expected = [line for item in alternatives_to_ctm_items(alts, n) for line in format_ctm_item(item, "%.2f", "%.4f")]
    assert list(iter_ctm_lines(alts, n)) == expected
    with AlternativesCtmWriter(str(tmp_path / "x.ctm"), n) as writer:
        writer.write(alts)
    assert (tmp_path / "x.ctm").read_text().splitlines() == expected
