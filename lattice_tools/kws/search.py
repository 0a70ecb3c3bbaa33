"""Search a keyword list in a term index: detections with normalized scores and YES/NO decisions.

For each term (its words split on white space, matched exactly as the index spells them):

1. **Look-up**: the term's hits (one index search; :mod:`lattice_tools.kws.store`).  A term with a
   word outside the index's vocabulary is reported *out of vocabulary*; an in-vocabulary term without
   hits is reported *no hits*.  None is silent.  A term longer than the index's ``max_length`` is
   answered exactly from the lattices the index was built from (``lattices``; see *Long terms*),
   else reported *too long*.
2. **Raw score**: the hit's posterior, capped at 1 (a hit is an expected count, which exceeds 1
   only when two occurrences on one path fall in the same time clusters; Kaldi's kws-search clamps
   its -log score at 0 the same way).
3. **Duplicate removal** (``duptime`` seconds, 0.5 by default; 0 = off): among the hits of one term in
   one file/channel, the highest-scoring hit is kept and every hit whose start is less than
   ``duptime`` from the start of a kept hit is removed (ties: earlier start first).  This is the
   intent of Kaldi's ``kwslist_post_process.pl --remove-dup``, which keeps the best of runs of hits
   sorted by start.
4. **Normalization** (per term, over its remaining hits):

   * ``none``: the raw posterior;
   * ``kst``: Kaldi's keyword-specific thresholding (egs/babel/s5d/local/search/normalize_results_kst.pl):
     ``N_true = ntrue_scale * sum(posteriors)``, ``thr = beta * N_true / (T + (beta - 1) * N_true)``
     (``T`` = ``duration``, the searched audio in seconds; ``beta`` = 999.9; ``thr = 0.001`` if 0),
     and every score becomes ``p ** (log(threshold) / log(thr))``, which maps the term's own
     ATWV-optimal threshold ``thr`` onto the global ``threshold``.  Kaldi drops the hits of a term
     whose ``thr >= 0.9999``; here they keep their raw scores and the term is listed in
     ``SearchResult.kst_unnormalized``;
   * ``sum-to-one``: ``p / sum(p)`` over the term's hits (Mamou et al.'s STO normalization).
5. **Decision**: ``YES`` when the normalized score is ``>= threshold`` (one global threshold).

**Long terms.**  A term of ``n > max_length`` words is searched in the lattices of its *candidate
utterances*: those where the index holds every ``max_length``-word piece of the term (windows at
every position).  That set is exact: a term's occurrence contains an occurrence of each piece, so an
utterance without some piece has no hit of the term, and with ``min_posterior`` pruning a term's
partial mass never exceeds a piece's, so pruning drops no candidate.  Each candidate lattice is read
with the scales and silence words the index records and searched for the term alone
(:func:`lattice_tools.kws.index.lattice_term_hits`): the hits equal those an index built with
``max_length = n`` holds (same clustering over all arcs of the utterance, same sums); each lattice
must first reproduce the index's hits of the term's first piece (else it is not the lattice indexed,
or not read the same way: a MismatchError, never wrong detections).  Cost: one index
look-up per piece, then for each candidate lattice one pushed network and epsilon closure (as when
indexing it) plus the partial occurrences of the term's prefixes -- linear in the arcs of the term's
words and their epsilon-reachable successors, never the number of the lattice's n-grams.  The
lattices are streamed once for all long terms.

:func:`tune_ntrue_scale` picks the KST ``ntrue_scale`` that maximizes a dev-set metric (ATWV from
the scorer) over a grid.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from ..core.errors import LatticeToolsError, MismatchError
from ..core.lattice import Lattice
from ..io.keyword_search.kwlist import KeywordTerm
from ..io.keyword_search.kwslist import Detection
from .index import IndexHit, lattice_terms_hits
from .store import TermIndex

NORMALIZATIONS = ("none", "kst", "sum-to-one")
DEFAULT_BETA = 999.9


class _SearchOptions(TypedDict):
    """The options of one search, as :func:`_search_terms` takes them (sent to the workers as they are)."""

    normalization: str
    threshold: float
    duration: float | None
    ntrue_scale: float
    beta: float
    duptime: float


@dataclass
class SearchResult:
    """Detections (grouped by term, in keyword-list order, best first) and what could not be found."""

    detections: list[Detection] = field(default_factory=list)
    oov: list[str] = field(default_factory=list)          # kwids with a word outside the vocabulary
    too_long: list[str] = field(default_factory=list)     # kwids longer than the index's max_length
    no_hits: list[str] = field(default_factory=list)      # in-vocabulary kwids without any hit
    kst_unnormalized: list[str] = field(default_factory=list)
    oov_words: dict = field(default_factory=dict)         # kwid -> its out-of-vocabulary words

    def summary(self) -> dict:
        return {"detections": len(self.detections), "yes": sum(d.decision for d in self.detections),
                "oov": len(self.oov), "too_long": len(self.too_long), "no_hits": len(self.no_hits)}


def remove_duplicates(hits: Sequence[IndexHit], duptime: float) -> list[IndexHit]:
    """The duplicate-removal rule of the module docstring (step 3), for the hits of one term."""
    if duptime <= 0:
        return list(hits)
    kept: dict[tuple[str, str], list[float]] = {}
    out = []
    for h in sorted(hits, key=lambda h: (-h.score, h.tbeg)):
        starts = kept.setdefault((h.file, h.channel), [])
        if any(abs(h.tbeg - t) < duptime for t in starts):
            continue
        starts.append(h.tbeg)
        out.append(h)
    return out


def kst_threshold(posteriors: Iterable[float], duration: float, *, ntrue_scale: float = 1.0,
                  beta: float = DEFAULT_BETA) -> float:
    """Kaldi's keyword-specific threshold of one term (module docstring, step 4)."""
    ntrue = ntrue_scale * math.fsum(posteriors)
    thr = beta * ntrue / (duration + ntrue * (beta - 1))
    return 0.001 if thr == 0 else thr


