"""``--max-memory`` holds on every path: commands run in a subprocess whose address space is capped
(tests/_memory_cap.py) stop with the budget error, one line naming ``--max-memory``, and their peak
resident memory stays near the budget."""
from __future__ import annotations

from pathlib import Path

import pytest
from _memory_cap import BASE_MARGIN, assert_budget_refusal, run_capped

from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.io.lattices.inputs import read_lattice_inputs
from lattice_tools.io.lattices.lattice_files import write_lattices
from lattice_tools.io.transcripts.altctm import AlternativesCtmWriter, alternatives_to_ctm_items, iter_ctm_lines
from lattice_tools.io.transcripts.ctm import format_ctm_item

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


GLM = DATA / "sctk/glm/en20030506.glm"


@pytest.fixture(scope="module")
def glm_blowup(tmp_path_factory) -> tuple[Path, Path]:
    """A 3,000-word segment and a CTM whose ALT block holds it with 8 contractions: the GLM's rule
    ``CAN'T => {CAN NOT / CANNOT}`` nests a block in the ALT block for each, and flattening them makes
    256 alternatives of 3,000 words (769,024 words, a 3,001 x 769,025 alignment table)."""
    d = tmp_path_factory.mktemp("glm")
    words = ["THE"] * 3000
    for i in range(8):
        words[i * 300] = "CAN'T"
    (d / "ref.stm").write_text("f 1 spk 0.0 3000.0 " + " ".join(words) + "\n")
    lines = ["f 1 * * <ALT_BEGIN>", *(f"f 1 {i}.00 0.50 {w}" for i, w in enumerate(words)),
             "f 1 * * <ALT>", "f 1 0.00 0.50 THE", "f 1 * * <ALT_END>"]
    (d / "hyp.ctm").write_text("\n".join(lines) + "\n")
    return d / "ref.stm", d / "hyp.ctm"


@pytest.mark.parametrize("budget, where", [(100, "flattening the nested ALT block of f 1 (line 1)"),
                                           (300, "3,000 reference words x 769,025 hypothesis arcs")])
def test_score_glm_expansion_is_counted_before_it_is_built(glm_blowup, budget, where):
    ref, hyp = glm_blowup
    result = run_capped(["score", "--max-memory", f"{budget}M", "-r", ref, "-h", hyp, "--glm", GLM],
                        cap=(budget << 20) + BASE_MARGIN, timeout=60)
    assert_budget_refusal(result)
    assert where in result.stderr
    assert result.peak_rss <= budget * MB * 1.25, result.peak_rss / MB


def test_expand_alternation_is_counted_before_it_is_built():
    from lattice_tools.core._budget import memory_budget, resident_bytes
    from lattice_tools.core.errors import BudgetExceededError
    from lattice_tools.scoring.glm.repairs import expand_alternation

    text = " ".join(["{ A B / C }"] * 12 + ["W"] * 2000)
    assert expand_alternation("X { A / B C } Y { D / @ / {E/F} } Z") == [
        ["X", "A", "Y", "D", "Z"], ["X", "A", "Y", "Z"], ["X", "A", "Y", "E", "Z"], ["X", "A", "Y", "F", "Z"],
        ["X", "B", "C", "Y", "D", "Z"], ["X", "B", "C", "Y", "Z"], ["X", "B", "C", "Y", "E", "Z"],
        ["X", "B", "C", "Y", "F", "Z"]]
    with memory_budget(resident_bytes() + (20 << 20)), pytest.raises(BudgetExceededError, match="alternation"):
        expand_alternation(text, where="ref.stm:3")


