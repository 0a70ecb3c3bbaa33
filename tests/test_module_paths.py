"""Module paths of earlier versions still import, as the new module itself, with a warning naming it."""
from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import lattice_tools

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("old", sorted(lattice_tools._MOVED_MODULES))
def test_an_old_module_path_gives_the_new_module(old):
    new = lattice_tools._MOVED_MODULES[old]
    assert importlib.util.find_spec(new) is not None, f"{new} does not exist"
    assert not (REPO / (old.replace(".", "/") + ".py")).exists(), f"{old} still has a file of its own"
    code = (f"import warnings, importlib\n"
            f"warnings.simplefilter('error', DeprecationWarning)\n"
            f"try:\n    importlib.import_module({old!r})\n"
            f"except DeprecationWarning as e:\n    print(e)\n")
    # a fresh interpreter: the warning is raised on first import only
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{old} has moved to {new}; import it from there"


def test_the_old_and_new_paths_are_one_module():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("lattice_tools.lattice")
        from_import = importlib.import_module("lattice_tools.io.ctm")
    import lattice_tools.core.lattice as new
    import lattice_tools.io.transcripts.ctm as new_ctm

    assert old is new and from_import is new_ctm
    assert old.Lattice is lattice_tools.Lattice


def test_an_unknown_module_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("lattice_tools.no_such_module")
