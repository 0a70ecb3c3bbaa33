"""Corpus-wide tables of the batched metrics (:mod:`~lattice_tools.metrics.evaluate_batch`).

Words repeat (Zipf): each word is interned to an integer once per corpus, and its grapheme
clusters and Unicode-script counts are computed once and gathered for all texts at once.  Both
decompose over whitespace-separated words; :class:`UnitTables` says when, and falls back to the
full-text functions otherwise.  :func:`script_fidelities` is
:func:`~lattice_tools.metrics.script.script_fidelity` for a whole list of texts, from these tables.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Literal, cast

import numpy as np

from ._columns import _Column
from .script import INHERITED, ScriptFidelity, char_script
from .text import GRAPHEME, graphemes


def _attaches_across_space(first: str, last: str) -> bool:
    # A grapheme cluster crosses the whitespace before a word when its first character extends
    # the previous cluster (Extend/ZWJ/SpacingMark: GB9, GB9a), and the whitespace after it when
    # its last character is a Prepend (GB9b).  A plain space is the worst case: Control
    # whitespace (tab, newline) always breaks (GB4, GB5).
    return len(GRAPHEME.findall(" " + first)) == 1 or len(GRAPHEME.findall(last + " ")) == 1


class UnitTables:
    """Corpus-wide interning and per-word caches (words repeat: Zipf).

    * ``word_id``: word -> int for kaldialign;
    * ``chars(text, words)``: grapheme-cluster ids of :func:`graphemes(text) <graphemes>`.  Equal to
      the concatenation of the words' clusters when no cluster crosses whitespace (checked per
      word, cached); otherwise the full-text segmentation is used;
    * ``script_counts(text)``: ``script.script_counts`` as a dict.  It decomposes over words
      exactly: every whitespace character has no script, so an Inherited mark at a word start
      counts nowhere both ways.
    """

    def __init__(self):
        self.word_id: dict[str, int] = {}
        self.word_list: list[str] = []                # word id -> word
        # chars_many: per word id a slice of _wc_ids (its clusters), _wc_ok False when its
        # clusters may cross whitespace
        self._wc_start, self._wc_len, self._wc_ids = (_Column(np.int64) for _ in range(3))
        self._wc_ok = _Column(bool)
        self.grapheme_id: dict[str, int] = {}
        self._word_chars: dict[str, tuple[int, ...] | Literal[False]] = {}   # False: not decomposable
        self._word_scripts: dict[str, tuple[tuple[str, int], ...]] = {}
        # score_orthography_many's cache: its corpus vocabulary (orthography_batch) and word cache
        self.orthography_tokens: dict = {}
        # script_matrix: word -> id, per id a slice of (script column, count) entries; the NUL
        # word (id 0, no script) separates texts
        self.script_names: list[str] = []
        self.script_col: dict[str, int] = {}
        self._script_word_id: dict[str, int] = {}
        self._sw_start, self._sw_len, self._sw_col, self._sw_count = (_Column(np.int64) for _ in range(4))
        self._add_script_word("\x00")

    def word_ids_many(self, texts: Sequence[str]):
        """Word ids of every text's ``split()``: ``(flat ids, offsets)``, text ``k``'s at
        ``flat[offsets[k]:offsets[k+1]]``.  The texts are split at once, joined by a NUL word:
        unless a text contains NUL itself (then: one split per text) the NUL words are exactly
        the text boundaries."""
        n = len(texts)
        joined = " \x00 ".join(texts)
        if joined.count("\x00") == max(n - 1, 0):
            ids = np.array(self.words(joined.split()), dtype=np.int64)
            sep = ids == self.word_id.get("\x00", -1)
            lens = np.bincount(np.cumsum(sep)[~sep], minlength=n) if n else np.zeros(0, dtype=np.int64)
            flat = ids[~sep]
        else:
            splits = [x.split() for x in texts]
            flat = np.array(self.words(list(chain.from_iterable(splits))), dtype=np.int64)
            lens = np.array([len(x) for x in splits], dtype=np.int64)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        return flat, offsets

    def words(self, tokens: Sequence[str]) -> list[int]:
        out = list(map(self.word_id.get, tokens))
        if None in out:     # words seen for the first time: add them (in order), look up again
            ids, words = self.word_id, self.word_list
            for w in dict.fromkeys(tokens):
                if w not in ids:
                    ids[w] = len(words)
                    words.append(w)
            out = list(map(ids.get, tokens))
        return cast("list[int]", out)  # every token has its id now

    def chars_many(self, texts: Sequence[str], flat: np.ndarray, offsets: np.ndarray):
        """:meth:`chars` of every text, given the word ids of its ``split()`` (``flat``/``offsets``
        as from :meth:`word_ids_many`): ``(ids, starts, whole)`` with text ``k``'s cluster ids
        ``whole[k]`` if ``k in whole`` (a word whose clusters may cross whitespace: the whole text
        is segmented, as in :meth:`chars`) else ``ids[starts[k]:starts[k+1]]``.  One gather of the
        words' cached cluster ids for all texts."""
        words = self.word_list
        for wid in range(len(self._wc_len.items), len(words)):
            w = words[wid]
            c = self._word_chars.get(w)
            if c is None:
                c = self._word_clusters(w)
            c = () if c is False else c
            self._wc_start.items.append(len(self._wc_ids.items))
            self._wc_len.items.append(len(c))
            self._wc_ok.items.append(bool(c))          # words are non-empty: () means not decomposable
            self._wc_ids.items.extend(c)
        n = len(texts)
        lens_w = self._wc_len.array()[flat]
        total = int(lens_w.sum())
        pos = np.repeat(self._wc_start.array()[flat] - (np.cumsum(lens_w) - lens_w), lens_w) + np.arange(total)
        ids = self._wc_ids.array()[pos]
        text_of_word = np.repeat(np.arange(n), np.diff(offsets))
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(text_of_word, weights=lens_w, minlength=n).astype(np.int64), out=starts[1:])
        bad = np.bincount(text_of_word, weights=~self._wc_ok.array()[flat], minlength=n)
        whole = {k: list(self._cluster_ids(graphemes(texts[k]))) for k in np.flatnonzero(bad).tolist()}
        return ids.tolist(), starts.tolist(), whole

    def _cluster_ids(self, clusters) -> tuple[int, ...]:
        ids = self.grapheme_id
        return tuple(ids.setdefault(g, len(ids)) for g in clusters)

    def _word_clusters(self, word: str):
        c: tuple[int, ...] | Literal[False] = False if _attaches_across_space(word[0], word[-1]) else self._cluster_ids(GRAPHEME.findall(word))
        self._word_chars[word] = c
        return c

    def chars(self, text: str, tokens: Sequence[str]) -> list[int]:
        get = self._word_chars.get
        parts = list(map(get, tokens))
        if None in parts:
            parts = [get(w) or self._word_clusters(w) for w in tokens]
        if False in parts:   # a cluster crosses whitespace somewhere: segment the whole text
            return list(self._cluster_ids(graphemes(text)))
        return list(chain.from_iterable(cast("list[tuple[int, ...]]", parts)))  # neither None nor False now

    def script_matrix(self, texts: Sequence[str]):
        """``(counts, names)``: ``counts[k, c]`` = ``script_counts(texts[k])[names[c]]`` (0 when
        absent), from the per-word cache.  All texts are split at once, joined by a NUL word (no
        script, word id 0): unless a text contains NUL itself, the NUL words are exactly the text
        boundaries."""
        n = len(texts)
        ids = self._script_word_id
        joined = " \x00 ".join(texts)
        if joined.count("\x00") == max(n - 1, 0):
            words = joined.split()
            text_of = None
        else:
            splits = [x.split() for x in texts]
            words = list(chain.from_iterable(splits))
            text_of = np.repeat(np.arange(n), [len(x) for x in splits])
        found = list(map(ids.get, words))
        if None in found:     # words seen for the first time: add them (in order), look up again
            for w in dict.fromkeys(words):
                if w not in ids:
                    self._add_script_word(w)
            found = list(map(ids.get, words))
        wids = np.array(found, dtype=np.int64)
        if text_of is None:
            text_of = np.cumsum(wids == 0)
        ns = len(self.script_names)
        w_start, w_len = self._sw_start.array(), self._sw_len.array()
        lens = w_len[wids]
        total = int(lens.sum())
        pos = np.repeat(w_start[wids] - (np.cumsum(lens) - lens), lens) + np.arange(total)
        code = np.repeat(text_of, lens) * ns + self._sw_col.array()[pos]
        counts = np.bincount(code, weights=self._sw_count.array()[pos], minlength=n * ns)
        return counts.astype(np.int64).reshape(n, ns), list(self.script_names)

    def _add_script_word(self, word: str) -> int:
        wid = self._script_word_id[word] = len(self._sw_len.items)
        entries = _word_script_counts(word)
        self._sw_start.items.append(len(self._sw_col.items))
        self._sw_len.items.append(len(entries))
        for name, c in entries:
            col = self.script_col.get(name)
            if col is None:
                col = self.script_col[name] = len(self.script_names)
                self.script_names.append(name)
            self._sw_col.items.append(col)
            self._sw_count.items.append(c)
        return wid

    def script_counts(self, text: str) -> dict[str, int]:
        cache = self._word_scripts
        counts: dict[str, int] = {}
        for w in text.split():
            sc = cache.get(w)
            if sc is None:
                sc = cache[w] = _word_script_counts(w)
            for s, c in sc:
                counts[s] = counts.get(s, 0) + c
        return counts