def test_flatten_nested_block_equals_the_plain_product():
    """The run-based product of flatten_nested_block lists what the Cartesian product of the inner
    blocks lists, in the same order (first listed first), duplicates dropped."""
    import itertools

    from lattice_tools.io.transcripts.ctm import CtmAltBlock, CtmWord, flatten_nested_block

    def w(x):
        return CtmWord("f", "1", 0.0, 0.1, x)

    inner1 = CtmAltBlock("f", "1", ((w("a"),), (w("b"), w("c"))))
    inner2 = CtmAltBlock("f", "1", ((w("d"),), (), (w("a"), w("c"))))
    outer = CtmAltBlock("f", "1", ((w("x"), inner1, w("y"), inner2, w("z")), (w("x"), w("a"), w("y"))))
    flat = flatten_nested_block(outer)
    expected = []
    for i, j in itertools.product(inner1.alternatives, inner2.alternatives):
        expected.append(("x", *(v.word for v in i), "y", *(v.word for v in j), "z"))
    expected.append(("x", "a", "y"))
    assert [tuple(v.word for v in alt) for alt in flat.alternatives] == list(dict.fromkeys(expected))


def test_phrases_search_stops_at_the_budget(tmp_path):
    budget = 60 * MB
    result = run_capped(["phrases", "-n", "inf", "--max-memory", "60M", DATA / "kaldi/lats/bundled.ark.gz",
                         "-o", tmp_path / "p.ctm"], cap=budget + BASE_MARGIN, timeout=120)
    assert_budget_refusal(result)
    assert result.peak_rss <= budget * 1.25, result.peak_rss / MB
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_demo_holds_its_budget(tmp_path):
    """The demo runs under one budget: the decoder's models alone take ~230 MB, so 150M stops it cleanly at
    its first budgeted step, where an unbudgeted run of the same command peaks at ~235 MB."""
    result = run_capped(["demo", "-o", tmp_path / "demo", "--corpus", "cards", "--density", "default", "-n", "10",
                         "--bootstrap", "0", "--no-kws", "--max-memory", "150M"], cap=(150 << 20) + BASE_MARGIN + (200 << 20),
                        timeout=600)
    assert_budget_refusal(result)
    assert "already holds" in result.stderr


@pytest.fixture(scope="module")
def long_nbest_list(tmp_path_factory) -> Path:
    """One utterance with a 12,000-best list of 30 timed words each (6 MB of TSV; the merge into a lattice
    needs several hundred MB resident without a budget)."""
    import random

    rng = random.Random(1)
    path = tmp_path_factory.mktemp("nbest") / "long.tsv"
    times = " ".join(f"{0.3 * i:.2f}:{0.3 * i + 0.25:.2f}" for i in range(30))
    with open(path, "w") as f:
        for rank in range(1, 12001):
            words = " ".join(f"w{rng.randrange(5000)}" for _ in range(30))
            f.write(f"u1\t{rank}\t{-0.01 * rank:.3f}\t{words}\t{times}\n")
    return path


@pytest.mark.parametrize("command", ["nbest-to-lattices", "combine"])
def test_nbest_paths_stop_at_the_budget(command, long_nbest_list, tmp_path):
    budget = 80 * MB
    if command == "nbest-to-lattices":
        out = tmp_path / "lats.ark"
        args = ["nbest-to-lattices", long_nbest_list, "-o", f"ark:{out}", "--write-words", tmp_path / "words.txt"]
    else:
        out = tmp_path / "combined.ctm"
        args = ["combine", long_nbest_list, long_nbest_list, "-o", out]
    result = run_capped([*args, "--max-memory", "80M"], cap=budget + BASE_MARGIN, timeout=120)
    assert_budget_refusal(result)
    assert result.peak_rss <= budget * 1.25, result.peak_rss / MB
    assert not list(tmp_path.iterdir())  # no output, no temporary


def test_nbest_to_lattices_within_its_budget(tmp_path):
    """A small file runs under a small budget (the check does not refuse what fits)."""
    out = tmp_path / "lats.ark"
    result = run_capped(["nbest-to-lattices", DATA / "nbest/generic.tsv", "-o", f"ark:{out}", "--max-memory", "150M"],
                        cap=(150 * MB) + BASE_MARGIN, timeout=60)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 0
