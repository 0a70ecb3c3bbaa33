"""The flat public API at the top level (``import lattice_tools as lt``): static, complete, cheap."""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import lattice_tools as lt

INIT = Path(lt.__file__)


def _type_checking_names() -> set[str]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    return {alias.asname or alias.name for node in block.body for alias in node.names}


def test_every_public_name_resolves_to_the_subpackage_object():
    from lattice_tools.core.errors import MissingDependencyError

    for name in lt.__all__:
        try:
            value = getattr(lt, name)
        except MissingDependencyError:  # the metrics extra (regex, ...) is not installed
            assert lt._LAZY[name].startswith("metrics"), name
            continue
        module = lt._LAZY.get(name)
        if module is not None:
            assert value is getattr(importlib.import_module(f"lattice_tools.{module}"), name), name


def test_type_checkers_see_what_the_lazy_table_serves():
    # the TYPE_CHECKING imports are what IDEs and mypy read; the lazy table is what runs
    assert _type_checking_names() == set(lt._LAZY)
    assert set(lt._LAZY) <= set(lt.__all__)
    eager = {"__version__", "LatticeToolsError", "FormatError", "MismatchError", "SymbolError"}
    assert set(lt.__all__) == set(lt._LAZY) | eager
    assert set(lt.__all__) <= set(dir(lt))


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        lt.nope  # noqa: B018


def test_importing_the_package_is_cheap():
    code = "import sys, lattice_tools; print(sorted(m for m in ('numpy', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_version_comes_from_the_package_metadata():
    import re
    from importlib.metadata import version

    pyproject = (INIT.parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    written = re.search(r'^version = "([^"]+)"$', pyproject, re.M).group(1)
    assert lt.__version__ == version("lattice-tools") == written
    assert f'"{written}"' not in INIT.read_text(encoding="utf-8")  # written once, in pyproject.toml
