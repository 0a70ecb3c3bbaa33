"""Plain Levenshtein alignment of unit sequences (words or grapheme clusters).

Unit costs 1/1/1 (no sclite weights): the counts are those of Kaldi's ``compute-wer``, jiwer and
kaldialign.  The DP itself is kaldialign's C++ (a core dependency); S/D/I are read off its
alignment so that every metric that needs the alignment (switch points, alternative coverage)
sees the same path the counts come from.
"""
from __future__ import annotations

from collections.abc import Sequence

import kaldialign

from ..core.counts import ErrorCounts

EPS = "\x00<eps>"

_ZERO_COUNTS = dict(ErrorCounts().__dict__)


def make_counts(correct: int, substitutions: int, deletions: int, insertions: int, segments: int = 1,
                segment_errors: int | None = None) -> ErrorCounts:
    """``ErrorCounts(correct=.., substitutions=.., deletions=.., insertions=.., ref_words=C+S+D,
    segments=.., segment_errors=..)`` (default: one segment, in error iff S+D+I > 0), built without
    ``__post_init__``'s per-field validation, which costs ~4 us, more than aligning a short
    utterance.  Only for values that are non-negative ints by construction (the callers' counters);
    the result compares and hashes equal to the constructor's."""
    obj = object.__new__(ErrorCounts)
    d = obj.__dict__
    d.update(_ZERO_COUNTS)
    d["correct"] = correct
    d["substitutions"] = substitutions
    d["deletions"] = deletions
    d["insertions"] = insertions
    d["ref_words"] = correct + substitutions + deletions
    d["segments"] = segments
    d["segment_errors"] = int(substitutions + deletions + insertions > 0) if segment_errors is None else segment_errors
    return obj


def align(ref: Sequence[str], hyp: Sequence[str]) -> list[tuple[str | None, str | None]]:
    """Minimum-edit-distance alignment as ``(ref_unit | None, hyp_unit | None)`` pairs."""
    if not ref:
        return [(None, h) for h in hyp]
    if not hyp:
        return [(r, None) for r in ref]
    return [(None if r == EPS else r, None if h == EPS else h) for r, h in kaldialign.align(ref, hyp, EPS)]


def counts_from_alignment(pairs, segments: int = 1) -> ErrorCounts:
    c = s = d = i = 0
    for r, h in pairs:
        if r is None:
            i += 1
        elif h is None:
            d += 1
        elif r == h:
            c += 1
        else:
            s += 1
    return ErrorCounts(correct=c, substitutions=s, deletions=d, insertions=i, ref_words=c + s + d,
                       segments=segments, segment_errors=int(segments > 0 and (s + d + i) > 0))


def error_counts(ref: Sequence[str], hyp: Sequence[str]) -> ErrorCounts:
    """Plain-Levenshtein :class:`ErrorCounts` of one segment (the S/D/I split of kaldialign's
    path, the same as :func:`align`'s)."""
    if not ref or not hyp:
        return counts_from_alignment(align(ref, hyp))
    k = kaldialign.edit_distance(ref, hyp)
    s, d, i = int(k["sub"]), int(k["del"]), int(k["ins"])
    return ErrorCounts(correct=len(ref) - s - d, substitutions=s, deletions=d, insertions=i, ref_words=len(ref),
                       segments=1, segment_errors=int(s + d + i > 0))


def edit_distance(ref: Sequence[str], hyp: Sequence[str]) -> int:
    """Number of errors only (fastest path)."""
    if not ref or not hyp:
        return max(len(ref), len(hyp))
    return int(kaldialign.edit_distance(ref, hyp)["total"])
