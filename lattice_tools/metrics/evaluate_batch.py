"""The engine of :func:`~lattice_tools.metrics.evaluate.evaluate_system`: every utterance's
1-best metrics, computed a chunk of utterances at a time with the per-utterance Python work cut
down to what cannot be batched:

* texts are normalized per normalizer in one pass (:func:`~lattice_tools.metrics.text.normalize_many`);
* the texts of a chunk are split in one call (joined by a NUL word, see
  :meth:`UnitTables.word_ids_many`) and their words interned to integers once per corpus;
* word alignments of the whole chunk run as one numpy DP and one vectorized backtrace with
  kaldialign's tie-breaking (:mod:`~lattice_tools.metrics.align_batch`): counts and the
  reference position of each hypothesis word (switch points);
* grapheme clusters and Unicode-script counts are cached per *word*
  (:mod:`~lattice_tools.metrics.unit_tables`) and gathered for all texts at once; kaldialign's
  C++ ``edit_distance`` is called on the integer cluster lists (its DP only compares symbols for
  equality, so any injective renumbering gives the same counts);
* script fidelity, CMI and switch points are array operations over the chunk (tags of a
  :class:`ScriptTagger` are a function of the word, kept per word id);
* NE-WER skips the approximate-substring DP when an entity occurs exactly (distance 0, counts all
  correct) or cannot match fuzzily (tolerance 0: counts all deleted);
* the punctuation/case alignment runs batched
  (:func:`~lattice_tools.metrics.punctuation.score_orthography_many`);
* result objects are built without the frozen dataclasses' per-field ``__setattr__``, and the
  cyclic garbage collector is paused while they are built (:func:`evaluate_many`).

The per-utterance definitions it computes (one utterance at a time, the plain way) live in
``tests/_reference/metrics_evaluate.py``, the oracle of the differential tests.  Errors: the
look-ups that can fail on an utterance's annotation (its normalizer, code-switch tagger and
expected scripts) run first, in utterance order, so an error names the first utterance that
has one (:func:`~lattice_tools.metrics.results.with_key`).
"""
from __future__ import annotations

from collections.abc import Sequence

import _kaldialign
import numpy as np

from ..core._gc import gc_paused
from ..core.counts import ErrorCounts
from ..core.errors import LatticeToolsError
from ._columns import shared_counts
from .align_batch import align_many
from .codeswitch import (
    ScriptTagger,
    SwitchPointCounts,
    code_mixing_index,
    language_pair,
    match_with_tolerance,
    switch_points,
)
from .entities import EntityCounts, contains_sequence, entity_units, fuzzy_tolerance, score_entity
from .io import Annotation
from .levenshtein import make_counts
from .orthography_rules import OrthographicCounts
from .orthography_tokens import DEFAULT_NORMALIZERS
from .punctuation import BATCH_CELLS, score_orthography_many
from .results import EvalConfig, UtteranceResult, normalizer_for, with_key
from .script import SPACELESS_LANGUAGES, expected_scripts
from .text import graphemes, normalize_language_code, normalize_many
from .unit_tables import UnitTables, script_fidelities

EPS_ID = -1          # kaldialign's epsilon in integer alignments (interned ids are >= 0)
CHUNK = 2048         # default utterances per chunk: bounds the per-chunk lists


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
        tagger, table = _tagger(cache, config, cs)
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
        if contains_sequence(hyp_units, units):
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


def _tagger(cache: dict, config: EvalConfig, cs: str):
    """The tagger of code-switch pair ``cs`` and its per-word-id tag table (one per pair)."""
    tk = ("tagger", cs)
    if tk not in cache:
        cache[tk] = config.tagger_factory(language_pair(cs))
        cache[("tags", cs)] = []
    return cache[tk], cache[("tags", cs)]


def _expected_scripts(cache: dict, cs: str | None, lang: str | None) -> frozenset:
    """Scripts a hypothesis is expected in: every language of its code-switch pair (and its own
    language), else its language's."""
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
    return exp


def _prepare(keys: Sequence[str], anns: list, langs: list, raw_hyps: list, config: EvalConfig, cache: dict) -> list:
    """Each utterance's normalizer, with the other look-ups that can fail on its annotation (its
    code-switch tagger, its expected scripts), in utterance order: an error names the first
    utterance that has one.  Later steps find them in ``cache``."""
    norms = []
    for key, ann, lang, hyp in zip(keys, anns, langs, raw_hyps, strict=True):
        try:
            norms.append(normalizer_for(config, lang, cache))
            if ann.cs:
                _tagger(cache, config, ann.cs)
            if hyp is not None and (ann.cs or lang):
                _expected_scripts(cache, ann.cs, lang)
        except LatticeToolsError as exc:
            raise with_key(exc, key) from None
    return norms


