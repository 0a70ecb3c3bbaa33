"""``run_demo`` returns a frozen ``DemoOutputs`` (where it wrote what); ``to_dict()`` and the outputs it prints are
what it returned and printed when it returned a plain dict (goldens in tests/data/demo_outputs, see its
PROVENANCE.md).  The demo decodes audio: slow."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "data" / "demo_outputs"


@pytest.mark.slow
@pytest.mark.parametrize("name, flags", [("", {}), ("-minimal", dict(kws=False, view_page=False, segment_free=False))])
def test_demo_outputs_are_the_dict_it_returned(tmp_path, monkeypatch, name, flags):
    pytest.importorskip("lattice_tools.decode.pocketsphinx")
    from lattice_tools.pipelines.demo import DemoOutputs, run_demo

    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    outputs = run_demo("out", corpora=("cards",), ns=(1,), densities=("default",), bootstrap=0, progress=False,
                       echo=lines.append, **flags)
    assert isinstance(outputs, DemoOutputs)
    assert outputs.to_dict() == json.loads((GOLDEN / f"files{name}.json").read_text())
    assert list(outputs.to_dict()) == list(json.loads((GOLDEN / f"files{name}.json").read_text()))  # and its order
    printed = "\n".join(lines[lines.index("[demo] outputs:"):]) + "\n"
    assert printed == (GOLDEN / f"outputs{name}.txt").read_text()
    assert (outputs.view is None) == ("view_page" in flags) and bool(outputs.kws) == ("kws" not in flags)
    assert all(Path(p).exists() for p in outputs.to_dict().values())
    with pytest.raises(dataclasses.FrozenInstanceError):
        outputs.view = None  # type: ignore[misc]


def test_outputs_list_each_density_with_its_scores():
    from lattice_tools.pipelines.demo import DemoOutputs

    o = DemoOutputs("o/reference.stm", {"default": "o/lattices/default", "dense": "o/lattices/dense"},
                    {"default": "o/score/default.1best", "dense": "o/score/dense.1best"}, study={"markdown": "o/s.md"})
    assert list(o.to_dict()) == ["reference", "lattices/default", "score/default.1best", "lattices/dense",
                                 "score/dense.1best", "study/markdown"]
