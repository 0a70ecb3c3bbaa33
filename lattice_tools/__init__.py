"""lattice-tools: from decoder lattices to alternatives (N-best, sausages, phrases), alt-CTM files,
and sclite-exact scoring with oracle WER.

The hub types are :class:`Lattice`, :class:`Alternatives` and :class:`ErrorCounts`.
"""
from importlib.metadata import PackageNotFoundError, version

from .errors import LatticeToolsError

try:  # pyproject.toml is the only place the version is written
    __version__ = version("lattice-tools")
except PackageNotFoundError:  # a source tree on PYTHONPATH that was never installed
    __version__ = "0+unknown"
__all__ = ["Lattice", "SymbolTable", "Alternatives", "Alternative", "Slot", "ErrorCounts",
           "LatticeToolsError", "__version__"]

# The hub types are imported on first use, so that ``import lattice_tools.cli`` (every command
# line run) does not import numpy before the CLI has configured it.
_LAZY = {"Lattice": ".lattice", "SymbolTable": ".symbols", "Alternative": ".alternatives.network",
         "Alternatives": ".alternatives.network", "Slot": ".alternatives.network",
         "ErrorCounts": ".scoring.counts"}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
