"""Code-switching metrics (Lin, BharatVoice-Bench, sections 3.3, 4.3 and 4.4).

* Per-token language tags.  The default tagger is script based: a token whose dominant script is
  one of a language's expected scripts gets that language; tokens without any scripted character
  (numbers, punctuation) are language independent (tag ``None``).  Any callable
  ``token -> tag | None`` can be plugged in (e.g. a lexicon tagger for transliterated English).
* Code-Mixing Index (Gambäck & Das 2014, as used by LinCE, Aguilar et al. 2020)::

      CMI = 100 * (1 - max_i w_i / (n - u))   if n > u,   else 0

  with ``n`` tokens, ``u`` language-independent tokens, ``w_i`` tokens of language ``i``.
  Buckets: low ``[0, 15)``, mid ``[15, 35)``, high ``>= 35``.
* Switch points: the boundaries between two consecutive *language* tokens (independent tokens are
  skipped) whose tags differ, placed at the index of the second token.  Hypothesis boundaries are
  mapped into reference token positions through the word alignment, and matched one-to-one with
  reference boundaries at distance <= ``tolerance`` (default 1 token); F1 = 2 TP / (|ref| + |hyp|).
* Composite (Lin, BharatVoice-Bench, eq. in 4.4): ``(1 - WER) * SFR * (1 - WER_CS)``, each ``1 - x`` clipped to
  ``[0, 1]`` so the product stays in ``[0, 1]`` when a WER exceeds 1.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from .script import dominant_script, expected_scripts, script_counts

Tagger = Callable[[str], "str | None"]

CMI_BUCKETS = (("low", 0.0, 15.0), ("mid", 15.0, 35.0), ("high", 35.0, float("inf")))


class ScriptTagger:
    """Tag a token with the first of ``languages`` whose expected scripts contain the token's
    dominant script; None if the token has no scripted character; ``other`` otherwise."""

    def __init__(self, languages: Sequence[str], other: str | None = "other"):
        self.languages = list(languages)
        self.other = other
        self._by_script: dict[str, str] = {}
        for lang in self.languages:
            for s in expected_scripts(lang):
                self._by_script.setdefault(s, lang)

        self._memo: dict[str, str | None] = {}

    def __call__(self, token: str) -> str | None:
        tag = self._memo.get(token, 0)  # 0: not tagged yet (a tag is a language, ``other`` or None)
        if tag != 0:
            return cast("str | None", tag)
        s = dominant_script(token)
        tag = None if s is None else self._by_script.get(s, self.other)
        if len(self._memo) < 1_000_000:   # tokens repeat (Zipf): memoize, bounded
            self._memo[token] = tag
        return tag


def language_pair(pair: str) -> list[str]:
    """``'hin-eng'`` / ``'hi-en'`` / ``'hi+en'`` -> ``['hin', 'eng']``."""
    for sep in ("+", "-", "_", "/"):
        if sep in pair:
            return [p for p in pair.split(sep) if p]
    return [pair]


def tag_tokens(tokens: Sequence[str], tagger: Tagger) -> list[str | None]:
    return [tagger(t) for t in tokens]


def code_mixing_index(tags: Sequence[str | None]) -> float:
    """CMI in [0, 100) of one utterance's tags (None = language independent)."""
    n = len(tags)
    lang_tags = [t for t in tags if t is not None]
    if not lang_tags:
        return 0.0
    counts: dict[str, int] = {}
    for t in lang_tags:
        counts[t] = counts.get(t, 0) + 1
    return 100.0 * (1.0 - max(counts.values()) / len(lang_tags)) if n else 0.0


def cmi_bucket(cmi: float) -> str:
    for name, lo, hi in CMI_BUCKETS:
        if lo <= cmi < hi:
            return name
    raise ValueError(f"CMI out of range: {cmi}")


def switch_points(tags: Sequence[str | None]) -> list[int]:
    """Indices ``j`` of language tokens whose tag differs from the previous language token's."""
    out = []
    prev = None
    for j, t in enumerate(tags):
        if t is None:
            continue
        if prev is not None and t != prev:
            out.append(j)
        prev = t
    return out


def hyp_positions_in_ref(pairs) -> list[int]:
    """For each hypothesis token of an alignment, the reference index it stands at (the index of
    the aligned reference token, or of the next reference token for an insertion)."""
    pos = []
    i = 0
    for r, h in pairs:
        if h is not None:
            pos.append(i)
        if r is not None:
            i += 1
    return pos


def match_with_tolerance(ref_points: Sequence[int], hyp_points: Sequence[int], tolerance: int = 1) -> int:
    """Size of a maximum one-to-one matching of points with ``|r - h| <= tolerance``.

    Both lists sorted; the two-pointer greedy is optimal for points on a line with a symmetric
    window (an exchange argument: matching the leftmost unmatched pair never hurts).
    """
    i = j = tp = 0
    while i < len(ref_points) and j < len(hyp_points):
        r, h = ref_points[i], hyp_points[j]
        if abs(r - h) <= tolerance:
            tp += 1
            i += 1
            j += 1
        elif h < r:
            j += 1
        else:
            i += 1
    return tp


@dataclass(frozen=True)
class SwitchPointCounts:
    """Additive switch-point counts: true positives, reference and hypothesis switch points."""

    tp: int = 0
    ref: int = 0
    hyp: int = 0

    def __add__(self, o: SwitchPointCounts) -> SwitchPointCounts:
        return SwitchPointCounts(self.tp + o.tp, self.ref + o.ref, self.hyp + o.hyp)

    @property
    def precision(self) -> float | None:
        return self.tp / self.hyp if self.hyp else None

    @property
    def recall(self) -> float | None:
        return self.tp / self.ref if self.ref else None

    @property
    def f1(self) -> float | None:
        """2 TP / (|ref| + |hyp|); None when neither side has a switch point."""
        d = self.ref + self.hyp
        return 2 * self.tp / d if d else None


def switch_point_counts(ref_tags, hyp_tags, pairs, tolerance: int = 1) -> SwitchPointCounts:
    """Switch-point matching of one utterance; ``pairs`` is the word alignment of ref and hyp."""
    ref_sp = switch_points(ref_tags)
    hyp_sp_local = switch_points(hyp_tags)
    pos = hyp_positions_in_ref(pairs)
    hyp_sp = sorted(pos[j] for j in hyp_sp_local)
    return SwitchPointCounts(match_with_tolerance(ref_sp, hyp_sp, tolerance), len(ref_sp), len(hyp_sp))


def composite(wer: float, sfr: float, wer_cs: float) -> float:
    """``(1 - WER) * SFR * (1 - WER_CS)`` with each factor clipped to [0, 1]."""
    clip = lambda x: min(1.0, max(0.0, x))  # noqa: E731
    return clip(1.0 - wer) * clip(sfr) * clip(1.0 - wer_cs)


__all__ = ["ScriptTagger", "language_pair", "tag_tokens", "code_mixing_index", "cmi_bucket", "switch_points",
           "switch_point_counts", "SwitchPointCounts", "match_with_tolerance", "composite", "CMI_BUCKETS",
           "script_counts"]
