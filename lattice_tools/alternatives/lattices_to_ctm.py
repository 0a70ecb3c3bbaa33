"""Lattices to an alt-CTM file: the job behind ``lattice-tools nbest|sausage|phrases``.

Streams the lattices one utterance at a time (memory bounded by one lattice plus the list of slot depths).
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..core._budget import DEFAULT_MAX_MEMORY, memory_budget
from ..core.alternatives_network import DEFAULT_CHANNEL
from ..core.errors import MismatchError
from ..core.files import progress_bar, write_json
from ..core.parallel import ShardStore, run_shards, shard_lattices, with_companions
from ..io.lattices.inputs import check_times, has_bare_word_ids, read_lattice_inputs
from ..io.lattices.kaldi import TRANSITION_ID_ATTRS
from ..io.transcripts.altctm import AltCtmStatistics, AlternativesCtmWriter, alternatives_ctm_text
from ..io.transcripts.kaldi_data import read_segments as read_kaldi_segments


@dataclass(frozen=True)
class AlternativesCtmSummary:
    """What :func:`make_alternatives_ctm` wrote: the alt-CTM's ``statistics``, the ``kind`` of alternatives,
    the phrase boundary ``posterior_threshold`` (phrases only, else None), ``warnings`` (lattices with bare
    integer word ids), and with ``best_effort`` the lattices whose N-best search a budget stopped
    (``best_effort``: one entry per lattice, its key and the search's certificate as the N-best search reports it
    -- found, proven, bound_log_posterior, gap_nats, stopped_by, complete; None without ``best_effort``)."""

    statistics: AltCtmStatistics
    kind: str
    posterior_threshold: float | None = None
    warnings: tuple[str, ...] = ()
    best_effort: tuple[Mapping, ...] | None = None

    def to_dict(self) -> dict:
        """The summary as JSON values (what ``lattice-tools nbest|sausage|phrases`` print and write with
        ``--json``): the statistics' fields, ``kind``, and ``warnings``, ``posterior_threshold`` and
        ``best_effort`` when there are."""
        out = {**self.statistics.to_dict(), "kind": self.kind}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.posterior_threshold is not None:
            out["posterior_threshold"] = self.posterior_threshold
        if self.best_effort is not None:
            out["best_effort"] = [dict(entry) for entry in self.best_effort]
        return out


def read_segments(path: str, channel: str = DEFAULT_CHANNEL) -> dict[str, tuple[str, str, float]]:
    """Kaldi ``segments`` -> ``{utt: (file, channel, start)}`` (the recording id is the CTM file)."""
    return {utt: (reco, channel, start) for utt, (reco, start, _end) in read_kaldi_segments(path).items()}


@dataclass(frozen=True)
class AlternativesJob:
    """What one utterance's alternatives depend on (sent to the workers with each shard)."""

    kind: str
    n: int | None
    posterior_threshold: float = 0.1
    acoustic_scale: float = 1.0
    lm_scale: float = 1.0
    word_penalty: float = 0.0
    max_memory: int | None = DEFAULT_MAX_MEMORY
    time_limit: float | None = None
    best_effort: bool = False
    channel: str = DEFAULT_CHANNEL     # of an utterance the segments do not place

    def __post_init__(self):
        if self.kind not in ("nbest", "sausage", "phrases"):
            raise ValueError(f"unknown kind {self.kind!r}")
        if self.kind != "nbest" and (self.best_effort or self.time_limit is not None):
            raise ValueError("time_limit and best_effort apply to the exact N-best search only")

    def compute(self, lat):
        """The alternatives of one lattice."""
        a, g, p = self.acoustic_scale, self.lm_scale, self.word_penalty
        # the memory budget replaces the node/state counts (which a user cannot relate to the machine): max_pops
        # and max_states unbounded
        if self.kind == "nbest":
            from .nbest_lists import nbest

            return nbest(lat, self.n, acoustic_scale=a, lm_scale=g, word_penalty=p, max_pops=sys.maxsize,
                         max_states=sys.maxsize, time_limit=self.time_limit, best_effort=self.best_effort)
        if self.kind == "sausage":
            from .sausages import sausage

            return sausage(lat, self.n, acoustic_scale=a, lm_scale=g, word_penalty=p)
        from .phrase_alternatives import phrases

        return phrases(lat, self.n, self.posterior_threshold, acoustic_scale=a, lm_scale=g, word_penalty=p,
                       max_pops=sys.maxsize, max_states=sys.maxsize)


def best_effort_comment(key: str, search: dict) -> str:
    """The alt-CTM comment of a lattice whose N-best search a budget stopped (``search``: the
    certificate summary of :func:`~lattice_tools.alternatives.nbest_lists.certificate_summary`)."""
    bound = search["bound_log_posterior"]
    gap = search["gap_nats"]
    return (f"best-effort N-best of {key}: stopped by the {search['stopped_by']} budget; {search['found']} of "
            f"{search['requested']} sequences found, the first {search['proven']} proven; every sequence not "
            f"listed has log-posterior <= {'none' if bound is None else f'{bound:.6g}'} (gap "
            f"{'none' if gap is None else f'{gap:.6g}'} nats above the last listed)")


