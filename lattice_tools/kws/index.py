"""Term index of a lattice or of alternatives: every word sequence (up to ``max_length`` words) that
occurs, where, and with which posterior.

One algorithm serves every representation.  Each input becomes a weighted *word network* (states,
word and epsilon arcs with times, a start mass per state and a weight per arc, both probabilities):

* a **lattice**: the weights are pushed (``w(a) = exp(-cost(a) + beta(dst) - beta(src))``, so the
  weights leaving a state plus its final weight sum to 1) and the start mass of a state is its
  posterior ``exp(alpha(s) + beta(s) - total)``.  The mass of a chain of arcs ``a1 .. ak`` from
  ``s`` is then ``gamma(s) * w(a1) * ... * w(ak)``: the total probability of the complete paths
  that contain that chain (``alpha(s) * prod exp(-cost) * beta(end) / total``);
* **alternatives** (1-best CTM, N-best, sausage, phrase alternatives): every slot is a set of
  chains, one per alternative (an empty alternative is one epsilon arc); the first arc of an
  alternative weighs its posterior, the others 1; slot boundaries have start mass 1 and the inner
  states of an alternative its posterior.  The mass of a chain is then the probability of its
  alternatives under the distribution the representation defines -- every slot picks one of its
  alternatives, independently, with the alternative's posterior -- and nothing is renormalized:
  a truncated N-best list gives the posterior mass of the entries that contain the term (a lower
  bound of the lattice posterior that rises with N), a CTM word without confidence weighs 1.

**Occurrences.**  An occurrence of a word sequence is a chain of word arcs ``a1 .. ak`` reading it,
consecutive word arcs joined by epsilon-only paths (silence and fillers are epsilons: see
:func:`lattice_tools.alternatives._common.is_silence`).  Its posterior is the mass of all such
chains through these word arcs (summed over the epsilon paths).  A gap of silence between two
words of a term (``t0`` of the next word minus ``t1`` of the previous one) longer than
``max_silence`` seconds (0.5 s by default; ``None`` = no limit) breaks the term.

**Hits (time clustering, Kaldi's rule).**  Occurrences of the same sequence in one utterance are
merged into hits exactly like Kaldi's ``lattice-to-kws-index`` (``ClusterLattice`` in
kws-functions.cc): for each word, the spans of all its arcs in the utterance are sorted by
(start, end) and greedily turned into *cluster heads* (the first span; then each span starting at
or after the end of the last head); every word arc joins the head it overlaps most (the first
such head on ties; head 1 when it overlaps none).  Two occurrences belong to the same hit when
they read the same words *and* each of their words is in the same cluster.  A hit's score is the
sum of its occurrences' posteriors (the expected number of its occurrences: for a well-formed
lattice at most 1 up to rounding, but two occurrences on one path with words in the same clusters
count twice), its start the earliest start, its end the latest end of its occurrences.

**Silence rules.**  ``silence_rule="gap"`` (the default) bounds the whole gap between two words of a
term, as above.  ``silence_rule="kaldi"`` bounds each silence (epsilon) arc of a lattice separately, as
``lattice-to-kws-index --max-silence-frames`` does (``RemoveLongSilences`` in kws-functions.cc): an
epsilon arc longer than ``max_silence`` cannot join two words of a term, and nothing else limits the
gap, so two short silences in a row may make a gap longer than ``max_silence``.  Kaldi removes the arcs
after pushing the weights, so the posteriors of the other chains do not change; the same holds here
(:func:`kaldi_silence_network`).  Alternatives have no silence arcs of their own: the rule applies to
lattices.

Differences to Kaldi's index (on purpose): the default silence rule is the gap rule; posteriors are exact float64 (Kaldi's index
is minimized with delta 1/1024 and quantizes scores to multiples of 2^-10, and its determinization
stops after ``--max-states-scale`` x the lattice's states, leaving a partial index); sequences are
limited to ``max_length`` words (Kaldi indexes every factor); a longer term is answered exactly by
a search of that one term in the utterance's network (``factor_hit_arrays(..., term=...)``,
:func:`lattice_term_hits`).

Levels too large for memory are extended in chunks of partial terms (:func:`factor_hit_arrays`).  All
sums are exact (no pruning) unless ``min_posterior`` > 0: then partial chains whose total mass
(an upper bound of every extension's posterior) is below it are not extended, and hits below it
are dropped.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..alternatives._common import dense_codes, is_silence, word_labels
from ..core._budget import check_memory
from ..core.alternatives_network import Alternatives
from ..core.errors import BudgetExceededError, FormatError, LatticeError
from ..core.lattice import Lattice

#: Default longest word sequence the index holds.
DEFAULT_MAX_LENGTH = 3
#: Default longest silence (seconds) between two words of one term (Kaldi: 50 frames).
DEFAULT_MAX_SILENCE = 0.5
#: How ``max_silence`` bounds silence: the whole gap between two words, or each silence arc (Kaldi).
SILENCE_RULES = ("gap", "kaldi")
_TIME_EPS = 1e-9
#: Candidate extensions held at once (each needs ~60 bytes while it is merged): a level with more is
#: extended in chunks of partial terms (see :func:`factor_hit_arrays`), so this bounds memory, not the index.
DEFAULT_MAX_CANDIDATES = 2_000_000
#: With min_posterior > 0, single extensions below min_posterior * CANDIDATE_FRACTION are dropped
#: before merging (their mass is counted in the pruned mass).
CANDIDATE_FRACTION = 1e-2


class IndexHit(NamedTuple):
    """One hit of the index: a word sequence at one place of one utterance.

    ``tbeg``/``dur`` are seconds in the recording ``file``/``channel``; ``score`` is the hit's
    posterior (the expected count of its occurrences, see the module docstring).
    """

    words: tuple[str, ...]
    utterance: str
    file: str
    channel: str
    tbeg: float
    dur: float
    score: float


@dataclass(frozen=True)
class WordNetwork:
    """The weighted word network the index is computed from (see the module docstring).

    Per arc: ``src``, ``dst``, ``word`` (a word id of ``words``; -1 = epsilon), ``t0``/``t1``
    (seconds; only word arcs need them), ``weight`` (probability).  Per state: ``start_mass``.
    """

    num_states: int
    src: np.ndarray
    dst: np.ndarray
    word: np.ndarray
    t0: np.ndarray
    t1: np.ndarray
    weight: np.ndarray
    start_mass: np.ndarray
    words: tuple[str, ...]
    #: seconds per time tick: the time clustering compares spans in whole ticks (a lattice's frames;
    #: microseconds for alternatives), so that float rounding cannot break its ties
    time_unit: float = 1e-6


# ----------------------------------------------------------------------------------------------
# Networks from the representations

def lattice_network(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                    silence_words: Iterable[str] | None = None) -> WordNetwork:
    """The pushed word network of ``lat`` (frame-level lattices are word-aligned first)."""
    from ..algorithms.scores import backward_scores, forward_scores

    if not lat.word_aligned:
        from ..alternatives.word_alignment import word_align
        lat = word_align(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    labels = word_labels(lat, silence_words)
    kw: dict[str, Any] = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    if lat.num_arcs and np.any((labels > 0) & ((lat.t0 < 0) | (lat.t1 < 0))):
        raise LatticeError("the lattice has word arcs without times; a term index needs word times",
                           key=lat.key or None)
    alpha = forward_scores(lat, **kw)
    beta = backward_scores(lat, **kw)
    total = beta[0]
    if not np.isfinite(total):
        raise LatticeError("lattice has no complete path from the start to a final state", key=lat.key or None)
    cost = lat.arc_costs(**kw)
    with np.errstate(invalid="ignore", over="ignore"):
        log_w = -cost + beta[lat.dst] - beta[lat.src]
        weight = np.where(np.isfinite(beta[lat.src]) & np.isfinite(beta[lat.dst]), np.exp(log_w), 0.0)
        gamma = np.exp(alpha + beta - total)
    gamma = np.where(np.isfinite(gamma), gamma, 0.0)
    uniq, code = dense_codes(labels)  # uniq[0] == 0 when epsilons exist
    names = tuple(lat.symbols.word(int(w)) if int(w) in lat.symbols else str(int(w)) for w in uniq)
    word = np.where(labels > 0, code, -1)
    if len(uniq) and uniq[0] == 0:
        names = names[1:]
        word = np.where(word >= 0, word - 1, -1)
    # number the words by spelling, not by the symbol table's ids: the order of every sum (and so the
    # last bits of the scores) must not depend on which lattices shared a table (jobs of a recipe)
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    if len(names):
        word = np.where(word >= 0, rank[np.maximum(word, 0)], -1)
    names = tuple(names[i] for i in order)
    fs = lat.frame_shift
    return WordNetwork(lat.num_states, lat.src.astype(np.int64), lat.dst.astype(np.int64), word.astype(np.int64),
                       lat.t0 * fs, lat.t1 * fs, weight, gamma, names, fs)


def alternatives_network(alts: Alternatives, silence_words: Iterable[str] | None = None) -> WordNetwork:
    """The word network of alternatives: one chain per alternative, slots in order (module docstring).

    A posterior that is NaN (a CTM word without confidence) counts as 1.  Silence words inside an
    alternative are epsilons.  Every real word needs a start time and a duration.
    """
    if silence_words is not None:
        silence_words = frozenset(silence_words)
    vocab: dict[str, int] = {}
    src, dst, word, t0, t1, weight = [], [], [], [], [], []
    start_mass = [1.0]
    boundary = 0
    n_states = 1
    for k, slot in enumerate(alts.slots):
        nxt = n_states
        n_states += 1
        start_mass.append(1.0)
        for alt in slot.alternatives:
            p = 1.0 if math.isnan(alt.posterior) else float(alt.posterior)
            real = [(w, s, d) for w, s, d in zip(alt.words, alt.starts, alt.durations, strict=False) if not is_silence(w, silence_words)]
            if not real:
                src.append(boundary)
                dst.append(nxt)
                word.append(-1)
                t0.append(0.0)
                t1.append(0.0)
                weight.append(p)
                continue
            prev = boundary
            for j, (w, s, d) in enumerate(real):
                if math.isnan(s) or math.isnan(d):
                    raise FormatError(f"slot {k} (from {slot.start}) has the word {w!r} without a time; "
                                      "a term index needs word times", key=alts.key)
                last = j == len(real) - 1
                if last:
                    to = nxt
                else:
                    to = n_states
                    n_states += 1
                    start_mass.append(p)
                src.append(prev)
                dst.append(to)
                word.append(vocab.setdefault(w, len(vocab)))
                t0.append(s)
                t1.append(s + d)
                weight.append(p if j == 0 else 1.0)
                prev = to
        boundary = nxt
    return WordNetwork(n_states, np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                       np.array(word, dtype=np.int64), np.array(t0, dtype=np.float64), np.array(t1, dtype=np.float64),
                       np.array(weight, dtype=np.float64), np.array(start_mass, dtype=np.float64), tuple(vocab))


# ----------------------------------------------------------------------------------------------
# Time clustering (Kaldi's ClusterLattice rule)

def time_clusters(word: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """Cluster index (0-based) of every arc with ``word >= 0`` (-1 for epsilons), by the rule of the
    module docstring: per word, greedy heads over the spans sorted by (start, end); every arc joins
    the head it overlaps most (first on ties), head 0 when it overlaps none.  Give the times as
    integers (frames, ticks): overlaps of float seconds can break ties the wrong way."""
    out = np.full(len(word), -1, dtype=np.int64)
    idx = np.flatnonzero(word >= 0)
    if not len(idx):
        return out
    order = idx[np.lexsort((t1[idx], t0[idx], word[idx]))]
    w_sorted = word[order]
    bounds = np.flatnonzero(np.r_[True, w_sorted[1:] != w_sorted[:-1], True])
    s_all, e_all = t0.tolist(), t1.tolist()
    for b0, b1 in zip(bounds[:-1], bounds[1:], strict=False):
        members = order[b0:b1]
        heads_s, heads_e = [s_all[members[0]]], [e_all[members[0]]]
        for a in members[1:].tolist():
            if heads_e[-1] <= s_all[a]:
                heads_s.append(s_all[a])
                heads_e.append(e_all[a])
        hs, he = np.array(heads_s, dtype=t0.dtype), np.array(heads_e, dtype=t1.dtype)
        ms, me = t0[members], t1[members]
        # heads are disjoint and sorted: the ones overlapping [s, e) are a contiguous range
        lo = np.searchsorted(he, ms, side="right")
        hi = np.searchsorted(hs, me, side="left")
        best = np.zeros(len(members), dtype=np.int64)
        best_ov = np.zeros(len(members), dtype=np.result_type(t0.dtype, t1.dtype))
        for j in range(int((hi - lo).max(initial=0))):
            h = lo + j
            ok = h < hi
            hc = np.minimum(h, len(hs) - 1)
            ov = np.where(ok, np.minimum(me, he[hc]) - np.maximum(ms, hs[hc]), 0)
            better = ov > best_ov
            best = np.where(better, hc, best)
            best_ov = np.where(better, ov, best_ov)
        out[members] = best
    return out


# ----------------------------------------------------------------------------------------------
# The factor posteriors

def _group_sum(keys: np.ndarray, *, sums=(), mins=(), maxs=()):
    """Unique ``keys`` (int64, sorted) and per unique key the sums / mins / maxs of the given arrays
    (one sort, then segment reductions)."""
    n = len(keys)
    order = np.argsort(keys)
    sk = keys[order]
    first = np.empty(n, dtype=bool)
    if n:
        first[0] = True
        np.not_equal(sk[1:], sk[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    uniq = sk[starts]
    if not n:
        empty = np.zeros(0)
        return uniq, [empty for _ in sums], [empty for _ in mins], [empty for _ in maxs]
    out_s = [np.add.reduceat(v[order], starts) for v in sums]
    out_min = [np.minimum.reduceat(v[order], starts) for v in mins]
    out_max = [np.maximum.reduceat(v[order], starts) for v in maxs]
    return uniq, out_s, out_min, out_max


def _epsilon_word_steps(net: WordNetwork, max_gap: float | None):
    """For every state ``d``: the word arcs reachable from ``d`` through epsilon-only paths, with the
    summed weight of those paths -- ``(d, arc, weight)`` sorted by ``d``.  Pairs that can never be
    within ``max_gap`` of a word ending in ``d`` are left out (exact pruning)."""
    S = net.num_states
    is_word = net.word >= 0
    eps = np.flatnonzero(~is_word & (net.weight > 0))
    # latest end of a word arriving in each state
    max_in_end = np.full(S, -np.inf)
    wa = np.flatnonzero(is_word)
    np.maximum.at(max_in_end, net.dst[wa], net.t1[wa])
    sources = np.flatnonzero(np.isfinite(max_in_end))
    # closure pairs (d, x, weight), frontier by frontier (the network is acyclic)
    eps_order = np.argsort(net.src[eps], kind="stable")
    eps = eps[eps_order]
    eps_src = net.src[eps]
    eps_off = np.searchsorted(eps_src, np.arange(S + 1))
    pd, px, pw = [sources], [sources], [np.ones(len(sources))]
    fd, fx, fw = sources, sources, np.ones(len(sources))
    while len(fd):
        deg = eps_off[fx + 1] - eps_off[fx]
        rep = np.repeat(np.arange(len(fd)), deg)
        if not len(rep):
            break
        first = np.repeat(eps_off[fx], deg)
        j = first + (np.arange(len(rep)) - np.repeat(np.cumsum(deg) - deg, deg))
        arcs = eps[j]
        nd, nx, nw = fd[rep], net.dst[arcs], fw[rep] * net.weight[arcs]
        key = nd * S + nx
        uniq, (sw,), _, _ = _group_sum(key, sums=(nw,))
        fd, fx, fw = uniq // S, uniq % S, sw
        keep = fw > 0
        fd, fx, fw = fd[keep], fx[keep], fw[keep]
        pd.append(fd)
        px.append(fx)
        pw.append(fw)
    cd, cx, cw = np.concatenate(pd), np.concatenate(px), np.concatenate(pw)
    uniq, (cw,), _, _ = _group_sum(cd * S + cx, sums=(cw,))
    cd, cx = uniq // S, uniq % S
    # join with the word arcs leaving x
    word_arcs = wa[np.argsort(net.src[wa], kind="stable")]
    w_off = np.searchsorted(net.src[word_arcs], np.arange(S + 1))
    deg = w_off[cx + 1] - w_off[cx]
    rep = np.repeat(np.arange(len(cd)), deg)
    j = np.repeat(w_off[cx], deg) + (np.arange(len(rep)) - np.repeat(np.cumsum(deg) - deg, deg))
    arcs = word_arcs[j]
    sd, sw = cd[rep], cw[rep]
    if max_gap is not None:
        ok = net.t0[arcs] - max_in_end[sd] <= max_gap + _TIME_EPS
        sd, sw, arcs = sd[ok], sw[ok], arcs[ok]
    order = np.argsort(sd, kind="stable")
    return sd[order], arcs[order], sw[order]


def _chunks(deg: np.ndarray, max_candidates: int, group: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Cut the partial terms into ranges ``[lo, hi)`` of at most ``max_candidates`` extension
    candidates each (``deg`` = candidates per partial term; a range holds at least one term).

    ``group`` (sorted, one value per partial term: its term id): a range then never splits a group --
    a cut falls back to the start of the group it would split, or, when that group alone exceeds
    ``max_candidates``, forward to its end -- so that no extended term comes from two ranges."""
    n = len(deg)
    csum = np.cumsum(deg)
    if not n or int(csum[-1]) <= max_candidates:
        return [(0, n)]
    starts = None
    if group is not None:
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])  # first row of each group
    out, lo, base = [], 0, 0
    while lo < n:
        hi = max(int(np.searchsorted(csum, base + max_candidates, side="right")), lo + 1)
        if starts is not None and hi < n:
            g = int(np.searchsorted(starts, hi, side="right")) - 1  # the group of row hi
            if starts[g] > lo:
                hi = int(starts[g])                                  # back to its start
            else:                                                    # one group from lo past hi: all of it
                hi = int(starts[g + 1]) if g + 1 < len(starts) else n
        out.append((lo, hi))
        base, lo = int(csum[hi - 1]), hi
    return out


