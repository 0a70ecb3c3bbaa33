"""Text units and normalizers for the metrics (Lin, BharatVoice-Bench, section 1 and 4.1).

Two units are scored everywhere: *words* (whitespace-separated tokens) and *characters*, where a
character is a Unicode extended grapheme cluster (``\\X``).  Grapheme clusters keep an Indic
consonant together with its vowel sign (matra), virama and nukta, so ``कि`` is one unit, not two
code points: a wrong matra costs one character error, and so does a dropped one.  Whitespace is
not a unit of the character sequence (CER counts the characters of the words).

Normalizers are callables ``str -> str``:

* :class:`IndicNormalizer` -- indic-nlp-library's script normalizer for the language (canonical
  nukta/vowel-sign forms, ZW(N)J cleanup), then punctuation removal and whitespace collapsing.
  Mark characters (Mn/Mc/Me: matras, viramas, anusvara...) are **kept**.
* :class:`BasicTextNormalizer` -- a re-implementation of the documented behaviour of Whisper's
  ``BasicTextNormalizer`` (openai-whisper ``normalizers/basic.py``): lower-case, drop ``[..]``/
  ``<..>``/``(..)`` annotations, then NFKC and every Mark/Symbol/Punctuation character replaced by a
  space (``remove_diacritics=True``: NFKD, Mn dropped, other M/S/P -> space).  On Brahmi-family
  scripts this destroys vowel signs and viramas and splits words at them; it is provided to *measure*
  how much WER that hides (docs/metrics.md), not to score with.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache

from ..core.errors import LatticeToolsError, require

regex = require("regex", "metrics")  # grapheme clusters (\X) and Unicode properties

GRAPHEME = regex.compile(r"\X", regex.UNICODE)
_WS = re.compile(r"\s+")

Normalizer = Callable[[str], str]


def words(text: str) -> list[str]:
    """Whitespace tokenization (any Unicode whitespace)."""
    return text.split()


def graphemes(text: str) -> list[str]:
    """Extended grapheme clusters of ``text`` with whitespace removed.

    >>> graphemes("किताब है")
    ['कि', 'ता', 'ब', 'है']
    """
    return [g for g in GRAPHEME.findall(text) if not g.isspace()]


def units(text: str, unit: str) -> list[str]:
    """``unit='word'`` -> :func:`words`, ``unit='char'`` -> :func:`graphemes`."""
    if unit == "word":
        return text.split()
    if unit == "char":
        return graphemes(text)
    raise ValueError(f"unit must be 'word' or 'char', got {unit!r}")


# ----------------------------------------------------------------------------------------------
# Whisper's BasicTextNormalizer (documented behaviour, re-implemented; no openai-whisper dependency)

_ADDITIONAL_DIACRITICS = {
    "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "ß": "ss", "ẞ": "SS",
    "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "th", "ł": "l", "Ł": "L",
}
_BRACKETS = re.compile(r"[<\[][^>\]]*[>\]]")
_PARENS = re.compile(r"\(([^)]+?)\)")


def _remove_symbols(s: str) -> str:
    return "".join(" " if unicodedata.category(c)[0] in "MSP" else c for c in unicodedata.normalize("NFKC", s))


def _remove_symbols_and_diacritics(s: str) -> str:
    out = []
    for c in unicodedata.normalize("NFKD", s):
        cat = unicodedata.category(c)
        if c in _ADDITIONAL_DIACRITICS:
            out.append(_ADDITIONAL_DIACRITICS[c])
        elif cat == "Mn":
            continue
        elif cat[0] in "MSP":
            out.append(" ")
        else:
            out.append(c)
    return "".join(out)


class BasicTextNormalizer:
    """Whisper's ``BasicTextNormalizer(remove_diacritics=False, split_letters=False)`` behaviour.

    Caveat (the reason it is here): Unicode category M covers Indic vowel signs and viramas, so
    ``"किताब"`` becomes ``"क त ब"`` -- three "words" that no longer carry the vowels.
    """

    def __init__(self, remove_diacritics: bool = False, split_letters: bool = False):
        self.remove_diacritics = remove_diacritics
        self.split_letters = split_letters

    def __call__(self, s: str) -> str:
        s = s.lower()
        s = _BRACKETS.sub("", s)
        s = _PARENS.sub("", s)
        s = (_remove_symbols_and_diacritics if self.remove_diacritics else _remove_symbols)(s).lower()
        if self.split_letters:
            s = " ".join(GRAPHEME.findall(s))
        return _WS.sub(" ", s).strip()


# ----------------------------------------------------------------------------------------------
# Mark-preserving normalizers

_PUNCT_OR_SYMBOL = regex.compile(r"[\p{P}\p{S}]")


def _strip_punct_keep_marks(s: str) -> str:
    # Punctuation (P*) and symbols (S*) become spaces; marks (M*) and letters/digits stay.
    return _PUNCT_OR_SYMBOL.sub(" ", s)


class PlainNormalizer:
    """Lower-case, NFC, punctuation/symbols -> space, whitespace collapsed.  Keeps Mark characters."""

    def __init__(self, lowercase: bool = True, remove_punctuation: bool = True):
        self.lowercase = lowercase
        self.remove_punctuation = remove_punctuation

    def __call__(self, s: str) -> str:
        return _WS.sub(" ", self._character_steps(s)).strip()

    def _character_steps(self, s: str) -> str:
        # Every step before the whitespace collapse maps characters (or short runs of non-newline
        # characters) independently of their neighbours across a newline: see normalize_many.
        s = unicodedata.normalize("NFC", s)
        if self.lowercase:
            s = s.lower()
        if self.remove_punctuation:
            s = _strip_punct_keep_marks(s)
        return s


# Languages whose script indic-nlp-library 0.92's IndicNormalizerFactory normalizes (checked: ur
# needs urduhack, sd is mapped to Devanagari although usually written in Arabic -> both left out).
INDIC_NLP_LANGUAGES = frozenset({"hi", "mr", "ne", "sa", "bn", "as", "pa", "gu", "or", "ta", "te", "kn", "ml", "si"})


class IndicNormalizer:
    """indic-nlp-library normalization for ``lang`` that keeps Mark characters.

    Applies ``IndicNormalizerFactory().get_normalizer(lang)`` (canonical Unicode representation,
    nukta/chandrabindu/ZWJ handling of the library), then NFC, lower-casing (Latin words inside
    code-mixed text), punctuation/symbols (incl. danda) -> space, whitespace collapsed.

    Needs the optional package ``indic-nlp-library`` (``pip install 'lattice-tools[metrics]'``).
    Languages the library does not cover fall back to :class:`PlainNormalizer`.
    """

    def __init__(self, lang: str, remove_nuktas: bool = False):
        self.lang = lang
        self._plain = PlainNormalizer()
        self._indic = None
        code = normalize_language_code(lang)
        if code in INDIC_NLP_LANGUAGES:
            factory = require("indicnlp.normalize.indic_normalize", "metrics").IndicNormalizerFactory()
            self._indic = factory.get_normalizer(code, remove_nuktas=remove_nuktas)

    def __call__(self, s: str) -> str:
        return _WS.sub(" ", self._character_steps(s)).strip()

    def _character_steps(self, s: str) -> str:
        # indic-nlp-library's normalizers are str.replace calls and regexes of one or two
        # characters that never match a newline (checked for 0.92): safe for normalize_many.
        if self._indic is not None:
            s = self._indic.normalize(s)
        return self._plain._character_steps(s)


_LANG_ALIASES = {
    "hin": "hi", "hindi": "hi", "mar": "mr", "marathi": "mr", "nep": "ne", "nepali": "ne", "san": "sa",
    "ben": "bn", "bengali": "bn", "bangla": "bn", "asm": "as", "assamese": "as", "pan": "pa", "punjabi": "pa",
    "guj": "gu", "gujarati": "gu", "ori": "or", "ory": "or", "odia": "or", "oriya": "or", "tam": "ta",
    "tamil": "ta", "tel": "te", "telugu": "te", "kan": "kn", "kannada": "kn", "mal": "ml", "malayalam": "ml",
    "urd": "ur", "urdu": "ur", "eng": "en", "english": "en", "sin": "si", "sinhala": "si",
    "zho": "zh", "chi": "zh", "cmn": "zh", "chinese": "zh", "mandarin": "zh", "jpn": "ja", "japanese": "ja",
    "kor": "ko", "korean": "ko", "tha": "th", "thai": "th", "rus": "ru", "russian": "ru", "ara": "ar",
    "arabic": "ar", "deu": "de", "ger": "de", "german": "de", "fra": "fr", "fre": "fr", "french": "fr",
    "spa": "es", "spanish": "es",
}


@cache
def normalize_language_code(lang: str | None) -> str:
    """``'hi-IN'``, ``'hin'``, ``'Hindi'`` -> ``'hi'`` (BCP-47 primary subtag, ISO 639-3 or name)."""
    if not lang:
        raise LatticeToolsError("empty language code")
    primary = lang.replace("_", "-").split("-")[0].lower()
    return _LANG_ALIASES.get(primary, primary)


class WhitespaceNormalizer:
    """Whitespace collapsed and stripped, nothing else (``normalizer='none'``)."""

    def __call__(self, s: str) -> str:
        return _WS.sub(" ", s).strip()

    def _character_steps(self, s: str) -> str:
        return s


_BATCHABLE = (WhitespaceNormalizer, PlainNormalizer, IndicNormalizer)


def normalize_many(normalizer: Normalizer, texts: list[str]) -> list[str]:
    """``[normalizer(t) for t in texts]``, in one pass over the joined texts when that is exact.

    For the built-in mark-preserving normalizers (exact types :class:`WhitespaceNormalizer`,
    :class:`PlainNormalizer`, :class:`IndicNormalizer`) every step before the whitespace collapse
    is local to characters that are not newlines: NFC never composes across a newline (a starter
    that composes with nothing), ``str.lower``'s final-sigma context stops at it (neither cased nor
    case-ignorable), and the replacements/regexes never match it.  So the texts are joined with
    newlines, transformed once and split again; a text that itself contains a newline (or any other
    normalizer) takes the per-text path.  Same output, ~10x fewer Python calls.
    """
    joined = "\n".join(texts)
    if type(normalizer) not in _BATCHABLE or not isinstance(normalizer, _BATCHABLE) or len(texts) < 2 or joined.count("\n") != len(texts) - 1:
        return [normalizer(t) for t in texts]
    pieces = normalizer._character_steps(joined).split("\n")
    if len(pieces) != len(texts):   # cannot happen for the types above; stay exact regardless
        return [normalizer(t) for t in texts]
    # " ".join(p.split()) == _WS.sub(" ", p).strip(): re's \s and str.split use the same
    # whitespace predicate (Py_UNICODE_ISSPACE)
    return [" ".join(p.split()) for p in pieces]


def make_normalizer(name: str, lang: str | None = None) -> Normalizer:
    """A normalizer by name: ``none``, ``plain``, ``indic`` (needs ``lang``), ``whisper-basic``."""
    if name == "none":
        return WhitespaceNormalizer()
    if name == "plain":
        return PlainNormalizer()
    if name == "indic":
        return IndicNormalizer(lang or "en")
    if name in ("whisper-basic", "whisper"):
        return BasicTextNormalizer()
    raise LatticeToolsError(f"unknown normalizer {name!r} (expected none, plain, indic or whisper-basic)")
