"""Punctuation- and case-aware scoring (Kuhn et al. (Beyond Levenshtein), "Beyond Levenshtein", section 2): the public API.

Pipeline: :func:`lex` -> non-destructive normalizers (:func:`tokenize`) -> :func:`extended_align`
(extended Levenshtein with compound words and variable costs) -> route with classified
substitutions -> counts (WER on words, SER/F1 for punctuation and capitalisation).

One engine computes every route and count: the batched DP and backtrace of
:mod:`~lattice_tools.metrics.orthography_batch` (one pair is a batch of one).  The rules it applies
(costs, compounds, substitution classes, counting) are documented in
:mod:`~lattice_tools.metrics.orthography_rules`, the tokens in
:mod:`~lattice_tools.metrics.orthography_tokens`.
"""
from __future__ import annotations

from collections.abc import Sequence

from .orthography_batch import align_tokens, score_many
from .orthography_rules import OrthographicCounts, RouteElement, classify, f1, render_route, ser
from .orthography_tokens import DEFAULT_NORMALIZERS, NORMALIZERS, Token, lex, tokenize

__all__ = ["DEFAULT_NORMALIZERS", "NORMALIZERS", "OrthographicCounts", "RouteElement", "Token", "classify",
           "extended_align", "f1", "lex", "render_route", "score_orthography", "score_orthography_many", "ser",
           "tokenize"]

BATCH_CELLS = 200_000   # default bound of a padded batch's DP cells (~10 MB of temporaries)


def extended_align(ref: Sequence[Token], hyp: Sequence[Token], K: int | None = None) -> tuple[float, list[RouteElement]]:
    """Minimum-cost route between token lists (Kuhn et al., Beyond Levenshtein, eq. 1-3).  Returns ``(cost, route)``,
    cost in the seed's units (may be a multiple of 0.5).  Backtrace preference: ok, compound,
    substitution, deletion, insertion."""
    route, counts = align_tokens(ref, hyp, K)
    return counts.cost, route


def score_orthography(ref_text: str, hyp_text: str, normalizers: Sequence[str] = DEFAULT_NORMALIZERS,
                      K: int | None = None) -> tuple[OrthographicCounts, list[RouteElement]]:
    """Lex, normalize, align and count one reference/hypothesis pair: ``(counts, route)``."""
    route, counts = align_tokens(tokenize(ref_text, normalizers), tokenize(hyp_text, normalizers), K)
    return counts, route


def score_orthography_many(ref_texts: Sequence[str], hyp_texts: Sequence[str],
                           normalizers: Sequence[str] = DEFAULT_NORMALIZERS,
                           K: int | None = None, cache: dict | None = None,
                           batch_cells: int = BATCH_CELLS) -> list[OrthographicCounts]:
    """``[score_orthography(r, h, normalizers, K)[0] for r, h in zip(ref_texts, hyp_texts)]``, fast.

    Tokens are interned to integers (lexing and the token-local normalizers once per distinct
    word; pass the same ``cache`` dict to successive calls over one corpus), the DP and its
    backtrace run for a whole batch of utterances at once in numpy, counts are read off the
    backtrace events.  Utterances are batched by size so that padding stays small and a batch
    holds at most ``batch_cells`` DP cells.
    """
    return score_many(ref_texts, hyp_texts, normalizers, K, {} if cache is None else cache, batch_cells)