def _word_script_counts(word: str) -> tuple[tuple[str, int], ...]:
    counts: dict[str, int] = {}
    prev = None
    for ch in word:
        s = char_script(ch)
        if s == INHERITED:
            s = prev
        if s is not None:
            counts[s] = counts.get(s, 0) + 1
        prev = s
    return tuple(counts.items())


def script_fidelities(tables: UnitTables, texts: Sequence[str], exps: Sequence[frozenset],
                       threshold: float) -> list:
    """``[script.script_fidelity(t, scripts=exp, threshold=threshold) for t, exp in zip(texts, exps)]``
    for all texts at once: counts as one matrix, the
    dominant script as an argmax over a key that encodes script.script_fidelity's order
    (count, then expected, then name), the collapse test with the same float division."""
    n = len(texts)
    counts, names = tables.script_matrix(texts)
    ns = len(names)
    out: list = [None] * n
    if not n:
        return out
    by_name = sorted(range(ns), key=names.__getitem__)
    name_rank = np.empty(ns, dtype=np.int64)
    name_rank[by_name] = np.arange(ns)
    n_all = counts.sum(axis=1)
    # sorted (script, count) items of each row: columns in name order, nonzero entries row-major
    ordered = counts[:, by_name]
    rows, cols = np.nonzero(ordered)
    vals = ordered[rows, cols]
    items: list = [()] * n
    memo: dict = {}
    starts = np.flatnonzero(np.diff(rows, prepend=-1))
    sizes = np.diff(np.append(starts, len(rows)))
    one = starts[sizes == 1]
    for r, c, v in zip(rows[one].tolist(), cols[one].tolist(), vals[one].tolist(), strict=False):
        key = (c, v)
        t = memo.get(key)
        if t is None:
            t = memo[key] = ((names[by_name[c]], v),)
        items[r] = t
    # two scripts (code-mixed text, the common case of the rest): shared tuples too
    two = starts[sizes == 2]
    if len(two) and ns < (1 << 12) and int(vals.max()) < (1 << 20):
        keys = ((cols[two] * (1 << 20) + vals[two]) * (1 << 12) + cols[two + 1]) * (1 << 20) + vals[two + 1]
        for r, key, c1, v1, c2, v2 in zip(rows[two].tolist(), keys.tolist(), cols[two].tolist(), vals[two].tolist(),
                                          cols[two + 1].tolist(), vals[two + 1].tolist(), strict=False):
            t = memo.get(key)
            if t is None:
                t = memo[key] = ((names[by_name[c1]], v1), (names[by_name[c2]], v2))
            items[r] = t
        rest = sizes > 2
    else:
        rest = sizes > 1
    for k0, size in zip(starts[rest].tolist(), sizes[rest].tolist(), strict=False):
        items[int(rows[k0])] = tuple((names[by_name[c]], v) for c, v in zip(cols[k0:k0 + size].tolist(),
                                                                            vals[k0:k0 + size].tolist(), strict=False))
    groups: dict[frozenset, list[int]] = {}
    for u, exp in enumerate(exps):
        groups.setdefault(exp, []).append(u)
    expected = np.zeros(n, dtype=np.int64)
    dominant: list = [None] * n
    collapse = np.zeros(n, dtype=bool)
    for exp, members in groups.items():
        idx = np.array(members, dtype=np.int64)
        in_exp = np.array([x in exp for x in names], dtype=bool)
        sub = counts[idx]
        expected[idx] = sub[:, in_exp].sum(axis=1)
        if not ns:
            continue
        # max count, then an expected script, then the first name (script.script_fidelity's min)
        rank_key = np.where(sub > 0, sub * (2 * ns) + in_exp * ns + (ns - 1 - name_rank), -1)
        dom = rank_key.argmax(axis=1)
        na = n_all[idx]
        ratio = expected[idx] / np.where(na > 0, na, 1)
        collapse[idx] = (na > 0) & (ratio < threshold) & ~in_exp[dom]
        for u, d, a in zip(idx.tolist(), dom.tolist(), na.tolist(), strict=False):
            if a:
                dominant[u] = names[d]
    new = object.__new__
    for u, (e, a, it, dm, cl) in enumerate(zip(expected.tolist(), n_all.tolist(), items, dominant,
                                               collapse.tolist(), strict=False)):
        f = new(ScriptFidelity)
        d = f.__dict__
        d["expected"] = e
        d["scripted"] = a
        d["counts"] = it
        d["dominant"] = dm
        d["collapse"] = cl
        out[u] = f
    return out
