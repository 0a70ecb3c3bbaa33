"""A browser view of lattices, alternatives, alignments and keyword hits: :func:`view` writes one
self-contained HTML file (``lattice-tools view``; docs/view.md)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core._exports import lazy_exports

if TYPE_CHECKING:
    from .build import ViewSummary, view

__all__ = ["ViewSummary", "view"]

__getattr__, __dir__ = lazy_exports(__name__, {"ViewSummary": "build", "view": "build"}, globals())
