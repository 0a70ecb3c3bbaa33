"""Reference occurrences of keyword terms as F4DE ``KWSEval`` finds them: LEXEME records linked per speaker
(:class:`ReferenceIndex`), F4DE's number printing and rounding, and its ``charsplit`` text filter."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import FormatError
from ..io.rttm import RttmRecord


def perl_num(x: float) -> str:
    """A number as Perl prints it (``%.15g``)."""
    if x != x:
        return "NaN"
    return format(x, ".15g")


def round4(x: float) -> float:
    """F4DE's rounding of times to 0.1 ms."""
    # Same double as float(sprintf("%.4f", x)): both round the exact binary value correctly.
    return round(x, 4)


def char_split(text: str, not_ascii: bool = False, delete_hyphens: bool = False) -> str:
    """F4DE's ``charsplit`` text prefilter: one token per character (``notASCII``: ASCII runs stay
    whole; ``deleteHyphens``: hyphens become spaces)."""
    out = " ".join(text)
    if not_ascii:
        for _ in range(2):
            out = re.sub(r"([\x01-\x7f])\s+([\x01-\x7f])", r"\1\2", out)
    if delete_hyphens:
        out = out.replace("-", " ")
    return " ".join(out.split())


@dataclass
class RefWord:
    """One reference word (a LEXEME, or one character of it with charsplit), linked to the speaker's next."""

    file: str
    chan: str
    bt: float
    et: float          # begin + duration, rounded to 0.1 ms (F4DE)
    raw_bt: str
    token: str
    stype: str
    spkr: str
    nxt: RefWord | None = None
    seg: object | None = None       # segment scoring: the speech segment the word lies in
    idx: int = -1                   # position in ReferenceIndex.words


class ReferenceIndex:
    """The LEXEME records of a reference, linked per speaker, with a lookup by first word.

    ``words`` holds every reference word (``RefWord.idx`` is its position); :meth:`occurrence_spans` gives a
    term's occurrences as arrays of first and last word positions, for the vectorised alignment."""

    def __init__(self, records: Iterable[RttmRecord], *, lowercase: bool = False, char_split_text: bool = False,
                 not_ascii: bool = False, delete_hyphens: bool = False):
        self.lowercase = lowercase
        self.by_spkr = by_spkr = {}
        self.lookup: dict[str, list[RefWord]] = {}
        self.words: list[RefWord] = []
        words = self.words
        lookup = self.lookup
        lower = lowercase
        for r in records:
            if r.type != "LEXEME":
                continue
            if not char_split_text:
                # One token per record (the common case, kept lean: it runs once per reference word).
                tok = RefWord(r.file, r.channel, r.tbeg, round(r.tbeg + r.dur, 4), r.raw_tbeg or perl_num(r.tbeg),
                              r.ortho, r.subtype, r.speaker, None, None, len(words))
                words.append(tok)
                key = (r.file, r.channel, r.speaker)
                spk = by_spkr.get(key)
                if spk is None:
                    spk = by_spkr[key] = []
                spk.append(tok)
                if r.subtype != "frag" and r.subtype != "fp":
                    token = r.ortho.lower() if lower else r.ortho
                    found = lookup.get(token)
                    if found is None:
                        lookup[token] = [tok]
                    else:
                        found.append(tok)
                continue
            text = char_split(r.ortho, not_ascii, delete_hyphens)
            tokens = re.split(r"\s", text)
            raw_bt = r.raw_tbeg or perl_num(r.tbeg)
            bt, dur = r.tbeg, r.dur
            n = len(tokens)
            for i, token in enumerate(tokens):
                if n > 1:
                    # F4DE spreads a split word's duration evenly, rounding to ms.
                    d_s = f"{r.dur / n:.3f}"
                    dur = float(d_s)
                    raw_bt = f"{r.tbeg + dur * i:.3f}"
                    bt = float(raw_bt)
                tok = RefWord(r.file, r.channel, bt, round4(bt + dur), raw_bt, token, r.subtype, r.speaker, None, None,
                              len(words))
                words.append(tok)
                by_spkr.setdefault((r.file, r.channel, r.speaker), []).append(tok)
                if r.subtype not in ("frag", "fp"):
                    lookup.setdefault(self.normalize(token), []).append(tok)
        for recs in by_spkr.values():
            ordered = sorted(recs, key=lambda t: t.bt)   # stable, like Perl's merge sort
            # F4DE links the i-th record *in file order* to the (i+1)-th *in time order*; on a
            # time-sorted RTTM that is simply "the speaker's next word".  Kept as is for identical results.
            for i in range(len(recs) - 1):
                recs[i].nxt = ordered[i + 1]
        # first word -> (find_threshold -> {next word, case-folded: first words it follows within the gap})
        self._followers: dict[tuple[str, float], dict[str, list[RefWord]]] = {}
        self._first_ids: dict[str, object] = {}

    def normalize(self, token: str) -> str:
        return token.lower() if self.lowercase else token

    def _words_of(self, text: str) -> list[str]:
        words = self.normalize(text.strip()).split()
        if not words:
            raise FormatError(f"empty term {text!r}")
        return words

    def _followed(self, first: str, second: str, find_threshold: float) -> list[RefWord]:
        """The first words ``first`` (in lookup order) whose next word is ``second`` (case-folded) within
        the gap; each first word's successor is looked at once per threshold, whatever the number of terms."""
        table = self._followers.get((first, find_threshold))
        if table is None:
            table = self._followers[(first, find_threshold)] = {}
            for tok in self.lookup.get(first, ()):
                nxt = tok.nxt
                if nxt is not None and round4(nxt.bt - tok.et) <= find_threshold:
                    table.setdefault(nxt.token.casefold(), []).append(tok)
        return table.get(second, [])

    def find_occurrences(self, text: str, find_threshold: float = 0.5) -> list[list[RefWord]]:
        words = self._words_of(text)
        if len(words) == 1:
            return [[t] for t in self.lookup.get(words[0], ())]
        out = []
        folded = [w.casefold() for w in words]
        for first in self._followed(words[0], folded[1], find_threshold):
            occ = [first, first.nxt]
            hop = first.nxt
            ok = True
            for w in folded[2:]:
                nxt = hop.nxt
                if nxt is not None and round4(nxt.bt - hop.et) <= find_threshold and nxt.token.casefold() == w:
                    occ.append(nxt)
                    hop = nxt
                else:
                    ok = False
                    break
            if ok:
                out.append(occ)
        return out

    def occurrence_spans(self, text: str, find_threshold: float = 0.5):
        """The occurrences of :meth:`find_occurrences` as two integer arrays: the positions (in ``words``)
        of their first and of their last words."""
        import numpy as np

        words = self._words_of(text)
        if len(words) == 1:
            ids = self._first_ids.get(words[0])
            if ids is None:
                lst = self.lookup.get(words[0], ())
                ids = self._first_ids[words[0]] = np.fromiter((t.idx for t in lst), np.int64, len(lst))
            return ids, ids
        occs = self.find_occurrences(text, find_threshold)
        return (np.fromiter((o[0].idx for o in occs), np.int64, len(occs)),
                np.fromiter((o[-1].idx for o in occs), np.int64, len(occs)))


__all__ = ["ReferenceIndex", "RefWord", "char_split", "perl_num", "round4"]
