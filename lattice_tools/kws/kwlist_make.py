"""Make a keyword list from reference word times, so that any corpus gets a keyword-search setup.

Selection rules (all deterministic for a given ``seed``):

1. Words are the reference LEXEMEs of subtype ``lex`` (fragments ``frag``, filled pauses ``fp`` and
   ``un-lex`` are never part of a term).  A word qualifies when it has at least one letter and none of
   ``()[]<>{}%*~/-`` (transcription marks); words are lower-cased.
2. A multi-word candidate is a run of 2..``max_words`` consecutive words of one speaker, each starting at
   most ``max_gap`` (0.5 s, the scorer's default) after the previous one ends, so that every candidate
   has at least one reference occurrence the scorer will find.
3. A candidate is kept when its number of occurrences lies in ``[min_count, max_count]`` and (single
   words) it has at least ``min_chars`` characters.
4. ``num_terms`` terms are drawn without replacement, ``multiword_fraction`` of them multi-word (as many
   as there are when fewer), with ``random.Random(seed)`` from the candidates in sorted order, then sorted
   by text and numbered ``KW-0001``, ``KW-0002``...
"""
from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from ..core.errors import LatticeToolsError
from ..io.keyword_search.kwlist import KeywordTerm
from ..io.keyword_search.rttm import RttmRecord

_BAD = re.compile(r"[()\[\]<>{}%*~/\-]")
_LETTER = re.compile(r"[^\W\d_]")


def candidate_counts(records: Iterable[RttmRecord], *, max_words: int = 3, max_gap: float = 0.5) -> Counter:
    """How often each word and each run of 2..max_words words occurs (rules 1-2)."""
    by_spk: dict[tuple[str, str, str], list[RttmRecord]] = {}
    for r in records:
        if r.type == "LEXEME":
            by_spk.setdefault((r.file, r.channel, r.speaker), []).append(r)
    counts: Counter = Counter()
    for recs in by_spk.values():
        recs.sort(key=lambda r: (r.tbeg, r.line))
        for i, r in enumerate(recs):
            if not _ok(r):
                continue
            words = [r.ortho.lower()]
            counts[words[0]] += 1
            prev = r
            for nxt in recs[i + 1:i + max_words]:
                if not _ok(nxt) or nxt.tbeg - prev.tend > max_gap + 1e-9:
                    break
                words.append(nxt.ortho.lower())
                counts[" ".join(words)] += 1
                prev = nxt
    return counts


def _ok(r: RttmRecord) -> bool:
    return r.subtype == "lex" and bool(_LETTER.search(r.ortho)) and not _BAD.search(r.ortho)


def make_kwlist(records: Sequence[RttmRecord], *, num_terms: int = 100, seed: int = 0, max_words: int = 3,
                multiword_fraction: float = 0.3, min_count: int = 1, max_count: int | None = None,
                min_chars: int = 3, max_gap: float = 0.5) -> list[KeywordTerm]:
    """Draw a keyword list from reference words (see the module's rules).  Raises LatticeToolsError when
    the reference has no candidate at all."""
    if num_terms < 1 or max_words < 1 or not 0 <= multiword_fraction <= 1 or min_count < 1:
        raise LatticeToolsError("num_terms, max_words and min_count must be >= 1 and multiword_fraction in [0, 1]")
    counts = candidate_counts(records, max_words=max_words, max_gap=max_gap)

    def keep(text, n):
        if n < min_count or (max_count is not None and n > max_count):
            return False
        return " " in text or len(text) >= min_chars

    singles = sorted(t for t, n in counts.items() if " " not in t and keep(t, n))
    multis = sorted(t for t, n in counts.items() if " " in t and keep(t, n))
    if not singles and not multis:
        raise LatticeToolsError("the reference has no word that qualifies for a keyword list "
                                "(see lattice_tools.kws.kwlist_make for the rules)")
    rng = random.Random(seed)
    n_multi = min(len(multis), round(num_terms * multiword_fraction))
    n_single = min(len(singles), num_terms - n_multi)
    # Fill up from the other kind when one runs short.
    n_multi = min(len(multis), num_terms - n_single)
    chosen = rng.sample(singles, n_single) + rng.sample(multis, n_multi)
    chosen.sort()
    return [KeywordTerm(f"KW-{i:04d}", text) for i, text in enumerate(chosen, 1)]


__all__ = ["make_kwlist", "candidate_counts"]
