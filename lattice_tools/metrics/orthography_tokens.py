"""Punctuation- and case-aware tokens: the lexer and the non-destructive normalizers (Kuhn et al., Beyond Levenshtein, section 2).

**Tokens** (:class:`Token`) keep their raw text, a comparison ``value``, the non-word characters
around them (``prefix``/``suffix``: spaces, quotes, dashes, brackets) and the tuple of
normalizations that changed them.  Kinds: ``word``, ``number``, ``punct`` (the seed's set
P = ``. , ! ? ; :``, plus the danda ``।`` and double danda ``॥`` for Indic scripts), ``symbol`` (% and
currency signs), ``annotation`` (``[..]``, ``<..>``, ``(..)``).

The alignment, classes and counts built on these tokens are in
:mod:`~lattice_tools.metrics.orthography_rules` and :mod:`~lattice_tools.metrics.orthography_batch`;
:mod:`~lattice_tools.metrics.punctuation` is the public entry point.
"""
from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

from ..core.errors import require

regex = require("regex", "metrics")

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
def may_start_number(word: str) -> bool:
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
        if t.kind == "word" and not may_start_number(t.value):
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
NOT_WORDWISE = regex.compile(r"[\[<(\x1c-\x1f]")
# ... and NUL, the text separator of the batched tokenizer (orthography_batch.tokenize_ids)
NOT_WORDWISE_OR_NUL = regex.compile(r"[\[<(\x1c-\x1f\x00]")
NOT_WORDWISE_CHARS = "[<(\x1c\x1d\x1e\x1f"     # NOT_WORDWISE spelled out (str.__contains__ is fast)


def tokenize_for_counts(text: str, normalizers: Sequence[str], cache: dict) -> list[Token]:
    r""":func:`tokenize` up to the ``prefix``/``suffix``/``start`` fields, which no count reads.

    Lexing decomposes over whitespace-separated words when the text has no annotation bracket:
    no other token pattern matches whitespace, and each lookahead (``\s|$``, ``(?!\w)``,
    ``(?=\w)``) sees the same answer at a word's end as before the following whitespace.  The
    leading token-local normalizers then also apply word by word, so the tokens of a word are
    cached (words repeat) and only the remaining normalizers (numbers: runs of words) see the
    whole text.  Cached tokens carry the word-local ``prefix``/``suffix``/``start``.
    """
    if NOT_WORDWISE.search(text):
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