def _extend_chunk(net: WordNetwork, lab_code, end_code, end_time, end_state, step_arc, step_w, step_off, ent_term,
                  ent_end, ent_mass, ent_tbeg, deg, L: int, n_end: int, max_silence, cand_floor: float, per_term: bool,
                  next_word: int | None = None):
    """Extend a range of partial terms by one word each way the network allows.  Returns ``(ext,
    end, mass, tbeg, tend, pruned mass)``: the extended terms (``term * L + label``) merged per
    (term, end code), sorted; with ``per_term``, merged per term (``end`` unused, ``tend`` = the
    latest end: the hits of the last level)."""
    total = int(deg.sum())
    st = end_state[ent_end]
    rep = np.repeat(np.arange(len(ent_term)), deg)
    j = np.repeat(step_off[st] - (np.cumsum(deg) - deg), deg) + np.arange(total)
    arcs = step_arc[j]
    new_mass = ent_mass[rep] * step_w[j]
    in_gap = (net.t0[arcs] - end_time[ent_end[rep]] <= max_silence + _TIME_EPS if max_silence is not None
              else np.ones(total, dtype=bool))
    ok = in_gap & (new_mass > cand_floor)
    if next_word is not None:  # a term search follows only the arcs of the term's next word
        ok &= net.word[arcs] == next_word
    pruned = float(new_mass[in_gap & (new_mass <= cand_floor)].sum()) if cand_floor > 0 else 0.0
    rep, arcs, new_mass = rep[ok], arcs[ok], new_mass[ok]
    ext = ent_term[rep] * L + lab_code[arcs]
    ends = end_code[arcs]
    if len(ext) and int(ext.max()) >= np.iinfo(np.int64).max // max(n_end, 1):  # pragma: no cover
        raise BudgetExceededError("too many distinct terms to number (more than 2^63 / number of end states)")
    if per_term:  # the last level: only the terms' sums are kept, so the candidates are merged per term at once
        ext_u, (m,), (tb,), (te,) = _group_sum(ext, sums=(new_mass,), mins=(ent_tbeg[rep],), maxs=(end_time[ends],))
        return ext_u, None, m, tb, te, pruned
    uniq, (m,), (tb,), _ = _group_sum(ext * n_end + ends, sums=(new_mass,), mins=(ent_tbeg[rep],))
    return uniq // n_end, uniq % n_end, m, tb, None, pruned


