"""Batched fast path of :func:`~lattice_tools.metrics.evaluate.evaluate_system`.

Computes exactly what :func:`~lattice_tools.metrics.evaluate.evaluate_utterance` computes for
every utterance (the tests compare both on random inputs), with the per-utterance Python work cut
down to what cannot be batched:

* texts are normalized per normalizer in one pass (:func:`~lattice_tools.metrics.text.normalize_many`);
* the texts of a chunk are split in one call (joined by a NUL word, see
  :meth:`UnitTables.word_ids_many`) and their words interned to integers once per corpus;
* word alignments of the whole chunk run as one numpy DP and one vectorized backtrace with
  kaldialign's tie-breaking (:mod:`~lattice_tools.metrics.align_batch`): counts and the
  reference position of each hypothesis word (switch points);
* grapheme clusters and Unicode-script counts are cached per *word* (both decompose over
  whitespace-separated words; :class:`UnitTables` says when, and falls back to the full-text
  functions otherwise) and gathered for all texts at once; kaldialign's C++ ``edit_distance`` is
  called on the integer cluster lists (its DP only compares symbols for equality, so any
  injective renumbering gives the same counts);
* script fidelity, CMI and switch points are array operations over the chunk (tags of a
  :class:`ScriptTagger` are a function of the word, kept per word id);
* NE-WER skips the approximate-substring DP when an entity occurs exactly (distance 0, counts all
  correct) or cannot match fuzzily (tolerance 0: counts all deleted);
* the seed-004 orthographic alignment runs batched
  (:mod:`~lattice_tools.metrics.orthography_batch`, behind
  :func:`~lattice_tools.metrics.punctuation.score_orthography_many`);
* result objects are built without the frozen dataclasses' per-field ``__setattr__``, and the
  cyclic garbage collector is paused while they are built (:func:`evaluate_many`).

Any :class:`~lattice_tools.errors.LatticeToolsError` inside a chunk re-runs that chunk through
the reference implementation, so errors name the same utterance with the same message.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import _kaldialign
import numpy as np

from .._gc import gc_paused
from ..errors import LatticeToolsError
from ..scoring.counts import ErrorCounts
from ._columns import _Column, shared_counts
from .align_batch import align_many
from .codeswitch import (
    ScriptTagger,
    SwitchPointCounts,
    code_mixing_index,
    language_pair,
    match_with_tolerance,
    switch_points,
)
from .entities import EntityCounts, _contains, entity_units, fuzzy_tolerance, score_entity
from .io import Annotation
from .levenshtein import make_counts
from .script import INHERITED, SPACELESS_LANGUAGES, ScriptFidelity, char_script, expected_scripts
from .text import _GRAPHEME, graphemes, normalize_language_code, normalize_many

EPS_ID = -1          # kaldialign's epsilon in integer alignments (interned ids are >= 0)
CHUNK = 2048         # utterances per batch: bounds the per-chunk lists and the work of a re-run


def _attaches_across_space(first: str, last: str) -> bool:
    # A grapheme cluster crosses the whitespace before a word when its first character extends
    # the previous cluster (Extend/ZWJ/SpacingMark: GB9, GB9a), and the whitespace after it when
    # its last character is a Prepend (GB9b).  A plain space is the worst case: Control
    # whitespace (tab, newline) always breaks (GB4, GB5).
    return len(_GRAPHEME.findall(" " + first)) == 1 or len(_GRAPHEME.findall(last + " ")) == 1


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
        self._word_chars: dict[str, tuple[int, ...] | bool] = {}   # False: not decomposable
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
        return out

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
        c = False if _attaches_across_space(word[0], word[-1]) else self._cluster_ids(_GRAPHEME.findall(word))
        self._word_chars[word] = c
        return c

    def chars(self, text: str, tokens: Sequence[str]) -> list[int]:
        get = self._word_chars.get
        parts = list(map(get, tokens))
        if None in parts:
            parts = [get(w) or self._word_clusters(w) for w in tokens]
        if False in parts:   # a cluster crosses whitespace somewhere: segment the whole text
            return list(self._cluster_ids(graphemes(text)))
        return list(chain.from_iterable(parts))

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
        wids = list(map(ids.get, words))
        if None in wids:     # words seen for the first time: add them (in order), look up again
            for w in dict.fromkeys(words):
                if w not in ids:
                    self._add_script_word(w)
            wids = list(map(ids.get, words))
        wids = np.array(wids, dtype=np.int64)
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


def _script_fidelities(tables: UnitTables, texts: Sequence[str], exps: Sequence[frozenset],
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
    for exp, idx in groups.items():
        idx = np.array(idx, dtype=np.int64)
        in_exp = np.array([x in exp for x in names], dtype=bool)
        sub = counts[idx]
        expected[idx] = sub[:, in_exp].sum(axis=1)
        if not ns:
            continue
        # max count, then an expected script, then the first name (script.script_fidelity's min)
        key = np.where(sub > 0, sub * (2 * ns) + in_exp * ns + (ns - 1 - name_rank), -1)
        dom = key.argmax(axis=1)
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


_UNTAGGED = object()


def _switches(tags: np.ndarray, utt: np.ndarray, off: np.ndarray, n: int):
    """codeswitch.switch_points of every utterance at once: ``tags`` per flat token (-1 None, -2
    not scored), ``utt`` its utterance, ``off`` the utterances' first token.  Returns ``(points,
    starts)``: utterance ``u``'s switch points are ``points[starts[u]:starts[u+1]]``."""
    p = np.flatnonzero(tags >= 0)          # language tokens, in order
    prev, cur = p[:-1], p[1:]
    sw = cur[(utt[prev] == utt[cur]) & (tags[prev] != tags[cur])]
    su = utt[sw]
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(su, minlength=n), out=starts[1:])
    return (sw - off[su]).tolist(), starts.tolist()


