"""Lattice algorithms: forward/backward scores, posteriors, best path, pruning, depth.

Every function takes a :class:`lattice_tools.core.lattice.Lattice` and returns numpy arrays or a new
lattice; none modifies its input.  See ``docs/algorithms.md`` for semirings and conventions.
"""
from ..core.reweight import weights_from_posteriors
from .pruning import lattice_depth, prune
from .scores import arc_posteriors, backward_scores, best_path, forward_scores, total_log_prob
from .statistics import lattice_info, lattice_stats

__all__ = ["forward_scores", "backward_scores", "total_log_prob", "arc_posteriors", "best_path", "prune",
           "lattice_depth", "weights_from_posteriors", "lattice_info", "lattice_stats"]