def normalize_scores(scores: Sequence[float], normalization: str, *, threshold: float = 0.5,
                     duration: float | None = None, ntrue_scale: float = 1.0, beta: float = DEFAULT_BETA
                     ) -> tuple[list[float], bool]:
    """Normalized scores of one term's hits; the flag is False when KST left them raw (thr >= 0.9999)."""
    if normalization == "none" or not scores:
        return list(scores), True
    if normalization == "sum-to-one":
        total = math.fsum(scores)
        return ([s / total for s in scores] if total > 0 else list(scores)), True
    if normalization == "kst":
        if duration is None or duration <= 0:
            raise ValueError("KST normalization needs the duration of the searched audio (seconds, > 0)")
        thr = kst_threshold(scores, duration, ntrue_scale=ntrue_scale, beta=beta)
        if thr >= 0.9999:
            return list(scores), False
        q = math.log(threshold) / math.log(thr)
        return [s ** q for s in scores], True
    raise ValueError(f"unknown normalization {normalization!r} (expected one of {', '.join(NORMALIZATIONS)})")


def long_term_hits(idx: TermIndex, terms: Sequence[tuple[str, ...]], lattices: Iterable[Lattice]
                   ) -> dict[tuple[str, ...], list[IndexHit]]:
    """The hits of terms longer than the index's ``max_length``, from ``lattices`` (the lattices the
    index was built from; streamed once, only the candidate utterances are searched -- see *Long
    terms* in the module docstring).  Raises a LatticeToolsError when the index does not record how
    its lattices were read, and a MismatchError when a candidate utterance is not among ``lattices``."""
    if idx.settings["representation"] != "lattice":
        raise LatticeToolsError(f"{idx.path}: the index was built from {idx.settings['representation']}, not "
                                "lattices: --lattices answers terms longer than its max-length only for a lattice index")
    if idx.settings.get("silence_rule", "gap") != "gap":
        raise LatticeToolsError(f"{idx.path}: the index bounds silence with the {idx.settings['silence_rule']!r} rule; "
                                "terms longer than its max-length are searched in the lattices with the 'gap' rule "
                                "only: rebuild it with --max-length of the longest term to answer them")
    how = idx.lattice_search
    if how is None:
        raise LatticeToolsError(f"{idx.path}: the index does not record the acoustic/LM scales, word penalty, silence "
                                "words and segment offsets its lattices were read with (an older or merged index): "
                                "rebuild it to search terms longer than its max-length with --lattices")
    n = idx.max_length
    wanted: dict[str, list[tuple[str, ...]]] = {}  # utterance -> the long terms it may hold
    for words in dict.fromkeys(terms):
        candidates = None
        for i in range(len(words) - n + 1):
            utts = {h.utterance for h in idx.lookup(words[i:i + n])}
            candidates = utts if candidates is None else candidates & utts
            if not candidates:
                break
        for u in sorted(candidates or ()):
            wanted.setdefault(u, []).append(words)
    out: dict[tuple[str, ...], list[IndexHit]] = {w: [] for w in terms}
    opts = dict(max_silence=idx.settings["max_silence"], min_posterior=idx.settings["min_posterior"],
                acoustic_scale=how["acoustic_scale"], lm_scale=how["lm_scale"], word_penalty=how["word_penalty"],
                silence_words=how["silence_words"])
    for lat in lattices:
        if not wanted:
            break
        todo = wanted.pop(lat.key, None)
        if todo is None:
            continue
        place = idx.utterance_place(lat.key)
        assert place is not None  # a candidate has hits, so the index holds it
        file, channel, offset = place
        # the lattice must reproduce the index's hits of a piece: else it is not the lattice indexed, or not read
        # the same way (words, frame shift), and every number from it would be wrong
        piece = todo[0][:n]
        found = lattice_terms_hits(lat, [piece, *todo], file=file, channel=channel, offset=offset, **opts)
        _check_reproduces(idx, lat.key, piece, found[piece])
        for words in todo:
            out[words].extend(found[words])
    if wanted:
        missing = sorted(wanted)
        raise MismatchError(f"utterance {missing[0]!r} of the index ({len(missing)} in all) holds every piece of a long "
                            "term but is not in the lattices given (--lattices must be the lattices the index was built "
                            "from)", key=missing[0])
    return out