def _code_switching(cs_of: Sequence, tables: UnitTables, cache: dict, config, r_flat, r_off, h_flat, h_off):
    """CMI and reference/hypothesis switch points of every utterance whose code-switch pair has a
    :class:`ScriptTagger` (tags are a function of the word: kept per word id), from the flat word
    ids of the chunk: ``(cmi, ref_points, hyp_points)`` lists, None where not computed here.

    ``code_mixing_index``'s float expression is evaluated elementwise in float64 (same IEEE
    operations on the same integers: same values)."""
    n = len(cs_of)
    cmi: list = [None] * n
    ref_points: list = [None] * n
    hyp_points: list = [None] * n
    groups: dict[str, list[int]] = {}
    for u, cs in enumerate(cs_of):
        if cs:
            groups.setdefault(cs, []).append(u)
    if not groups:
        return cmi, ref_points, hyp_points
    words = tables.word_list
    r_utt = np.repeat(np.arange(n), np.diff(r_off))
    h_utt = np.repeat(np.arange(n), np.diff(h_off))
    for cs, us in groups.items():
        tk = ("tagger", cs)
        if tk not in cache:
            cache[tk] = config.tagger_factory(language_pair(cs))
            cache[("tags", cs)] = []
        tagger, table = cache[tk], cache[("tags", cs)]
        if type(tagger) is not ScriptTagger:
            continue
        if len(table) < len(words):
            table.extend([_UNTAGGED] * (len(words) - len(table)))
        in_group = np.zeros(n, dtype=bool)
        in_group[us] = True
        r_sel, h_sel = in_group[r_utt], in_group[h_utt]
        wids = np.unique(np.concatenate([r_flat[r_sel], h_flat[h_sel]]))
        codes: dict = {}
        tag_code = np.full(len(words) + 1, -1, dtype=np.int64)
        wl = wids.tolist()
        for w in wl:
            if table[w] is _UNTAGGED:
                table[w] = tagger(words[w])
        tag_code[wids] = [-1 if table[w] is None else codes.setdefault(table[w], len(codes)) for w in wl]
        K = max(len(codes), 1)
        rt = np.where(r_sel, tag_code[r_flat], -2)
        ht = np.where(h_sel, tag_code[h_flat], -2)
        lang = rt >= 0
        n_lang = np.bincount(r_utt[lang], minlength=n)
        top = np.bincount(r_utt[lang] * K + rt[lang], minlength=n * K).reshape(n, K).max(axis=1)
        values = np.where(n_lang > 0, 100.0 * (1.0 - top / np.where(n_lang > 0, n_lang, 1)), 0.0).tolist()
        rp, rs = _switches(rt, r_utt, r_off, n)
        hp, hs = _switches(ht, h_utt, h_off, n)
        for u in us:
            cmi[u] = values[u]
            ref_points[u] = rp[rs[u]:rs[u + 1]]
            hyp_points[u] = hp[hs[u]:hs[u + 1]]
    return cmi, ref_points, hyp_points


