"""The per-pair punctuation/case alignment and counts: the oracle the batched engine
(lattice_tools.metrics.orthography_batch, behind metrics.punctuation) is tested against.

A direct transcription of Kuhn et al. (Beyond Levenshtein), section 2: one pair at a time, a row-vectorized DP over
``Token`` objects, a backtrace building ``RouteElement``s (preference: ok, compound,
substitution, deletion, insertion), and counts read off the route one element at a time.  It
was the package's implementation until the batched engine replaced it (same routes, same
counts: tests/test_metrics_fast*.py).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lattice_tools.core.counts import ErrorCounts
from lattice_tools.metrics.orthography_rules import (
    INS_DEL,
    INS_DEL_PUNCT,
    SUB_CASE,
    SUB_CROSS,
    SUB_PUNCT,
    SUB_WORD,
    OrthographicCounts,
    RouteElement,
    classify,
    find_compounds,
)
from lattice_tools.metrics.orthography_tokens import DEFAULT_NORMALIZERS, Token, tokenize


def _is_capitalised(t: Token) -> bool:
    return any(c.isupper() for c in t.value)


def _sub_costs(a: Token, hyp_vals, hyp_low, hyp_punct) -> np.ndarray:
    if a.is_punct:
        c = np.where(hyp_punct, SUB_PUNCT, SUB_CROSS)
    else:
        c = np.where(hyp_punct, SUB_CROSS, np.where(hyp_low == a.value.lower(), SUB_CASE, SUB_WORD))
    return np.where(hyp_vals == a.value, 0, c)


def extended_align_reference(ref: Sequence[Token], hyp: Sequence[Token], K: int | None = None):
    """Minimum-cost route between token lists (Kuhn et al., Beyond Levenshtein, eq. 1-3).  Returns ``(cost, route)``,
    cost in the seed's units (may be a multiple of 0.5).

    Row-vectorized DP: within a row the insertion chain is a prefix minimum
    ``D[i][j] = C[j] + min_{k<=j}(T[k] - C[k])`` with ``C`` the cumulative insertion costs.
    Backtrace preference: ok, compound, substitution, deletion, insertion.
    """
    n, m = len(ref), len(hyp)
    hyp_vals = np.array([t.value for t in hyp] + [""], dtype=object)[:m]
    hyp_low = np.array([t.value.lower() for t in hyp] + [""], dtype=object)[:m]
    hyp_punct = np.array([t.is_punct for t in hyp], dtype=bool)
    ins = np.where(hyp_punct, INS_DEL_PUNCT, INS_DEL).astype(np.int64)
    cins = np.concatenate(([0], np.cumsum(ins)))
    comps = find_compounds(ref, hyp, K)
    comps_by_row: dict[int, list] = {}
    for (i, j), xys in comps.items():
        comps_by_row.setdefault(i, []).append((j, xys))
    D = np.empty((n + 1, m + 1), dtype=np.int64)
    D[0] = cins
    subs = []
    for i in range(1, n + 1):
        a = ref[i - 1]
        dcost = INS_DEL_PUNCT if a.is_punct else INS_DEL
        t = D[i - 1] + dcost
        sc = _sub_costs(a, hyp_vals, hyp_low, hyp_punct) if m else np.zeros(0, dtype=np.int64)
        subs.append(sc)
        if m:
            t[1:] = np.minimum(t[1:], D[i - 1, :-1] + sc)
        for j, xys in comps_by_row.get(i, ()):
            for x, y in xys:
                t[j] = min(t[j], D[i - x, j - y])
        D[i] = cins + np.minimum.accumulate(t - cins)
    # backtrace
    route: list[RouteElement] = []
    i, j = n, m
    while i > 0 or j > 0:
        cur = D[i, j]
        if i > 0 and j > 0 and subs[i - 1][j - 1] == 0 and D[i - 1, j - 1] == cur:
            route.append(RouteElement("ok", (ref[i - 1],), (hyp[j - 1],)))
            i, j = i - 1, j - 1
            continue
        done = False
        for x, y in comps.get((i, j), ()):
            if D[i - x, j - y] == cur:
                route.append(RouteElement("compound", tuple(ref[i - x:i]), tuple(hyp[j - y:j]), "compound"))
                i, j = i - x, j - y
                done = True
                break
        if done:
            continue
        if i > 0 and j > 0 and D[i - 1, j - 1] + subs[i - 1][j - 1] == cur:
            route.append(RouteElement("sub", (ref[i - 1],), (hyp[j - 1],), classify(ref[i - 1], hyp[j - 1])))
            i, j = i - 1, j - 1
        elif i > 0 and D[i - 1, j] + (INS_DEL_PUNCT if ref[i - 1].is_punct else INS_DEL) == cur:
            route.append(RouteElement("del", (ref[i - 1],), ()))
            i -= 1
        else:
            route.append(RouteElement("ins", (), (hyp[j - 1],)))
            j -= 1
    route.reverse()
    return D[n, m] / 2.0, route


def orthographic_counts(route: Sequence[RouteElement], cost: float = 0.0, ref=(), hyp=()) -> OrthographicCounts:
    w = dict(c=0, s=0, d=0, i=0)
    p = dict(c=0, s=0, d=0, i=0)
    k = dict(c=0, s=0, d=0, i=0)
    classes: dict[str, int] = {}

    def cap(a: Token, b: Token):
        ca, cb = _is_capitalised(a), _is_capitalised(b)
        if ca and cb:
            k["c" if a.value == b.value else "s"] += 1
        elif ca:
            k["d"] += 1
        elif cb:
            k["i"] += 1

    for e in route:
        if e.op == "ok":
            a, b = e.ref[0], e.hyp[0]
            if a.is_punct:
                p["c"] += 1
            else:
                w["c"] += 1
                cap(a, b)
        elif e.op == "compound":
            w["c"] += len(e.ref)
            classes["compound"] = classes.get("compound", 0) + 1
        elif e.op == "sub":
            a, b = e.ref[0], e.hyp[0]
            classes[e.cls] = classes.get(e.cls, 0) + 1
            if a.is_punct and b.is_punct:
                p["s"] += 1
            elif a.is_punct:
                p["d"] += 1
                w["i"] += 1
            elif b.is_punct:
                w["d"] += 1
                p["i"] += 1
            elif e.cls == "capitalisation":
                w["c"] += 1
                cap(a, b)
            else:
                w["s"] += 1
        elif e.op == "del":
            (p if e.ref[0].is_punct else w)["d"] += 1
        else:
            (p if e.hyp[0].is_punct else w)["i"] += 1
    norms: dict[str, int] = {}
    for t in list(ref) + list(hyp):
        for nm in t.normalizations:
            norms[nm] = norms.get(nm, 0) + 1

    def ec(d):
        return ErrorCounts(correct=d["c"], substitutions=d["s"], deletions=d["d"], insertions=d["i"],
                           ref_words=d["c"] + d["s"] + d["d"], segments=1,
                           segment_errors=int(d["s"] + d["d"] + d["i"] > 0))

    return OrthographicCounts(ec(w), ec(p), ec(k), tuple(sorted(classes.items())), tuple(sorted(norms.items())), cost)


def score_orthography_reference(ref_text: str, hyp_text: str, normalizers: Sequence[str] = DEFAULT_NORMALIZERS,
                                K: int | None = None) -> tuple[OrthographicCounts, list[RouteElement]]:
    """Lex, normalize, align and count one reference/hypothesis pair."""
    ref = tokenize(ref_text, normalizers)
    hyp = tokenize(hyp_text, normalizers)
    cost, route = extended_align_reference(ref, hyp, K)
    return orthographic_counts(route, cost, ref, hyp), route
