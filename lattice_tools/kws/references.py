"""Reference occurrences of keyword terms as F4DE ``KWSEval`` finds them: LEXEME records linked per speaker
(:class:`ReferenceIndex`), F4DE's number printing and rounding, and its ``charsplit`` text filter."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from ..core.errors import FormatError
from ..io.keyword_search.rttm import RttmRecord, RttmTable


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


def _word_columns(records, char_split_text: bool, not_ascii: bool, delete_hyphens: bool) -> tuple[list, ...]:
    """(file, chan, bt, et, raw_bt, token, stype, spkr) of every LEXEME word (or character with charsplit), in
    file order; et is the end rounded to 0.1 ms (F4DE)."""
    if isinstance(records, RttmTable) and not char_split_text:
        t = records
        keep = None if all(typ == "LEXEME" for typ in t.type) else [i for i, typ in enumerate(t.type)
                                                                     if typ == "LEXEME"]

        def pick(col: list) -> list:
            return col if keep is None else [col[i] for i in keep]

        tbeg, durs, raw = pick(t.tbeg), pick(t.dur), pick(t.raw_tbeg)
        return (pick(t.file), pick(t.channel), tbeg, [round(b + d, 4) for b, d in zip(tbeg, durs, strict=True)],
                [r or perl_num(b) for r, b in zip(raw, tbeg, strict=True)], pick(t.ortho), pick(t.subtype),
                pick(t.speaker))
    cols: tuple[list, ...] = ([], [], [], [], [], [], [], [])
    file, chan, bt_c, et_c, raw_c, tok_c, st_c, sp_c = cols
    for r in records:
        if r.type != "LEXEME":
            continue
        if char_split_text:
            tokens = re.split(r"\s", char_split(r.ortho, not_ascii, delete_hyphens))
        else:
            tokens = [r.ortho]
        raw_bt = r.raw_tbeg or perl_num(r.tbeg)
        bt, dur = r.tbeg, r.dur
        n = len(tokens)
        for i, token in enumerate(tokens):
            if n > 1:
                # F4DE spreads a split word's duration evenly, rounding to ms.
                dur = float(f"{r.dur / n:.3f}")
                raw_bt = f"{r.tbeg + dur * i:.3f}"
                bt = float(raw_bt)
            file.append(r.file)
            chan.append(r.channel)
            bt_c.append(bt)
            et_c.append(round4(bt + dur))
            raw_c.append(raw_bt)
            tok_c.append(token)
            st_c.append(r.subtype)
            sp_c.append(r.speaker)
    return cols


def f4de_kwtext(text: str) -> str:
    """A ``<kwtext>`` as F4DE reads it: F4DE takes the text from ``xmllint``'s re-serialisation of the KWlist
    and does not decode entities, so ``&``, ``<``, ``>`` (and a carriage return) stay escaped as xmllint
    writes them: ``a &amp; b`` is the three words ``a``, ``&amp;``, ``b``."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def perl_lc(text: str) -> str:
    """Perl's ``lc`` (what F4DE lower-cases with): Unicode's lowercase mapping without its one
    context-dependent rule, so a capital sigma always becomes σ (Python's ``str.lower`` makes a
    word-final one ς)."""
    return text.replace("\u03a3", "\u03c3").lower()