def alternatives_ctm_of_shard(job: AlternativesJob, items) -> tuple[str, list[int], list[dict]]:
    """What a worker runs: the alt-CTM text of a shard's ``(lattice, location)`` pairs (``location``: the
    ``(file, channel, offset)`` of the utterance in its recording, or None: file = key, ``job.channel``), under
    the job's memory budget; with the slot depths written and the N-best searches a budget stopped
    (``{"key": ..., **summary}``).  Text, not :class:`Alternatives` objects, comes back: a shard's objects cost
    the driver more to unpickle than the searches cost a worker (sausages)."""
    text: list[str] = []
    depths: list[int] = []
    incomplete: list[dict] = []
    with memory_budget(job.max_memory):
        for lat, location in items:
            alts = job.compute(lat)
            if location is not None:
                alts = alts.with_location(*location)
            elif alts.channel != job.channel:
                alts = alts.with_location(alts.file, job.channel, 0.0)
            search = alts.meta.get("search") or {}
            comment = None
            if search and not search["complete"]:
                incomplete.append({"key": lat.key, **search})
                comment = best_effort_comment(lat.key, search)
            text.extend(alternatives_ctm_text(alts, job.n, comment, depths))
    return "".join(text), depths, incomplete


def make_alternatives_ctm(lattices: Iterable[str], kind: str, n: int | None, out: str, *, json_out: str | None = None,
                          segments: str | None = None, posterior_threshold: float = 0.1, acoustic_scale: float = 1.0,
                          lm_scale: float = 1.0, word_penalty: float = 0.0, format: str | None = None,
                          words: str | None = None, frame_shift: float | None = None,
                          frame_subsampling_factor: int | None = None, keys: str | None = None,
                          channel: str = DEFAULT_CHANNEL,
                          allow_untimed: bool = False, progress: bool | None = None,
                          max_memory: int | None = DEFAULT_MAX_MEMORY, time_limit: float | None = None,
                          best_effort: bool = False, executor=None,
                          shard_dir: str | None = None) -> AlternativesCtmSummary:
    """Compute ``kind`` (``nbest``/``sausage``/``phrases``) alternatives of every lattice, write them as
    an alt-CTM ``out`` cut to depth ``n`` (None = all) and return what was written
    (:class:`AlternativesCtmSummary`; its ``to_dict()`` is also written as JSON to ``json_out`` when given).

    Each lattice goes to CTM file = its key (or its recording with ``segments``) and ``channel``.
    ``keys``: a file naming the lattices in input order (:func:`~lattice_tools.io.lattices.inputs.read_lattice_inputs`).
    A lattice without word times is refused (FormatError naming ``--allow-untimed``) unless
    ``allow_untimed``: its CTM times would all be 0 and, for phrases, it would be one block.

    Every step (reading, the searches, writing) is bounded by ``max_memory`` bytes of resident memory (None:
    no bound; in each worker process when run in parallel) instead of counts of search nodes and
    determinized states; past it they stop with :class:`~lattice_tools.core.errors.BudgetExceededError`
    naming ``max_memory`` (the CLI says ``--max-memory``).

    N-best only: ``time_limit`` seconds per lattice bound the search too; with ``best_effort``, a lattice
    whose search a budget stopped gets the sequences found with a certified bound on the rest instead of
    the error (:func:`~lattice_tools.alternatives.nbest_lists.nbest_search`): a ``;;`` comment line before
    its block in the alt-CTM says so, and the statistics list it under ``best_effort`` (key, found, proven,
    ``bound_log_posterior``, ``gap_nats``, ``stopped_by``).

    ``executor``: None computes here; a :class:`concurrent.futures.Executor` or a ``dask.distributed.Client``
    computes shards of utterances on its workers (:mod:`lattice_tools.core.parallel`); the file is the same
    bytes either way.  ``shard_dir``: finished shards are kept there, so that a killed run started again
    recomputes only the rest; removed when the file is complete."""
    job = AlternativesJob(kind, n, posterior_threshold, acoustic_scale, lm_scale, word_penalty, max_memory,
                          time_limit, best_effort, channel)
    incomplete: list[dict] = []
    bare: list[str] = []
    seg = read_segments(segments, channel) if segments else None
    store = ShardStore(shard_dir) if shard_dir else None

    def checked(lats):
        for lat in lats:
            check_times(lat, allow_untimed=allow_untimed, what=f"the {kind} alt-CTM")
            if has_bare_word_ids(lat.symbols):
                bare.append(lat.key)
            yield lat

    def location(key: str):
        if seg is None:
            return None
        if key not in seg:
            raise MismatchError(f"utterance {key!r} is not in the segments file {segments}", key=key)
        return seg[key]

    with memory_budget(max_memory), AlternativesCtmWriter(out, n) as writer:
        lats = read_lattice_inputs(lattices, format=format, words=words, frame_shift=frame_shift,
                                   frame_subsampling_factor=frame_subsampling_factor, keys=keys)
        shards = with_companions(shard_lattices(checked(progress_bar(lats, desc=kind, unit="lat", progress=progress)),
                                                repr(job), fingerprint=store is not None,
                                                drop_attrs=TRANSITION_ID_ATTRS), location)
        for shard, (text, depths, stopped) in run_shards(alternatives_ctm_of_shard, shards, executor=executor,
                                                         args=(job,), store=store):
            writer.write_text(text, depths, len(shard.keys))
            incomplete.extend(stopped)
    if store:
        store.remove()
    # ids in a CTM score as 100 % errors against any text reference
    warnings = (f"{len(bare)} lattice(s) (first: {bare[0]!r}) have bare integer word ids (no word table): the CTM "
                "has ids, not words; pass --words words.txt",) if bare else ()
    result = AlternativesCtmSummary(writer.stats(), kind,
                                    posterior_threshold=posterior_threshold if kind == "phrases" else None,
                                    warnings=warnings, best_effort=tuple(incomplete) if best_effort else None)
    if json_out:
        write_json(json_out, result.to_dict())
    return result