def _check_reproduces(idx: TermIndex, utterance: str, piece: tuple[str, ...], hits: list[IndexHit]) -> None:
    stored = sorted((h.tbeg, h.dur, h.score) for h in idx.lookup(piece) if h.utterance == utterance)
    again = sorted((h.tbeg, h.dur, h.score) for h in hits)
    same = len(stored) == len(again) and all(
        (a[0], a[1]) == (b[0], b[1]) and math.isclose(a[2], b[2], rel_tol=1e-9, abs_tol=1e-300)
        for a, b in zip(stored, again, strict=True))
    if not same:
        raise MismatchError(f"utterance {utterance!r}: the lattice given does not reproduce the index's hits of "
                            f"{' '.join(piece)!r} ({len(stored)} stored, {len(again)} from the lattice): --lattices must "
                            "be the lattices the index was built from, read with the same --words, --frame-shift and "
                            "--frame-subsampling-factor", key=utterance)


def search(index: TermIndex | str, terms: Sequence[KeywordTerm], *, normalization: str = "none",
           threshold: float = 0.5, duration: float | None = None, ntrue_scale: float = 1.0,
           beta: float = DEFAULT_BETA, duptime: float = 0.5, lattices: Iterable[Lattice] | None = None,
           long_hits: dict[tuple[str, ...], list[IndexHit]] | None = None, executor=None) -> SearchResult:
    """Search every term of ``terms`` in ``index`` (a :class:`TermIndex` or a path); see the module
    docstring for the steps.  ``lattices``: the lattices the index was built from, to answer terms
    longer than its ``max_length`` (read only when there are such terms); or ``long_hits``, those
    terms' hits already computed by :func:`long_term_hits` (a search repeated with other settings).
    Raises MismatchError on duplicate keyword ids or empty terms.

    ``executor`` (a :class:`concurrent.futures.Executor` or a ``dask.distributed.Client``; None = here): the
    terms are cut into shards of consecutive terms, sized from the measured CPU seconds per term so that a
    task is ~:data:`SEARCH_TASK_SECONDS` of work (see :data:`SEARCH_SHARD_TERMS`), each searched by a worker that
    opens the index read-only (on a cluster the index must be on a shared file system); the long terms'
    hits are found here first (the lattices are read in this process) and sent with their shard.  The
    shards' results are joined in term order: the result, hence every file written from it, equals the
    serial search's.  A list of at most :data:`SEARCH_SHARD_TERMS` terms is searched here.

    :func:`search_parts` gives the same result in parts, for writing detections without holding them all."""
    result = SearchResult()
    for _kwids, part in search_parts(index, terms, normalization=normalization, threshold=threshold,
                                     duration=duration, ntrue_scale=ntrue_scale, beta=beta, duptime=duptime,
                                     lattices=lattices, long_hits=long_hits, executor=executor):
        result.detections.extend(part.detections)
        result.oov.extend(part.oov)
        result.too_long.extend(part.too_long)
        result.no_hits.extend(part.no_hits)
        result.kst_unnormalized.extend(part.kst_unnormalized)
        result.oov_words.update(part.oov_words)
    return result


