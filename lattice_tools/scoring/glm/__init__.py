"""Apply a NIST GLM exactly like SCTK's ``csrfilt.sh`` (version 1.17, which runs ``rfilter1``), plus
the opt-in repairs sclite users need.

- :mod:`.filtering` -- the entry points :func:`filter_text`, :func:`apply_glm`, :func:`filter_file`,
  all configured by one :class:`GlmFilterOptions` (:mod:`.options`);
- :mod:`.csrfilt` -- csrfilt.sh's steps on text, byte for byte (:func:`csrfilt_text`);
- :mod:`.rfilter` -- rfilter1's rewriting engine (:class:`CompiledGlm`);
- :mod:`.perl` -- the Perl/C behaviours csrfilt relies on;
- :mod:`.repairs` -- :func:`flatten_ctm_alternations`, :func:`repair_optional_alternations`,
  :func:`optionalize_words`, :func:`drop_ctm_words`, :func:`glm_word_classes`, :func:`expand_alternation`.
"""
from __future__ import annotations

from .csrfilt import OptionalDeletionError, csrfilt_text
from .filtering import apply_glm, filter_file, filter_text
from .options import FORMATS, GlmFilterOptions
from .repairs import (
    count_nested_blocks,
    drop_ctm_words,
    expand_alternation,
    flatten_ctm_alternations,
    glm_word_classes,
    optionalize_words,
    repair_optional_alternations,
)
from .rfilter import CompiledGlm

__all__ = ["FORMATS", "CompiledGlm", "GlmFilterOptions", "OptionalDeletionError", "apply_glm", "count_nested_blocks",
           "csrfilt_text", "drop_ctm_words", "expand_alternation", "filter_file", "filter_text",
           "flatten_ctm_alternations", "glm_word_classes", "optionalize_words", "repair_optional_alternations"]
