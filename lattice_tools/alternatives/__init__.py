"""Alternatives from lattices: word alignment, determinization, exact N-best, sausages, phrase
alternatives (seed 001 section 3).  See ``docs/alternatives.md``.

Public functions (imported lazily so that ``import lattice_tools.alternatives`` stays cheap):
:func:`word_align`, :func:`determinize`, :func:`nbest`, :func:`sausage`, :func:`phrases`, and
:func:`write_alternatives_ctm` (from :mod:`lattice_tools.io.altctm`).
"""
from __future__ import annotations

import importlib

from .network import Alternative, Alternatives, Slot, depth_statistics

_LAZY = {
    "word_align": "word_align", "determinize": "determinize", "nbest": "nbest", "nbest_sequences": "nbest",
    "sausage": "sausage", "phrases": "phrases", "PhraseDecomposition": "phrases",
}

__all__ = ["Alternative", "Alternatives", "Slot", "depth_statistics", "write_alternatives_ctm", *_LAZY]


def __getattr__(name):
    if name == "write_alternatives_ctm":
        from ..io.altctm import write_alternatives_ctm
        return write_alternatives_ctm
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