def _tags_of_ids(tagger, table: list, words: list, ids: Sequence[int]) -> list:
    """``[tagger(words[i]) for i in ids]``; a :class:`ScriptTagger`'s tags (a function of the word)
    are kept per word id in ``table``."""
    if type(tagger) is not ScriptTagger:
        return [tagger(words[i]) for i in ids]
    if len(table) < len(words):
        table.extend([_UNTAGGED] * (len(words) - len(table)))
    tags = list(map(table.__getitem__, ids))
    if _UNTAGGED in tags:
        for k, i in enumerate(ids):
            if tags[k] is _UNTAGGED:
                tags[k] = table[i] = tagger(words[i])
    return tags


def _word_alignment(ref_ids: list[int], hyp_ids: list[int]):
    """kaldialign's alignment as int pairs (EPS_ID for a gap) and its counts."""
    n, m = len(ref_ids), len(hyp_ids)
    if not n or not m:
        pairs = [(EPS_ID, h) for h in hyp_ids] if not n else [(r, EPS_ID) for r in ref_ids]
        return pairs, make_counts(0, 0, n, m)
    pairs = _kaldialign.align(ref_ids, hyp_ids, EPS_ID, False)
    ln = len(pairs)
    correct = [r == h for r, h in pairs].count(True)
    insertions, deletions = ln - n, ln - m
    return pairs, make_counts(correct, n - deletions - correct, deletions, insertions)


_CHAR_COUNTS: dict = {}      # (C, S, D, I) -> ErrorCounts: frozen, and few distinct rows repeat


def _char_counts(ref_ids: list[int], hyp_ids: list[int]) -> ErrorCounts:
    n, m = len(ref_ids), len(hyp_ids)
    if not n or not m:
        return make_counts(0, 0, n, m)
    k = _kaldialign.edit_distance(ref_ids, hyp_ids, False)
    s, d = k["sub"], k["del"]
    key = (n - s - d, s, d, k["ins"])
    c = _CHAR_COUNTS.get(key)
    if c is None:
        if len(_CHAR_COUNTS) > 100_000:
            _CHAR_COUNTS.clear()
        c = _CHAR_COUNTS[key] = make_counts(*key)
    return c


def _switch_counts(ref_tags, hyp_tags, pos: list, base: int, tolerance: int) -> SwitchPointCounts:
    # codeswitch.switch_point_counts; pos[base + j] = hyp_positions_in_ref(alignment)[j]
    ref_sp = switch_points(ref_tags)
    hyp_switches = switch_points(hyp_tags)
    if not hyp_switches:     # nothing to place in the reference (and nothing to match)
        return SwitchPointCounts(0, len(ref_sp), 0)
    hyp_sp = sorted([pos[base + j] for j in hyp_switches])
    return SwitchPointCounts(match_with_tolerance(ref_sp, hyp_sp, tolerance) if ref_sp else 0, len(ref_sp),
                             len(hyp_sp))


def _entity_counts(entities, hyp_units, spaceless: bool, norm, cache: dict) -> EntityCounts:
    # entities.score_entities, keeping only the counts; units of each entity string cached
    c = s = d = i = segs = seg_err = found = 0
    for ent in entities:
        key = (id(norm), spaceless, ent)
        units = cache.get(key)
        if units is None:
            units = cache[key] = tuple(entity_units(norm(ent), spaceless))
        n = len(units)
        if not n:
            continue
        segs += 1
        if _contains(hyp_units, units):
            found += 1
            c += n             # distance 0: the extracted span is the entity itself
            continue
        if fuzzy_tolerance(n) == 0:
            d += n             # only an exact occurrence matches, and there is none
            seg_err += 1
            continue
        r = score_entity(units, hyp_units).counts
        c, s, d, i = c + r.correct, s + r.substitutions, d + r.deletions, i + r.insertions
        seg_err += r.segment_errors
    counts = make_counts(c, s, d, i, segs, seg_err)
    return EntityCounts(counts, found, segs)


