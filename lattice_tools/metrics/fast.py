"""Batched fast path of :func:`~lattice_tools.metrics.evaluate.evaluate_system`.

Computes exactly what :func:`~lattice_tools.metrics.evaluate.evaluate_utterance` computes for
every utterance (the tests compare both on random inputs), with the per-utterance Python work cut
down:

* texts are normalized per normalizer in one pass (:func:`~lattice_tools.metrics.text.normalize_many`);
* words and grapheme clusters are interned to integers once per corpus, and kaldialign's C++
  ``align``/``edit_distance`` are called on the integer lists directly (its DP only compares
  symbols for equality, so any injective renumbering gives the same path and counts; the public
  wrapper re-sorts the vocabulary of every utterance);
* the grapheme clusters and Unicode-script counts of a *word* are cached: both decompose over
  whitespace-separated words (:class:`UnitTables` says when, and falls back to the full-text
  functions otherwise);
* NE-WER skips the approximate-substring DP when an entity occurs exactly (distance 0, counts all
  correct) or cannot match fuzzily (tolerance 0: counts all deleted);
* the seed-004 orthographic alignment runs as one numpy DP over a batch of utterances
  (:func:`~lattice_tools.metrics.punctuation.score_orthography_many`).

Any :class:`~lattice_tools.errors.LatticeToolsError` inside a chunk re-runs that chunk through
the reference implementation, so errors name the same utterance with the same message.
"""
from __future__ import annotations

from itertools import chain
from typing import Sequence

import _kaldialign

from ..errors import LatticeToolsError
from ..scoring.counts import ErrorCounts
from .codeswitch import (ScriptTagger, SwitchPointCounts, code_mixing_index, language_pair, match_with_tolerance,
                         switch_points)
from .entities import EntityCounts, _contains, entity_units, fuzzy_tolerance, score_entity
from .io import Annotation
from .levenshtein import make_counts
from .script import SPACELESS_LANGUAGES, INHERITED, ScriptFidelity, char_script, expected_scripts
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
        self.grapheme_id: dict[str, int] = {}
        self._word_chars: dict[str, tuple[int, ...] | bool] = {}   # False: not decomposable
        self._word_scripts: dict[str, tuple[tuple[str, int], ...]] = {}
        self.orthography_tokens: dict = {}    # punctuation.tokenize_for_counts's word cache

    def words(self, tokens: Sequence[str]) -> list[int]:
        get = self.word_id.get
        out = [get(w) for w in tokens]
        if None in out:
            ids = self.word_id
            out = [ids.setdefault(w, len(ids)) for w in tokens]
        return out

    def _cluster_ids(self, clusters) -> tuple[int, ...]:
        ids = self.grapheme_id
        return tuple(ids.setdefault(g, len(ids)) for g in clusters)

    def _word_clusters(self, word: str):
        c = False if _attaches_across_space(word[0], word[-1]) else self._cluster_ids(_GRAPHEME.findall(word))
        self._word_chars[word] = c
        return c

    def chars(self, text: str, tokens: Sequence[str]) -> list[int]:
        get = self._word_chars.get
        parts = [get(w) for w in tokens]
        if None in parts:
            parts = [get(w) or self._word_clusters(w) for w in tokens]
        if False in parts:   # a cluster crosses whitespace somewhere: segment the whole text
            return list(self._cluster_ids(graphemes(text)))
        return list(chain.from_iterable(parts))

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


def _script_fidelity(counts: dict[str, int], exp: frozenset, threshold: float) -> ScriptFidelity:
    # script.script_fidelity on precomputed counts (same expressions, same tie-breaking)
    n_exp = n_all = 0
    for k, v in counts.items():
        n_all += v
        if k in exp:
            n_exp += v
    if len(counts) == 1:           # the common case: one script, trivially dominant and sorted
        items = tuple(counts.items())
        dominant = items[0][0]
    else:
        items = tuple(sorted(counts.items()))
        dominant = min(counts, key=lambda k: (-counts[k], k not in exp, k)) if counts else None
    collapse = bool(n_all) and (n_exp / n_all) < threshold and dominant not in exp
    return ScriptFidelity(n_exp, n_all, items, dominant, collapse)


