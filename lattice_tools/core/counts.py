"""Frozen, additive error counts: the result hub type of every scorer."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import ClassVar


@dataclass(frozen=True)
class ErrorCounts:
    """Word (or character) error counts, as sclite reports them.

    ``ref_words`` is sclite's ``#Wrd``: the number of reference words the alignment counted
    (with ``-D`` an optional reference word matched or deleted still counts, and a parenthesised
    hypothesis word with nothing against it adds one).  In plain Levenshtein mode it is simply the
    reference length.  ``correct + substitutions + deletions == ref_words`` always holds.

    Counts add with ``+`` and ``sum(...)`` (start value :data:`ErrorCounts.zero`).
    """

    correct: int = 0
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0
    ref_words: int = 0
    segments: int = 0
    segment_errors: int = 0
    optional_correct: int = 0      # matches of optional (parenthesised) words, included in ``correct``
    optional_deleted: int = 0      # optional reference words left out of the hypothesis (cost 0 with -D)
    zero: ClassVar[ErrorCounts]    # all counts 0 (set below, once the class exists)

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or isinstance(v, bool):
                try:
                    whole = int(v)
                except (TypeError, ValueError, OverflowError):
                    raise ValueError(f"ErrorCounts.{f.name} must be a whole number, got {v!r}") from None
                if whole != v:
                    raise ValueError(f"ErrorCounts.{f.name} must be a whole number, got {v!r}")
                object.__setattr__(self, f.name, whole)
            if getattr(self, f.name) < 0:
                raise ValueError(f"ErrorCounts.{f.name} must be >= 0, got {v}")

    def __add__(self, other: ErrorCounts) -> ErrorCounts:
        if not isinstance(other, ErrorCounts):
            return NotImplemented
        return ErrorCounts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def __radd__(self, other):
        if other == 0:  # so that built-in sum() works without a start value
            return self
        return NotImplemented

    @staticmethod
    def sum(items: Iterable[ErrorCounts]) -> ErrorCounts:
        """The field-wise total of ``items`` (the one summing helper: one constructor call, not one per
        item, since scorers sum many segments)."""
        totals = [0] * len(_FIELD_NAMES)
        for c in items:
            if not isinstance(c, ErrorCounts):
                raise TypeError(f"ErrorCounts.sum takes ErrorCounts, not {type(c).__name__}")
            d = c.__dict__
            totals = [t + d[f] for t, f in zip(totals, _FIELD_NAMES, strict=True)]
        return ErrorCounts(**dict(zip(_FIELD_NAMES, totals, strict=True)))

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def hyp_words(self) -> int:
        return self.correct + self.substitutions + self.insertions

    @property
    def wer(self) -> float:
        """Error rate in [0, inf): errors / ref_words (eq. 1 of Faria et al., as a fraction)."""
        if self.ref_words == 0:
            return 0.0 if self.errors == 0 else float("inf")
        return self.errors / self.ref_words

    @property
    def precision(self) -> float:
        """C / (C + S + I) (Faria et al., eq. 2); 1.0 when nothing was hypothesized."""
        d = self.correct + self.substitutions + self.insertions
        return self.correct / d if d else 1.0

    @property
    def recall(self) -> float:
        """C / (C + S + D) (Faria et al., eq. 3); 1.0 when the reference is empty."""
        d = self.correct + self.substitutions + self.deletions
        return self.correct / d if d else 1.0

    def kaldi_line(self, label: str = "%WER") -> str:
        """Kaldi's ``compute-wer`` line: ``%WER 12.34 [ e / n, i ins, d del, s sub ]``."""
        return (f"{label} {100 * self.wer:.2f} [ {self.errors} / {self.ref_words}, {self.insertions} ins, "
                f"{self.deletions} del, {self.substitutions} sub ]")

    def kaldi_ser_line(self) -> str:
        """Kaldi's ``compute-wer`` sentence line: ``%SER 12.34 [ e / n ]`` (segments with an error)."""
        rate = 100 * self.segment_errors / self.segments if self.segments else 0.0
        return f"%SER {rate:.2f} [ {self.segment_errors} / {self.segments} ]"

    def as_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update(errors=self.errors, wer=self.wer, precision=self.precision, recall=self.recall)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ErrorCounts:
        """The counts of :meth:`as_dict`'s output (or of any dict of count fields; missing fields are 0).

        A key that is neither a count field nor one of the derived values ``as_dict`` adds (``errors``,
        ``wer``, ``precision``, ``recall``) is refused, so a misspelt field never reads as a zero count; a
        derived ``errors`` that disagrees with the counts is refused too."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names - _DERIVED)
        if unknown:
            raise ValueError(f"ErrorCounts.from_dict: unknown key(s) {', '.join(map(repr, unknown))} "
                             f"(count fields: {', '.join(sorted(names))})")
        counts = cls(**{k: v for k, v in d.items() if k in names})
        if "errors" in d and d["errors"] != counts.errors:
            raise ValueError(f"ErrorCounts.from_dict: errors={d['errors']!r} but the counts give {counts.errors}")
        return counts


_DERIVED = frozenset({"errors", "wer", "precision", "recall"})


ErrorCounts.zero = ErrorCounts()


_FIELD_NAMES = tuple(f.name for f in fields(ErrorCounts))
