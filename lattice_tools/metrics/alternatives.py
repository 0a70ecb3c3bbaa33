"""Metrics on alternatives: oracle hypotheses and "alternative coverage".

An :class:`~lattice_tools.core.alternatives_network.Alternatives` object is a linear word network:
every path picks one alternative per slot.  Here:

* :func:`oracle_path` -- the path with the fewest plain-Levenshtein word errors against the
  reference (exact: the oracle engine of :mod:`lattice_tools.oracle` in Levenshtein mode).  Every
  1-best metric is then computed on that oracle hypothesis (CER, SFR, NE-*, ...): the "oracle"
  system of a representation.  Caveat: the oracle minimizes *word*
  errors; its CER is the CER of the word-oracle path, not the minimum CER over paths.
* :func:`network_contains` -- does *some* path contain a unit sequence (an entity) contiguously?
  Exact, by propagating the set of matched-prefix lengths through every alternative.
* :func:`alternative_coverage` -- per representation and depth ``k``: the share of the 1-best word
  errors the top-``k`` oracle removes, and the share of entities missed (exact match) by the
  1-best that some top-``k`` path contains.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..core.alternatives_network import Alternatives
from ..core.files import atomic_write
from .entities import contains_sequence
from .levenshtein import edit_distance
from .text import graphemes


def _never_nonword(word: str) -> bool:
    return False


def oracle_path(ref: Sequence[str], alts: Alternatives, k: int | None = None) -> tuple[int, list[str], list[int]]:
    """``(errors, oracle_words, chosen_alternative_per_slot)`` over the top-``k`` alternatives.

    The oracle engine's Levenshtein mode (:func:`lattice_tools.oracle.alternatives_oracle`), with every
    word matched as written (case-sensitive, no word treated as a filler); the chosen alternative of
    every slot is one that spells the oracle words (the first such, slot by slot).
    """
    from ..oracle.api import alternatives_oracle

    net = alts.truncated(k)
    res = alternatives_oracle(net, [str(w) for w in ref], mode="levenshtein", case_sensitive=True,
                              nonword=_never_nonword)
    words = [w for w in res.words if w != "@"]
    return int(round(res.cost)), words, _spelling_choice(net, words)


def _spelling_choice(net: Alternatives, words: list[str]) -> list[int]:
    """The alternative of every slot, such that their words in order are ``words``: for each slot the
    first alternative after which the rest can still be spelled (a table of reachable positions)."""
    slots = net.slots
    n = len(words)
    # can[i][p]: slots i.. can spell words[p:]
    can = [[False] * (n + 1) for _ in range(len(slots) + 1)]
    can[len(slots)][n] = True
    for i in range(len(slots) - 1, -1, -1):
        for p in range(n + 1):
            can[i][p] = any(_spells(a.words, words, p) and can[i + 1][p + len(a.words)]
                            for a in slots[i].alternatives)
    if not can[0][0]:
        raise AssertionError("the oracle words are no path of the alternatives")
    picked, p = [], 0
    for i, slot in enumerate(slots):
        a = next(j for j, alt in enumerate(slot.alternatives)
                 if _spells(alt.words, words, p) and can[i + 1][p + len(alt.words)])
        picked.append(a)
        p += len(slot.alternatives[a].words)
    return picked


def _spells(alt_words, words: list[str], p: int) -> bool:
    return list(alt_words) == words[p:p + len(alt_words)]


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


def alternative_coverage(representation: str, refs: Mapping[str, Sequence[str]],
                         networks: Mapping[str, Alternatives], ks: Iterable[int | None] = (1, 2, 5, 10, None),
                         entities: Mapping[str, Sequence[Sequence[str]]] | None = None,
                         one_best: Mapping[str, Sequence[str]] | None = None,
                         spaceless: Mapping[str, bool] | None = None) -> list[CoverageRow]:
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
    from ..core._optional import pyplot

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
