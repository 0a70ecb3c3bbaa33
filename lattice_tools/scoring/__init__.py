"""sclite-exact scoring: word networks, the network alignment, STM/CTM and trn scoring, reports, the
scoring ladder, and GLM filtering.

Submodules are imported lazily (``from lattice_tools.scoring import score_stm_ctm`` works, but
``import lattice_tools.scoring`` alone imports nothing heavy):

- :mod:`.network` -- :class:`WordNetwork`, :func:`parse_transcript`, :func:`linear_network`,
  :func:`from_ctm_items`;
- :mod:`.align` -- :func:`align_networks`, :func:`align_batch`, :func:`align_words`, :class:`AlignOptions`;
- :mod:`.sclite` -- :func:`score_stm_ctm`, :func:`score_trn`, :func:`score_files`; :mod:`.results` --
  :class:`ScoreResult`, :class:`SegmentScore`; :mod:`.tuning` -- :class:`EngineTuning` (which STM/CTM engine:
  the general one of :mod:`.align`, or :mod:`.chain_scorer` with :mod:`.ctm_columns`; :mod:`.segments`
  and :mod:`.ctm_items` hold what both share);
- :mod:`.reports` -- :func:`kaldi_line`, :func:`sys_report`, :func:`pra_report`, :func:`dtl_report`,
  :func:`json_report`,
  :func:`write_reports`;
- :mod:`.ladder` -- :func:`run_ladder`, :func:`ladder_markdown`, :func:`alternation_glm`;
- :mod:`.counts` -- :class:`ErrorCounts`; :mod:`.glm` -- csrfilt-exact GLM filtering
  (:func:`apply_glm`, :func:`filter_text`, :func:`filter_file`, :class:`GlmFilterOptions`).
"""
from __future__ import annotations

import importlib

from .counts import ErrorCounts

_EXPORTS = {
    "WordNetwork": "network", "parse_transcript": "network", "linear_network": "network",
    "from_ctm_items": "network",
    "AlignOptions": "align", "Alignment": "align", "AlignedPair": "align", "align_networks": "align",
    "align_batch": "align", "align_words": "align",
    "ScoreResult": "results", "SegmentScore": "results", "score_stm_ctm": "sclite", "score_trn": "sclite",
    "score_files": "sclite", "EngineTuning": "tuning", "GlmFilterOptions": "glm", "apply_glm": "glm",
    "filter_text": "glm", "filter_file": "glm",
    "kaldi_line": "reports", "sys_report": "reports", "pra_report": "reports", "json_report": "reports",
    "dtl_report": "reports",
    "write_reports": "reports",
    "run_ladder": "ladder", "ladder_markdown": "ladder", "alternation_glm": "ladder",
}

__all__ = ["ErrorCounts", *_EXPORTS]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
