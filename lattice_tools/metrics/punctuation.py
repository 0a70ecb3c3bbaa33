"""Punctuation- and case-aware scoring (seed 004, "Beyond Levenshtein", section 2).

Pipeline: :func:`lex` -> non-destructive normalizers -> :func:`extended_align` (extended
Levenshtein with compound words and variable costs) -> route with classified substitutions ->
:func:`orthographic_counts` (WER on words, SER/F1 for punctuation and capitalisation).

**Tokens** (:class:`Token`) keep their raw text, a comparison ``value``, the non-word characters
around them (``prefix``/``suffix``: spaces, quotes, dashes, brackets) and the tuple of
normalizations that changed them.  Kinds: ``word``, ``number``, ``punct`` (the seed's set
P = ``. , ! ? ; :``, plus the danda ``।`` and double danda ``॥`` for Indic scripts), ``symbol`` (% and currency signs), ``annotation`` (``[..]``, ``<..>``, ``(..)``).

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
"""
from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import numpy as np

from ..errors import require

regex = require("regex", "metrics")
from ..scoring.counts import ErrorCounts

# The seed's set P, plus the Indic danda and double danda (sentence marks of Brahmi scripts).
PUNCTUATION = frozenset(".,!?;:।॥")
CURRENCY = {"$": "dollars", "€": "euros", "£": "pounds", "¥": "yen", "₹": "rupees", "¢": "cents"}
SYMBOLS = frozenset(CURRENCY) | {"%", "&", "+", "=", "@", "#", "/"}
ABBREVIATIONS = {
    "mr": "mister", "mrs": "missus", "ms": "miss", "st": "saint", "dr": "doctor", "prof": "professor",
    "capt": "captain", "gov": "governor", "ald": "alderman", "gen": "general", "sen": "senator",
    "rep": "representative", "pres": "president", "rev": "reverend", "hon": "honorable", "asst": "assistant",
    "assoc": "associate", "lt": "lieutenant", "col": "colonel", "jr": "junior", "sr": "senior", "esq": "esquire",
    "etc": "et cetera", "vs": "versus", "approx": "approximately", "dept": "department",
}
CONTRACTIONS = {
    "won't": "will not", "can't": "can not", "let's": "let us", "ain't": "aint", "y'all": "you all",
    "wanna": "want to", "gotta": "got to", "gonna": "going to", "i'ma": "i am going to", "imma": "i am going to",
    "woulda": "would have", "coulda": "could have", "shoulda": "should have", "ma'am": "madam",
    "it's": "it is", "that's": "that is", "he's": "he is", "she's": "she is", "there's": "there is",
    "what's": "what is", "here's": "here is", "where's": "where is", "who's": "who is", "how's": "how is",
}
SUFFIX_CONTRACTIONS = (("n't", " not"), ("'re", " are"), ("'ll", " will"), ("'ve", " have"), ("'m", " am"),
                       ("'d", " would"))
INTERJECTIONS = frozenset({"hmm", "mm", "mhm", "mmm", "uh", "um"})

# ``regex``'s \w includes Mark characters (Indic vowel signs, viramas, nuktas); ``re``'s does not.
_TOKEN_RE = regex.compile(
    r"(?P<annotation>\[[^\]]*\]|<[^>]*>|\([^)]*\))"
    r"|(?P<abbrev>(?:[^\W\d_]\.){2,}|(?:" + "|".join(sorted(ABBREVIATIONS, key=len, reverse=True))
    + r")\.(?=\s|$))"
    r"|(?P<number>\d+(?:[.,]\d+)*(?:st|nd|rd|th|s)?(?![\w]))"
    r"|(?P<word>[\w](?:[\w]|['’\-](?=\w))*)"
    r"|(?P<punct>[.,!?;:।॥])"
    r"|(?P<symbol>[%$€£¥₹¢&+=@#/])",
    regex.IGNORECASE | regex.UNICODE | regex.VERSION0,
)


