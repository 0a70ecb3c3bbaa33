"""The core layer: the hub types every other layer may import, and the small utilities they share.

- :class:`~lattice_tools.core.lattice.Lattice`: a word lattice (arrays of arcs, scores, times);
- :class:`~lattice_tools.core.symbols.SymbolTable`: word ids to words;
- :class:`~lattice_tools.core.alternatives_network.Alternatives`: a word network of alternatives (N-best,
  sausage or phrases), with :class:`Alternative` and :class:`Slot`;
- :class:`~lattice_tools.core.counts.ErrorCounts`: frozen, additive error counts;
- the errors (:mod:`lattice_tools.core.errors`), file handling with bounded reads (``files``), the memory budget
  (``_budget``), optional-extra checks (``_optional``) and the executor layer for parallel runs (``parallel``).

Nothing here imports from another layer of the package.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._exports import lazy_exports
from .errors import FormatError, LatticeToolsError, MismatchError, SymbolError

if TYPE_CHECKING:
    from .alternatives_network import Alternative, Alternatives, Slot
    from .counts import ErrorCounts
    from .lattice import Lattice
    from .symbols import SymbolTable

__all__ = ["Lattice", "SymbolTable", "Alternatives", "Alternative", "Slot", "ErrorCounts",
           "LatticeToolsError", "FormatError", "MismatchError", "SymbolError"]

_LAZY = {
    "Lattice": "lattice", "SymbolTable": "symbols", "ErrorCounts": "counts",
    "Alternatives": "alternatives_network", "Alternative": "alternatives_network", "Slot": "alternatives_network",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
