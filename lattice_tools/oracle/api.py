"""The oracle entry points: each chooses the engine for its input and applies sclite's tie rules.

* :func:`lattice_oracle` -- a whole lattice: the network DP (:mod:`lattice_tools.oracle.dp`), then
  the scorer's sclite alignment of the chosen path (:mod:`lattice_tools.oracle.sclite_ties`);
* :func:`alternatives_oracle` / :func:`alternatives_oracle_many` -- N-best, sausage, phrase or 1-best
  alternatives: utterances with at most one multi-alternative slot against a linear reference go
  to the batched engine (:mod:`lattice_tools.oracle.batch`), all others to
  :func:`network_alternatives_oracle` (the network DP);
* :func:`sequence_oracle` -- the alignment of one word sequence.

Both engines compute the same optimal cost (tested); in sclite mode both leave the choice among
equal-cost alternatives to the scorer's sclite-exact DP, so their counts are equal too.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from typing import Any

import numpy as np

from ..core._budget import check_memory
from ..scoring.network import WordNetwork, linear_network
from .batch import candidate_sequences, first_best, linear_costs, linear_reference
from .costs import OracleCosts, oracle_costs
from .dp import OracleResult, optimal_arcs, oracle_graph
from .graphs import hyp_graph_from_alternatives, hyp_graph_from_lattice, hyp_graph_from_words, is_nonword, ref_graph
from .sclite_ties import (
    alternatives_network,
    sclite_counts_many,
    scorer_network,
    with_sclite_ties,
    with_sclite_ties_many,
)

# Alternatives networks up to this many arcs go to the scorer whole; larger ones are first cut to
# their optimal branches (the default of network_alternatives_oracle's ``scorer_direct_arcs``).
SCORER_DIRECT_ARCS = 2000


def lattice_oracle(lat, reference, *, mode: str | OracleCosts = "sclite", nonword: Callable[[str], bool] = is_nonword,
                   case_sensitive: bool = False, optional_deletable: bool = False,
                   fragments: bool = False, sclite_ties: bool = True) -> OracleResult:
    """Exact full-lattice oracle: the lattice path with the lowest alignment cost against ``reference``.

    Args:
      lat: a :class:`~lattice_tools.core.lattice.Lattice` (word-aligned or frame-level: arcs whose word
        is 0 or a filler per ``nonword`` are epsilon).  Arc weights are ignored: every path counts.
      reference: a reference network or transcript (see :func:`~lattice_tools.oracle.graphs.ref_graph`).
      mode: ``"sclite"`` or ``"levenshtein"``.
      sclite_ties: in sclite mode, report the counts the scorer (sclite's tie rules) gives for the
        oracle word sequence -- "what scoring the oracle path says".  The cost is unchanged.
    Returns:
      :class:`~lattice_tools.oracle.dp.OracleResult` with the oracle words and times (seconds, from
      the word arcs).
    """
    return lattice_oracle_many([lat], [reference], mode=mode, nonword=nonword, case_sensitive=case_sensitive,
                               optional_deletable=optional_deletable, fragments=fragments,
                               sclite_ties=sclite_ties)[0]


def lattice_oracle_many(lats: Sequence, references: Sequence, *, mode: str | OracleCosts = "sclite",
                        nonword: Callable[[str], bool] = is_nonword, case_sensitive: bool = False,
                        optional_deletable: bool = False, fragments: bool = False,
                        sclite_ties: bool = True) -> list[OracleResult]:
    """:func:`lattice_oracle` of each ``(lats[i], references[i])``, in order: the DP of each lattice, then
    sclite's tie rules for all of them in one batched scorer call (the same results as one at a time, with
    the scorer's fixed cost paid once).  The memory budget is checked before each lattice's DP."""
    if len(lats) != len(references):
        raise ValueError("lats and references must have the same length")
    results = []
    for lat, reference in zip(lats, references, strict=True):
        check_memory("the oracle", lat.key)
        hyp = hyp_graph_from_lattice(lat, nonword=nonword, case_sensitive=case_sensitive)
        results.append(oracle_graph(hyp, reference, mode=mode, key=lat.key, case_sensitive=case_sensitive,
                                    optional_deletable=optional_deletable, fragments=fragments))
    if not (sclite_ties and oracle_costs(mode).name == "sclite"):
        return results
    tie = [(i, ref_net) for i, ref_net in enumerate(scorer_network(r, case_sensitive) for r in references)
           if ref_net is not None]
    hyp_nets = [linear_network(list(results[i].words), starts=list(results[i].starts),
                               durations=list(results[i].durations), case_sensitive=case_sensitive) for i, _ in tie]
    tied = with_sclite_ties_many([results[i] for i, _ in tie], [net for _, net in tie], hyp_nets,
                                 optional_deletable, fragments, [results[i].words for i, _ in tie])
    for (i, _), res in zip(tie, tied, strict=True):
        results[i] = res
    return results


def alternatives_oracle(alts, reference, *, n: int | None = None, mode: str | OracleCosts = "sclite",
                        nonword: Callable[[str], bool] = is_nonword, case_sensitive: bool = False,
                        optional_deletable: bool = False, fragments: bool = False) -> OracleResult:
    """Oracle over an :class:`~lattice_tools.core.alternatives_network.Alternatives` (N-best, sausage,
    phrase or 1-best): the best choice of one alternative per slot jointly with the alignment --
    what sclite computes for an alt-CTM.  ``n`` keeps the first ``n`` alternatives of every slot.

    In sclite mode the counts and the chosen alternatives are those of the scorer's sclite-exact
    network alignment (same optimal cost as the exact DP, sclite's choice among ties), so they
    equal what Debian sclite reports for the alt-CTM of ``alts`` (tested on random files).
    The engine is chosen as in :func:`alternatives_oracle_many`; fragments (``-F``) always take the
    network DP (the batched engine has no fragment matching).
    """
    if n is not None:
        alts = alts.truncated(n)
    if fragments:
        return network_alternatives_oracle(alts, reference, mode=mode, nonword=nonword, case_sensitive=case_sensitive,
                                           optional_deletable=optional_deletable, fragments=fragments)
    return alternatives_oracle_many([alts], [reference], mode=mode, optional_deletable=optional_deletable,
                                    case_sensitive=case_sensitive, nonword=nonword)[0]


def network_alternatives_oracle(alts, reference, *, n: int | None = None, mode: str | OracleCosts = "sclite",
                                nonword: Callable[[str], bool] = is_nonword, case_sensitive: bool = False,
                                optional_deletable: bool = False, fragments: bool = False,
                                sclite_ties: bool = True, scorer_direct_arcs: int = SCORER_DIRECT_ARCS) -> OracleResult:
    """:func:`alternatives_oracle` by the network DP alone (any number of multi-alternative slots).

    In sclite mode the scorer's sclite-exact DP makes the final choice among equal-cost paths.  On
    a network of more than ``scorer_direct_arcs`` arcs it runs on the network cut to the
    alternatives that lie on some optimal path (:func:`~lattice_tools.oracle.dp.optimal_arcs`): a
    branch on no optimal path never wins a cell of the chosen alignment, so removing it cannot
    change sclite's choice, and the scorer then sees a handful of branches.
    """
    if n is not None:
        alts = alts.truncated(n)
    hyp = hyp_graph_from_alternatives(alts, null_for_empty=True, nonword=nonword, case_sensitive=case_sensitive)
    opts: dict[str, Any] = dict(mode=mode, case_sensitive=case_sensitive, optional_deletable=optional_deletable, fragments=fragments)
    ref_net = scorer_network(reference, case_sensitive) if sclite_ties and oracle_costs(mode).name == "sclite" else None
    if ref_net is None:
        return oracle_graph(hyp, reference, key=alts.key, **opts)
    if len(hyp.src) <= scorer_direct_arcs:
        res = oracle_graph(hyp, reference, key=alts.key, **opts)
        return with_sclite_ties(res, ref_net, alternatives_network(alts, None, case_sensitive),
                                optional_deletable, fragments)
    res, on_opt = optimal_arcs(hyp, reference, **opts)
    res = dc_replace(res, key=alts.key)
    # an alternative is kept when every one of its arcs is on an optimal path
    tags = hyp.origin
    assert tags is not None, "a graph of alternatives records each arc's alternative"
    bad = np.unique(tags[~on_opt])
    keep: dict = {}
    for t in np.setdiff1d(np.unique(tags), bad).tolist():
        keep.setdefault(t >> 24, set()).add(t & ((1 << 24) - 1))
    slots = []
    for si, slot in enumerate(alts.slots):
        chosen = tuple(a for ai, a in enumerate(slot.alternatives) if ai in keep.get(si, ()))
        slots.append(dc_replace(slot, alternatives=chosen or slot.alternatives))
    reduced = dc_replace(alts, slots=tuple(slots))
    multi = {si for si, slot in enumerate(alts.slots) if slot.depth > 1}
    return with_sclite_ties(res, ref_net, alternatives_network(reduced, None, case_sensitive, blocks=multi),
                            optional_deletable, fragments)


def sequence_oracle(words: Sequence[str], reference, *, mode: str | OracleCosts = "sclite",
                    case_sensitive: bool = False, optional_deletable: bool = False,
                    fragments: bool = False) -> OracleResult:
    """Align one word sequence against a reference network (the alignment of a 1-best)."""
    return oracle_graph(hyp_graph_from_words(words, case_sensitive=case_sensitive), reference, mode=mode,
                        case_sensitive=case_sensitive, optional_deletable=optional_deletable, fragments=fragments)


# ----------------------------------------------------------------------------------------------
# Many utterances: the dispatcher between the batched engine and the network DP
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Batched:
    """An utterance the batched engine takes: its position, its candidate sequences (their costs
    are ``first .. first + len(candidates)`` of the batch) and its multi-alternative slot."""

    index: int
    candidates: list
    first: int
    block: int | None


def alternatives_oracle_many(alts_list, references, *, mode: str | OracleCosts = "sclite",
                             optional_deletable: bool = False, case_sensitive: bool = False,
                             nonword: Callable[[str], bool] | None = None,
                             max_candidates: int = 100000) -> list[OracleResult]:
    """:func:`alternatives_oracle` for many utterances at once.

    Utterances whose alternatives have at most one multi-alternative slot of at most
    ``max_candidates`` alternatives (N-best lists, 1-best, one ALT block per segment) and whose
    reference is linear go through the batched edit costs of
    :func:`~lattice_tools.oracle.batch.linear_costs` (one vectorized pass for all their candidate
    sequences); the others use :func:`network_alternatives_oracle`.  Results are in input order and
    equal the per-utterance function's.  Batched results carry counts and words, no times.
    """
    nonword = nonword or is_nonword
    costs = oracle_costs(mode)
    refs = list(references)
    out: list = [None] * len(alts_list)
    batched: list[_Batched] = []
    lin_refs: list[list] = []
    lin_opt: list[np.ndarray] = []
    hyps: list[list[str]] = []
    owner: list[int] = []
    for u, (alts, reference) in enumerate(zip(alts_list, refs, strict=False)):
        rg = ref_graph(reference, case_sensitive=case_sensitive, optional_deletable=optional_deletable)
        lin = linear_reference(rg)
        eligible = lin is not None and (costs.name != "sclite" or scorer_network(reference, case_sensitive) is not None)
        cand = candidate_sequences(alts, nonword, case_sensitive, max_candidates) if eligible else None
        if cand is None or lin is None:
            out[u] = network_alternatives_oracle(alts, reference, mode=mode, optional_deletable=optional_deletable,
                                                 case_sensitive=case_sensitive, nonword=nonword)
            continue
        seqs, block = cand
        batched.append(_Batched(u, seqs, len(hyps), block))
        owner.extend([len(lin_refs)] * len(seqs))
        hyps.extend(seqs)
        lin_refs.append(lin[0])
        lin_opt.append(lin[1])
    if not batched:
        return out
    cost = linear_costs(lin_refs, lin_opt, hyps, owner, mode=costs)
    if costs.name == "sclite":
        results = _sclite_choice(batched, alts_list, refs, cost, costs, case_sensitive, optional_deletable)
    else:
        best = first_best(cost, np.asarray(owner))
        results = [_first_best_alignment(alts_list[b.index].key, hyps[i], int(cost[i]), refs[b.index], costs,
                                         optional_deletable, case_sensitive)
                   for b, i in zip(batched, best.tolist(), strict=True)]
    for b, r in zip(batched, results, strict=True):
        out[b.index] = r
    return out


def _sclite_choice(batched: list[_Batched], alts_list, refs, cost: np.ndarray, costs: OracleCosts,
                   case_sensitive: bool, optional_deletable: bool) -> list[OracleResult]:
    """sclite's choice among equal-cost alternatives is not simply the first listed: run the
    scorer's sclite-exact network DP on each block cut to its minimum-cost alternatives (removing
    strictly worse parallel branches cannot change its choice among the rest)."""
    ref_nets: list[WordNetwork] = []
    hyp_nets: list[WordNetwork] = []
    totals: list[int] = []
    for b in batched:
        alts = alts_list[b.index]
        mine = cost[b.first:b.first + len(b.candidates)]
        m = int(mine.min())
        if b.block is not None:
            keep = tuple(a for a, c in zip(alts.slots[b.block].alternatives, mine.tolist(), strict=False) if c == m)
            slots = list(alts.slots)
            slots[b.block] = dc_replace(slots[b.block], alternatives=keep)
            alts = dc_replace(alts, slots=tuple(slots))
        ref_net = scorer_network(refs[b.index], case_sensitive)
        assert ref_net is not None, "batched only when the scorer reads the reference"
        ref_nets.append(ref_net)
        # a block cut to its empty branch stays a block: sclite's '@' costs 0.001
        hyp_nets.append(alternatives_network(alts, None, case_sensitive,
                                             blocks={b.block} if b.block is not None else None))
        totals.append(m)
    return [OracleResult(key=alts_list[b.index].key, mode=costs.name, counts=counts, cost=total / costs.scale,
                         words=words, starts=(), durations=(), alignment=())
            for b, total, (counts, words) in zip(batched, totals,
                                                  sclite_counts_many(ref_nets, hyp_nets, optional_deletable),
                                                  strict=True)]


def _first_best_alignment(key: str, words: list, total: int, reference, costs: OracleCosts,
                          optional_deletable: bool, case_sensitive: bool) -> OracleResult:
    """Levenshtein mode: the first listed minimum-cost candidate, aligned by the network DP.  The
    candidate's words are already folded; the reference is folded the same way (else an upper-case
    reference would match nothing)."""
    r = sequence_oracle([w for w in words if w != "@"], reference, mode=costs, case_sensitive=case_sensitive,
                        optional_deletable=optional_deletable)
    return OracleResult(key=key, mode=costs.name, counts=r.counts, cost=total, words=r.words, starts=(),
                        durations=(), alignment=r.alignment)
