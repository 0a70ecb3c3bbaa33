"""Script Fidelity Rate, script collapse and cross-script confusion (Lin, BharatVoice-Bench, section 4.2).

For a hypothesis ``h`` and target language ``l`` with expected script ``s_l``::

    SFR(h, l) = |{c in h : script(c) = s_l}| / |{c in h : script(c) != None}|

``script(c)`` is the Unicode Script property of code point ``c``.  Characters of script Common
(whitespace, ASCII/Indic digits, punctuation incl. the danda, symbols) have no script and are left
out of numerator and denominator, as the seed requires; Inherited characters (combining marks
such as U+0301 or ZWJ-adjacent marks) take the script of the character they attach to.  Digits of
a script's own block (e.g. Devanagari digits, category Nd) are excluded like ASCII digits.

*Script collapse* is flagged when ``SFR < 0.5`` and the dominant output script is not ``s_l``.
A hypothesis without any scripted character has an undefined SFR (``None``), and is never a
collapse.  Languages whose writing mixes scripts (Japanese: Han + Hiragana + Katakana) have a set
of expected scripts.
"""
from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from ..core.errors import LatticeToolsError, require
from .text import normalize_language_code

regex = require("regex", "metrics")

# Scripts looked up explicitly; any other letter falls back to the first word of its Unicode name.
_SCRIPTS = (
    "Latin", "Devanagari", "Bengali", "Gurmukhi", "Gujarati", "Oriya", "Tamil", "Telugu", "Kannada",
    "Malayalam", "Sinhala", "Ol_Chiki", "Arabic", "Hebrew", "Syriac", "Thaana", "Cyrillic", "Greek",
    "Armenian", "Georgian", "Han", "Hiragana", "Katakana", "Hangul", "Bopomofo", "Thai", "Lao",
    "Tibetan", "Myanmar", "Khmer", "Ethiopic", "Meetei_Mayek", "Tifinagh", "Mongolian", "Cherokee",
    "Canadian_Aboriginal", "Javanese", "Balinese", "Limbu", "Lepcha", "Chakma", "Tai_Tham", "Yi",
)
_SCRIPT_RE = regex.compile("|".join(f"(?P<{s}>\\p{{Script={s}}})" for s in _SCRIPTS)
                           + "|(?P<Inherited>\\p{Script=Inherited})")

INHERITED = "Inherited"
_cache: dict[str, str | None] = {}


def char_script(c: str) -> str | None:
    """Unicode script of one code point; None for Common/unknown non-letters, digits and spaces;
    ``'Inherited'`` for combining marks that take their base's script."""
    s = _cache.get(c, 0)  # 0: not cached yet (a cached value is a script name or None)
    if s != 0:
        return cast("str | None", s)
    cat = unicodedata.category(c)
    if cat[0] in "ZPSC" or cat[0] == "N":
        s = None
    else:
        m = _SCRIPT_RE.match(c)
        if m is not None:
            s = m.lastgroup
        elif cat[0] == "L":
            name = unicodedata.name(c, "")
            s = name.split(" ")[0].title() if name else None
        else:
            s = None
    _cache[c] = s
    return s


def script_counts(text: str) -> Counter:
    """Number of scripted characters per script (Inherited marks counted with their base)."""
    counts: Counter = Counter()
    prev = None
    for c in text:
        s = char_script(c)
        if s == INHERITED:
            s = prev
        if s is not None:
            counts[s] += 1
        prev = s
    return counts