def _normalize(ref_texts: list, raw_hyps: list, norms: list) -> tuple[list, list]:
    """Normalized references and hypotheses (None: no hypothesis), one pass per normalizer."""
    n = len(ref_texts)
    refs_n: list = [None] * n
    hyps_n: list = [None] * n
    groups: dict[int, tuple] = {}
    for u, nm in enumerate(norms):
        groups.setdefault(id(nm), (nm, []))[1].append(u)
    for nm, idx in groups.values():
        covered = [u for u in idx if raw_hyps[u] is not None]
        out = normalize_many(nm, [ref_texts[u] for u in idx] + [raw_hyps[u] for u in covered])
        for u, t in zip(idx, out, strict=False):
            refs_n[u] = t
        for u, t in zip(covered, out[len(idx):], strict=False):
            hyps_n[u] = t
    return refs_n, hyps_n


def _script_fidelities_of(tables: UnitTables, anns: list, langs: list, raw_hyps: list, threshold: float,
                          cache: dict) -> list:
    """Script fidelity of every covered utterance with a language or a code-switch pair, at once."""
    sfrs: list = [None] * len(anns)
    need, exps = [], []
    for u, (ann, lang, hyp) in enumerate(zip(anns, langs, raw_hyps, strict=True)):
        if hyp is not None and (ann.cs or lang):
            need.append(u)
            exps.append(_expected_scripts(cache, ann.cs, lang))
    if need:
        for u, f in zip(need, script_fidelities(tables, [raw_hyps[u] for u in need], exps, threshold), strict=True):
            sfrs[u] = f
    return sfrs


def evaluate_chunk(refs: dict[str, str], hyps: dict[str, str], annotations: dict[str, Annotation],
                   config: EvalConfig, keys: Sequence[str], tables: UnitTables, cache: dict,
                   batch_cells: int = BATCH_CELLS) -> list:
    """The :class:`UtteranceResult` of every utterance of ``keys`` (one chunk), computed in batch."""
    n = len(keys)
    anns = [annotations.get(k) or Annotation() for k in keys]
    langs = [a.lang or config.default_lang for a in anns]
    raw_hyps = [hyps.get(k) for k in keys]
    ref_texts = [refs[k] for k in keys]
    norms = _prepare(keys, anns, langs, raw_hyps, config, cache)
    refs_n, hyps_n = _normalize(ref_texts, raw_hyps, norms)
    ortho: list[OrthographicCounts | None] = [None] * n
    if config.orthography:
        covered = [u for u in range(n) if raw_hyps[u] is not None]
        counts = score_orthography_many([ref_texts[u] for u in covered], [h for h in raw_hyps if h is not None],
                                        config.orthography_normalizers or DEFAULT_NORMALIZERS,
                                        cache=tables.orthography_tokens, batch_cells=batch_cells)
        for u, c in zip(covered, counts, strict=True):
            ortho[u] = c
    sfrs = _script_fidelities_of(tables, anns, langs, raw_hyps, config.collapse_threshold, cache)

    # word alignments of all covered utterances at once (align_batch: kaldialign's alignment):
    # counts, and the reference position of every hypothesis word for the switch points
    # (uncovered utterances are aligned to an empty hypothesis; their results are not read)
    hyps_or_empty = ["" if h is None else h for h in hyps_n]
    r_flat, r_off = tables.word_ids_many(refs_n)
    h_flat, h_off = tables.word_ids_many(hyps_or_empty)
    c, s, d, i, positions = align_many(r_flat, r_off, h_flat, h_off)
    chunk = _Chunk(config, cache, tables.word_list, shared_counts(c, s, d, i), positions.tolist(),
                   r_flat.tolist(), r_off.tolist(), h_flat.tolist(), h_off.tolist(),
                   tables.chars_many(refs_n, r_flat, r_off), tables.chars_many(hyps_or_empty, h_flat, h_off),
                   _code_switching([a.cs for a in anns], tables, cache, config, r_flat, r_off, h_flat, h_off))
    new = object.__new__
    results = []
    for u, key in enumerate(keys):
        ann, lang, hyp_text = anns[u], langs[u], raw_hyps[u]
        tagger, ref_tags, cmi = chunk.reference_tags(u, ann.cs)
        if hyp_text is None:
            results.append(UtteranceResult(key, lang, False, refs_n[u], None, cs=ann.cs, cmi=cmi))
            continue
        word, sfr = chunk.word_counts[u], sfrs[u]
        if sfr is not None and sfr.collapse:
            category = "script_collapse"
        elif word.wer > config.high_wer:
            category = "high_wer"
        else:
            category = "ok"
        ents = None
        if ann.entities:
            spaceless = bool(lang) and normalize_language_code(lang) in SPACELESS_LANGUAGES
            # entities.entity_units(hyp, spaceless), without its per-call import
            hyp_units = graphemes(hyps_n[u]) if spaceless else hyps_n[u].split()
            ents = _entity_counts(ann.entities, hyp_units, spaceless, norms[u], cache)
        # UtteranceResult(key, lang, True, ref, hyp, word, char, sfr, category, cs, cmi, switch, ents,
        # ortho[u], raw_hyp=hyp_text) without the frozen dataclass's 15 object.__setattr__ calls
        r = new(UtteranceResult)
        r.__dict__.update(key=key, lang=lang, covered=True, ref=refs_n[u], hyp=hyps_n[u], word=word,
                          char=chunk.char_counts(u), sfr=sfr, category=category, cs=ann.cs, cmi=cmi,
                          switch=chunk.switch_counts(u, tagger, ref_tags), entities=ents, orthography=ortho[u],
                          raw_hyp=hyp_text)
        results.append(r)
    return results


