"""Exact oracle error rates over lattices and every alternatives representation (see docs/oracle.md).

* :func:`lattice_oracle` -- the exact full-lattice oracle (DP over lattice x reference network),
  :func:`lattice_oracle_many` batched;
* :func:`alternatives_oracle` -- the oracle of an N-best list, sausage or phrase alternatives
  (best joint choice per slot, sclite's semantics), :func:`alternatives_oracle_many` batched;
* :func:`ctm_oracle` -- an alt-CTM against an STM, as Debian sclite scores it;
* :func:`bootstrap_wer` / :func:`bootstrap_systems` -- utterance-bootstrap intervals;
* :func:`run_study` -- the density-vs-oracle study (Faria et al., Tables 3-6, plots);
* :func:`oracle_wer` -- what ``lattice-tools oracle`` runs.

Modules: ``costs`` (integer cost models), ``graphs`` (reference and hypothesis networks in array
form), ``dp`` (the exact DP, traceback, result types), ``batch`` (batched edit costs of linear
hypotheses), ``sclite_ties`` (sclite's choice among equal-cost alignments), ``api`` (the entry
points, which choose the engine), then ``representations``, ``report``, ``bootstrap``, ``study``.

Names are loaded lazily on first access so that ``import lattice_tools.oracle`` stays cheap.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core._exports import lazy_exports

if TYPE_CHECKING:
    from .api import alternatives_oracle, alternatives_oracle_many, lattice_oracle, lattice_oracle_many, sequence_oracle
    from .bootstrap import Interval, bootstrap_systems, bootstrap_wer
    from .costs import LEVENSHTEIN_ORACLE_COSTS, SCLITE_ORACLE_COSTS, OracleCosts
    from .dp import OracleAlignmentStep, OracleResult, oracle_graph
    from .report import OracleReport, oracle_wer
    from .representations import ctm_oracle, load_references, make_alternatives, utterance_oracle
    from .study import (
        BothWaysInvariant,
        StudyBothWaysRow,
        StudyInvariant,
        StudyResult,
        StudyRow,
        StudyUtterance,
        run_study,
    )

__all__ = [
    "LEVENSHTEIN_ORACLE_COSTS",
    "SCLITE_ORACLE_COSTS",
    "Interval",
    "OracleAlignmentStep",
    "OracleCosts",
    "OracleReport",
    "OracleResult",
    "StudyBothWaysRow",
    "StudyResult",
    "StudyRow",
    "StudyInvariant",
    "BothWaysInvariant",
    "StudyUtterance",
    "alternatives_oracle",
    "alternatives_oracle_many",
    "bootstrap_systems",
    "bootstrap_wer",
    "ctm_oracle",
    "lattice_oracle",
    "lattice_oracle_many",
    "load_references",
    "make_alternatives",
    "oracle_graph",
    "oracle_wer",
    "run_study",
    "sequence_oracle",
    "utterance_oracle",
]

# exported name -> submodule defining it
_SOURCE = {
    "lattice_oracle": "api", "lattice_oracle_many": "api", "alternatives_oracle": "api", "alternatives_oracle_many": "api",
    "sequence_oracle": "api",
    "Interval": "bootstrap", "bootstrap_systems": "bootstrap", "bootstrap_wer": "bootstrap",
    "LEVENSHTEIN_ORACLE_COSTS": "costs", "SCLITE_ORACLE_COSTS": "costs", "OracleCosts": "costs",
    "OracleAlignmentStep": "dp", "OracleResult": "dp", "oracle_graph": "dp",
    "OracleReport": "report", "oracle_wer": "report",
    "ctm_oracle": "representations", "load_references": "representations", "make_alternatives": "representations",
    "utterance_oracle": "representations",
    "StudyResult": "study", "StudyRow": "study", "StudyBothWaysRow": "study", "StudyUtterance": "study", "StudyInvariant": "study", "BothWaysInvariant": "study",
    "run_study": "study",
}


__getattr__, __dir__ = lazy_exports(__name__, _SOURCE, globals())
