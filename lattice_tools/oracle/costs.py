"""Integer edit costs of the exact oracle (tropical semiring: ties are exact).

Two conventions: sclite's ``wwd_WORD`` weights (correct 0, insertion/deletion 3, optional deletion
2, substitution 4, ``@`` skipped 0.001), scaled by 1000 to integers; and plain Levenshtein (1/1/1,
optional deletions and ``@`` free), whose cost *is* the number of errors.  ``wwd_WORD`` also prices
a word against ``@`` at 1, but sclite's network DP never makes that pair (measured against Debian
sclite: it skips the ``@`` even at a higher total), so neither convention allows it.

These are not the scorer's :data:`lattice_tools.scoring.align.SCLITE_COSTS` (float32 weights of
sclite's own DP, in sclite's units): the oracle needs exact integer arithmetic, hence its own type.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import LatticeToolsError


@dataclass(frozen=True)
class OracleCosts:
    """Integer edit costs of one scoring convention.

    ``null_skip``: inserting or deleting the NULL word ``@``; ``null_pair``: a word against ``@``
    (or ``@`` against ``@``), ``None`` = never paired.  ``opt_del``: deleting an optionally
    deletable reference word.
    ``scale``: divide a total by it to get the convention's own units (sclite: 1000).
    """

    name: str
    sub: int
    ins: int
    dele: int
    opt_del: int
    null_skip: int
    null_pair: int | None
    scale: int = 1


SCLITE_ORACLE_COSTS = OracleCosts("sclite", sub=4000, ins=3000, dele=3000, opt_del=2000, null_skip=1,
                                  null_pair=None, scale=1000)
LEVENSHTEIN_ORACLE_COSTS = OracleCosts("levenshtein", sub=1, ins=1, dele=1, opt_del=0, null_skip=0, null_pair=None,
                                       scale=1)


def oracle_costs(mode: str | OracleCosts) -> OracleCosts:
    """``"sclite"`` or ``"levenshtein"`` (or an :class:`OracleCosts`) -> :class:`OracleCosts`."""
    if isinstance(mode, OracleCosts):
        return mode
    if mode == "sclite":
        return SCLITE_ORACLE_COSTS
    if mode in ("levenshtein", "plain"):
        return LEVENSHTEIN_ORACLE_COSTS
    raise LatticeToolsError(f"unknown oracle mode {mode!r}; expected 'sclite' or 'levenshtein'")
