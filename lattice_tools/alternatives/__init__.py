"""Alternatives from lattices: word alignment, determinization, exact N-best, sausages, phrase
alternatives (seed 001 section 3).  See ``docs/alternatives.md``.

Public functions: :func:`word_align`, :func:`determinize`, :func:`nbest`, :func:`sausage`,
:func:`phrases`, and :func:`write_alternatives_ctm` (from :mod:`lattice_tools.io.altctm`).
"""
from __future__ import annotations

# The functions are imported eagerly: each lives in a submodule of the same name, and a lazy
# attribute would be shadowed by the submodule as soon as anything imported it.
from .determinization import determinize  # noqa: E402
from .nbest_lists import nbest, nbest_sequences  # noqa: E402
from .network import Alternative, Alternatives, Slot, depth_statistics
from .phrase_alternatives import PhraseDecomposition, phrases  # noqa: E402
from .sausages import sausage  # noqa: E402
from .word_alignment import word_align  # noqa: E402

__all__ = ["Alternative", "Alternatives", "Slot", "depth_statistics", "write_alternatives_ctm", "word_align",
           "determinize", "nbest", "nbest_sequences", "sausage", "phrases", "PhraseDecomposition"]


def __getattr__(name):
    # io.altctm imports this package, so its writer is re-exported lazily
    if name == "write_alternatives_ctm":
        from ..io.altctm import write_alternatives_ctm
        return write_alternatives_ctm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
