"""Symbol tables compatible with Kaldi / k2 ``words.txt`` (``symbol id`` per line, ``<eps>`` = 0)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from .errors import FormatError, SymbolError
from .files import atomic_write, read_text_lines

EPSILON = "<eps>"


class SymbolTable:
    """An immutable bidirectional map between words and integer ids; id 0 is always epsilon.

    Words are case-sensitive.  Ids need not be contiguous (Kaldi tables often are not).
    """

    __slots__ = ("_id2word", "_word2id")

    def __init__(self, pairs: Mapping[str, int] | Iterable[tuple[str, int]] | None = None):
        word2id: dict[str, int] = {EPSILON: 0}
        id2word: dict[int, str] = {0: EPSILON}
        items = pairs.items() if isinstance(pairs, Mapping) else (pairs or [])
        for word, idx in items:
            idx = int(idx)
            if idx == 0 and word != EPSILON:
                # Some tables name id 0 differently (e.g. "<blk>", "<epsilon>"): keep that name.
                del word2id[id2word[0]]
            elif word in word2id and word2id[word] != idx:
                raise SymbolError(f"symbol {word!r} has two ids: {word2id[word]} and {idx}")
            elif idx in id2word and id2word[idx] != word and idx != 0:
                raise SymbolError(f"id {idx} has two symbols: {id2word[idx]!r} and {word!r}")
            word2id[word] = idx
            id2word[idx] = word
        self._word2id = word2id
        self._id2word = id2word

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_words(cls, words: Iterable[str]) -> SymbolTable:
        """A table giving ids 1, 2, ... to ``words`` in first-seen order (epsilon stays 0)."""
        table: dict[str, int] = {}
        for w in words:
            if w != EPSILON and w not in table:
                table[w] = len(table) + 1
        return cls(table)

    @classmethod
    def read(cls, path: str) -> SymbolTable:
        """Read a ``words.txt``: one ``symbol id`` per line (whitespace separated)."""
        pairs = []
        for lineno, line in read_text_lines(str(path)):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2 or not parts[1].lstrip("-").isdigit():
                raise FormatError("expected 'symbol id' (two fields, integer id)", path=str(path), line=lineno)
            pairs.append((parts[0], int(parts[1])))
        return cls(pairs)

    def write(self, path: str) -> None:
        with atomic_write(path) as f:
            for idx in sorted(self._id2word):
                f.write(f"{self._id2word[idx]} {idx}\n")

    def with_words(self, words: Iterable[str]) -> SymbolTable:
        """A copy with any new ``words`` appended after the current largest id."""
        table = dict(self._word2id)
        nxt = max(self._id2word) + 1
        for w in words:
            if w not in table:
                table[w] = nxt
                nxt += 1
        return SymbolTable(table)

    # -- lookups ------------------------------------------------------------------------------
    def id(self, word: str) -> int:
        try:
            return self._word2id[word]
        except KeyError:
            raise SymbolError(f"word {word!r} is not in the symbol table") from None

    def word(self, idx: int) -> str:
        try:
            return self._id2word[int(idx)]
        except KeyError:
            raise SymbolError(f"id {idx} is not in the symbol table") from None

    def get_id(self, word: str, default: int | None = None) -> int | None:
        return self._word2id.get(word, default)

    def __contains__(self, item) -> bool:
        return item in self._id2word if isinstance(item, int) else item in self._word2id

    def __len__(self) -> int:
        return len(self._id2word)

    def __iter__(self):
        """Iterate ``(word, id)`` pairs in id order."""
        for idx in sorted(self._id2word):
            yield self._id2word[idx], idx

    def __eq__(self, other) -> bool:
        return isinstance(other, SymbolTable) and self._word2id == other._word2id

    def __hash__(self):
        return hash(frozenset(self._word2id.items()))

    def __repr__(self) -> str:
        return f"SymbolTable({len(self)} symbols)"

    @property
    def max_id(self) -> int:
        return max(self._id2word)

    @property
    def epsilon(self) -> str:
        return self._id2word[0]
