"""Word networks: the one type both sides of a scoring alignment are made of.

A :class:`WordNetwork` is an acyclic graph of words, exactly what sclite builds from a reference
transcript with alternations (``{ a b / c / @ }``) and optional words (``(uh)``), or from a CTM with
``<ALT_BEGIN>`` blocks.  The oracle scorer uses the same type for a reference aligned against a
whole lattice, so the representation is plain parallel numpy arrays.

Conventions (they matter for sclite's tie rules, see :mod:`lattice_tools.scoring.align`):

- states are ``0 .. num_states-1``, topologically numbered (``src < dst`` for every arc);
  state 0 is the only start state and ``num_states-1`` the only final state;
- arcs are stored in *text order* (the order their words appear in the transcript or CTM).  The
  in-arcs of a state, taken in arc order, are therefore the alternatives in the order they were
  listed -- sclite breaks exact cost ties in favour of the first one;
- ``words[i]`` is the word of arc ``i`` (after case folding, tag and ``*`` stripping as sclite
  does) or ``None`` for the null word ``@``;
- ``optional[i]``: the word was written in parentheses, ``(uh)``; ``words[i]`` is the text inside.
  Whether it is optionally deletable is a scoring option (sclite ``-D``), not a network property;
- ``fragment[i]``: the text starts or ends with ``-`` (``pla-``, ``-ing``); used by ``-F``;
- ``start``, ``duration``, ``confidence``: per-arc floats (NaN when unknown), filled from CTM words.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import FormatError
from ..io.transcripts.ctm import CtmAltBlock
from ..io.transcripts.stm import check_alternation_depth

IGNORE_TAGS = ("IGNORE_TIME_SEGMENT_IN_SCORING", "IGNORETIMESEGMENTINSCORING")
NULL_WORD = "@"

_TAG_SPLIT = re.compile(r"(?<!\\);")

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
CASE_LANGUAGES = ("ascii", "unicode", "turkish", "babel_turkish", "vietnamese", "babel_vietnamese", "ukrainian")


def lower_case(text: str, language: str | None = None) -> str:
    """Case folding as sclite does it.  ``None``/``"ascii"`` (sclite's default, also with
    ``-e utf-8``): only A-Z are folded; ``"turkish"`` (sclite ``-e utf-8 babel_turkish``): dotted and
    dotless i kept apart (I->ı, İ->i), then Unicode; any other language in :data:`CASE_LANGUAGES`:
    Unicode lower case."""
    if language is None or language == "ascii":
        return text.translate(_ASCII_LOWER)
    if language in ("turkish", "babel_turkish"):
        return text.replace("I", "ı").replace("İ", "i").lower()
    if language not in CASE_LANGUAGES:
        raise ValueError(f"unknown case language {language!r}; expected one of {CASE_LANGUAGES}")
    return text.lower()


def upper_case(text: str, language: str | None = None) -> str:
    """Inverse of :func:`lower_case` (sclite upper-cases the words of errors in its reports)."""
    if language is None or language == "ascii":
        return text.translate(_ASCII_UPPER)
    if language in ("turkish", "babel_turkish"):
        return text.replace("i", "İ").replace("ı", "I").upper()
    return text.upper()


@dataclass(frozen=True, eq=False)
class WordNetwork:
    """An acyclic word network (see the module docstring for every field's meaning).

    Build it with :func:`parse_transcript`, :func:`linear_network` or :func:`from_ctm_items`.
    ``ignore`` is True for a reference segment marked ``IGNORE_TIME_SEGMENT_IN_SCORING``.
    """

    num_states: int
    src: np.ndarray
    dst: np.ndarray
    words: tuple
    optional: np.ndarray
    fragment: np.ndarray
    start: np.ndarray
    duration: np.ndarray
    confidence: np.ndarray
    ignore: bool = False
    _in_arcs: list[list[int]] | None = field(default=None, repr=False, compare=False)
    _linear: bool | None = field(default=None, repr=False, compare=False)

    @property
    def num_arcs(self) -> int:
        return len(self.words)

    @property
    def final(self) -> int:
        return self.num_states - 1

    def in_arcs(self) -> list[list[int]]:
        """For every state, its in-arcs in arc (text) order.  Cached."""
        lists = self._in_arcs
        if lists is None:
            lists = [[] for _ in range(self.num_states)]
            for i, d in enumerate(self.dst.tolist()):
                lists[d].append(i)
            object.__setattr__(self, "_in_arcs", lists)
        return lists

    def is_linear(self) -> bool:
        """True for a chain ``0 -> 1 -> ... -> n``.  Cached."""
        lin = self._linear
        if lin is None:
            m = self.num_arcs
            lin = self.num_states == m + 1 and bool(np.array_equal(self.src, np.arange(m))) and bool(
                np.array_equal(self.dst, np.arange(1, m + 1)))
            object.__setattr__(self, "_linear", lin)
        return lin

    def paths(self, limit: int = 100000) -> list[tuple]:
        """All word sequences (``@`` removed) from start to final; for tests on small networks."""
        out_arcs: list[list[int]] = [[] for _ in range(self.num_states)]
        for i, s in enumerate(self.src.tolist()):
            out_arcs[s].append(i)
        result: list[tuple] = []
        stack: list[tuple[int, tuple[str, ...]]] = [(0, ())]
        while stack:
            state, seq = stack.pop()
            if state == self.final:
                result.append(seq)
                if len(result) > limit:
                    raise ValueError("too many paths")
                continue
            for a in out_arcs[state]:
                w = self.words[a]
                stack.append((int(self.dst[a]), seq if w is None else seq + (w,)))
        return result

    def text(self) -> str:
        """The network written back as transcript text (alternations in braces)."""
        return _network_text(self)


class _Builder:
    """Mutable helper: states are created in any order and renumbered topologically at the end."""

    def __init__(self):
        self.num_states = 0
        self.src: list[int] = []
        self.dst: list[int] = []
        self.words: list = []
        self.optional: list[bool] = []
        self.fragment: list[bool] = []
        self.start: list[float] = []
        self.duration: list[float] = []
        self.confidence: list[float] = []

    def new_state(self) -> int:
        self.num_states += 1
        return self.num_states - 1

    def add(self, src: int, dst: int, word, optional=False, fragment=False, start=np.nan, duration=np.nan,
            confidence=np.nan):
        self.src.append(src)
        self.dst.append(dst)
        self.words.append(word)
        self.optional.append(optional)
        self.fragment.append(fragment)
        self.start.append(np.nan if start is None else start)
        self.duration.append(np.nan if duration is None else duration)
        self.confidence.append(np.nan if confidence is None else confidence)

    def finish(self, first: int, last: int, ignore: bool = False) -> WordNetwork:
        n = self.num_states
        src = np.asarray(self.src, dtype=np.int64)
        dst = np.asarray(self.dst, dtype=np.int64)
        if first == 0 and last == n - 1 and (len(src) == 0 or bool(np.all(src < dst))):
            # already topologically numbered (chains and CTM networks are built that way)
            return self._make(src.astype(np.int32), dst.astype(np.int32), n, ignore)
        # Kahn's algorithm; ties by creation order so that linear text stays 0,1,2,...
        indeg = np.zeros(n, dtype=np.int64)
        np.add.at(indeg, dst, 1)
        out_arcs: list[list[int]] = [[] for _ in range(n)]
        for i, s in enumerate(self.src):
            out_arcs[s].append(i)
        order = []
        import heapq
        heap = [first]
        if indeg[first] != 0:
            raise AssertionError("start state has in-arcs")
        while heap:
            s = heapq.heappop(heap)
            order.append(s)
            for a in out_arcs[s]:
                d = self.dst[a]
                indeg[d] -= 1
                if indeg[d] == 0:
                    heapq.heappush(heap, d)
        if len(order) != n or order[-1] != last:
            raise AssertionError("word network is not a connected DAG with one final state")
        new_id = np.empty(n, dtype=np.int64)
        new_id[np.asarray(order, dtype=np.int64)] = np.arange(n)
        return self._make(new_id[src].astype(np.int32) if len(src) else np.zeros(0, np.int32),
                          new_id[dst].astype(np.int32) if len(dst) else np.zeros(0, np.int32), n, ignore)

    def _make(self, src, dst, n, ignore):
        return WordNetwork(
            num_states=n,
            src=src,
            dst=dst,
            words=tuple(self.words),
            optional=np.asarray(self.optional, dtype=bool),
            fragment=np.asarray(self.fragment, dtype=bool),
            start=np.asarray(self.start, dtype=np.float64),
            duration=np.asarray(self.duration, dtype=np.float64),
            confidence=np.asarray(self.confidence, dtype=np.float64),
            ignore=ignore,
        )


@functools.lru_cache(maxsize=1 << 16)
def _clean_token(token: str, case_sensitive: bool, language: str | None = None) -> tuple:
    """sclite's treatment of one word token (``new_WORD_parseText``): tags after an unescaped ';'
    dropped, every backslash removed (``\\;`` is a literal ';', the Buckwalter ``\\*`` a literal
    '*'), then a trailing '*' dropped, case folded; returns (word or None, optional, fragment)."""
    text = _TAG_SPLIT.split(token, 1)[0] if ";" in token else token
    if "\\" in text:
        text = text.replace("\\", "")
    if len(text) > 1 and text.endswith("*"):
        text = text[:-1]
    if not case_sensitive:
        text = lower_case(text, language)
    if text == NULL_WORD:
        return None, False, False
    optional = len(text) >= 2 and text.startswith("(") and text.endswith(")")
    inner = text[1:-1] if optional else text
    fragment = len(inner) > 1 and (inner.startswith("-") or inner.endswith("-"))
    return inner, optional, fragment


def _tokenize(text: str, where: str | None) -> list:
    """Split transcript text into word tokens and alternation tokens (lists of alternative texts),
    as sclite's ``find_next_TEXT_token``: a token starting with ``{`` runs to its balancing ``}``
    (white space included); any other token is a word up to the next white space."""
    if "{" not in text and "}" not in text:
        return text.split()
    tokens: list = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c == "{":
            depth, j = 0, i
            while j < n:
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if depth != 0:
                hint = ""
                if i + 1 < n and not text[i + 1].isspace():
                    # e.g. Buckwalter's alef wasla: sclite would swallow the rest of the line
                    hint = (f"; a word starting with '{{' ({text[i:].split()[0]!r}) is an alternation to sclite: "
                            "write it otherwise")
                raise FormatError(f"expected '}}' closing the alternation in {text!r}{hint}", path=where)
            inner = text[i + 1:j]
            # split at top-level '/'
            alts, depth, last = [], 0, 0
            for k, ch in enumerate(inner):
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch == "/" and depth == 0:
                    alts.append(inner[last:k])
                    last = k + 1
            alts.append(inner[last:])
            # sclite drops empty alternatives ("{ / x }" is "{ x }")
            alts = [a for a in alts if a.strip()]
            if not alts:
                raise FormatError(f"expected at least one non-empty alternative in {{{inner}}}", path=where)
            tokens.append(alts)
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace():
                j += 1
            word = text[i:j]
            # sclite reads a token that does not start with '{' as a word, so '}' inside words (the
            # Buckwalter transliteration of Arabic writes hamza on ya as '}') is an ordinary
            # character; a '{' inside a word makes sclite parse a mangled alternation: refuse it.
            if "{" in word:
                raise FormatError(f"expected '{{' only at the start of an alternation, got the word {word!r} "
                                  "(sclite would mis-read it)", path=where)
            if word == "}":  # sclite's word '}', but surely an alternation's unbalanced end
                raise FormatError(f"expected '}}' to close an alternation in {text!r}", path=where)
            tokens.append(word)
            i = j
    return tokens


def _add_sequence(b: _Builder, text: str, u: int, v: int, case_sensitive: bool, where: str | None,
                  language: str | None = None) -> None:
    tokens = _tokenize(text, where)
    if not tokens:
        raise FormatError(f"expected words in alternative {text!r}", path=where)
    cur = u
    for k, tok in enumerate(tokens):
        nxt = v if k == len(tokens) - 1 else b.new_state()
        if isinstance(tok, list):
            for alt in tok:
                _add_sequence(b, alt, cur, nxt, case_sensitive, where, language)
        else:
            w, opt, frag = _clean_token(tok, case_sensitive, language)
            b.add(cur, nxt, w, opt, frag)
        cur = nxt


def parse_transcript(text: str, *, case_sensitive: bool = False, where: str | None = None,
                     language: str | None = None) -> WordNetwork:
    """Build the network of one STM/trn transcript, as sclite does.

    Syntax: words separated by white space; ``{ a b / c / @ }`` alternations (nested allowed, empty
    alternatives dropped as sclite does); ``@`` the null word; ``(word)`` optional; ``pla-``/``-ing``
    fragments; ``word;tag1;tag2`` tags are dropped (``\\;`` is a literal ``;``); a trailing ``*`` is
    dropped.  Case is folded to lower case (:func:`lower_case` with ``language``) unless
    ``case_sensitive``.  A text containing
    ``IGNORE_TIME_SEGMENT_IN_SCORING`` gives a network with ``ignore=True``.

    Args:
      text: the transcript (STM text field or trn text without the id).
      where: file:line for error messages.
    Returns:
      a :class:`WordNetwork` (an empty text gives a network with one state and no arcs).
    Raises:
      FormatError on unbalanced braces or alternations without any alternative.
    """
    check_alternation_depth(text, where)  # alternations are expanded recursively: bound the depth
    upper = text.upper()
    ignore = any(tag in upper for tag in IGNORE_TAGS)
    b = _Builder()
    first = b.new_state()
    if not _tokenize(text, where):
        return b.finish(first, first, ignore)
    last = b.new_state()
    _add_sequence(b, text, first, last, case_sensitive, where, language)
    return b.finish(first, last, ignore)


def linear_network(words: Iterable, *, starts: Sequence | None = None, durations: Sequence | None = None,
                   confidences: Sequence | None = None, case_sensitive: bool = True) -> WordNetwork:
    """A chain network of ``words`` (``None`` or ``'@'`` = null word).  Words are taken literally:
    no tag stripping; ``(x)`` is marked optional and ``x-`` a fragment like in transcripts."""
    b = _Builder()
    cur = b.new_state()
    first = cur
    words = list(words)
    for i, w in enumerate(words):
        nxt = b.new_state()
        if w is None or w == NULL_WORD:
            b.add(cur, nxt, None)
        else:
            if not case_sensitive:
                w = lower_case(w)
            opt = len(w) >= 2 and w.startswith("(") and w.endswith(")")
            inner = w[1:-1] if opt else w
            frag = len(inner) > 1 and (inner.startswith("-") or inner.endswith("-"))
            b.add(cur, nxt, inner, opt, frag,
                  None if starts is None else starts[i],
                  None if durations is None else durations[i],
                  None if confidences is None else confidences[i])
        cur = nxt
    return b.finish(first, cur)


def from_ctm_items(items: Iterable, *, case_sensitive: bool = False, language: str | None = None) -> WordNetwork:
    """The hypothesis network of a run of CTM items (``CtmWord`` and ``CtmAltBlock``), in order.

    Each ALT block becomes parallel alternatives between two states (an empty alternative is the
    null word ``@``), exactly as sclite's ``Network_create_from_WTOKE``; words keep their times and
    confidences.  Word text goes through the same tag/``*``/case treatment as transcripts.
    """
    b = _Builder()
    first = cur = b.new_state()
    # plain lists and local names: this loop runs once per CTM word (millions for N-best CTMs)
    src, dst, words, optional, fragment = b.src, b.dst, b.words, b.optional, b.fragment
    starts, durations, confidences = b.start, b.duration, b.confidence
    nan = np.nan
    n_states = 1

    def add_word(w, u, v):
        text, opt, frag = _clean_token(w.word, case_sensitive, language)
        src.append(u)
        dst.append(v)
        words.append(text)
        optional.append(opt)
        fragment.append(frag)
        starts.append(nan if w.start is None else w.start)
        durations.append(nan if w.duration is None else w.duration)
        confidences.append(nan if w.confidence is None else w.confidence)

    for item in items:
        if isinstance(item, CtmAltBlock):
            # number the states inside the block before the state after it (topological order)
            inner = 0
            for alt in item.alternatives:
                if len(alt) > 1:
                    inner += len(alt) - 1
            nxt_inner = n_states
            nxt = n_states + inner
            n_states = nxt + 1
            for alt in item.alternatives:
                if len(alt) == 0:
                    b.add(cur, nxt, None)
                    continue
                u = cur
                last = len(alt) - 1
                for k, w in enumerate(alt):
                    if k == last:
                        v = nxt
                    else:
                        v = nxt_inner
                        nxt_inner += 1
                    add_word(w, u, v)
                    u = v
        else:
            nxt = n_states
            n_states += 1
            add_word(item, cur, nxt)
        cur = nxt
    b.num_states = n_states
    return b.finish(first, cur)


def _network_text(net: WordNetwork) -> str:
    """Write a network as transcript text.  Exact for series-parallel networks (everything the
    builders produce); used for reports and debugging."""
    out_arcs: list[list[int]] = [[] for _ in range(net.num_states)]
    for i, s in enumerate(net.src.tolist()):
        out_arcs[s].append(i)

    def word_text(a):
        w = net.words[a]
        if w is None:
            return NULL_WORD
        return f"({w})" if net.optional[a] else w

    # Reachability-based postdominator walk: from a state, the next state every path passes.
    order = list(range(net.num_states))
    reach: list[set] = [set() for _ in order]
    for s in reversed(order):
        r = {s}
        for a in out_arcs[s]:
            r |= reach[int(net.dst[a])]
        reach[s] = r

    def join_of(s):
        common = None
        for a in out_arcs[s]:
            r = reach[int(net.dst[a])]
            common = set(r) if common is None else common & r
        return min(common) if common else None

    def seq(s, end):
        parts = []
        while s != end:
            arcs = out_arcs[s]
            if len(arcs) == 1:
                parts.append(word_text(arcs[0]))
                s = int(net.dst[arcs[0]])
                continue
            j = join_of(s)
            alts = []
            for a in arcs:
                d = int(net.dst[a])
                alts.append(" ".join(x for x in [word_text(a), seq(d, j)] if x))
            parts.append("{ " + " / ".join(alts) + " }")
            s = j
        return " ".join(parts)

    return seq(0, net.final)