def search_parts(index: TermIndex | str, terms: Sequence[KeywordTerm], *, normalization: str = "none",
                 threshold: float = 0.5, duration: float | None = None, ntrue_scale: float = 1.0,
                 beta: float = DEFAULT_BETA, duptime: float = 0.5, lattices: Iterable[Lattice] | None = None,
                 long_hits: dict[tuple[str, ...], list[IndexHit]] | None = None, executor=None
                 ) -> Iterator[tuple[tuple[str, ...], SearchResult]]:
    """:func:`search` (same parameters) in parts, in term order: ``(kwids, result)`` for each run of consecutive
    terms (a shard: see :data:`SEARCH_SHARD_TERMS`), ``result`` holding those terms' detections and lists.  The
    parts joined are :func:`search`'s result; a writer that consumes them as they come holds one shard's
    detections at a time instead of all of them."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r} (expected one of {', '.join(NORMALIZATIONS)})")
    if not 0 < threshold < 1 and normalization == "kst":
        raise ValueError(f"the KST threshold must be in (0, 1), got {threshold}")
    seen = set()
    for t in terms:
        if t.kwid in seen:
            raise MismatchError(f"duplicate keyword id {t.kwid!r}", key=t.kwid)
        if not t.words:
            raise MismatchError(f"keyword {t.kwid!r} has an empty term", key=t.kwid)
        seen.add(t.kwid)
    options = _SearchOptions(normalization=normalization, threshold=threshold, duration=duration,
                            ntrue_scale=ntrue_scale, beta=beta, duptime=duptime)
    # a path is opened (and closed) here; anything else is an open index (a TermIndex, or an object with its
    # look-ups such as kaldi_index.KaldiIndex)
    own = isinstance(index, (str, bytes, os.PathLike))
    idx = TermIndex(index) if isinstance(index, (str, bytes, os.PathLike)) else index
    try:
        # the workers open the index by its path: a term index of this package (a Kaldi index is searched here)
        if executor is not None and len(terms) > SEARCH_SHARD_TERMS and isinstance(idx, TermIndex):
            if long_hits is None and lattices is not None:
                oov_words = {t.kwid: _oov_words(idx, t) for t in terms}
                long_terms = [tuple(t.words) for t in terms if not oov_words[t.kwid] and len(t.words) > idx.max_length]
                long_hits = long_term_hits(idx, long_terms, lattices) if long_terms else {}
            yield from _search_on_workers(idx.path, terms, options, long_hits or {}, executor)
            return
        if long_hits is None:
            long_terms = [tuple(t.words) for t in terms
                          if len(t.words) > idx.max_length and not _oov_words(idx, t)]
            long_hits = long_term_hits(idx, long_terms, lattices) if long_terms and lattices is not None else {}
        from ..core.parallel import run_shards

        here = long_hits

        def search_here(items):
            t0 = time.thread_time()
            return _search_terms(idx, items, here, **options), None, time.thread_time() - t0

        # the same shards as on workers, one engine: run here, one after the other
        sizes = _ShardSizes()
        yield from _parts(run_shards(search_here, sizes.shards(terms, terms)), sizes)
    finally:
        if own:
            idx.close()


#: How many terms a search task takes.  A term costs one indexed look-up plus its hits' checks, duplicate
#: removal and normalization: 22 µs for a term with a few hits (the bundled recordings' index: 56,433 terms in
#: 1.27 s on this project's 2-core machine), 2.4 ms for one with a hundred times as many (the same lattices
#: copied to 1,000 utterances): the cost follows the hits, which only the search finds.  So the size is
#: measured as the search goes: the first shards take :data:`SEARCH_SHARD_TERMS` terms; every finished shard
#: reports its CPU seconds, and each later shard takes as many terms as :data:`SEARCH_TASK_SECONDS` of work at
#: the CPU seconds per term measured so far (within ``SEARCH_SHARD_TERMS // 16`` and
#: :data:`SEARCH_MAX_SHARD_TERMS`), against a task's round trip of a few milliseconds through a local Dask
#: cluster; it also bounds a task's detections, hence the memory of its result.  A list of at most
#: :data:`SEARCH_SHARD_TERMS` terms is searched in the calling process (no cluster is started for it).
SEARCH_SHARD_TERMS = 1024
SEARCH_MAX_SHARD_TERMS = 65536
SEARCH_TASK_SECONDS = 0.25


def _oov_words(idx: TermIndex, term: KeywordTerm) -> list[str]:
    return [w for w in dict.fromkeys(term.words) if not idx.in_vocabulary(w)]


def _search_terms(idx: TermIndex, terms: Sequence[KeywordTerm], long_hits: dict[tuple[str, ...], list[IndexHit]], *,
                  normalization: str, threshold: float, duration: float | None, ntrue_scale: float, beta: float,
                  duptime: float) -> SearchResult:
    """Steps 1-5 of the module docstring for ``terms``, in their order (``long_hits``: the long terms' hits)."""
    result = SearchResult()
    for t in terms:
        oov = _oov_words(idx, t)
        if oov:
            result.oov.append(t.kwid)
            result.oov_words[t.kwid] = oov
            continue
        if len(t.words) > idx.max_length and tuple(t.words) not in long_hits:
            result.too_long.append(t.kwid)
            continue
        found = long_hits[tuple(t.words)] if len(t.words) > idx.max_length else idx.lookup(t.words)
        hits = remove_duplicates(found, duptime)
        if not hits:
            result.no_hits.append(t.kwid)
            continue
        raw = [min(1.0, h.score) for h in hits]
        scores, ok = normalize_scores(raw, normalization, threshold=threshold, duration=duration,
                                      ntrue_scale=ntrue_scale, beta=beta)
        if not ok:
            result.kst_unnormalized.append(t.kwid)
        for h, s in sorted(zip(hits, scores, strict=False), key=lambda x: (-x[1], x[0].file, x[0].channel, x[0].tbeg)):
            result.detections.append(Detection(t.kwid, h.file, h.channel, h.tbeg, h.dur, s, s >= threshold,
                                               utterance=h.utterance))
    return result


def search_terms_of_shard(job: tuple[str, _SearchOptions], items: Sequence[tuple[KeywordTerm, list[IndexHit] | None]]
                          ) -> tuple[SearchResult, tuple[list, ...], float]:
    """A worker's task: open the index ``job[0]`` read-only and search the shard's terms (each with its hits
    when it is a long term answered from the lattices) with the options ``job[1]``; with the CPU seconds
    it took (they size the next shards).  The result's detections come apart, as columns."""
    t0 = time.thread_time()
    path, options = job
    long_hits = {tuple(t.words): hits for t, hits in items if hits is not None}
    with TermIndex(path) as idx:
        result = _search_terms(idx, [t for t, _ in items], long_hits, **options)
    # the detections travel as columns of shared strings: unpickling a million Detection objects in the
    # calling process cost more than the search itself
    shared: dict[str, str] = {}
    columns = tuple(list(c) for c in zip(*((d.kwid, shared.setdefault(d.file, d.file),
                                            shared.setdefault(d.channel, d.channel), d.tbeg, d.dur, d.score,
                                            d.decision, shared.setdefault(d.utterance or "", d.utterance or ""))
                                           for d in result.detections), strict=True))
    result.detections = []
    return result, columns, time.thread_time() - t0


def _search_on_workers(path: str, terms: Sequence[KeywordTerm], options: _SearchOptions,
                       long_hits: dict[tuple[str, ...], list[IndexHit]],
                       executor) -> Iterator[tuple[tuple[str, ...], SearchResult]]:
    """The terms cut into shards (sized as :data:`SEARCH_SHARD_TERMS` says), searched on ``executor``'s workers (each opens the
    index itself: on a cluster, ``path`` must be on a file system the workers share); the shards' results are
    given in term order, so that joined they equal the serial search's."""
    from ..core.parallel import run_shards

    items = [(t, long_hits.get(tuple(t.words))) for t in terms]
    sizes = _ShardSizes()
    yield from _parts(run_shards(search_terms_of_shard, sizes.shards(items, terms), executor=executor,
                              args=((os.path.abspath(path), options),)), sizes)


class _ShardSizes:
    """Shards of consecutive terms sized from the CPU seconds per term measured so far (see
    :data:`SEARCH_SHARD_TERMS`)."""

    def __init__(self):
        self.seconds = 0.0
        self.terms = 0

    def record(self, terms: int, seconds: float) -> None:
        self.terms += terms
        self.seconds += seconds

    def next_size(self) -> int:
        if self.terms == 0 or self.seconds <= 0:
            return SEARCH_SHARD_TERMS
        wanted = int(SEARCH_TASK_SECONDS * self.terms / self.seconds)
        return max(max(1, SEARCH_SHARD_TERMS // 16), min(SEARCH_MAX_SHARD_TERMS, wanted))

    def shards(self, items: Sequence, terms: Sequence[KeywordTerm]):
        from ..core.parallel import Shard

        start = index = 0
        while start < len(items):
            end = min(len(items), start + self.next_size())
            yield Shard(index, tuple(items[start:end]), tuple(t.kwid for t in terms[start:end]), "")
            start, index = end, index + 1


def _parts(done, sizes: _ShardSizes) -> Iterator[tuple[tuple[str, ...], SearchResult]]:
    """The results of consecutive shards of terms (``(shard, (result, detections as columns or None, CPU
    seconds))``, in term order) as ``(kwids, result)`` with the detections as objects; each shard's seconds go to
    ``sizes``."""
    for shard, (part, columns, seconds) in done:
        sizes.record(len(shard.items), seconds)
        if columns:
            part.detections.extend(Detection(k, f, c, tb, d, s, y, utterance=u or None)
                                   for k, f, c, tb, d, s, y, u in zip(*columns, strict=True))
        yield shard.keys, part


def tune_ntrue_scale(index: TermIndex | str, terms: Sequence[KeywordTerm], metric: Callable[[list[Detection]], float],
                     *, duration: float, scales: Sequence[float] | None = None, threshold: float = 0.5,
                     beta: float = DEFAULT_BETA, duptime: float = 0.5, lattices: Iterable[Lattice] | None = None
                     ) -> tuple[float, list[tuple[float, float]]]:
    """The KST ``ntrue_scale`` that maximizes ``metric(detections)`` (e.g. the ATWV of the dev set's
    reference) over ``scales`` (default: 0.1 .. 10 in 25 geometric steps); ties go to the scale
    closest to 1.  ``lattices``: as for :func:`search` (read once, before the grid).  Returns ``(best
    scale, [(scale, metric), ...])``."""
    if scales is None:
        scales = [10 ** (k / 12) for k in range(-12, 13)]
    # a path is opened (and closed) here; anything else is an open index (a TermIndex, or an object with its
    # look-ups such as kaldi_index.KaldiIndex)
    own = isinstance(index, (str, bytes, os.PathLike))
    idx = TermIndex(index) if isinstance(index, (str, bytes, os.PathLike)) else index
    try:
        long_hits = None
        if lattices is not None:
            long_terms = [tuple(t.words) for t in terms if len(t.words) > idx.max_length]
            long_hits = long_term_hits(idx, long_terms, lattices) if long_terms else {}
        table = []
        for s in scales:
            res = search(idx, terms, normalization="kst", threshold=threshold, duration=duration, ntrue_scale=s,
                         beta=beta, duptime=duptime, long_hits=long_hits)
            table.append((float(s), float(metric(res.detections))))
    finally:
        if own:
            idx.close()
    best = max(table, key=lambda x: (x[1], -abs(math.log(x[0]))))
    return best[0], table


def atwv_metric(ecf: str, kwlist: str, *, rttm: str | None = None, ctm: str | None = None,
                **score_options) -> Callable[[list[Detection]], float]:
    """``metric(detections)`` = the ATWV of a dev set (the F4DE-exact scorer,
    :func:`lattice_tools.kws.score.score_kws_files`), for :func:`tune_ntrue_scale`."""
    import os
    import tempfile

    from ..io.keyword_search.kwslist import write_kwslist
    from .score import score_kws_files

    def metric(detections: list[Detection]) -> float:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "dev.kwslist.xml")
            write_kwslist(out, detections, kwlist_filename=os.path.basename(kwlist))
            twv = score_kws_files(ecf, kwlist, out, rttm=rttm, ctm=ctm, **score_options).overall.atwv.twv
        if twv is None:  # no keyword of the list occurs in the reference: nothing to tune on
            raise MismatchError("the ATWV is undefined: no keyword of the list occurs in the dev set's reference",
                                path=kwlist)
        return float(twv)

    return metric

