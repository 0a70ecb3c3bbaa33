"""Named-entity metrics NE-WER and NE-FNR (Wang et al., ContextASR-Bench, section 2.3).

For a reference entity of ``n`` units (words; characters for languages written without spaces):

* **NE-WER** -- the entity is searched in the hypothesis by approximate substring matching (the
  hypothesis span with the smallest edit distance to the entity; Sellers' DP with a free start and
  end in the hypothesis).  If that distance is ``<= ceil(n/2) - 1`` the span is the extracted
  entity text, otherwise nothing is extracted.  The entity's errors are the Levenshtein S/D/I
  between the entity and the extracted text (an unmatched entity = ``n`` deletions); NE-WER =
  sum of errors / sum of ``n`` -- "the same calculation formula as WER, but exclusively on entity
  spans".  Seed example: 2 wrong words of a 5-word entity (tolerance 2) still match.
* **NE-FNR** -- ``1 - H/N`` with ``H`` the entities found *exactly* (as a contiguous unit sequence)
  in the hypothesis and ``N`` all reference entities.

Caveats: the search is per entity, so two entities may extract overlapping hypothesis spans (the
seed does not define a joint assignment); ties in distance pick the shortest, then leftmost span.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.counts import ErrorCounts
from .levenshtein import error_counts
from .text import graphemes


def fuzzy_tolerance(n: int) -> int:
    """``ceil(n/2) - 1``: 0 for 1-2 units, 1 for 3-4, 2 for 5-6, ..."""
    return max(0, math.ceil(n / 2) - 1)


def best_substring_match(entity: Sequence[str], hyp: Sequence[str]) -> tuple[int, int, int]:
    """``(distance, start, end)`` of the hypothesis span ``hyp[start:end]`` closest to ``entity``.

    Sellers' approximate-substring DP, vectorized over hypothesis positions (the in-row insertion
    chain is a prefix minimum: ``D[i][j] = j + cummin(T[k] - k)``).  Ties: smallest distance, then
    shortest span, then leftmost.
    """
    n, m = len(entity), len(hyp)
    if n == 0:
        return 0, 0, 0
    if m == 0:
        return n, 0, 0
    # compare integer ids, not strings through numpy: numpy turns a str into a fixed-width
    # string, which drops trailing NUL characters ("a\0" would equal "a")
    ids: dict = {}
    hyp_arr = np.fromiter((ids.setdefault(h, len(ids)) for h in hyp), np.int64, count=m)
    entity_ids = [ids.get(e, -1) for e in entity]
    ar = np.arange(m + 1)
    cost = np.zeros(m + 1, dtype=np.int64)          # row 0: free start anywhere
    start = ar.copy()                               # start index of the span ending in each cell
    for i in range(1, n + 1):
        sub = (hyp_arr != entity_ids[i - 1]).astype(np.int64)
        diag = np.empty(m + 1, dtype=np.int64)
        diag[0] = np.iinfo(np.int64).max // 4
        diag[1:] = cost[:-1] + sub
        up = cost + 1                               # entity unit deleted
        # choose diag over up on ties (prefer shorter hypothesis-side movement is irrelevant here)
        t = np.minimum(diag, up)
        t_start = np.where(diag <= up, np.concatenate(([0], start[:-1])), start)
        # insertion chain along the row: D[j] = min_k (t[k] + j - k)
        v = t - ar
        run = np.minimum.accumulate(v)
        # index of the (last) argmin in the prefix, to carry the span start along the chain
        is_new = v <= run
        idx = np.maximum.accumulate(np.where(is_new, ar, 0))
        cost = run + ar
        start = t_start[idx]
    lengths = ar - start
    order = np.lexsort((start, lengths, cost))
    j = int(order[0])
    return int(cost[j]), int(start[j]), j


@dataclass(frozen=True)
class EntityResult:
    entity: tuple[str, ...]
    tolerance: int
    distance: int
    span: tuple[int, int] | None     # matched hypothesis span (fuzzy), None if not matched
    exact: bool                      # found exactly (NE-FNR)
    counts: ErrorCounts              # NE-WER counts of this entity


def contains_sequence(hyp: Sequence[str], ent: Sequence[str]) -> bool:
    n = len(ent)
    if n == 0:
        return True
    first = ent[0]
    for k in range(len(hyp) - n + 1):
        if hyp[k] == first and list(hyp[k:k + n]) == list(ent):
            return True
    return False


def score_entity(entity: Sequence[str], hyp: Sequence[str]) -> EntityResult:
    """NE-WER counts and NE-FNR hit of one entity (units already tokenized)."""
    entity = tuple(entity)
    n = len(entity)
    tol = fuzzy_tolerance(n)
    dist, s, e = best_substring_match(entity, hyp)
    matched = dist <= tol
    extracted = list(hyp[s:e]) if matched else []
    counts = error_counts(list(entity), extracted)
    return EntityResult(entity, tol, dist, (s, e) if matched else None, contains_sequence(hyp, entity), counts)


@dataclass(frozen=True)
class EntityCounts:
    """Additive entity counts: NE-WER error counts plus hit/total entity numbers."""

    counts: ErrorCounts = ErrorCounts()
    found: int = 0
    total: int = 0

    def __add__(self, o: EntityCounts) -> EntityCounts:
        return EntityCounts(self.counts + o.counts, self.found + o.found, self.total + o.total)

    @property
    def ne_wer(self) -> float | None:
        return self.counts.wer if self.counts.ref_words else None

    @property
    def ne_fnr(self) -> float | None:
        return 1.0 - self.found / self.total if self.total else None


def entity_units(text: str, spaceless: bool) -> list[str]:
    return graphemes(text) if spaceless else text.split()


def score_entities(entities: Sequence[str], hyp_text: str, spaceless: bool = False,
                   normalizer=None) -> tuple[EntityCounts, list[EntityResult]]:
    """Score every reference entity string of one utterance against the hypothesis text."""
    norm = normalizer or (lambda s: s)
    hyp = entity_units(norm(hyp_text), spaceless)
    results = []
    for ent in entities:
        units = entity_units(norm(ent), spaceless)
        if units:
            results.append(score_entity(units, hyp))
    total = EntityCounts(ErrorCounts.sum(r.counts for r in results), sum(r.exact for r in results), len(results))
    return total, results
