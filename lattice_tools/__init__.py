"""lattice-tools: from decoder lattices to alternatives (N-best, sausages, phrases), alt-CTM files,
sclite-exact scoring, oracle WER and keyword search.

The main pipeline is importable from the top level::

    import lattice_tools as lt

    lats = lt.read_lattices("ark:gunzip -c lat.1.gz |", symbols="words.txt")
    lt.write_alternatives_ctm("phrases.ctm", (lt.phrases(lat, 1000) for lat in lats))
    result = lt.score_files("ref.stm", "phrases.ctm")          # exactly like sclite
    report = lt.oracle_wer("lat.ark", "ref.stm", representation="lattice")

The hub types are :class:`Lattice` (a word lattice), :class:`Alternatives` (a word network of
alternatives: N-best, sausage or phrases) and :class:`ErrorCounts` (frozen, additive error counts).
Everything else lives in the subpackages (``io``, ``algorithms``, ``alternatives``, ``scoring``,
``oracle``, ``metrics``, ``kws``, ``ctc``); ``docs/architecture.md`` says where and why.

Names are imported on first use, so ``import lattice_tools`` (and every command line run) stays cheap.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._exports import lazy_exports
from .errors import FormatError, LatticeToolsError, MismatchError, SymbolError

if TYPE_CHECKING:
    from .algorithms import (
        arc_posteriors,
        backward_scores,
        best_path,
        forward_scores,
        lattice_depth,
        prune,
        total_log_prob,
    )
    from .alternatives import Alternative, Alternatives, Slot, determinize, nbest, phrases, sausage, word_align
    from .io import read_lattice_inputs, read_lattices, write_lattices
    from .io.altctm import read_alternatives_ctm, write_alternatives_ctm
    from .io.ctm import read_ctm, write_ctm
    from .io.stm import read_stm, write_stm
    from .io.trn import read_trn, write_trn
    from .kws.build import build_alternatives_index, build_lattice_index
    from .kws.score import score_kws_files
    from .lattice import Lattice
    from .metrics.evaluate import evaluate_system, summarize
    from .oracle import alternatives_oracle, bootstrap_wer, ctm_oracle, lattice_oracle, oracle_wer, run_study
    from .scoring import ErrorCounts, GlmFilterOptions, apply_glm, filter_file, score_files, score_stm_ctm, score_trn
    from .symbols import SymbolTable
    from .viewer import view

__all__ = [
    "__version__",
    # hub types
    "Lattice", "SymbolTable", "Alternatives", "Alternative", "Slot", "ErrorCounts",
    # errors
    "LatticeToolsError", "FormatError", "MismatchError", "SymbolError",
    # lattices in and out
    "read_lattices", "write_lattices", "read_lattice_inputs",
    # lattice algorithms
    "forward_scores", "backward_scores", "total_log_prob", "arc_posteriors", "best_path", "prune", "lattice_depth",
    # alternatives
    "word_align", "determinize", "nbest", "sausage", "phrases",
    # CTM / alt-CTM / STM / trn files
    "read_alternatives_ctm", "write_alternatives_ctm", "read_ctm", "write_ctm", "read_stm", "write_stm",
    "read_trn", "write_trn",
    # scoring (sclite-exact)
    "score_files", "score_stm_ctm", "score_trn",
    # GLM filtering (csrfilt-exact)
    "apply_glm", "filter_file", "GlmFilterOptions",
    # oracle error rates
    "lattice_oracle", "alternatives_oracle", "ctm_oracle", "oracle_wer", "bootstrap_wer", "run_study",
    # metrics beyond WER (needs the 'metrics' extra)
    "evaluate_system", "summarize",
    # keyword search
    "build_lattice_index", "build_alternatives_index", "score_kws_files",
    # the browser view
    "view",
]

# name -> the module it is imported from on first use
_LAZY = {
    "Lattice": "lattice", "SymbolTable": "symbols",
    "Alternatives": "alternatives", "Alternative": "alternatives", "Slot": "alternatives",
    "ErrorCounts": "scoring",
    "read_lattices": "io", "write_lattices": "io", "read_lattice_inputs": "io",
    "forward_scores": "algorithms", "backward_scores": "algorithms", "total_log_prob": "algorithms",
    "arc_posteriors": "algorithms", "best_path": "algorithms", "prune": "algorithms", "lattice_depth": "algorithms",
    "word_align": "alternatives", "determinize": "alternatives", "nbest": "alternatives", "sausage": "alternatives",
    "phrases": "alternatives",
    "read_alternatives_ctm": "io.altctm", "write_alternatives_ctm": "io.altctm", "read_ctm": "io.ctm",
    "write_ctm": "io.ctm", "read_stm": "io.stm", "write_stm": "io.stm", "read_trn": "io.trn", "write_trn": "io.trn",
    "score_files": "scoring", "score_stm_ctm": "scoring", "score_trn": "scoring",
    "apply_glm": "scoring", "filter_file": "scoring", "GlmFilterOptions": "scoring",
    "evaluate_system": "metrics.evaluate", "summarize": "metrics.evaluate",
    "build_lattice_index": "kws.build", "build_alternatives_index": "kws.build", "score_kws_files": "kws.score",
    "lattice_oracle": "oracle", "alternatives_oracle": "oracle", "ctm_oracle": "oracle", "oracle_wer": "oracle",
    "bootstrap_wer": "oracle", "run_study": "oracle",
    "view": "viewer",
}


def _version() -> str:
    # pyproject.toml is the only place the version is written; reading the metadata costs ~15 ms, so it is
    # read on first use, not by every command line run
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lattice-tools")
    except PackageNotFoundError:  # a source tree on PYTHONPATH that was never installed
        return "0+unknown"


_export, __dir__ = lazy_exports(__name__, _LAZY, globals())


def __getattr__(name: str):
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    return _export(name)
