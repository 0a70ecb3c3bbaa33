"""Punctuation- and case-aware tokens as integers, for the batched alignment (:mod:`~lattice_tools.metrics.orthography_batch`).

A token is interned once per corpus by what the counts read of it (``kind``, ``value``,
``normalizations``); per token id the :class:`Vocabulary` keeps the value id, the lower-cased
value id, punctuation and capitalisation flags, the compound key id and the ids of the key's
proper suffixes.  A whitespace-separated word is lexed and run through the leading token-local
normalizers once per corpus (as in :func:`~lattice_tools.metrics.orthography_tokens.tokenize_for_counts`,
same validity condition) and stored as a slice of token ids, so tokenizing a text
(:func:`tokenize_ids`) is one dictionary look-up per word and one numpy gather per call (all
texts are split in one ``str.split``).  ``numbers`` is the one default normalizer that reads
neighbouring words; a text runs it (on Token objects) only when one of its tokens is not
*number-inert* (:func:`number_inert`).
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from ._columns import _Column
from .orthography_rules import classify_values, is_capitalised_value, proper_suffixes, value_key
from .orthography_tokens import (
    CURRENCY,
    NORMALIZERS,
    NOT_WORDWISE_CHARS,
    NOT_WORDWISE_OR_NUL,
    TOKEN_LOCAL_NORMALIZERS,
    Token,
    lex,
    may_start_number,
    normalize_numbers,
    tokenize,
    tokenize_for_counts,
)


def number_inert(t: Token) -> bool:
    """Whether ``t`` is *number-inert*: :func:`punctuation.normalize_numbers` only changes or
    consumes a word that may start a spelled-out number (and the words of a run that starts with
    one), a number with a comma, a currency or percent symbol (and the number after a currency
    symbol).  So a token list whose tokens are all inert is returned unchanged (a single inert
    token next to a non-inert one may still change: ``$ 20``)."""
    if t.kind == "word":
        return not may_start_number(t.value)
    if t.kind == "number":
        return "," not in t.value
    if t.kind == "symbol":
        return t.value != "%" and t.value not in CURRENCY
    return True


class Vocabulary:
    """Corpus-wide interning of tokens, values, compound keys and lexed words."""

    def __init__(self):
        self.token_id: dict[tuple, int] = {}
        self.tokens: list[Token] = []           # token id -> a Token with that kind/value/normalizations
        self.value_id: dict[str, int] = {}
        self.lower_id: dict[str, int] = {}
        self.key_id: dict[str, int] = {}          # compound keys and their proper suffixes
        self.t_value = _Column(np.int64)
        self.t_lower = _Column(np.int64)
        self.t_punct = _Column(bool)
        self.t_cap = _Column(bool)
        self.t_key = _Column(np.int64)            # -1: not a word/number (no compound)
        self.t_norm = _Column(bool)               # has normalizations
        self.t_suffix_start = _Column(np.int64)   # slice of suffix_ids: ids of the key's proper suffixes
        self.t_suffix_len = _Column(np.int64)
        self.suffix_ids = _Column(np.int64)
        self.suffix_owner = _Column(np.int64)     # token id of each suffix_ids entry
        self.key_value: dict[int, int] = {}       # key id -> value id of its first token
        self.multi_keys: set[int] = set()         # key ids of tokens with different values
        self.words: dict[tuple, dict[str, int]] = {}   # local normalizers -> word -> word id
        self.w_tokens: list[tuple] = []                # word id -> its tokens (for normalize_numbers)
        self.w_start = _Column(np.int64)               # slice of w_tids
        self.w_len = _Column(np.int64)
        self.w_inert = _Column(bool)
        self.w_tids = _Column(np.int64)
        self.pair_class: dict[tuple[int, int], int] = {}
        self.class_tuples: dict[int, tuple] = {}      # class id << 32 | count -> ((name, count),)
        self.class_names: list[str] = []
        self.class_id: dict[str, int] = {}

    def intern(self, t: Token) -> int:
        k = (t.kind, t.value, t.normalizations)
        tid = self.token_id.get(k)
        if tid is not None:
            return tid
        tid = self.token_id[k] = len(self.tokens)
        value = t.value
        self.tokens.append(Token(t.kind, value, value, normalizations=t.normalizations))
        self.t_value.items.append(self.value_id.setdefault(value, len(self.value_id)))
        low = value.lower()
        self.t_lower.items.append(self.lower_id.setdefault(low, len(self.lower_id)))
        self.t_punct.items.append(t.kind == "punct")
        self.t_cap.items.append(is_capitalised_value(value))
        self.t_norm.items.append(bool(t.normalizations))
        key = value_key(value) if t.kind in ("word", "number") else ""
        kid = self.key_id
        self.t_suffix_start.items.append(len(self.suffix_ids.items))
        if key:   # _compounds ignores empty keys
            key_index = kid.setdefault(key, len(kid))
            self.t_key.items.append(key_index)
            if self.key_value.setdefault(key_index, self.t_value.items[-1]) != self.t_value.items[-1]:
                self.multi_keys.add(key_index)
            sufs = [kid.setdefault(s, len(kid)) for s in proper_suffixes(key)]
            self.suffix_ids.items.extend(sufs)
            self.suffix_owner.items.extend([tid] * len(sufs))
            self.t_suffix_len.items.append(len(sufs))
        else:
            self.t_key.items.append(-1)
            self.t_suffix_len.items.append(0)
        return tid

    def compound_filters(self):
        """``(live, multi)``: per token id (plus a False sentinel for the padding id -1) whether
        some proper suffix of its key is the key of a token; per key id (plus a sentinel for -1)
        whether tokens with that key have different values."""
        V, T = len(self.key_id), len(self.tokens)
        is_token_key = np.zeros(V, dtype=bool)
        is_token_key[list(self.key_value)] = True
        suffix_ids = self.suffix_ids.array()
        live = np.zeros(T + 1, dtype=bool)
        if len(suffix_ids):
            live[self.suffix_owner.array()[is_token_key[suffix_ids]]] = True
        multi = np.zeros(V + 1, dtype=bool)
        multi[list(self.multi_keys)] = True
        return live, multi

    def word_table(self, local: tuple) -> dict[str, int]:
        table = self.words.get(local)
        if table is None:
            table = self.words[local] = {_SEPARATOR: self._separator_id()}
        return table

    def _separator_id(self) -> int:
        # word id 0: the text separator of tokenize_ids, no tokens, number-inert
        if not self.w_tokens:
            self.w_tokens.append(())
            self.w_start.items.append(0)
            self.w_len.items.append(0)
            self.w_inert.items.append(True)
        return 0

    def word(self, local: tuple, table: dict, w: str) -> int:
        toks = lex(w)
        for name in local:
            toks = NORMALIZERS[name](toks)
        wid = table[w] = len(self.w_tokens)
        self.w_tokens.append(tuple(toks))
        self.w_start.items.append(len(self.w_tids.items))
        self.w_len.items.append(len(toks))
        self.w_inert.items.append(all(number_inert(t) for t in toks))
        self.w_tids.items.extend(self.intern(t) for t in toks)
        return wid

    def class_index(self, name: str) -> int:
        c = self.class_id.get(name)
        if c is None:
            c = self.class_id[name] = len(self.class_names)
            self.class_names.append(name)
        return c

    def classify(self, r: int, h: int) -> int:
        c = self.pair_class.get((r, h))
        if c is None:
            a, b = self.tokens[r], self.tokens[h]
            c = self.pair_class[(r, h)] = self.class_index(classify_values(a.kind, a.value, b.kind, b.value))
        return c


# Texts are split in one call, joined by a NUL word: word id 0 in every word table, with no
# tokens.  NUL is not whitespace to str.split, so each text splits as on its own and the NUL
# words are exactly the text boundaries; a text that contains NUL itself is lexed whole instead.
# (Splitting non-ASCII text is several times faster in one call than in 20,000.)
_SEPARATOR = "\x00"
_JOINER = " \x00 "


def tokenize_ids(texts: Sequence[str], normalizers: tuple, vocab: Vocabulary, token_cache: dict):
    """Token ids of every text after :func:`punctuation.tokenize`: ``(flat ids, offsets)`` with
    text ``k``'s ids at ``flat[offsets[k]:offsets[k+1]]``.  Equal, as (kind, value,
    normalizations) sequences, to ``tokenize(text, normalizers)`` (the prefix/suffix/start fields
    are not kept: no count reads them)."""
    k = 0
    while k < len(normalizers) and normalizers[k] in TOKEN_LOCAL_NORMALIZERS:
        k += 1
    local, rest = normalizers[:k], normalizers[k:]
    n = len(texts)
    if rest not in ((), ("numbers",)):
        # other orders: the word cache of tokenize_for_counts, then intern
        ids = [[vocab.intern(t) for t in tokenize_for_counts(x, normalizers, token_cache)] for x in texts]
        lens = np.fromiter(map(len, ids), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        return np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(offsets[-1])), offsets
    table = vocab.word_table(local)
    # texts the per-word path does not cover: annotation brackets or the regex's extra
    # whitespace (lex the whole text, as tokenize_for_counts does) and NUL (see _SEPARATOR)
    joined = _JOINER.join(texts)
    whole: set[int] = set()
    if joined.count(_SEPARATOR) != max(n - 1, 0) or any(c in joined for c in NOT_WORDWISE_CHARS):
        whole = {u for u, x in enumerate(texts) if NOT_WORDWISE_OR_NUL.search(x)}
        joined = _JOINER.join("" if u in whole else x for u, x in enumerate(texts))
    words = joined.split()
    found = list(map(table.get, words))
    if None in found:     # words seen for the first time: add them (in order), look up again
        for w in dict.fromkeys(words):
            if w not in table:
                vocab.word(local, table, w)
        found = list(map(table.get, words))
    wids = np.array(found, dtype=np.int64)
    w_len, w_start = vocab.w_len.array(), vocab.w_start.array()
    lens_w = w_len[wids]
    text_of_word = np.cumsum(wids == 0)        # the separators: word id 0
    lens = np.bincount(text_of_word, weights=lens_w, minlength=n).astype(np.int64)
    # gather the words' token-id slices (CSR): token p of word q is w_tids[w_start[q] + p]
    total = int(lens_w.sum())
    starts = np.repeat(w_start[wids] - (np.cumsum(lens_w) - lens_w), lens_w)
    flat = vocab.w_tids.array()[starts + np.arange(total)]
    redo = whole
    if rest:   # "numbers": texts with a word it may change run it on their tokens
        not_inert = np.bincount(text_of_word, weights=~vocab.w_inert.array()[wids], minlength=n)
        redo = whole.union(np.flatnonzero(not_inert).tolist())
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    if not redo:
        return flat, offsets
    pieces, new_lens = [], lens.copy()
    word_edges = np.concatenate(([-1], np.flatnonzero(wids == 0), [len(wids)]))
    prev = 0
    for u in sorted(redo):
        if u in whole:
            toks = tokenize(texts[u], normalizers)
        else:
            q = wids[word_edges[u] + 1:word_edges[u + 1]].tolist()
            toks = normalize_numbers(list(chain.from_iterable(vocab.w_tokens[x] for x in q)))
        pieces.append(flat[offsets[prev]:offsets[u]])
        pieces.append(np.array([vocab.intern(t) for t in toks], dtype=np.int64))
        new_lens[u] = len(toks)
        prev = u + 1
    pieces.append(flat[offsets[prev]:])
    np.cumsum(new_lens, out=offsets[1:])
    return np.concatenate(pieces), offsets