def evaluate_fast(refs: dict[str, str], hyps: dict[str, str], annotations: dict[str, Annotation],
                  config, keys: Sequence[str], tables: UnitTables, cache: dict) -> list:
    """Results of :func:`evaluate_utterance` for ``keys`` (one chunk), computed in batch."""
    from .evaluate import UtteranceResult, _normalizer_for

    n = len(keys)
    anns = [annotations.get(k) or Annotation() for k in keys]
    langs = [a.lang or config.default_lang for a in anns]
    norms = [_normalizer_for(config, lang, cache) for lang in langs]
    raw_hyps = [hyps.get(k) for k in keys]

    # normalize per normalizer in one pass
    refs_n: list = [None] * n
    hyps_n: list = [None] * n
    groups: dict[int, tuple] = {}
    for u, nm in enumerate(norms):
        groups.setdefault(id(nm), (nm, []))[1].append(u)
    for nm, idx in groups.values():
        covered = [u for u in idx if raw_hyps[u] is not None]
        out = normalize_many(nm, [refs[keys[u]] for u in idx] + [raw_hyps[u] for u in covered])
        for u, t in zip(idx, out, strict=False):
            refs_n[u] = t
        for u, t in zip(covered, out[len(idx):], strict=False):
            hyps_n[u] = t

    ortho = [None] * n
    if config.orthography:
        from .punctuation import DEFAULT_NORMALIZERS, score_orthography_many
        covered = [u for u in range(n) if raw_hyps[u] is not None]
        counts = score_orthography_many([refs[keys[u]] for u in covered], [raw_hyps[u] for u in covered],
                                        config.orthography_normalizers or DEFAULT_NORMALIZERS,
                                        cache=tables.orthography_tokens)
        for u, c in zip(covered, counts, strict=False):
            ortho[u] = c

    high_wer, tol, threshold = config.high_wer, config.switch_tolerance, config.collapse_threshold
    # script fidelity of every covered utterance with a language or a code-switch pair, at once
    sfrs: list = [None] * n
    need, exps = [], []
    for u in range(n):
        cs, lang = anns[u].cs, langs[u]
        if raw_hyps[u] is not None and (cs or lang):
            sk = ("scripts", cs, lang)
            exp = cache.get(sk)
            if exp is None:
                if cs:
                    exp = frozenset().union(*(expected_scripts(x) for x in language_pair(cs)))
                    if lang:
                        exp |= expected_scripts(lang)
                else:
                    exp = expected_scripts(lang)
                cache[sk] = exp
            need.append(u)
            exps.append(exp)
    if need:
        for u, f in zip(need, _script_fidelities(tables, [raw_hyps[u] for u in need], exps, threshold), strict=False):
            sfrs[u] = f

    # word alignments of all covered utterances at once (align_batch: kaldialign's alignment):
    # counts, and the reference position of every hypothesis word for the switch points
    # (uncovered utterances are aligned to an empty hypothesis; their results are not read)
    r_flat, r_off = tables.word_ids_many(refs_n)
    h_flat, h_off = tables.word_ids_many(["" if h is None else h for h in hyps_n])
    c, s, d, i, positions = align_many(r_flat, r_off, h_flat, h_off)
    word_counts = shared_counts(c, s, d, i)
    pos = positions.tolist()
    r_chars, r_cstart, r_whole = tables.chars_many(refs_n, r_flat, r_off)
    h_chars, h_cstart, h_whole = tables.chars_many(["" if h is None else h for h in hyps_n], h_flat, h_off)
    cmis, ref_points, hyp_points = _code_switching([a.cs for a in anns], tables, cache, config, r_flat, r_off,
                                                   h_flat, h_off)
    r_ids, h_ids = r_flat.tolist(), h_flat.tolist()
    r_off, h_off = r_off.tolist(), h_off.tolist()
    words = tables.word_list

    results = []
    new = object.__new__
    for u, key in enumerate(keys):
        ann, lang, norm, ref, hyp_text = anns[u], langs[u], norms[u], refs_n[u], raw_hyps[u]
        cs = ann.cs
        ref_ids = r_ids[r_off[u]:r_off[u + 1]]
        tagger = ref_tags = cmi = None
        ref_sp = ref_points[u]
        if ref_sp is not None:
            cmi = cmis[u]
        elif cs:     # a tagger other than ScriptTagger: per token, as evaluate_utterance
            tk = ("tagger", cs)
            if tk not in cache:
                cache[tk] = config.tagger_factory(language_pair(cs))
                cache[("tags", cs)] = []
            tagger, tag_table = cache[tk], cache[("tags", cs)]
            ref_tags = _tags_of_ids(tagger, tag_table, words, ref_ids)
            cmi = code_mixing_index(ref_tags)
        if hyp_text is None:
            results.append(UtteranceResult(key, lang, False, ref, None, cs=cs, cmi=cmi))
            continue
        hyp = hyps_n[u]
        hyp_base = h_off[u]
        hyp_ids = h_ids[hyp_base:h_off[u + 1]]
        word = word_counts[u]
        char = _char_counts(r_whole[u] if u in r_whole else r_chars[r_cstart[u]:r_cstart[u + 1]],
                            h_whole[u] if u in h_whole else h_chars[h_cstart[u]:h_cstart[u + 1]])
        sfr = sfrs[u]
        if sfr is not None and sfr.collapse:
            category = "script_collapse"
        elif word.wer > high_wer:
            category = "high_wer"
        else:
            category = "ok"
        switch = None
        if ref_sp is not None:
            hyp_switches = hyp_points[u]
            if not hyp_switches:
                switch = SwitchPointCounts(0, len(ref_sp), 0)
            else:
                hyp_sp = sorted([pos[hyp_base + j] for j in hyp_switches])
                switch = SwitchPointCounts(match_with_tolerance(ref_sp, hyp_sp, tol) if ref_sp else 0, len(ref_sp),
                                           len(hyp_sp))
        elif tagger is not None:
            switch = _switch_counts(ref_tags, _tags_of_ids(tagger, tag_table, words, hyp_ids), pos, hyp_base, tol)
        ents = None
        if ann.entities:
            spaceless = bool(lang) and normalize_language_code(lang) in SPACELESS_LANGUAGES
            # entities.entity_units(hyp, spaceless), without its per-call import
            hyp_units = graphemes(hyp) if spaceless else hyp.split()
            ents = _entity_counts(ann.entities, hyp_units, spaceless, norm, cache)
        # UtteranceResult(key, lang, True, ref, hyp, word, char, sfr, category, cs, cmi, switch, ents,
        # ortho[u], raw_hyp=hyp_text) without the frozen dataclass's 15 object.__setattr__ calls
        r = new(UtteranceResult)
        r.__dict__.update(key=key, lang=lang, covered=True, ref=ref, hyp=hyp, word=word, char=char, sfr=sfr,
                          category=category, cs=cs, cmi=cmi, switch=switch, entities=ents,
                          orthography=ortho[u], raw_hyp=hyp_text)
        results.append(r)
    return results


def evaluate_many(refs, hyps, annotations, config, keys, progress=None) -> list:
    """:func:`evaluate_fast` over ``keys`` in chunks of :data:`CHUNK`; a chunk that raises a
    :class:`LatticeToolsError` is recomputed by the reference implementation (same error, same key)."""
    # The cyclic garbage collector is paused while the results are built: they are tens of
    # thousands of small acyclic objects (see lattice_tools._gc).
    with gc_paused():
        return _evaluate_chunks(refs, hyps, annotations, config, keys, progress)


def _evaluate_chunks(refs, hyps, annotations, config, keys, progress) -> list:
    from .evaluate import evaluate_utterance

    tables = UnitTables()
    cache: dict = {}
    out = []
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start:start + CHUNK]
        try:
            out.extend(evaluate_fast(refs, hyps, annotations, config, chunk, tables, cache))
        except LatticeToolsError:
            ref_cache: dict = {}
            out.extend(evaluate_utterance(k, refs[k], hyps.get(k), annotations.get(k), config, ref_cache)
                       for k in chunk)
        if progress is not None:
            progress.update(len(chunk))
    return out
