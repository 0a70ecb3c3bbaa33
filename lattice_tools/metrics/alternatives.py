"""Metrics on alternatives: oracle hypotheses and "alternative coverage".

An :class:`~lattice_tools.alternatives_network.Alternatives` object is a linear word network:
every path picks one alternative per slot.  Here:

* :func:`oracle_path` -- the path with the fewest plain-Levenshtein word errors against the
  reference (exact: a DP over slots, vectorized over reference positions, min over alternatives
  of each slot).  Every 1-best metric is then computed on that oracle hypothesis (CER, SFR,
  NE-*, ...): the "oracle" system of a representation.  Caveat: the oracle minimizes *word*
  errors; its CER is the CER of the word-oracle path, not the minimum CER over paths.
* :func:`network_contains` -- does *some* path contain a unit sequence (an entity) contiguously?
  Exact, by propagating the set of matched-prefix lengths through every alternative.
* :func:`alternative_coverage` -- per representation and depth ``k``: the share of the 1-best word
  errors the top-``k`` oracle removes, and the share of entities missed (exact match) by the
  1-best that some top-``k`` path contains.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..alternatives_network import Alternatives
from ..files import atomic_write
from .entities import contains_sequence
from .levenshtein import edit_distance
from .text import graphemes


def _word_row(E: np.ndarray, origin: np.ndarray, ref_arr: np.ndarray, word: str):
    """One DP row: consume hypothesis ``word`` (insert or align to ref[i-1]), then deletions."""
    n1 = len(E)
    ins = E + 1
    diag = np.full(n1, np.iinfo(np.int64).max // 4, dtype=np.int64)
    diag[1:] = E[:-1] + (ref_arr != word)
    take_diag = diag <= ins
    t = np.where(take_diag, diag, ins)
    o = np.where(take_diag, np.concatenate(([0], origin[:-1])), origin)
    ar = np.arange(n1)
    v = t - ar
    run = np.minimum.accumulate(v)
    idx = np.maximum.accumulate(np.where(v <= run, ar, 0))
    return run + ar, o[idx]


def oracle_path(ref: Sequence[str], alts: Alternatives, k: int | None = None) -> tuple[int, list[str], list[int]]:
    """``(errors, oracle_words, chosen_alternative_per_slot)`` over the top-``k`` alternatives."""
    net = alts.truncated(k)
    n = len(ref)
    ref_arr = np.array(list(ref) + [""], dtype=object)[:n]
    ar = np.arange(n + 1, dtype=np.int64)
    V = ar.copy()
    choices = []
    for slot in net.slots:
        best = None
        best_alt = best_origin = None
        for a_idx, alt in enumerate(slot.alternatives):
            E, origin = V, ar
            for w in alt.words:
                E, origin = _word_row(E, origin, ref_arr, w)
            if best is None:
                best, best_alt, best_origin = E, np.full(n + 1, a_idx), origin
            else:
                better = E < best
                best = np.where(better, E, best)
                best_alt = np.where(better, a_idx, best_alt)
                best_origin = np.where(better, origin, best_origin)
        choices.append((best_alt, best_origin))
        V = best
    # backtrace the chosen alternative of every slot
    picked = []
    i = n
    for best_alt, best_origin in reversed(choices):
        picked.append(int(best_alt[i]))
        i = int(best_origin[i])
    picked.reverse()
    words = [w for slot, a in zip(net.slots, picked, strict=False) for w in slot.alternatives[a].words]
    return int(V[n]), words, picked


def network_contains(alts: Alternatives, units: Sequence[str], k: int | None = None, spaceless: bool = False) -> bool:
    """True if some path of the top-``k`` network contains ``units`` contiguously.

    ``spaceless``: paths are compared as grapheme sequences (words concatenated without spaces).
    """
    target = list(units)
    m = len(target)
    if m == 0:
        return True
    states = {0}
    for slot in alts.truncated(k).slots:
        new_states: set[int] = set()
        for alt in slot.alternatives:
            seq = graphemes("".join(alt.words)) if spaceless else alt.words
            cur = set(states)
            for u in seq:
                nxt = {p + 1 for p in cur if p < m and target[p] == u}
                if m in nxt:
                    return True
                nxt.add(0)
                cur = nxt
            new_states |= cur
        states = new_states | {0}
    return False


@dataclass(frozen=True)
class CoverageRow:
    representation: str
    k: int | None
    errors_1best: int
    errors_oracle: int
    entities_missed_1best: int
    entities_recovered: int

    @property
    def error_recovery(self) -> float | None:
        return (self.errors_1best - self.errors_oracle) / self.errors_1best if self.errors_1best else None

    @property
    def entity_recovery(self) -> float | None:
        return self.entities_recovered / self.entities_missed_1best if self.entities_missed_1best else None

    def as_dict(self) -> dict:
        return {"representation": self.representation, "k": self.k, "errors_1best": self.errors_1best,
                "errors_oracle": self.errors_oracle, "error_recovery": self.error_recovery,
                "entities_missed_1best": self.entities_missed_1best, "entities_recovered": self.entities_recovered,
                "entity_recovery": self.entity_recovery}


def alternative_coverage(representation: str, refs: dict[str, Sequence[str]], networks: dict[str, Alternatives],
                         ks: Iterable[int | None] = (1, 2, 5, 10, None),
                         entities: dict[str, Sequence[Sequence[str]]] | None = None,
                         one_best: dict[str, Sequence[str]] | None = None,
                         spaceless: dict[str, bool] | None = None) -> list[CoverageRow]:
    """Coverage rows for one representation.

    ``refs``/``networks`` map utterance ids to reference units and networks (utterances without a
    network are skipped; their count is not part of the shares).  ``one_best`` defaults to each
    network's top path.  ``entities`` maps ids to entity unit sequences (already normalized).
    """
    rows = []
    keys = [u for u in refs if u in networks]
    base_hyp = {u: (list(one_best[u]) if one_best and u in one_best else networks[u].one_best()) for u in keys}
    e1 = sum(edit_distance(list(refs[u]), base_hyp[u]) for u in keys)
    missed = []
    if entities:
        for u in keys:
            sp = bool(spaceless and spaceless.get(u))
            hyp_units = graphemes("".join(base_hyp[u])) if sp else base_hyp[u]
            for ent in entities.get(u, ()):
                if not contains_sequence(hyp_units, list(ent)):
                    missed.append((u, ent, sp))
    for k in ks:
        eo = sum(oracle_path(list(refs[u]), networks[u], k)[0] for u in keys)
        rec = sum(network_contains(networks[u], ent, k, sp) for u, ent, sp in missed)
        rows.append(CoverageRow(representation, k, e1, eo, len(missed), rec))
    return rows


def plot_coverage(rows: Sequence[CoverageRow], path: str) -> None:
    """The alternative-coverage figure: recovered share of 1-best word errors (left) and of
    missed entities (right) against depth ``k`` (``all`` = every alternative), one line per
    representation.  Format from the extension of ``path`` (png, pdf, svg)."""
    from .._optional import pyplot

    plt = pyplot()

    ks = sorted({r.k for r in rows}, key=lambda k: (k is None, k or 0))
    labels = ["all" if k is None else str(k) for k in ks]
    reps = list(dict.fromkeys(r.representation for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, attr, title in ((axes[0], "error_recovery", "1-best word errors recovered"),
                            (axes[1], "entity_recovery", "missed entities recovered")):
        for rep in reps:
            by_k = {r.k: getattr(r, attr) for r in rows if r.representation == rep}
            xs = [i for i, k in enumerate(ks) if by_k.get(k) is not None]
            ax.plot(xs, [100 * by_k[ks[i]] for i in xs], marker="o", label=rep)
        ax.set_xticks(range(len(ks)), labels)
        ax.set_xlabel("top-k alternatives")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("%")
    axes[0].legend()
    fig.tight_layout()
    fmt = str(path).rsplit(".", 1)[-1].lower() if "." in str(path) else "png"
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format=fmt)
    plt.close(fig)