@dataclass(frozen=True)
class Token:
    kind: str                      # word | number | punct | symbol | annotation
    raw: str                       # text as written (for words: without prefix/suffix characters)
    value: str                     # value compared by the alignment
    prefix: str = ""
    suffix: str = ""
    normalizations: tuple[str, ...] = ()
    start: int = 0                 # character offset of ``raw`` in the lexed text

    @property
    def is_punct(self) -> bool:
        return self.kind == "punct"  # the lexer makes punct tokens of PUNCTUATION only

    def normalized(self, name: str, **changes) -> Token:
        return replace(self, normalizations=self.normalizations + (name,), **changes)


def lex(text: str) -> list[Token]:
    """Split ``text`` into tokens; every character is kept in some token's raw/prefix/suffix.

    Periods stay inside abbreviations (``Mrs.``, ``U.S.``) and numbers (``3.14``); a new token starts
    at every punctuation mark and symbol.  Characters that are neither (spaces, quotes, dashes...)
    become the suffix of the previous token, or the prefix of the first token.
    """
    matches = list(_TOKEN_RE.finditer(text))
    tokens: list[Token] = []
    new = object.__new__
    for k, m in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        kind = m.lastgroup
        raw = m.group()
        s0 = m.start()
        # Token(kind, raw, raw, prefix, suffix, (), start) without the frozen dataclass __init__
        # (seven object.__setattr__ calls; lexing is the hot loop of the orthographic metrics)
        t = new(Token)
        t.__dict__.update(kind="word" if kind == "abbrev" else kind, raw=raw, value=raw,
                          prefix=text[:s0] if k == 0 else "", suffix=text[m.end():end], normalizations=(),
                          start=s0)
        tokens.append(t)
    return tokens


# ----------------------------------------------------------------------------------------------
# Normalizers: list[Token] -> list[Token]; every changed token records the normalizer's name.

def _match_case(template: str, text: str) -> str:
    if template[:1].isupper():
        return text[:1].upper() + text[1:]
    return text


def _split(tok: Token, name: str, text: str) -> list[Token]:
    parts = text.split()
    out = []
    for k, p in enumerate(parts):
        out.append(tok.normalized(name, value=p, kind="word",
                                  prefix=tok.prefix if k == 0 else "",
                                  suffix=tok.suffix if k == len(parts) - 1 else ""))
    return out


def remove_annotations(tokens):
    return [t for t in tokens if t.kind != "annotation"]


def remove_interjections(tokens):
    return [t for t in tokens if not (t.kind == "word" and t.value.lower() in INTERJECTIONS)]


@lru_cache(maxsize=65536)
def _contraction_expansion(value: str) -> str | None:
    """Expanded text of a word value, None when it is no contraction (a function of the value
    alone, so cached)."""
    low = value.lower().replace("’", "'")
    if low in CONTRACTIONS:
        return _match_case(value, CONTRACTIONS[low])
    for suf, rep in SUFFIX_CONTRACTIONS:
        if low.endswith(suf) and len(low) > len(suf):
            return value[:len(value) - len(suf)] + rep
    return None


def expand_contractions(tokens):
    out = []
    for t in tokens:
        text = _contraction_expansion(t.value) if t.kind == "word" else None
        if text is None:
            out.append(t)
        else:
            out.extend(_split(t, "contraction", text))
    return out


def expand_abbreviations(tokens):
    out = []
    for t in tokens:
        if t.kind == "word" and t.value.endswith(".") and t.value.lower().rstrip(".") in ABBREVIATIONS:
            key = t.value.lower().rstrip(".")
            out.extend(_split(t, "abbreviation", _match_case(t.value, ABBREVIATIONS[key])))
        else:
            out.append(t)
    return out


@lru_cache(maxsize=1)
def _spelling_table() -> dict:
    with resources.files("lattice_tools.metrics").joinpath("data/uk_us_spelling.json").open("r", encoding="utf-8") as f:
        return json.load(f)


def normalize_spelling(tokens):
    table = _spelling_table()
    out = []
    for t in tokens:
        us = table.get(t.value.lower()) if t.kind == "word" else None
        out.append(t.normalized("spelling", value=_match_case(t.value, us)) if us else t)
    return out


