"""sclite's choice among equal-cost oracle alignments, by the scorer's own network alignment.

The exact DP (:mod:`lattice_tools.oracle.dp`) and the batched engine (:mod:`lattice_tools.oracle.batch`)
find the optimal cost; which of several equal-cost alignments sclite reports (and hence C/S/D/I) is
decided by sclite's ``net_dp`` tie rules (first-listed alternative, substitution before deletion
before insertion), which :func:`lattice_tools.scoring.align.align_networks` re-implements.  This
module runs it on the chosen path or on a network cut to its optimal branches, and turns its
alignment into an :class:`~lattice_tools.oracle.dp.OracleResult`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from ..core.counts import ErrorCounts
from ..io.transcripts.ctm import CtmAltBlock, CtmWord
from ..scoring.align import Alignment, AlignOptions, align_batch
from ..scoring.network import WordNetwork, from_ctm_items, linear_network, parse_transcript
from .dp import OracleAlignmentStep, OracleResult


def scorer_network(reference, case_sensitive: bool) -> WordNetwork | None:
    """The reference as a scorer WordNetwork, or None when it is only available as a RefGraph."""
    if isinstance(reference, WordNetwork):
        return reference
    if isinstance(reference, str):
        return parse_transcript(reference, case_sensitive=case_sensitive)
    if isinstance(reference, (list, tuple)):
        return linear_network([str(w) for w in reference], case_sensitive=case_sensitive)
    return None


def alternatives_network(alts, n: int | None, case_sensitive: bool, blocks: set | None = None) -> WordNetwork:
    """An Alternatives as the scorer's hypothesis WordNetwork (what sclite builds from its alt-CTM).
    ``blocks``: slot indices written as an ALT block even with one alternative (a multi-alternative
    slot cut down to its empty branch must stay sclite's ``@``, which costs 0.001)."""
    items: list[CtmWord | CtmAltBlock] = []
    for si, slot in enumerate(alts.slots):
        chosen = slot.alternatives if n is None else slot.alternatives[:n]
        seqs = []
        for alt in chosen:
            seqs.append(tuple(CtmWord(alts.file, alts.channel, None if math.isnan(t) else t,
                                      None if math.isnan(d) else d, w)
                              for w, t, d in zip(alt.words, alt.starts, alt.durations, strict=False)))
        if len(seqs) == 1 and not (blocks and si in blocks and not seqs[0]):
            items.extend(seqs[0])
        else:
            items.append(CtmAltBlock(alts.file, alts.channel, tuple(seqs)))
    return from_ctm_items(items, case_sensitive=case_sensitive)


def _one_segment(counts: ErrorCounts) -> ErrorCounts:
    """The scorer counts no segment for an empty alignment; an oracle result is one segment."""
    if counts.segments:
        return counts
    return counts + ErrorCounts(segments=1, segment_errors=int(counts.errors > 0))


def with_sclite_ties(result: OracleResult, ref_net, hyp_net, optional_deletable: bool, fragments: bool,
                     shown_words: Sequence[str] | None = None) -> OracleResult:
    """Counts, words and alignment of ``hyp_net`` against ``ref_net`` by the scorer's re-implementation
    of sclite's ``net_dp`` (its tie rules: first-listed alternative, substitution before deletion
    before insertion).  The optimal cost is the same as the exact DP's (checked in the tests); only
    the choice among equal-cost alignments -- and hence C/S/D/I -- can differ."""
    return with_sclite_ties_many([result], [ref_net], [hyp_net], optional_deletable, fragments,
                                 [shown_words])[0]


def with_sclite_ties_many(results: Sequence[OracleResult], ref_nets: Sequence, hyp_nets: Sequence,
                          optional_deletable: bool, fragments: bool,
                          shown_words: Sequence[Sequence[str] | None]) -> list[OracleResult]:
    """:func:`with_sclite_ties` of each ``(results[i], ref_nets[i], hyp_nets[i], shown_words[i])``, the
    alignments in one batched scorer call (:func:`~lattice_tools.scoring.align.align_batch`: each pair's
    alignment is the one it has alone)."""
    aligned = align_batch(ref_nets, hyp_nets, AlignOptions(mode="sclite", optional_deletable=optional_deletable,
                                                           fragments=fragments))
    return [_tied(r, a, h, shown) for r, a, h, shown in zip(results, aligned, hyp_nets, shown_words, strict=True)]


def _tied(result: OracleResult, a: Alignment, hyp_net, shown_words: Sequence[str] | None) -> OracleResult:
    steps = []
    for p in a.pairs:
        t = du = math.nan
        if p.hyp_arc >= 0:
            t = float(hyp_net.start[p.hyp_arc])
            du = float(hyp_net.duration[p.hyp_arc])
        hyp = p.hyp if (shown_words is None or p.hyp_arc < 0) else shown_words[p.hyp_arc]
        steps.append(OracleAlignmentStep(p.op, p.ref, hyp, t, du, int(p.hyp_arc)))
    spoken = [st for st in steps if st.hyp is not None and st.hyp != "@"]
    return OracleResult(key=result.key, mode=result.mode, counts=_one_segment(a.counts), cost=result.cost,
                        words=tuple(st.hyp for st in spoken), starts=tuple(st.start for st in spoken),
                        durations=tuple(st.duration for st in spoken), alignment=tuple(steps))


def sclite_counts_many(ref_nets: Sequence[WordNetwork], hyp_nets: Sequence[WordNetwork],
                       optional_deletable: bool) -> list[tuple[ErrorCounts, tuple]]:
    """(counts, hypothesis words) of sclite's alignment of each pair, in one batched scorer call
    (no times: the batched oracle reports counts and words only)."""
    aligned: list[Alignment] = align_batch(ref_nets, hyp_nets, AlignOptions("sclite",
                                                                            optional_deletable=optional_deletable))
    return [(_one_segment(a.counts), tuple(p.hyp for p in a.pairs if p.hyp is not None and p.hyp != "@"))
            for a in aligned]
