"""The alternatives hub type (:class:`Alternatives`, :class:`Slot`, :class:`Alternative`), defined in
:mod:`lattice_tools.alternatives_network` (below io, which reads and writes it) and re-exported here."""
from __future__ import annotations

from ..alternatives_network import Alternative, Alternatives, Slot, depth_statistics

__all__ = ["Alternative", "Alternatives", "Slot", "depth_statistics"]