# Expected script(s) of a language (ISO 639-1 after normalize_language_code).
LANGUAGE_SCRIPTS: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    "hi": ["Devanagari"], "mr": ["Devanagari"], "ne": ["Devanagari"], "sa": ["Devanagari"],
    "mai": ["Devanagari"], "bho": ["Devanagari"], "kok": ["Devanagari"], "brx": ["Devanagari"],
    "bn": ["Bengali"], "as": ["Bengali"], "mni": ["Bengali", "Meetei_Mayek"], "pa": ["Gurmukhi"],
    "gu": ["Gujarati"], "or": ["Oriya"], "ta": ["Tamil"], "te": ["Telugu"], "kn": ["Kannada"],
    "ml": ["Malayalam"], "si": ["Sinhala"], "sat": ["Ol_Chiki"], "ur": ["Arabic"], "sd": ["Arabic"],
    "ks": ["Arabic"], "ar": ["Arabic"], "fa": ["Arabic"], "he": ["Hebrew"], "ru": ["Cyrillic"],
    "uk": ["Cyrillic"], "bg": ["Cyrillic"], "sr": ["Cyrillic", "Latin"], "el": ["Greek"],
    "zh": ["Han"], "ja": ["Han", "Hiragana", "Katakana"], "ko": ["Hangul", "Han"], "th": ["Thai"],
    "lo": ["Lao"], "my": ["Myanmar"], "km": ["Khmer"], "am": ["Ethiopic"], "ka": ["Georgian"],
    "hy": ["Armenian"], "bo": ["Tibetan"],
}.items()}

# Languages written without spaces between words: entity matching and CER use characters.
SPACELESS_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "my", "km", "bo"})


def expected_scripts(lang: str | None) -> frozenset[str]:
    """Expected script set of a language (:data:`LANGUAGE_SCRIPTS`, or Latin for the listed
    Latin-script languages).  Unknown languages raise: a typo must not silently score every
    utterance as a script collapse."""
    code = normalize_language_code(lang)
    if code in LANGUAGE_SCRIPTS:
        return LANGUAGE_SCRIPTS[code]
    if code in _LATIN_LANGUAGES:
        return frozenset({"Latin"})
    raise LatticeToolsError(f"no expected script known for language {lang!r}; pass expected scripts explicitly "
                            f"(e.g. --script {lang}=Latin)")


_LATIN_LANGUAGES = frozenset(
    "en de fr es it pt nl sv da no nb nn fi et lv lt pl cs sk sl hr bs ro hu tr az uz id ms tl vi sw yo "
    "ig ha zu xh af sq is ga cy eu ca gl mt lb so om rw ny sn mi haw".split())


@dataclass(frozen=True)
class ScriptFidelity:
    """SFR of one hypothesis.

    ``expected`` / ``scripted`` are the numerator / denominator counts; ``sfr`` is None when the
    hypothesis has no scripted character.  ``dominant`` is the most frequent output script
    (ties broken in favour of an expected script, then alphabetically).
    """

    expected: int
    scripted: int
    counts: tuple[tuple[str, int], ...]
    dominant: str | None
    collapse: bool

    @property
    def sfr(self) -> float | None:
        return self.expected / self.scripted if self.scripted else None


def script_fidelity(hypothesis: str, lang: str | None = None, *,
                    scripts: Iterable[str] | None = None, threshold: float = 0.5) -> ScriptFidelity:
    """Script Fidelity Rate of ``hypothesis`` for target language ``lang`` (or explicit ``scripts``).

    Returns counts, SFR, dominant script and the collapse flag (``SFR < threshold`` and dominant
    script not expected).
    """
    exp = frozenset(scripts) if scripts is not None else expected_scripts(lang)
    counts = script_counts(hypothesis)
    n_exp = sum(v for k, v in counts.items() if k in exp)
    n_all = sum(counts.values())
    dominant = None
    if counts:
        dominant = min(counts, key=lambda k: (-counts[k], k not in exp, k))
    collapse = bool(n_all) and (n_exp / n_all) < threshold and dominant not in exp
    return ScriptFidelity(n_exp, n_all, tuple(sorted(counts.items())), dominant, collapse)


def dominant_script(text: str) -> str | None:
    counts = script_counts(text)
    return min(counts, key=lambda k: (-counts[k], k)) if counts else None