def _end_label_table(net: WordNetwork, lab_code, end_code, end_time, end_state, step_arc, step_w, step_off, L: int,
                     max_silence, next_word: int | None):
    """The steps from every end code, summed per (end, label of the word arc reached): ``(offsets, label,
    weight, tend)`` -- the rows of end ``e`` are ``offsets[e]:offsets[e + 1]``, ``weight`` the summed weight of
    the epsilon paths and word arcs of that label within ``max_silence`` of the end's time, ``tend`` the
    latest end of those arcs.  On the last level of an exact index only the terms' sums are kept, so an entry
    (term, end) is extended by these rows instead of by every step: on the 138k-link bench lattice 61k rows
    instead of 1.29M steps (200 M candidates become 10 M).  Only for ``min_posterior`` = 0: the pruning of
    single extensions needs the steps one by one."""
    n_end = len(end_state)
    deg = step_off[end_state + 1] - step_off[end_state]
    e = np.repeat(np.arange(n_end, dtype=np.int64), deg)
    j = np.repeat(step_off[end_state] - (np.cumsum(deg) - deg), deg) + np.arange(len(e))
    arcs, w = step_arc[j], step_w[j]
    ok = w > 0
    if max_silence is not None:
        ok &= net.t0[arcs] - end_time[e] <= max_silence + _TIME_EPS
    if next_word is not None:
        ok &= net.word[arcs] == next_word
    e, arcs, w = e[ok], arcs[ok], w[ok]
    uniq, (ws,), _, (te,) = _group_sum(e * L + lab_code[arcs], sums=(w,), maxs=(end_time[end_code[arcs]],))
    offsets = np.searchsorted(uniq // L, np.arange(n_end + 1))
    return offsets, uniq % L, ws, te


def _extend_last_chunk(table, ent_term, ent_end, ent_mass, ent_tbeg, deg, L: int):
    """The last level's hits of a range of partial terms (merged per term), by the rows of
    :func:`_end_label_table`: ``(ext, None, mass, tbeg, tend)``."""
    offsets, label, weight, tend = table
    total = int(deg.sum())
    rep = np.repeat(np.arange(len(ent_term)), deg)
    j = np.repeat(offsets[ent_end] - (np.cumsum(deg) - deg), deg) + np.arange(total)
    new_mass = ent_mass[rep] * weight[j]
    ok = new_mass > 0
    rep, j, new_mass = rep[ok], j[ok], new_mass[ok]
    ext_u, (m,), (tb,), (te,) = _group_sum(ent_term[rep] * L + label[j], sums=(new_mass,), mins=(ent_tbeg[rep],),
                                           maxs=(tend[j],))
    return ext_u, None, m, tb, te


def _merge_chunks(parts: list, n_end: int, per_term: bool):
    """Concatenate the chunks' ``(ext, end, mass, tbeg, tend)``.  The chunks never split a partial term
    (:func:`_chunks` with ``group``), so an extended term comes from one chunk only, and the chunks are in
    the order of their terms: the concatenation is sorted and merged already.  One chunk is returned as is."""
    if len(parts) == 1:
        return parts[0]
    cat = [None if parts[0][i] is None else np.concatenate([p[i] for p in parts]) for i in range(5)]
    ext = cat[0]
    assert ext is not None, "every chunk has its extension keys"
    if len(ext) > 1 and not np.all(ext[1:] >= ext[:-1]):  # pragma: no cover - _chunks guarantees it
        raise AssertionError("chunks of partial terms overlap")
    return tuple(cat)


def factor_hit_arrays(net: WordNetwork, *, max_length: int = DEFAULT_MAX_LENGTH,
                max_silence: float | None = DEFAULT_MAX_SILENCE, min_posterior: float = 0.0,
                max_candidates: int = DEFAULT_MAX_CANDIDATES, stats: dict | None = None,
                term: tuple[int, ...] | None = None):
    """The hits of every word sequence of 1..``max_length`` words in ``net``.

    With ``term`` (word ids of ``net.words``), only the hits of that one sequence, of any length:
    ``max_length`` is then ``len(term)``, the extensions follow only arcs of the term's next word and
    only the last level's hits are returned.  The clustering is over all arcs of the network and every
    sum and pruning decision is that of a full pass, so the hits equal those an index built with
    ``max_length = len(term)`` holds for the term (up to float summation order).  Cost: one epsilon
    closure of the network (as for any index) plus, per level, the partial occurrences of the term's
    prefix -- at most (word arcs of the prefix's last word) x (their epsilon-reachable successors).

    Returns one ``(words, tbeg, tend, score)`` per level that has hits: ``words`` an (n, level) array of
    word ids (of ``net.words``), the others float arrays of n (times in seconds, as in ``net``).  See the module docstring for the definitions.  With ``min_posterior`` > 0,
    ``stats["pruned_mass"]`` gets the posterior mass left out (a bound on the total under-count of
    the longer terms' scores).

    Memory: a level whose partial terms have more than ``max_candidates`` extension candidates
    (about 60 bytes each while they are merged) is extended in chunks of partial terms that never split
    a term's entries (so an extended term comes from one chunk and the chunks' rows are only
    concatenated); each chunk's candidates are merged per (term, end) -- per term on the last level,
    whose per-end entries are never kept.  The hits are those of one pass up to float summation order;
    memory is one chunk of
    candidates plus the merged rows, so no index is refused for its size (the memory budget,
    :mod:`lattice_tools.core._budget`, is checked before each chunk).
    """
    if term is not None:
        term = tuple(int(w) for w in term)
        max_length = len(term)
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    word_arcs = np.flatnonzero((net.word >= 0) & (net.weight > 0))
    if not len(word_arcs):
        return []
    if np.any(~np.isfinite(net.t0[word_arcs])) or np.any(~np.isfinite(net.t1[word_arcs])):
        raise LatticeError("a word arc has no time; a term index needs word times")
    clusters = time_clusters(net.word, np.rint(net.t0 / net.time_unit).astype(np.int64),
                             np.rint(net.t1 / net.time_unit).astype(np.int64))
    # label = (word, cluster) as one dense code
    wc = net.word * (int(clusters.max(initial=0)) + 1) + clusters
    lab_uniq, lab_code = dense_codes(np.where(net.word >= 0, wc, 0))
    lab_word = lab_uniq // (int(clusters.max(initial=0)) + 1)
    L = len(lab_uniq)
    # end codes: (dst state, end time) of word arcs -- the state a partial term is in
    end_key = net.dst[word_arcs].astype(np.int64)
    t1 = net.t1[word_arcs]
    _, t1_code = np.unique(t1, return_inverse=True)
    end_uniq, end_code_wa = np.unique(end_key * (int(t1_code.max(initial=0)) + 1) + t1_code.reshape(-1),
                                      return_inverse=True)
    end_code_wa = end_code_wa.reshape(-1)
    n_end = len(end_uniq)
    end_state = np.zeros(n_end, dtype=np.int64)
    end_time = np.zeros(n_end)
    end_state[end_code_wa] = net.dst[word_arcs]
    end_time[end_code_wa] = t1
    end_code = np.full(len(net.word), -1, dtype=np.int64)
    end_code[word_arcs] = end_code_wa

    results = []
    pruned = 0.0
    cand_floor = min_posterior * CANDIDATE_FRACTION
    # level 1: one partial term per word arc, merged per (term, end)
    mass = net.start_mass[net.src[word_arcs]] * net.weight[word_arcs]
    keep = mass > 0
    if term is not None:
        keep &= net.word[word_arcs] == term[0]
    arcs1 = word_arcs[keep]
    parent = [np.full(L, -1, dtype=np.int64)]    # term id -> (parent term id, last label), per level
    last_label = [np.arange(L, dtype=np.int64)]  # (level-1 term id = its label code)
    uniq, (ent_mass,), (ent_tbeg,), _ = _group_sum(lab_code[arcs1].astype(np.int64) * n_end + end_code[arcs1],
                                                      sums=(mass[keep],), mins=(net.t0[arcs1],))
    ent_term, ent_end = uniq // n_end, uniq % n_end
    step_off = None
    for level in range(1, max_length + 1):
        if not len(ent_term):
            break
        # this level's hits: the partial terms (already merged per (term, end)) merged per term
        hterm, (hm,), (hb,), (he,) = _group_sum(ent_term, sums=(ent_mass,), mins=(ent_tbeg,),
                                                   maxs=(end_time[ent_end],))
        ok = hm >= min_posterior if min_posterior > 0 else hm > 0
        if term is None or level == max_length:
            results.append((level, hterm[ok], hb[ok], he[ok], hm[ok]))
        if level == max_length:
            break
        if min_posterior > 0:
            alive = ent_mass >= min_posterior
            pruned += float(ent_mass[~alive].sum())
            ent_term, ent_end, ent_mass, ent_tbeg = ent_term[alive], ent_end[alive], ent_mass[alive], ent_tbeg[alive]
        if step_off is None:
            step_d, step_arc, step_w = _epsilon_word_steps(net, max_silence)
            step_w = step_w * net.weight[step_arc]
            step_off = np.searchsorted(step_d, np.arange(net.num_states + 1))
        last = level + 1 == max_length
        next_word = None if term is None else term[level]
        # the last level of an exact index: the steps are first summed per (end, next label)
        table = _end_label_table(net, lab_code, end_code, end_time, end_state, step_arc, step_w, step_off, L,
                                 max_silence, next_word) if last and cand_floor == 0 else None
        if table is None:
            st = end_state[ent_end]
            deg = step_off[st + 1] - step_off[st]
        else:
            deg = table[0][ent_end + 1] - table[0][ent_end]
        parts = []
        for lo, hi in _chunks(deg, max_candidates, ent_term):
            check_memory("the term index", key=None)
            if table is not None:
                parts.append(_extend_last_chunk(table, ent_term[lo:hi], ent_end[lo:hi], ent_mass[lo:hi],
                                                ent_tbeg[lo:hi], deg[lo:hi], L))
                continue
            *part, pm = _extend_chunk(net, lab_code, end_code, end_time, end_state, step_arc, step_w, step_off,
                                      ent_term[lo:hi], ent_end[lo:hi], ent_mass[lo:hi], ent_tbeg[lo:hi], deg[lo:hi],
                                      L, n_end, max_silence, cand_floor, last, next_word)
            pruned += pm
            parts.append(part)
        ext_u, ends_u, m, tb, te = _merge_chunks(parts, n_end, last)
        t_uniq, t_inv = np.unique(ext_u, return_inverse=True)  # ext_u is sorted: cheap
        parent.append(t_uniq // L)
        last_label.append(t_uniq % L)
        if last:  # merged per term already: the hits of the last level
            ok = m >= min_posterior if min_posterior > 0 else m > 0
            results.append((level + 1, t_inv.reshape(-1)[ok], tb[ok], te[ok], m[ok]))
            break
        ent_term, ent_end, ent_tbeg, ent_mass = t_inv.reshape(-1), ends_u, tb, m
    if stats is not None:
        stats["pruned_mass"] = stats.get("pruned_mass", 0.0) + pruned
    out = []
    for level, hterm, hb, he, hm in results:
        # word sequences of the term ids, back through the parents
        seq = np.empty((len(hterm), level), dtype=np.int32 if len(net.words) < 2**31 else np.int64)
        t = hterm
        for lv in range(level - 1, -1, -1):
            seq[:, lv] = lab_word[last_label[lv][t]]
            t = parent[lv][t]
        out.append((seq, hb, he, hm))
    return out


def factor_hits(net: WordNetwork, **options):
    """The hits of :func:`factor_hit_arrays` (same ``options``) as a list of ``(word ids tuple, tbeg, tend,
    score)`` (times in seconds, as in ``net``), in no particular order."""
    out = []
    for seq, hb, he, hm in factor_hit_arrays(net, **options):
        for row, b, e, m in zip(map(tuple, seq.tolist()), hb.tolist(), he.tolist(), hm.tolist(), strict=True):
            out.append((row, b, e, m))
    return out


# ----------------------------------------------------------------------------------------------
# Public entry points

class HitColumns(NamedTuple):
    """The hits of one utterance as columns -- what the index stores, without a Python object per hit.

    ``words`` names the word ids; ``levels`` holds, per term length that has hits, ``(ids, tbeg, dur,
    score)``: ``ids`` an (n, length) integer array of word ids, ``tbeg``/``dur`` float64 arrays of whole
    microseconds (start in the recording, duration), ``score`` the posteriors.  :func:`column_hits` turns
    them into :class:`IndexHit` (seconds = microseconds / 10^6)."""

    words: tuple[str, ...]
    levels: list


def _micro(seconds):
    """Whole microseconds (float64) of times in seconds: the index's time unit."""
    return np.rint(np.asarray(seconds, dtype=np.float64) * 1e6)


def _columns(net: WordNetwork, offset: float, max_length: int, max_silence: float | None, min_posterior: float,
             max_candidates: int, stats: dict | None) -> HitColumns:
    # A term across sausage bins can be time-inverted: a later bin's word may end before an earlier bin's
    # word starts (the bins' words come from different paths).  Such a hit spans from the earlier to the
    # later of the first word's start and the last word's end (docs/kws-index.md); a lattice whose times are
    # consistent never gives one.
    levels = []
    for seq, b, e, m in factor_hit_arrays(net, max_length=max_length, max_silence=max_silence,
                                          min_posterior=min_posterior, max_candidates=max_candidates, stats=stats):
        levels.append((seq, _micro(np.minimum(b, e) + offset), _micro(np.abs(e - b)), m))
    return HitColumns(net.words, levels)


def column_hits(columns: HitColumns, utterance: str, file: str, channel: str) -> list[IndexHit]:
    """The hits of ``columns`` as :class:`IndexHit` objects of ``utterance`` in ``file``/``channel``."""
    names = columns.words
    out = []
    for seq, tb, d, m in columns.levels:
        for ws, b, du, s in zip(seq.tolist(), (tb / 1e6).tolist(), (d / 1e6).tolist(), m.tolist(), strict=True):
            out.append(IndexHit(tuple(names[w] for w in ws), utterance, file, channel, b, du, s))
    return out


def kaldi_silence_network(net: WordNetwork, max_silence: float | None) -> WordNetwork:
    """``net`` without its silence (epsilon) arcs longer than ``max_silence`` seconds (their weight 0),
    the other weights unchanged: Kaldi's ``RemoveLongSilences`` on the pushed factor transducer.  Word
    arcs, and epsilon arcs without times, are kept."""
    if max_silence is None:
        return net
    with np.errstate(invalid="ignore"):
        long_eps = (net.word < 0) & np.isfinite(net.t0) & np.isfinite(net.t1) & (
            net.t1 - net.t0 > max_silence + _TIME_EPS)
    if not long_eps.any():
        return net
    return WordNetwork(net.num_states, net.src, net.dst, net.word, net.t0, net.t1,
                       np.where(long_eps, 0.0, net.weight), net.start_mass, net.words, net.time_unit)


def lattice_hit_columns(lat: Lattice, *, max_length: int = DEFAULT_MAX_LENGTH,
                        max_silence: float | None = DEFAULT_MAX_SILENCE, min_posterior: float = 0.0,
                        acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                        silence_words: Iterable[str] | None = None, offset: float = 0.0,
                        max_candidates: int = DEFAULT_MAX_CANDIDATES, stats: dict | None = None,
                        silence_rule: str = "gap") -> HitColumns:
    """The hits of :func:`index_lattice` as :class:`HitColumns` (what the index build stores)."""
    if silence_rule not in SILENCE_RULES:
        raise ValueError(f"unknown silence rule {silence_rule!r} (expected one of {', '.join(SILENCE_RULES)})")
    net = lattice_network(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                          silence_words=silence_words)
    if silence_rule == "kaldi":
        net, max_silence = kaldi_silence_network(net, max_silence), None
    return _columns(net, offset, max_length, max_silence, min_posterior, max_candidates, stats)


def index_lattice(lat: Lattice, *, max_length: int = DEFAULT_MAX_LENGTH, max_silence: float | None = DEFAULT_MAX_SILENCE,
                  min_posterior: float = 0.0, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                  word_penalty: float = 0.0, silence_words: Iterable[str] | None = None, file: str | None = None,
                  channel: str = "1", offset: float = 0.0, max_candidates: int = DEFAULT_MAX_CANDIDATES,
                  stats: dict | None = None, silence_rule: str = "gap") -> list[IndexHit]:
    """Hits of every word sequence of up to ``max_length`` words in ``lat`` (exact lattice posteriors,
    Kaldi's time clustering; see the module docstring).  Times are ``offset`` + lattice time, in the
    recording ``file`` (default: the lattice key) / ``channel``, in whole microseconds.  ``stats`` (a dict)
    receives the ``pruned_mass`` (0 when ``min_posterior`` is 0); ``max_candidates``: see
    :func:`factor_hit_arrays`; ``silence_rule``: ``gap`` or ``kaldi`` (module docstring, "Silence rules")."""
    columns = lattice_hit_columns(lat, max_length=max_length, max_silence=max_silence, min_posterior=min_posterior,
                                  acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                                  silence_words=silence_words, offset=offset, max_candidates=max_candidates,
                                  stats=stats, silence_rule=silence_rule)
    return column_hits(columns, lat.key, file if file is not None else lat.key, channel)


def index_alternatives(alts: Alternatives, *, max_length: int = DEFAULT_MAX_LENGTH,
                       max_silence: float | None = DEFAULT_MAX_SILENCE, min_posterior: float = 0.0,
                       silence_words: Iterable[str] | None = None, max_candidates: int = DEFAULT_MAX_CANDIDATES,
                       stats: dict | None = None) -> list[IndexHit]:
    """Hits of every word sequence of up to ``max_length`` words in alternatives (1-best, N-best,
    sausage, phrases; terms match across adjacent slots; see the module docstring for the score).
    Times are the alternatives' own (already in ``alts.file``/``alts.channel``)."""
    return column_hits(alternatives_hit_columns(alts, max_length=max_length, max_silence=max_silence,
                                                min_posterior=min_posterior, silence_words=silence_words,
                                                max_candidates=max_candidates, stats=stats),
                       alts.key, alts.file, alts.channel)


def alternatives_hit_columns(alts: Alternatives, *, max_length: int = DEFAULT_MAX_LENGTH,
                             max_silence: float | None = DEFAULT_MAX_SILENCE, min_posterior: float = 0.0,
                             silence_words: Iterable[str] | None = None, max_candidates: int = DEFAULT_MAX_CANDIDATES,
                             stats: dict | None = None) -> HitColumns:
    """The hits of :func:`index_alternatives` as :class:`HitColumns` (what the index build stores)."""
    net = alternatives_network(alts, silence_words)
    return _columns(net, 0.0, max_length, max_silence, min_posterior, max_candidates, stats)


def lattice_terms_hits(lat: Lattice, terms, *, max_silence: float | None = DEFAULT_MAX_SILENCE,
                       min_posterior: float = 0.0, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                       word_penalty: float = 0.0, silence_words: Iterable[str] | None = None, file: str | None = None,
                       channel: str = "1", offset: float = 0.0, max_candidates: int = DEFAULT_MAX_CANDIDATES
                       ) -> dict[tuple[str, ...], list[IndexHit]]:
    """The hits of each word sequence of ``terms`` (any lengths) in ``lat``, one network for all: for
    each, exactly the hits an index of ``lat`` built with ``max_length`` = its length and the same
    settings holds for it (see :func:`factor_hit_arrays` with ``term``).  A term with a word the lattice
    does not have gets no hits."""
    net = lattice_network(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                          silence_words=silence_words)
    ids = {w: i for i, w in enumerate(net.words)}
    out: dict[tuple[str, ...], list[IndexHit]] = {}
    for words in terms:
        words = tuple(words)
        if words in out:
            continue
        if not words or any(w not in ids for w in words):
            out[words] = []
            continue
        levels = factor_hit_arrays(net, max_silence=max_silence, min_posterior=min_posterior,
                                   max_candidates=max_candidates, term=tuple(ids[w] for w in words))
        cols = HitColumns(net.words, [(seq, _micro(np.minimum(b, e) + offset), _micro(np.abs(e - b)), m)
                                      for seq, b, e, m in levels])
        out[words] = column_hits(cols, lat.key, file if file is not None else lat.key, channel)
    return out


def lattice_term_hits(lat: Lattice, words, **options) -> list[IndexHit]:
    """The hits of the one word sequence ``words`` (any length) in ``lat``; ``options`` as for
    :func:`lattice_terms_hits`."""
    return lattice_terms_hits(lat, [words], **options)[tuple(words)]