class _Chunk:
    """The word-level arrays of one chunk and the per-utterance reads of them."""

    def __init__(self, config, cache, words, word_counts, positions, r_ids, r_off, h_ids, h_off, ref_chars,
                 hyp_chars, code_switching):
        self.config, self.cache, self.words = config, cache, words
        self.word_counts, self.positions = word_counts, positions
        self.r_ids, self.r_off, self.h_ids, self.h_off = r_ids, r_off, h_ids, h_off
        self.ref_chars, self.hyp_chars = ref_chars, hyp_chars
        self.cmis, self.ref_points, self.hyp_points = code_switching
        self.tag_table: list = []  # the tag per word id of the current code-switch pair's tagger (reference_tags)

    def reference_tags(self, u: int, cs: str | None):
        """``(tagger, reference tags, CMI)``; tagger and tags only for a tagger other than
        :class:`ScriptTagger` (whose switch points :func:`_code_switching` computed)."""
        if self.ref_points[u] is not None:
            return None, None, self.cmis[u]
        if not cs:
            return None, None, None
        tagger, self.tag_table = _tagger(self.cache, self.config, cs)    # per token, as per utterance
        ref_tags = _tags_of_ids(tagger, self.tag_table, self.words, self.r_ids[self.r_off[u]:self.r_off[u + 1]])
        return tagger, ref_tags, code_mixing_index(ref_tags)

    def char_counts(self, u: int) -> ErrorCounts:
        (r_chars, r_start, r_whole), (h_chars, h_start, h_whole) = self.ref_chars, self.hyp_chars
        return _char_counts(r_whole[u] if u in r_whole else r_chars[r_start[u]:r_start[u + 1]],
                            h_whole[u] if u in h_whole else h_chars[h_start[u]:h_start[u + 1]])

    def switch_counts(self, u: int, tagger, ref_tags) -> SwitchPointCounts | None:
        tol, pos, hyp_base = self.config.switch_tolerance, self.positions, self.h_off[u]
        ref_sp = self.ref_points[u]
        if ref_sp is not None:
            hyp_switches = self.hyp_points[u]
            if not hyp_switches:
                return SwitchPointCounts(0, len(ref_sp), 0)
            hyp_sp = sorted([pos[hyp_base + j] for j in hyp_switches])
            return SwitchPointCounts(match_with_tolerance(ref_sp, hyp_sp, tol) if ref_sp else 0, len(ref_sp),
                                     len(hyp_sp))
        if tagger is None:
            return None
        hyp_tags = _tags_of_ids(tagger, self.tag_table, self.words, self.h_ids[hyp_base:self.h_off[u + 1]])
        return _switch_counts(ref_tags, hyp_tags, pos, hyp_base, tol)


def evaluate_many(refs: dict[str, str], hyps: dict[str, str], annotations: dict[str, Annotation],
                  config: EvalConfig, keys: Sequence[str], progress=None, chunk_size: int = CHUNK,
                  batch_cells: int = BATCH_CELLS) -> list:
    """:func:`evaluate_chunk` over ``keys`` in chunks of ``chunk_size`` utterances (tuning: they
    bound the per-chunk lists; ``batch_cells`` bounds the punctuation/case DP batches)."""
    # The cyclic garbage collector is paused while the results are built: they are tens of
    # thousands of small acyclic objects (see lattice_tools.core._gc).
    with gc_paused():
        tables = UnitTables()
        cache: dict = {}
        out = []
        for start in range(0, len(keys), chunk_size):
            chunk = keys[start:start + chunk_size]
            out.extend(evaluate_chunk(refs, hyps, annotations, config, chunk, tables, cache, batch_cells))
            if progress is not None:
                progress.update(len(chunk))
        return out
