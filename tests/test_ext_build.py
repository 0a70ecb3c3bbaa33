"""The compiled kernels (``lattice_tools/_ext/*.c``) are built, importable, and not older than their
sources: a source tree updated without re-running ``pip install -e .`` would otherwise test (and run) the
previous build's machine code."""
from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from lattice_tools._ext import native

EXT = Path(__file__).resolve().parent.parent / "lattice_tools" / "_ext"
# one module per <name>.c, and one per folder <name>/ of several .c files (setup.py)
MODULES = {p.stem: [p] for p in EXT.glob("*.c")}
MODULES.update({d.name: sorted(d.glob("*.[ch]")) for d in EXT.iterdir() if d.is_dir() and any(d.glob("*.c"))})
NAMES = sorted(MODULES)


@pytest.mark.parametrize("name", NAMES)
def test_built_and_current(name: str):
    module = native(name)
    built = Path(module.__file__)
    if built.parent != EXT:
        pytest.skip(f"{name} is an installed build ({built}), not this source tree's")
    newest = max([*MODULES[name], *EXT.glob("*.h")], key=lambda p: p.stat().st_mtime)
    assert built.stat().st_mtime >= newest.stat().st_mtime, (
        f"{built.name} is older than {newest.name}: rebuild with `python -m pip install -e .` "
        "(or `python setup.py build_ext --inplace`)")


def test_missing_module_names_the_build_command():
    with pytest.raises(ImportError, match=r"lattice_tools\._ext\.no_such_kernel is not built: run `python -m pip"):
        native("no_such_kernel")


def test_every_built_module_has_a_source():
    built = {p.name.split(".")[0] for p in EXT.iterdir() if any(p.name.endswith(s) for s in EXTENSION_SUFFIXES)}
    assert built <= set(NAMES), f"builds without a source (stale): {sorted(built - set(NAMES))}"