def _tags(tagger, tokens: Sequence[str]) -> list:
    # ScriptTagger memoizes; read its memo without a method call per token
    if type(tagger) is ScriptTagger:
        memo = tagger._memo
        return [memo[t] if t in memo else tagger(t) for t in tokens]
    return [tagger(t) for t in tokens]


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


def _char_counts(ref_ids: list[int], hyp_ids: list[int]) -> ErrorCounts:
    n, m = len(ref_ids), len(hyp_ids)
    if not n or not m:
        return make_counts(0, 0, n, m)
    k = _kaldialign.edit_distance(ref_ids, hyp_ids, False)
    s, d = k["sub"], k["del"]
    return make_counts(n - s - d, s, d, k["ins"])


def _switch_counts(ref_tags, hyp_tags, pairs, tolerance: int) -> SwitchPointCounts:
    # codeswitch.switch_point_counts with hyp_positions_in_ref on integer pairs
    pos = []
    i = 0
    for r, h in pairs:
        if h != EPS_ID:
            pos.append(i)
        if r != EPS_ID:
            i += 1
    ref_sp = switch_points(ref_tags)
    hyp_sp = sorted(pos[j] for j in switch_points(hyp_tags))
    return SwitchPointCounts(match_with_tolerance(ref_sp, hyp_sp, tolerance), len(ref_sp), len(hyp_sp))


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
        for u, t in zip(idx, out):
            refs_n[u] = t
        for u, t in zip(covered, out[len(idx):]):
            hyps_n[u] = t

    ortho = [None] * n
    if config.orthography:
        from .punctuation import DEFAULT_NORMALIZERS, score_orthography_many
        covered = [u for u in range(n) if raw_hyps[u] is not None]
        counts = score_orthography_many([refs[keys[u]] for u in covered], [raw_hyps[u] for u in covered],
                                        config.orthography_normalizers or DEFAULT_NORMALIZERS,
                                        cache=tables.orthography_tokens)
        for u, c in zip(covered, counts):
            ortho[u] = c

    results = []
    high_wer, tol, threshold = config.high_wer, config.switch_tolerance, config.collapse_threshold
    for u, key in enumerate(keys):
        ann, lang, norm, ref, hyp_text = anns[u], langs[u], norms[u], refs_n[u], raw_hyps[u]
        cs = ann.cs
        ref_tokens = ref.split()
        tagger = ref_tags = cmi = None
        if cs:
            tk = ("tagger", cs)
            if tk not in cache:
                cache[tk] = config.tagger_factory(language_pair(cs))
            tagger = cache[tk]
            ref_tags = _tags(tagger, ref_tokens)
            cmi = code_mixing_index(ref_tags)
        if hyp_text is None:
            results.append(UtteranceResult(key, lang, False, ref, None, cs=cs, cmi=cmi))
            continue
        hyp = hyps_n[u]
        hyp_tokens = hyp.split()
        pairs, word = _word_alignment(tables.words(ref_tokens), tables.words(hyp_tokens))
        char = _char_counts(tables.chars(ref, ref_tokens), tables.chars(hyp, hyp_tokens))
        sfr = None
        if cs or lang:
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
            sfr = _script_fidelity(tables.script_counts(hyp_text), exp, threshold)
        if sfr is not None and sfr.collapse:
            category = "script_collapse"
        elif word.wer > high_wer:
            category = "high_wer"
        else:
            category = "ok"
        switch = None
        if tagger is not None:
            switch = _switch_counts(ref_tags, _tags(tagger, hyp_tokens), pairs, tol)
        ents = None
        if ann.entities:
            spaceless = bool(lang) and normalize_language_code(lang) in SPACELESS_LANGUAGES
            hyp_units = entity_units(hyp, spaceless)
            ents = _entity_counts(ann.entities, hyp_units, spaceless, norm, cache)
        results.append(UtteranceResult(key, lang, True, ref, hyp, word, char, sfr, category, cs, cmi, switch,
                                       ents, ortho[u], raw_hyp=hyp_text))
    return results


def evaluate_many(refs, hyps, annotations, config, keys, progress=None) -> list:
    """:func:`evaluate_fast` over ``keys`` in chunks of :data:`CHUNK`; a chunk that raises a
    :class:`LatticeToolsError` is recomputed by the reference implementation (same error, same key)."""
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
