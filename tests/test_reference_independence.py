"""The slow transcriptions in tests/_reference are test oracles: they import no private name of the package
(a name or module starting with ``_``), so what they share with the code they check is only public API that
is tested on its own (against peers, brute force or goldens)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parent / "_reference"


def _private_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "lattice_tools":
            if any(part.startswith("_") for part in node.module.split(".")):
                found.append(node.module)
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names
                      if a.name.split(".")[0] == "lattice_tools" and any(p.startswith("_") for p in a.name.split("."))]
    return found


@pytest.mark.parametrize("path", sorted(REFERENCE.glob("*.py")), ids=lambda p: p.name)
def test_reference_imports_nothing_private(path):
    assert _private_imports(path) == []


def test_the_check_sees_a_private_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from lattice_tools.kws.score import _keyword_order\nimport lattice_tools._ext.search\n"
                   "from lattice_tools.io.lattices._kaldi_text import RawFst\n")
    assert _private_imports(bad) == ["lattice_tools.kws.score._keyword_order", "lattice_tools._ext.search",
                                     "lattice_tools.io.lattices._kaldi_text"]
