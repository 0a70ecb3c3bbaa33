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
- :mod:`.segment_free` -- :func:`score_segment_free` (one alignment per file and channel, ALT blocks across
  segment boundaries, an optional time collar);
- :mod:`.reports` -- :func:`kaldi_line`, :func:`sys_report`, :func:`pra_report`, :func:`dtl_report`,
  :func:`json_report`,
  :func:`write_reports`;
- :mod:`.ladder` -- :func:`run_ladder`, :func:`ladder_markdown`, :func:`alternation_glm`;
- :mod:`.counts` -- :class:`ErrorCounts`; :mod:`.glm` -- csrfilt-exact GLM filtering
  (:func:`apply_glm`, :func:`filter_text`, :func:`filter_file`, :class:`GlmFilterOptions`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core._exports import lazy_exports
from ..core.counts import ErrorCounts

if TYPE_CHECKING:
    from .align import AlignedPair, Alignment, AlignOptions, align_batch, align_networks, align_words
    from .glm import GlmFilterOptions, apply_glm, filter_file, filter_text
    from .ladder import alternation_glm, ladder_markdown, run_ladder
    from .network import WordNetwork, from_ctm_items, linear_network, parse_transcript
    from .reports import dtl_report, json_report, kaldi_line, pra_report, sys_report, write_reports
    from .results import ScoreResult, SegmentScore
    from .sclite import score_files, score_stm_ctm, score_trn
    from .segment_free import score_segment_free
    from .tuning import EngineTuning

_EXPORTS = {
    "WordNetwork": "network", "parse_transcript": "network", "linear_network": "network",
    "from_ctm_items": "network",
    "AlignOptions": "align", "Alignment": "align", "AlignedPair": "align", "align_networks": "align",
    "align_batch": "align", "align_words": "align",
    "ScoreResult": "results", "SegmentScore": "results", "score_stm_ctm": "sclite", "score_trn": "sclite",
    "score_files": "sclite", "score_segment_free": "segment_free", "EngineTuning": "tuning",
    "GlmFilterOptions": "glm", "apply_glm": "glm",
    "filter_text": "glm", "filter_file": "glm",
    "kaldi_line": "reports", "sys_report": "reports", "pra_report": "reports", "json_report": "reports",
    "dtl_report": "reports",
    "write_reports": "reports",
    "run_ladder": "ladder", "ladder_markdown": "ladder", "alternation_glm": "ladder",
}

__all__ = ["ErrorCounts", "WordNetwork", "parse_transcript", "linear_network", "from_ctm_items", "AlignOptions",
           "Alignment", "AlignedPair", "align_networks", "align_batch", "align_words", "ScoreResult",
           "SegmentScore", "score_stm_ctm", "score_trn", "score_files", "score_segment_free", "EngineTuning",
           "GlmFilterOptions",
           "apply_glm", "filter_text", "filter_file", "kaldi_line", "sys_report", "pra_report", "json_report",
           "dtl_report", "write_reports", "run_ladder", "ladder_markdown", "alternation_glm"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
