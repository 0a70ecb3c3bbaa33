"""Build an on-disk term index from a stream of lattices or alternatives (one utterance in memory
at a time; see :mod:`lattice_tools.kws.store` for the file and :mod:`lattice_tools.kws.index` for
what is indexed)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from ..alternatives._common import is_silence
from ..core._budget import DEFAULT_MAX_MEMORY, memory_budget
from ..core.alternatives_network import Alternatives
from ..core.errors import LatticeToolsError, MismatchError
from ..core.lattice import Lattice
from .index import DEFAULT_MAX_LENGTH, DEFAULT_MAX_SILENCE, alternatives_hit_columns, lattice_hit_columns
from .store import IndexWriter, normalized_settings, settings_problem


def _settings(max_length, max_silence, min_posterior, representation):
    import math
    import numbers

    if isinstance(max_silence, numbers.Real) and float(max_silence) == math.inf:
        max_silence = None  # an infinite limit is no limit
    settings = {"max_length": int(max_length) if isinstance(max_length, numbers.Integral) else max_length,
                "max_silence": max_silence, "representation": representation,
                "min_posterior": float(min_posterior) if isinstance(min_posterior, numbers.Real) else min_posterior}
    problem = settings_problem(settings)
    if problem is not None:
        key = problem.split()[0]
        raise LatticeToolsError(f"{problem}, got {settings[key]!r}")
    return normalized_settings(settings)


@dataclass(frozen=True)
class IndexSummary:
    """What an index build left in the index file: its utterances and hits (those of an index appended to
    included), and the posterior mass of the hits this build left out (``min_posterior``)."""

    utterances: int
    hits: int
    pruned_mass: float

    def to_dict(self) -> dict:
        """The summary as JSON values (what ``lattice-tools kws index`` prints, with the index's path)."""
        return {"utterances": self.utterances, "hits": self.hits, "pruned_mass": self.pruned_mass}


def build_lattice_index(lattices: Iterable[Lattice], path: str, *, max_length: int = DEFAULT_MAX_LENGTH,
                        max_silence: float | None = DEFAULT_MAX_SILENCE, min_posterior: float = 0.0,
                        acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                        silence_words: Iterable[str] | None = None,
                        segments: Mapping[str, tuple[str, str, float]] | None = None, channel: str = "1",
                        append: bool = False, progress=None, silence_rule: str = "gap", executor=None,
                        shard_dir: str | None = None, max_memory: int | None = DEFAULT_MAX_MEMORY) -> IndexSummary:
    """Index every lattice of ``lattices`` (streamed) into the SQLite index ``path``.

    ``segments`` maps a lattice key to ``(file, channel, offset seconds)`` (Kaldi ``segments``);
    without it a lattice is recording ``key``, channel ``channel``, offset 0.  The vocabulary (for the
    out-of-vocabulary check of the search) is every non-silence word of the lattices' symbol tables.
    ``silence_rule`` (``gap`` or ``kaldi``, see :mod:`lattice_tools.kws.index`) is stored in the index.
    Returns an :class:`IndexSummary`.

    ``executor``: the hits are found (:func:`~lattice_tools.kws.index.index_lattice`) in shards of
    utterances on its workers (any :class:`concurrent.futures.Executor` or ``dask.distributed.Client``;
    None: here) and written here in input order, so the index file is the serial build's, byte for byte.
    ``shard_dir``: the finished shards' hits are kept there, so a killed build started again recomputes only
    the rest; removed when the index is complete.
    ``max_memory``: bytes of resident memory the build may use, here and in each worker (None: no budget);
    checked before each chunk of partial terms is extended and after each utterance's posting lists are
    encoded (:mod:`lattice_tools.core._budget`): over it, a BudgetExceededError and no index.
    """
    with memory_budget(max_memory):
        return _build_lattice_index(lattices, path, max_length=max_length, max_silence=max_silence,
                                    min_posterior=min_posterior, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                                    word_penalty=word_penalty, silence_words=silence_words, segments=segments,
                                    channel=channel, append=append, progress=progress, silence_rule=silence_rule,
                                    executor=executor, shard_dir=shard_dir, max_memory=max_memory)


def _build_lattice_index(lattices, path, *, max_length, max_silence, min_posterior, acoustic_scale, lm_scale,
                         word_penalty, silence_words, segments, channel, append, progress, silence_rule, executor,
                         shard_dir, max_memory) -> IndexSummary:
    from .index import SILENCE_RULES

    if silence_rule not in SILENCE_RULES:
        raise LatticeToolsError(f"silence_rule must be one of {', '.join(SILENCE_RULES)}, got {silence_rule!r}")
    settings = {**_settings(max_length, max_silence, min_posterior, "lattice"), "silence_rule": silence_rule}
    silence = None if silence_words is None else frozenset(silence_words)
    seen_tables: set[int] = set()
    pruned = 0.0
    job = LatticeIndexJob(max_length, max_silence, min_posterior, acoustic_scale, lm_scale, word_penalty,
                          None if silence is None else tuple(sorted(silence)), silence_rule, max_memory)
    # recorded so that a term longer than max_length can be searched in the same lattices, read the same way
    lattice_search = {"acoustic_scale": acoustic_scale, "lm_scale": lm_scale, "word_penalty": word_penalty,
                      "silence_words": None if silence is None else sorted(silence)}
    with IndexWriter(path, settings, append=append, lattice_search=lattice_search) as writer:
        for lat, (file, chan, offset), columns, pruned_mass in _lattice_hits(lattices, job, segments, channel,
                                                                             executor, shard_dir):
            if id(lat.symbols) not in seen_tables:
                seen_tables.add(id(lat.symbols))
                writer.add_vocabulary(w for w, _ in lat.symbols if not is_silence(w, silence))
            writer.add_hit_columns(lat.key, file, chan, columns, pruned_mass, offset=offset)
            del columns
            pruned += pruned_mass
            if progress is not None:
                progress(lat.key)
        result = IndexSummary(writer.num_utterances, writer.num_hits, pruned)
    if shard_dir:
        from ..core.parallel import ShardStore

        ShardStore(shard_dir).remove()
    return result


@dataclass(frozen=True)
class LatticeIndexJob:
    """What a lattice's hits depend on besides the lattice and its place (sent with each shard)."""

    max_length: int
    max_silence: float | None
    min_posterior: float
    acoustic_scale: float
    lm_scale: float
    word_penalty: float
    silence_words: tuple | None
    silence_rule: str = "gap"
    max_memory: int | None = DEFAULT_MAX_MEMORY


def lattice_hits_of_shard(job: LatticeIndexJob, items) -> list:
    """What a worker computes for the ``(lattice, (file, channel, offset))`` pairs of a shard:
    ``(hits as HitColumns, pruned posterior mass)`` of each (numpy columns: no Python object per hit, so
    they pickle fast and take about 36 bytes per hit)."""
    out = []
    with memory_budget(job.max_memory):  # in a worker process too
        for lat, (_file, _chan, offset) in items:
            stats: dict = {}
            columns = lattice_hit_columns(lat, max_length=job.max_length, max_silence=job.max_silence,
                                          min_posterior=job.min_posterior, acoustic_scale=job.acoustic_scale,
                                          lm_scale=job.lm_scale, word_penalty=job.word_penalty,
                                          silence_words=job.silence_words, offset=offset, stats=stats,
                                          silence_rule=job.silence_rule)
            out.append((columns, stats.get("pruned_mass", 0.0)))
    return out


def _lattice_hits(lattices, job: LatticeIndexJob, segments, channel: str, executor,
                  shard_dir: str | None = None) -> Iterator[tuple]:
    """``(lattice, (file, channel, offset), hit columns, pruned mass)`` of every lattice, in input order, computed in
    shards (:mod:`lattice_tools.core.parallel`) here or on the workers of ``executor``."""
    from ..core.parallel import ShardStore, run_shards, shard_lattices, with_companions

    def place(key):
        if segments is None:
            return key, channel, 0.0
        if key not in segments:
            raise MismatchError(f"utterance {key!r} is not in the segments", key=key)
        return tuple(segments[key])

    # serially one utterance at a time: the build then holds one lattice and its hits, as it always has
    store = ShardStore(shard_dir) if shard_dir else None
    shards = with_companions(shard_lattices(lattices, repr(job), fingerprint=store is not None,
                                            max_utterances=1 if executor is None else None), place)
    for shard, results in run_shards(lattice_hits_of_shard, shards, executor=executor, args=(job,), store=store):
        for (lat, where), (columns, pruned_mass) in zip(shard.items, results, strict=True):
            yield lat, where, columns, pruned_mass


def build_alternatives_index(alternatives: Iterable[Alternatives], path: str, representation: str, *,
                             max_length: int = DEFAULT_MAX_LENGTH, max_silence: float | None = DEFAULT_MAX_SILENCE,
                             min_posterior: float = 0.0, silence_words: Iterable[str] | None = None,
                             vocabulary: Iterable[str] | None = None, append: bool = False,
                             max_memory: int | None = DEFAULT_MAX_MEMORY) -> IndexSummary:
    """Index alternatives (``representation``: ``1best``, ``nbest``, ``sausage`` or ``phrase``) into
    the SQLite index ``path``; each :class:`Alternatives` is one utterance (its ``key``), already
    placed in its ``file``/``channel``.  The vocabulary is ``vocabulary`` if given (e.g. the
    recognizer's words.txt), else each Alternatives' ``meta["vocabulary"]`` (e.g. the words of the
    lattice it was computed from), else the words the alternatives contain.  ``max_memory``: as for
    :func:`build_lattice_index` (it also bounds the alternatives' searches when ``alternatives`` computes
    them as it is read).  Returns an :class:`IndexSummary`."""
    with memory_budget(max_memory):
        return _build_alternatives_index(alternatives, path, representation, max_length=max_length,
                                         max_silence=max_silence, min_posterior=min_posterior,
                                         silence_words=silence_words, vocabulary=vocabulary, append=append)


def _build_alternatives_index(alternatives, path, representation, *, max_length, max_silence, min_posterior,
                              silence_words, vocabulary, append) -> IndexSummary:
    settings = _settings(max_length, max_silence, min_posterior, representation)
    silence = None if silence_words is None else frozenset(silence_words)
    pruned = 0.0
    with IndexWriter(path, settings, append=append) as writer:
        if vocabulary is not None:
            writer.add_vocabulary(w for w in vocabulary if not is_silence(w, silence))
        for alts in alternatives:
            if vocabulary is None:
                # the words of the lattice the alternatives came from (meta["vocabulary"]), else their own
                own = alts.meta.get("vocabulary") or {w for slot in alts.slots for a in slot.alternatives
                                                      for w in a.words}
                writer.add_vocabulary({w for w in own if not is_silence(w, silence)})
            stats: dict = {}
            columns = alternatives_hit_columns(alts, max_length=max_length, max_silence=max_silence,
                                               min_posterior=min_posterior, silence_words=silence_words, stats=stats)
            writer.add_hit_columns(alts.key, alts.file, alts.channel, columns, stats.get("pruned_mass", 0.0))
            pruned += stats.get("pruned_mass", 0.0)
        return IndexSummary(writer.num_utterances, writer.num_hits, pruned)
