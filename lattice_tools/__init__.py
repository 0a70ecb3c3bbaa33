"""lattice-tools: from decoder lattices to alternatives (N-best, sausages, phrases), alt-CTM files,
and sclite-exact scoring with oracle WER.

The hub types are :class:`Lattice`, :class:`Alternatives` and :class:`ErrorCounts`.
"""
from .errors import LatticeToolsError
from .lattice import Lattice
from .symbols import SymbolTable
from .alternatives.network import Alternative, Alternatives, Slot
from .scoring.counts import ErrorCounts

__version__ = "0.1.0"
__all__ = ["Lattice", "SymbolTable", "Alternatives", "Alternative", "Slot", "ErrorCounts",
           "LatticeToolsError", "__version__"]
