"""mypy (the configuration in pyproject.toml) is clean on the package: the annotations say what the code does.

A first run checks every module (about 20 s of CPU); later runs reuse mypy's cache (.mypy_cache, which mypy
invalidates by source hash and configuration) and take about a second."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install mypy)")
def test_mypy_is_clean():
    proc = subprocess.run([sys.executable, "-m", "mypy", "lattice_tools"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout, proc.stdout[-2000:]


def _snippet(tmp_path, name: str):
    """A snippet file whose module name is new on every run: mypy's incremental cache (in the repository) keys
    results by module name and replays a cached module's errors with the path it had then, when the text is
    the same."""
    return tmp_path / f"{name}_{uuid.uuid4().hex}.py"


# A reader that can also give what the file said beside the lattice has a second function for it, so each
# function has one result type: mypy accepts each result as its type and refuses it as the other's (an
# unannotated result would be Any and accepted as both).
_SLF_CALLS = """
from lattice_tools.core.files import make_temporary
from lattice_tools.core.lattice import Lattice
from lattice_tools.io.lattices.slf import SlfHeader, iter_slf, iter_slf_with_headers, read_slf, read_slf_with_header
from collections.abc import Iterator

fd: int = make_temporary("out.txt")[0]
a: {one} = read_slf("x.lat")
b: {pair} = read_slf_with_header("x.lat")
c: Iterator[{one}] = iter_slf("x.lat")
d: Iterator[{pair}] = iter_slf_with_headers("x.lat")
"""


def _one_type_each(tmp_path, calls: str, right: dict, wrong: dict, n_calls: int) -> None:
    """mypy accepts ``calls`` formatted with the ``right`` types and refuses each of the ``n_calls`` lines
    formatted with the ``wrong`` ones (an assignment error per line, and no other error)."""
    files = []
    for name, types in (("right", right), ("wrong", wrong)):
        files.append(_snippet(tmp_path, name))
        files[-1].write_text(calls.format(**types), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
                           *map(str, files)], cwd=REPO, capture_output=True, text=True)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert all(line.startswith(str(files[1])) and line.endswith("[assignment]") for line in errors), proc.stdout[-4000:]
    assert len(errors) == n_calls, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install mypy)")
def test_slf_readers_have_one_type_each(tmp_path):
    _one_type_each(tmp_path, _SLF_CALLS, dict(one="Lattice", pair="tuple[Lattice, SlfHeader]"),
                   dict(one="tuple[Lattice, SlfHeader]", pair="Lattice"), 4)


# The k2 conversions return one type each (a lattice, a list, or with the arc maps): mypy accepts each result as
# its one type and refuses it as the other (an unannotated result would be Any and accepted as both).
_K2_CALLS = """
from lattice_tools.core.lattice import Lattice
from lattice_tools.interop.k2 import from_k2, from_k2_batch, from_k2_batch_with_maps, from_k2_with_maps, load_k2
from lattice_tools.io.lattices.k2file import MappedLattice, read_k2_lattices, read_k2_lattices_with_maps

a: {one} = from_k2(None)
b: {mapped} = from_k2_with_maps(None)
c: list[{one}] = from_k2_batch(None)
d: list[{mapped}] = from_k2_batch_with_maps(None)
e: list[{one}] = load_k2("x.pt")
f: list[{one}] = read_k2_lattices("x.pt")
g: list[{mapped}] = read_k2_lattices_with_maps("x.pt")
"""


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install mypy)")
def test_k2_conversions_have_one_type_each(tmp_path):
    _one_type_each(tmp_path, _K2_CALLS, dict(one="Lattice", mapped="MappedLattice"),
                   dict(one="MappedLattice", mapped="Lattice"), 7)
