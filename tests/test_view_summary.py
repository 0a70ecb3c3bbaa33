"""``view`` returns a typed, frozen ``ViewSummary``; what ``lattice-tools view`` prints and writes with ``--json``
is byte-identical to its output when ``view`` returned a plain dict (goldens in tests/data/view_summary, see its
PROVENANCE.md)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "view_summary"
LATTICES = [str(DATA / "inputs" / "003.lat"), str(DATA / "inputs" / "004.lat")]
REFERENCE = ["-r", str(DATA / "oracle_report" / "cards.stm")]


def _view(*args, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA.parent.parent), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "lattice_tools", "view", *LATTICES, *args, "-o", "view.html"],
                          cwd=cwd, capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc


@pytest.mark.parametrize("name, args", [("view", REFERENCE), ("view-noref", [])])
def test_json_is_byte_identical(tmp_path, name, args):
    assert _view(*args, "--json", "-", cwd=tmp_path).stdout == (GOLDEN / f"{name}.json").read_bytes()


def test_printed_line_is_unchanged(tmp_path):
    assert _view(*REFERENCE, cwd=tmp_path).stdout == (GOLDEN / "view.stdout").read_bytes()


def test_view_returns_a_frozen_typed_summary(tmp_path):
    import dataclasses
    import json

    from lattice_tools.core.counts import ErrorCounts
    from lattice_tools.viewer import ViewSummary, view

    s = view(LATTICES, str(tmp_path / "view.html"), reference=REFERENCE[1])
    assert isinstance(s, ViewSummary) and s.utterances == 2 and s.bytes == (tmp_path / "view.html").stat().st_size
    assert list(s.totals) == ["1best", "nbest", "sausage", "phrase", "lattice"]
    assert all(isinstance(c, ErrorCounts) and c.ref_words == 5 for c in s.totals.values())
    golden = json.loads((GOLDEN / "view.json").read_text())
    assert {**s.to_dict(), "out": "view.html"} == golden
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.bytes = 0  # type: ignore[misc]