_EXTRA_DIACRITICS = {"œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "ß": "ss",
                     "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "th", "ł": "l", "Ł": "L"}


@lru_cache(maxsize=65536)
def _strip_latin_diacritics(s: str) -> str:
    # Only Latin letters lose their marks: Indic vowel signs are Mark characters too and must stay.
    out = []
    for c in unicodedata.normalize("NFKD", s):
        if c in _EXTRA_DIACRITICS:
            out.append(_EXTRA_DIACRITICS[c])
        elif unicodedata.category(c) == "Mn" and out and out[-1].isascii():
            continue
        else:
            out.append(c)
    return unicodedata.normalize("NFC", "".join(out))


def remove_diacritics(tokens):
    out = []
    for t in tokens:
        if t.kind == "word":
            v = _strip_latin_diacritics(t.value)
            if v != t.value:
                t = t.normalized("diacritics", value=v)
        out.append(t)
    return out


_ONES = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                    "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i >= 2}
_SCALES = {"thousand": 10 ** 3, "million": 10 ** 6, "billion": 10 ** 9, "trillion": 10 ** 12}


def _parse_number_words(words: Sequence[str]) -> tuple[int, int] | None:
    """Longest prefix of ``words`` that is an English cardinal; ``(value, n_words)`` or None."""
    total = current = 0
    used = 0
    seen = False
    k = 0
    while k < len(words):
        w = words[k].lower().replace("-", " ")
        parts = w.split()
        if len(parts) == 2 and parts[0] in _TENS and parts[1] in _ONES and 0 < _ONES[parts[1]] < 10:
            current += _TENS[parts[0]] + _ONES[parts[1]]
        elif w in _ONES:
            if seen and current % 100 and current % 100 < 20 and not (current % 10 == 0 and _ONES[w] < 10):
                break
            current += _ONES[w]
        elif w in _TENS:
            if seen and current % 100:
                break
            current += _TENS[w]
        elif w == "hundred" and seen and current % 1000 and current < 1000:
            current *= 100
        elif w in _SCALES and seen:
            total += max(current, 1) * _SCALES[w]
            current = 0
        elif w == "and" and seen and k + 1 < len(words) and words[k + 1].lower() in {**_ONES, **_TENS}:
            k += 1
            continue
        else:
            break
        seen = True
        k += 1
        used = k
    if not seen:
        return None
    return total + current, used


@lru_cache(maxsize=65536)
def _may_start_number(word: str) -> bool:
    """Whether :func:`_parse_number_words` accepts ``word`` as its first word (its first iteration
    with ``seen`` false: a tens-ones compound, a one or a tens word)."""
    w = word.lower().replace("-", " ")
    parts = w.split()
    if len(parts) == 2 and parts[0] in _TENS and parts[1] in _ONES and 0 < _ONES[parts[1]] < 10:
        return True
    return w in _ONES or w in _TENS


def normalize_numbers(tokens):
    """Spelled-out English cardinals -> digits (``two thousand`` -> ``2000``), commas removed from
    digit groups, currency/percent symbols spelled out after the number (``$20`` -> ``20 dollars``,
    ``5%`` -> ``5 percent``).  Caveats: no ordinals, fractions or decimals in words ("point")."""
    out: list[Token] = []
    k = 0
    n = len(tokens)
    while k < n:
        t = tokens[k]
        if t.kind == "word" and not _may_start_number(t.value):
            # _parse_number_words would return None on its first word: skip building the run
            out.append(t)
            k += 1
            continue
        if t.kind == "word":
            run = []
            j = k
            while j < n and tokens[j].kind == "word":
                run.append(tokens[j].value)
                j += 1
            parsed = _parse_number_words(run)
            if parsed is not None and not (parsed[1] == 1 and run[0].lower() in ("one",) and False):
                value, used = parsed
                merged = tokens[k:k + used]
                out.append(Token("number", " ".join(x.raw for x in merged), str(value), prefix=merged[0].prefix,
                                 suffix=merged[-1].suffix, normalizations=("number",), start=merged[0].start))
                k += used
                continue
            out.append(t)
            k += 1
            continue
        if t.kind == "number" and "," in t.value:
            t = t.normalized("number", value=t.value.replace(",", ""))
        if t.kind == "symbol" and t.value in CURRENCY and k + 1 < n and tokens[k + 1].kind == "number":
            num = tokens[k + 1]
            out.append(num.normalized("number", value=num.value.replace(",", ""), prefix=t.prefix + num.prefix))
            out.append(t.normalized("currency", kind="word", value=CURRENCY[t.value]))
            k += 2
            continue
        if t.kind == "symbol" and t.value == "%":
            out.append(t.normalized("percent", kind="word", value="percent"))
            k += 1
            continue
        if t.kind == "symbol" and t.value in CURRENCY:
            out.append(t.normalized("currency", kind="word", value=CURRENCY[t.value]))
            k += 1
            continue
        out.append(t)
        k += 1
    return out


NORMALIZERS: dict[str, Callable] = {
    "annotations": remove_annotations,
    "interjections": remove_interjections,
    "abbreviations": expand_abbreviations,
    "contractions": expand_contractions,
    "spelling": normalize_spelling,
    "diacritics": remove_diacritics,
    "numbers": normalize_numbers,
}
DEFAULT_NORMALIZERS = tuple(NORMALIZERS)


def tokenize(text: str, normalizers: Sequence[str] = DEFAULT_NORMALIZERS) -> list[Token]:
    """:func:`lex` then the named normalizers in the order given."""
    tokens = lex(text)
    for name in normalizers:
        tokens = NORMALIZERS[name](tokens)
    return tokens


# Normalizers that map each token to tokens on its own (no neighbour is read).
TOKEN_LOCAL_NORMALIZERS = frozenset({"annotations", "interjections", "abbreviations", "contractions", "spelling",
                                     "diacritics"})
# Text that may not be lexed word by word: an annotation can span whitespace, and these four
# characters are whitespace to str.split but not to the regex's \s (abbreviation lookahead).
_NOT_WORDWISE = regex.compile(r"[\[<(\x1c-\x1f]")


def tokenize_for_counts(text: str, normalizers: Sequence[str], cache: dict) -> list[Token]:
    r""":func:`tokenize` up to the ``prefix``/``suffix``/``start`` fields, which no count reads.

    Lexing decomposes over whitespace-separated words when the text has no annotation bracket:
    no other token pattern matches whitespace, and each lookahead (``\s|$``, ``(?!\w)``,
    ``(?=\w)``) sees the same answer at a word's end as before the following whitespace.  The
    leading token-local normalizers then also apply word by word, so the tokens of a word are
    cached (words repeat) and only the remaining normalizers (numbers: runs of words) see the
    whole text.  Cached tokens carry the word-local ``prefix``/``suffix``/``start``.
    """
    if _NOT_WORDWISE.search(text):
        return tokenize(text, normalizers)
    k = 0
    while k < len(normalizers) and normalizers[k] in TOKEN_LOCAL_NORMALIZERS:
        k += 1
    local, rest = tuple(normalizers[:k]), normalizers[k:]
    tokens: list[Token] = []
    get = cache.get
    for w in text.split():
        toks = get((local, w))
        if toks is None:
            toks = lex(w)
            for name in local:
                toks = NORMALIZERS[name](toks)
            toks = cache[(local, w)] = tuple(toks)
        tokens.extend(toks)
    for name in rest:
        tokens = NORMALIZERS[name](tokens)
    return tokens


# ----------------------------------------------------------------------------------------------
# Extended Levenshtein distance

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
    return _value_key(t.value)


@lru_cache(maxsize=65536)
def _value_key(value: str) -> str:
    return value.replace("-", "").replace(" ", "")


@lru_cache(maxsize=65536)
def _proper_suffixes(key: str) -> tuple[str, ...]:
    return tuple(key[s:] for s in range(1, len(key)))


def _compounds(ref: Sequence[Token], hyp: Sequence[Token], K: int | None):
    """All compound matches as ``{(i, j): [(x, y), ...]}`` with ``i``/``j`` the end positions."""
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    rk = [_value_key(t.value) if t.kind in ("word", "number") else None for t in ref]
    hk = [_value_key(t.value) if t.kind in ("word", "number") else None for t in hyp]
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
            for suffix in _proper_suffixes(a):
                if suffix in hyp_by_key:
                    candidates.update((i, j) for j in hyp_by_key[suffix])
    for j, b in enumerate(hk):
        if b:
            for suffix in _proper_suffixes(b):
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


def _sub_costs(a: Token, hyp_vals, hyp_low, hyp_punct) -> np.ndarray:
    if a.is_punct:
        c = np.where(hyp_punct, SUB_PUNCT, SUB_CROSS)
    else:
        c = np.where(hyp_punct, SUB_CROSS, np.where(hyp_low == a.value.lower(), SUB_CASE, SUB_WORD))
    return np.where(hyp_vals == a.value, 0, c)


def extended_align(ref: Sequence[Token], hyp: Sequence[Token], K: int | None = None):
    """Minimum-cost route between token lists (seed 004 eq. 1-3).  Returns ``(cost, route)``,
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
    comps = _compounds(ref, hyp, K)
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

def _is_capitalised(t: Token) -> bool:
    return any(c.isupper() for c in t.value)


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
    """Slot error rate (S+D+I)/(C+S+D) (seed 004 eq. 4); None when there is no reference slot."""
    d = c.correct + c.substitutions + c.deletions
    return (c.substitutions + c.deletions + c.insertions) / d if d else None


def f1(c: ErrorCounts) -> float | None:
    """2C / (2C + 2S + D + I) (seed 004 eq. 5); None when there is nothing on either side."""
    d = 2 * c.correct + 2 * c.substitutions + c.deletions + c.insertions
    return 2 * c.correct / d if d else None


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


def score_orthography(ref_text: str, hyp_text: str, normalizers: Sequence[str] = DEFAULT_NORMALIZERS,
                      K: int | None = None) -> tuple[OrthographicCounts, list[RouteElement]]:
    """Lex, normalize, align and count one reference/hypothesis pair."""
    ref = tokenize(ref_text, normalizers)
    hyp = tokenize(hyp_text, normalizers)
    cost, route = extended_align(ref, hyp, K)
    return orthographic_counts(route, cost, ref, hyp), route


def score_orthography_many(ref_texts: Sequence[str], hyp_texts: Sequence[str],
                           normalizers: Sequence[str] = DEFAULT_NORMALIZERS,
                           K: int | None = None, cache: dict | None = None) -> list[OrthographicCounts]:
    """``[score_orthography(r, h, normalizers, K)[0] for r, h in zip(ref_texts, hyp_texts)]``, fast.

    Runs :mod:`lattice_tools.metrics.orthography_batch`: tokens interned to integers (lexing and
    the token-local normalizers once per distinct word; pass the same ``cache`` dict to
    successive calls over one corpus), the extended-Levenshtein DP of :func:`extended_align` and
    its backtrace for a whole batch of utterances at once in numpy, counts read off the backtrace
    events.  Utterances are batched by size so that padding stays small and a batch holds at
    most :data:`BATCH_CELLS` DP cells.
    """
    from .orthography_batch import score_many

    return score_many(ref_texts, hyp_texts, normalizers, K, {} if cache is None else cache, BATCH_CELLS)


BATCH_CELLS = 200_000   # bounds padding and memory (~10 MB of temporaries)


@lru_cache(maxsize=65536)
def _classify_values(a_kind: str, a_value: str, b_kind: str, b_value: str) -> str:
    return classify(Token(a_kind, a_value, a_value), Token(b_kind, b_value, b_value))


@lru_cache(maxsize=65536)
def _capitalised(value: str) -> bool:
    return any(c.isupper() for c in value)


def render_route(route: Sequence[RouteElement]) -> str:
    """One line per element: ``op  ref  hyp  class`` (for docs and debugging)."""
    lines = []
    for e in route:
        r = " ".join(t.value for t in e.ref) or "*"
        h = " ".join(t.value for t in e.hyp) or "*"
        lines.append(f"{e.op:8s} {r:20s} {h:20s} {e.cls or ''}".rstrip())
    return "\n".join(lines)
