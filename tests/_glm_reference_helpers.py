"""Helpers for tests/test_glm_csrfilt_reference.py: run the GLM filter and its reference transcription
(tests/_reference/glm_csrfilt.py) on the same input and return what each produced (text or objects)
or raised (exception type, message, report).  Keyword arguments are GlmFilterOptions fields."""
from __future__ import annotations

from _reference.glm_csrfilt import reference_apply_glm, reference_filter_text

from lattice_tools.core.errors import LatticeToolsError
from lattice_tools.scoring.glm import GlmFilterOptions, apply_glm, filter_text


def outcome(fn):
    """``("ok", value)`` or ``("error", type name, message, report lines)``."""
    try:
        return ("ok", fn())
    except LatticeToolsError as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "report_lines", None))


def filter_both(text: str, glm, fmt: str, **kw):
    fast = outcome(lambda: filter_text(text, glm, fmt, GlmFilterOptions(**kw)))
    ref = outcome(lambda: reference_filter_text(text, glm, fmt, GlmFilterOptions(**kw)))
    return fast, ref


def object_state(result):
    """Everything apply_glm returned, ``raw`` fields (not compared by ==) and containers included."""
    from lattice_tools.io.transcripts.ctm import CtmAltBlock, CtmWord
    from lattice_tools.io.transcripts.stm import Stm

    def word(w):
        if isinstance(w, CtmAltBlock):
            return ("block", w.file, w.channel, w.lineno, w.raw,
                    tuple(tuple(word(x) for x in a) for a in w.alternatives))
        assert isinstance(w, CtmWord)
        return ("word", w.file, w.channel, w.start, w.duration, w.word, w.confidence, w.lineno, w.raw,
                repr(w.start), repr(w.duration), repr(w.confidence))

    if isinstance(result, str):
        return result
    if isinstance(result, Stm):
        return (result.segments, result.header, result.path, result.layout)
    if result and isinstance(result[0], (CtmWord, CtmAltBlock)) or hasattr(result, "comments") and not result:
        return (tuple(word(w) for w in result), tuple(getattr(result, "comments", ())), getattr(result, "path", None))
    return (tuple(result), tuple(getattr(result, "comments", ())), getattr(result, "path", None))


def apply_both(glm, items, fmt: str, **kw):
    fast = outcome(lambda: object_state(apply_glm(glm, items, fmt=fmt, options=GlmFilterOptions(**kw))))
    ref = outcome(lambda: object_state(reference_apply_glm(glm, items, fmt=fmt, options=GlmFilterOptions(**kw))))
    return fast, ref
