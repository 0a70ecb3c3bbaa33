"""Alternatives from lattices: word alignment, determinization, exact N-best, sausages, phrase
alternatives (Faria et al., section 3).  See ``docs/alternatives.md``.

Public functions: :func:`word_align`, :func:`determinize`, :func:`nbest`, :func:`sausage`,
:func:`phrases`, and :func:`write_alternatives_ctm` (from :mod:`lattice_tools.io.transcripts.altctm`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core._exports import lazy_exports

if TYPE_CHECKING:
    from ..core.alternatives_network import Alternative, Alternatives, DepthStatistics, Slot, depth_statistics
    from ..io.transcripts.altctm import AltCtmStatistics, write_alternatives_ctm
    from .determinization import determinize
    from .nbest_lists import nbest, nbest_search, nbest_sequences
    from .phrase_alternatives import PhraseDecomposition, phrases
    from .sausages import sausage
    from .word_alignment import word_align

__all__ = ["Alternative", "Alternatives", "Slot", "DepthStatistics", "depth_statistics", "write_alternatives_ctm", "AltCtmStatistics",
           "word_align", "determinize", "nbest", "nbest_search", "nbest_sequences", "sausage", "phrases", "PhraseDecomposition"]


# name -> the module it is imported from on first use: importing every algorithm costs ~50 ms that a
# command using one of them should not pay.  No name clashes with its
# module's (determinize / determinization, sausage / sausages, ...), so a submodule import never
# shadows a function.  io.transcripts.altctm imports this package, hence its writer is lazy too.
_LAZY = {
    "Alternative": "..core.alternatives_network", "Alternatives": "..core.alternatives_network", "Slot": "..core.alternatives_network", "depth_statistics": "..core.alternatives_network",
    "DepthStatistics": "..core.alternatives_network",
    "determinize": ".determinization", "nbest": ".nbest_lists", "nbest_sequences": ".nbest_lists",
    "nbest_search": ".nbest_lists",
    "phrases": ".phrase_alternatives", "PhraseDecomposition": ".phrase_alternatives", "sausage": ".sausages",
    "word_align": ".word_alignment", "write_alternatives_ctm": "..io.transcripts.altctm",
    "AltCtmStatistics": "..io.transcripts.altctm",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
