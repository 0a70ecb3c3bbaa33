"""Exact oracle error rates over lattices and every alternatives representation (see docs/oracle.md).

* :func:`lattice_oracle` -- the exact full-lattice oracle (DP over lattice x reference network);
* :func:`alternatives_oracle` -- the oracle of an N-best list, sausage or phrase alternatives
  (best joint choice per slot, sclite's semantics), :func:`alternatives_oracle_many` batched;
* :func:`ctm_oracle` -- an alt-CTM against an STM, as Debian sclite scores it;
* :func:`bootstrap_wer` / :func:`bootstrap_systems` -- utterance-bootstrap intervals;
* :func:`run_study` -- the density-vs-oracle study (seed 001 Tables 3-6, plots);
* :func:`oracle_wer` -- what ``lattice-tools oracle`` runs.

Submodules are imported lazily so that ``import lattice_tools.oracle`` stays cheap.
"""
from __future__ import annotations

import importlib

# Eager: the function ``lattice_oracle`` shares its name with its submodule; importing it here
# binds the package attribute to the function (a lazy import would leave the module there).
from .lattice_oracle import (  # noqa: E402,F401
    LEVENSHTEIN_COSTS,
    SCLITE_COSTS,
    AlignedPair,
    OracleResult,
    alternatives_oracle,
    lattice_oracle,
    oracle_graph,
    sequence_oracle,
)

_EXPORTS = {
    "lattice_oracle": "lattice_oracle", "alternatives_oracle": "lattice_oracle", "sequence_oracle": "lattice_oracle",
    "oracle_graph": "lattice_oracle", "OracleResult": "lattice_oracle", "AlignedPair": "lattice_oracle",
    "SCLITE_COSTS": "lattice_oracle", "LEVENSHTEIN_COSTS": "lattice_oracle",
    "alternatives_oracle_many": "batch", "ctm_oracle": "representations", "utterance_oracle": "representations",
    "make_alternatives": "representations", "load_references": "representations",
    "bootstrap_wer": "bootstrap", "bootstrap_systems": "bootstrap", "Interval": "bootstrap",
    "run_study": "study", "StudyResult": "study", "oracle_wer": "report",
}

__all__ = sorted(set(_EXPORTS))


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lattice_tools.oracle' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
