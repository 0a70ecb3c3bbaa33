"""Punctuation- and case-aware scoring rules (Kuhn et al., "Beyond Levenshtein", section 2): costs, compounds, substitution
classes and counts.

**Costs** (seed eq. 2-3; kept doubled internally so they are integers):
insertion/deletion 0.5 for punctuation, 1 otherwise; substitution 2 between a punctuation and a
non-punctuation token, 0.5 between two punctuation marks, 0.5 when the values are equal after
lower-casing (case-only), 1 otherwise; exact match 0.  **Compounds** (seed eq. 1, line 3): a run of
``x`` reference and ``y`` hypothesis word/number tokens whose concatenations are equal once spaces
and hyphens are removed is matched at cost 0 (``ice cream`` = ``icecream`` = ``ice-cream``), with
``x, y <= K`` (``K=None``: unbounded, as in the seed).  Compounds never span punctuation.

**Counting.** A compound counts its reference words as correct (it is listed as class
``compound``).  A case-only substitution is correct for WER and a capitalisation error.  A
word<->punctuation substitution counts as a word deletion/insertion plus a punctuation
insertion/deletion.  Punctuation: C = identical marks aligned, S = different marks aligned,
D/I = marks missing/extra.  Capitalisation is scored on the aligned word pairs that are equal up to
case: a token is *capitalised* when it has an upper-case letter; C = both capitalised and equal,
S = both capitalised but differently, D = reference capitalised and hypothesis not, I = hypothesis
capitalised and reference not.  SER = (S+D+I)/(C+S+D), F1 = 2C/(2C+2S+D+I) (seed eq. 4-5).

**Substitution classes** (route elements of kind ``sub``): ``punctuation``, ``capitalisation``,
``word_punctuation``, ``number``, ``prefix``/``suffix``/``affix`` (one value is the start/end/
inside of the other), ``stem`` (equal Porter stems, PyStemmer's ``porter``), ``homophone``
(Double-Metaphone codes intersect, package ``metaphone``), else ``word``.

The alignment that applies these rules is :mod:`~lattice_tools.metrics.orthography_batch`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..core.counts import ErrorCounts
from ..core.errors import require
from .orthography_tokens import Token

INS_DEL = 2          # doubled costs: 1 -> 2, 0.5 -> 1
INS_DEL_PUNCT = 1
SUB_WORD = 2
SUB_CASE = 1
SUB_PUNCT = 1
SUB_CROSS = 4


@dataclass(frozen=True)
class RouteElement:
    op: str                              # ok | sub | del | ins | compound
    ref: tuple[Token, ...]
    hyp: tuple[Token, ...]
    cls: str | None = None               # substitution class (see module docstring)


def _compound_key(t: Token) -> str:
    return value_key(t.value)


@lru_cache(maxsize=65536)
def value_key(value: str) -> str:
    return value.replace("-", "").replace(" ", "")


@lru_cache(maxsize=65536)
def proper_suffixes(key: str) -> tuple[str, ...]:
    return tuple(key[s:] for s in range(1, len(key)))


def find_compounds(ref: Sequence[Token], hyp: Sequence[Token], K: int | None):
    """All compound matches as ``{(i, j): [(x, y), ...]}`` with ``i``/``j`` the end positions."""
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    # ("" for a token that has no key: every use below tests the key's truth)
    rk = [value_key(t.value) if t.kind in ("word", "number") else "" for t in ref]
    hk = [value_key(t.value) if t.kind in ("word", "number") else "" for t in hyp]
    # A compound ending at (i, j) needs one last token to be a suffix of the other (equal keys with
    # different values: hyphenation).  Index keys by value, look up every suffix: O(characters).
    def index(keys):
        d: dict[str, list[int]] = {}
        for j, k in enumerate(keys):
            if k:
                d.setdefault(k, []).append(j)
        return d

    # A compound whose last tokens have equal keys decomposes into a shorter compound plus that
    # (1, 1) pair at the same cost 0, so only proper-suffix endings need the search; equal keys
    # with different values ("ice-cream"/"icecream") are the (1, 1) compound itself.
    hyp_by_key, ref_by_key = index(hk), index(rk)
    candidates: set[tuple[int, int]] = set()
    for i, a in enumerate(rk):
        if a:
            for j in hyp_by_key.get(a, ()):
                if ref[i].value != hyp[j].value:
                    out.setdefault((i + 1, j + 1), []).append((1, 1))
            for suffix in proper_suffixes(a):
                if suffix in hyp_by_key:
                    candidates.update((i, j) for j in hyp_by_key[suffix])
    for j, b in enumerate(hk):
        if b:
            for suffix in proper_suffixes(b):
                if suffix in ref_by_key:
                    candidates.update((i, j) for i in ref_by_key[suffix])
    limit = K if K is not None else 1 << 30
    for i, j in sorted(candidates):
        a = rk[i]
        # grow both suffix concatenations; the shorter must stay a suffix of the longer
        x = y = 1
        sa, sb = a, hk[j]
        while True:
            if len(sa) == len(sb):
                if sa != sb:
                    break
                if (x, y) != (1, 1) or ref[i].value != hyp[j].value:
                    out.setdefault((i + 1, j + 1), []).append((x, y))
                # extend the ref side (the hyp side is extended in the next iteration if needed)
                if i - x < 0 or not rk[i - x] or x >= limit:
                    break
                sa = rk[i - x] + sa
                x += 1
            elif len(sa) < len(sb):
                if not sb.endswith(sa) or i - x < 0 or not rk[i - x] or x >= limit:
                    break
                sa = rk[i - x] + sa
                x += 1
            else:
                if not sa.endswith(sb) or j - y < 0 or not hk[j - y] or y >= limit:
                    break
                sb = hk[j - y] + sb
                y += 1
    return out



# ----------------------------------------------------------------------------------------------
# Substitution classes

@lru_cache(maxsize=1)
def _stemmer():
    return require("Stemmer", "metrics").Stemmer("porter")


@lru_cache(maxsize=65536)
def _metaphone(word: str) -> tuple[str, ...]:
    dm = require("metaphone", "metrics").doublemetaphone(word)
    return tuple(c for c in dm if c)


def classify(a: Token, b: Token) -> str:
    """Class of the substitution of reference token ``a`` by hypothesis token ``b``."""
    if a.is_punct and b.is_punct:
        return "punctuation"
    if a.is_punct or b.is_punct:
        return "word_punctuation"
    x, y = a.value.lower(), b.value.lower()
    if x == y:
        return "capitalisation"
    if _compound_key(a).lower() == _compound_key(b).lower():
        return "compound"
    if a.kind == "number" or b.kind == "number":
        return "number"
    if x.startswith(y) or y.startswith(x):
        return "prefix"
    if x.endswith(y) or y.endswith(x):
        return "suffix"
    if x in y or y in x:
        return "affix"
    st = _stemmer()
    if st.stemWord(x) == st.stemWord(y):
        return "stem"
    ma, mb = _metaphone(x), _metaphone(y)
    if ma and mb and set(ma) & set(mb):
        return "homophone"
    return "word"


# ----------------------------------------------------------------------------------------------
# Counts

@dataclass(frozen=True)
class OrthographicCounts:
    """Additive results of one or more routes: word, punctuation and capitalisation counts,
    substitution classes and normalizations applied."""

    words: ErrorCounts = ErrorCounts()
    punctuation: ErrorCounts = ErrorCounts()
    capitalisation: ErrorCounts = ErrorCounts()
    classes: tuple[tuple[str, int], ...] = ()
    normalizations: tuple[tuple[str, int], ...] = ()
    cost: float = 0.0

    def __add__(self, o: OrthographicCounts) -> OrthographicCounts:
        return OrthographicCounts(self.words + o.words, self.punctuation + o.punctuation,
                                  self.capitalisation + o.capitalisation, _merge(self.classes, o.classes),
                                  _merge(self.normalizations, o.normalizations), self.cost + o.cost)

    def as_dict(self) -> dict:
        return {"wer": self.words.wer, "punctuation_ser": ser(self.punctuation), "punctuation_f1": f1(self.punctuation),
                "capitalisation_ser": ser(self.capitalisation), "capitalisation_f1": f1(self.capitalisation),
                "words": self.words.as_dict(), "punctuation": self.punctuation.as_dict(),
                "capitalisation": self.capitalisation.as_dict(), "classes": dict(self.classes),
                "normalizations": dict(self.normalizations), "cost": self.cost}


def _merge(a, b):
    d = dict(a)
    for k, v in b:
        d[k] = d.get(k, 0) + v
    return tuple(sorted(d.items()))


def ser(c: ErrorCounts) -> float | None:
    """Slot error rate (S+D+I)/(C+S+D) (Kuhn et al., Beyond Levenshtein, eq. 4); None when there is no reference slot."""
    d = c.correct + c.substitutions + c.deletions
    return (c.substitutions + c.deletions + c.insertions) / d if d else None


def f1(c: ErrorCounts) -> float | None:
    """2C / (2C + 2S + D + I) (Kuhn et al., Beyond Levenshtein, eq. 5); None when there is nothing on either side."""
    d = 2 * c.correct + 2 * c.substitutions + c.deletions + c.insertions
    return 2 * c.correct / d if d else None



@lru_cache(maxsize=65536)
def classify_values(a_kind: str, a_value: str, b_kind: str, b_value: str) -> str:
    return classify(Token(a_kind, a_value, a_value), Token(b_kind, b_value, b_value))


@lru_cache(maxsize=65536)
def is_capitalised_value(value: str) -> bool:
    return any(c.isupper() for c in value)


def render_route(route: Sequence[RouteElement]) -> str:
    """One line per element: ``op  ref  hyp  class`` (for docs and debugging)."""
    lines = []
    for e in route:
        r = " ".join(t.value for t in e.ref) or "*"
        h = " ".join(t.value for t in e.hyp) or "*"
        lines.append(f"{e.op:8s} {r:20s} {h:20s} {e.cls or ''}".rstrip())
    return "\n".join(lines)