class ReferenceIndex:
    """The LEXEME words of a reference as columns (``file``, ``chan``, ``bt``, ``et``, ``raw_bt``, ``token``,
    ``stype``, ``spkr``; word ``i`` is position ``i``), each linked to its speaker's next word (``nxt``), with a
    lookup by first word.  :meth:`occurrence_spans` gives a term's occurrences as arrays of word positions;
    :class:`RefWord` objects (``words``, ``by_spkr``, :meth:`find_occurrences`) are made only when asked for."""

    def __init__(self, records: Iterable[RttmRecord], *, lowercase: bool = False, char_split_text: bool = False,
                 not_ascii: bool = False, delete_hyphens: bool = False, unicode_lowercase: bool = False):
        self.lowercase = lowercase
        # F4DE lower-cases with Perl's lc; Python's lower() differs on a word-final capital sigma
        self._lower = str.lower if unicode_lowercase else perl_lc
        (self.file, self.chan, self.bt, self.et, self.raw_bt, self.token, self.stype,
         self.spkr) = _word_columns(records, char_split_text, not_ascii, delete_hyphens)
        speakers: dict[tuple[str, str, str], list[int]] = {}
        for i, key in enumerate(zip(self.file, self.chan, self.spkr, strict=True)):
            ids = speakers.get(key)
            if ids is None:
                speakers[key] = [i]
            else:
                ids.append(i)
        self.speakers = speakers
        nxt = [-1] * len(self.bt)
        bt = self.bt
        for ids in speakers.values():
            ordered = sorted(ids, key=bt.__getitem__)   # stable, like Perl's merge sort
            # F4DE links the i-th record *in file order* to the (i+1)-th *in time order*; on a
            # time-sorted RTTM that is simply "the speaker's next word".  Kept as is for identical results.
            for a, b in zip(ids, ordered[1:], strict=False):
                nxt[a] = b
        self.nxt = nxt
        self.lookup: dict[str, list[int]] = {}
        lookup = self.lookup
        for i, (token, stype) in enumerate(zip(self.token, self.stype, strict=True)):
            if stype != "frag" and stype != "fp":
                word = self._lower(token) if lowercase else token
                ids = lookup.get(word)
                if ids is None:
                    lookup[word] = [i]
                else:
                    ids.append(i)
        # first word -> {next word, case-folded: the first words it follows}
        self._followers: dict[str, dict[str, list[int]]] = {}

    def normalize(self, token: str) -> str:
        return self._lower(token) if self.lowercase else token

    def word(self, i: int) -> RefWord:
        """Word ``i`` as a :class:`RefWord` (not linked)."""
        return RefWord(self.file[i], self.chan[i], self.bt[i], self.et[i], self.raw_bt[i], self.token[i],
                       self.stype[i], self.spkr[i], None, None, i)

    @cached_property
    def words(self) -> list[RefWord]:
        """Every word as a linked :class:`RefWord` (``words[i].nxt`` is the speaker's next word)."""
        words = [self.word(i) for i in range(len(self.bt))]
        for w, j in zip(words, self.nxt, strict=True):
            if j >= 0:
                w.nxt = words[j]
        return words

    @cached_property
    def by_spkr(self) -> dict[tuple[str, str, str], list[RefWord]]:
        """Each speaker's words (file, channel, speaker), in file order."""
        words = self.words
        return {key: [words[i] for i in ids] for key, ids in self.speakers.items()}

    def _words_of(self, text: str) -> list[str]:
        words = self.normalize(text.strip()).split()
        if not words:
            raise FormatError(f"empty term {text!r}")
        return words

    def _followed(self, first: str, second: str, find_threshold: float) -> list[int]:
        """The first words ``first`` (in lookup order) whose next word is ``second`` (case-folded) within
        the gap.  Each first word's successor is looked at once, whatever the number of terms starting with
        it; the gap is checked only for the successors that match."""
        table = self._followers.get(first)
        if table is None:
            table = self._followers[first] = {}
            nxt, folded = self.nxt, self._folded
            for i in self.lookup.get(first, ()):
                j = nxt[i]
                if j >= 0:
                    table.setdefault(folded[j], []).append(i)
        nxt, bt, et = self.nxt, self.bt, self.et
        return [i for i in table.get(second, ()) if round4(bt[nxt[i]] - et[i]) <= find_threshold]

    @cached_property
    def _folded(self) -> list[str]:
        return [t.casefold() for t in self.token]

    def _occurrence_ids(self, words: list[str], find_threshold: float) -> list[list[int]]:
        if len(words) == 1:
            return [[i] for i in self.lookup.get(words[0], ())]
        nxt, bt, et, token = self.nxt, self.bt, self.et, self._folded
        folded = [w.casefold() for w in words]
        out = []
        for first in self._followed(words[0], folded[1], find_threshold):
            hop = nxt[first]
            occ = [first, hop]
            for w in folded[2:]:
                j = nxt[hop]
                if j >= 0 and round4(bt[j] - et[hop]) <= find_threshold and token[j] == w:
                    occ.append(j)
                    hop = j
                else:
                    break
            else:
                out.append(occ)
        return out

    def find_occurrences(self, text: str, find_threshold: float = 0.5) -> list[list[RefWord]]:
        """The reference occurrences of ``text``: lists of linked :class:`RefWord` (see :mod:`.score`)."""
        words = self.words
        return [[words[i] for i in occ] for occ in self._occurrence_ids(self._words_of(text), find_threshold)]

    def occurrence_spans(self, text: str, find_threshold: float = 0.5):
        """The occurrences of :meth:`find_occurrences` as two integer arrays: the positions of their first
        and of their last words."""
        import numpy as np

        terms = self._words_of(text)
        if len(terms) == 1:
            ids = np.asarray(self.lookup.get(terms[0], ()), dtype=np.int64)
            return ids, ids
        occs = self._occurrence_ids(terms, find_threshold)
        return (np.asarray([o[0] for o in occs], dtype=np.int64), np.asarray([o[-1] for o in occs], dtype=np.int64))


__all__ = ["ReferenceIndex", "RefWord", "char_split", "perl_lc", "perl_num", "round4", "f4de_kwtext"]
