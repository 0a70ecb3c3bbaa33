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

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import TYPE_CHECKING

from .core._exports import lazy_exports
from .core.errors import FormatError, LatticeToolsError, MismatchError, SymbolError

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
    from .core.lattice import Lattice
    from .core.symbols import SymbolTable
    from .io import read_lattice_inputs, read_lattices, write_lattices
    from .io.transcripts.altctm import read_alternatives_ctm, write_alternatives_ctm
    from .io.transcripts.ctm import read_ctm, write_ctm
    from .io.transcripts.stm import read_stm, write_stm
    from .io.transcripts.trn import read_trn, write_trn
    from .kws.build import build_alternatives_index, build_lattice_index
    from .kws.score import score_kws_files
    from .metrics.evaluate import evaluate_system, summarize
    from .oracle import alternatives_oracle, bootstrap_wer, ctm_oracle, lattice_oracle, oracle_wer, run_study
    from .scoring import ErrorCounts, GlmFilterOptions, apply_glm, filter_file, score_files, score_stm_ctm, score_trn
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
    "Lattice": "core.lattice", "SymbolTable": "core.symbols",
    "Alternatives": "alternatives", "Alternative": "alternatives", "Slot": "alternatives",
    "ErrorCounts": "core.counts",
    "read_lattices": "io", "write_lattices": "io", "read_lattice_inputs": "io",
    "forward_scores": "algorithms", "backward_scores": "algorithms", "total_log_prob": "algorithms",
    "arc_posteriors": "algorithms", "best_path": "algorithms", "prune": "algorithms", "lattice_depth": "algorithms",
    "word_align": "alternatives", "determinize": "alternatives", "nbest": "alternatives", "sausage": "alternatives",
    "phrases": "alternatives",
    "read_alternatives_ctm": "io.transcripts.altctm", "write_alternatives_ctm": "io.transcripts.altctm", "read_ctm": "io.transcripts.ctm",
    "write_ctm": "io.transcripts.ctm", "read_stm": "io.transcripts.stm", "write_stm": "io.transcripts.stm", "read_trn": "io.transcripts.trn", "write_trn": "io.transcripts.trn",
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


# Module paths of earlier versions (before the core/, io/lattices|transcripts|keyword_search/ and pipelines/
# folders), kept importable for code written against them: `import lattice_tools.lattice` gives
# lattice_tools.core.lattice itself (the same module object), with a DeprecationWarning naming the new path.
_MOVED_MODULES = {
    "lattice_tools._budget": "lattice_tools.core._budget",
    "lattice_tools._exports": "lattice_tools.core._exports",
    "lattice_tools._gc": "lattice_tools.core._gc",
    "lattice_tools._optional": "lattice_tools.core._optional",
    "lattice_tools._threads": "lattice_tools.core._threads",
    "lattice_tools.alternatives.network": "lattice_tools.core.alternatives_network",
    "lattice_tools.alternatives_network": "lattice_tools.core.alternatives_network",
    "lattice_tools.demo": "lattice_tools.pipelines.demo",
    "lattice_tools.errors": "lattice_tools.core.errors",
    "lattice_tools.files": "lattice_tools.core.files",
    "lattice_tools.io._kaldi_lattice": "lattice_tools.io.lattices._kaldi_lattice",
    "lattice_tools.io._kaldi_text": "lattice_tools.io.lattices._kaldi_text",
    "lattice_tools.io._xml": "lattice_tools.io.keyword_search._xml",
    "lattice_tools.io.altctm": "lattice_tools.io.transcripts.altctm",
    "lattice_tools.io.convert": "lattice_tools.io.lattices.convert",
    "lattice_tools.io.ctm": "lattice_tools.io.transcripts.ctm",
    "lattice_tools.io.detect": "lattice_tools.io.transcripts.detect",
    "lattice_tools.io.ecf": "lattice_tools.io.keyword_search.ecf",
    "lattice_tools.io.glm": "lattice_tools.io.transcripts.glm",
    "lattice_tools.io.inputs": "lattice_tools.io.lattices.inputs",
    "lattice_tools.io.k2file": "lattice_tools.io.lattices.k2file",
    "lattice_tools.io.kaldi": "lattice_tools.io.lattices.kaldi",
    "lattice_tools.io.kaldi_data": "lattice_tools.io.transcripts.kaldi_data",
    "lattice_tools.io.kaldi_kws": "lattice_tools.io.keyword_search.kaldi_kws",
    "lattice_tools.io.kaldi_tables": "lattice_tools.io.lattices.kaldi_tables",
    "lattice_tools.io.kwlist": "lattice_tools.io.keyword_search.kwlist",
    "lattice_tools.io.kwslist": "lattice_tools.io.keyword_search.kwslist",
    "lattice_tools.io.lattice_files": "lattice_tools.io.lattices.lattice_files",
    "lattice_tools.io.nbest": "lattice_tools.io.transcripts.nbest",
    "lattice_tools.io.nbest_espnet": "lattice_tools.io.transcripts.nbest_espnet",
    "lattice_tools.io.nbest_files": "lattice_tools.io.transcripts.nbest_files",
    "lattice_tools.io.nbest_kaldi": "lattice_tools.io.transcripts.nbest_kaldi",
    "lattice_tools.io.nbest_nemo": "lattice_tools.io.transcripts.nbest_nemo",
    "lattice_tools.io.nbest_sherpa": "lattice_tools.io.transcripts.nbest_sherpa",
    "lattice_tools.io.openfst": "lattice_tools.io.lattices.openfst",
    "lattice_tools.io.rttm": "lattice_tools.io.keyword_search.rttm",
    "lattice_tools.io.slf": "lattice_tools.io.lattices.slf",
    "lattice_tools.io.slf_body": "lattice_tools.io.lattices.slf_body",
    "lattice_tools.io.slf_text": "lattice_tools.io.lattices.slf_text",
    "lattice_tools.io.slf_write": "lattice_tools.io.lattices.slf_write",
    "lattice_tools.io.sphinx_dag": "lattice_tools.io.lattices.sphinx_dag",
    "lattice_tools.io.stm": "lattice_tools.io.transcripts.stm",
    "lattice_tools.io.trn": "lattice_tools.io.transcripts.trn",
    "lattice_tools.latbin": "lattice_tools.pipelines.latbin",
    "lattice_tools.lattice": "lattice_tools.core.lattice",
    "lattice_tools.parallel": "lattice_tools.core.parallel",
    "lattice_tools.recipe": "lattice_tools.pipelines.recipe",
    "lattice_tools.reweight": "lattice_tools.core.reweight",
    "lattice_tools.scoring.counts": "lattice_tools.core.counts",
    "lattice_tools.symbols": "lattice_tools.core.symbols",
}


class _MovedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name not in _MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        new = _MOVED_MODULES[spec.name]
        warnings.warn(f"{spec.name} has moved to {new}; import it from there", DeprecationWarning, stacklevel=3)
        return importlib.import_module(new)

    def exec_module(self, module):
        pass


if not any(isinstance(f, _MovedModule) for f in sys.meta_path):
    sys.meta_path.append(_MovedModule())
