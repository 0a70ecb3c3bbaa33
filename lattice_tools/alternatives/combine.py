"""Whole jobs over N-best files: N-best lists -> lattice files, and system combination.

* :func:`nbest_to_lattices`: every N-best list of a file (any format of
  :mod:`lattice_tools.io.transcripts.nbest_files`) as a word lattice (:func:`~.nbest_merge.nbest_lattice`),
  written in any lattice format, so that every lattice command works on any decoder's output.
* :func:`combine_systems` with ``method="rover"``: several systems' CTMs combined exactly as NIST
  ``rover`` does (:mod:`.rover`).
* :func:`combine_systems` with ``method="posterior"``: several systems' N-best lists of the same
  utterances -> one weighted N-best list per utterance (:func:`~.nbest_merge.combine_nbests`) ->
  its lattice (``join="paths"``: path probabilities = the combined posteriors) -> the project's
  sausage engine (Kaldi's MBR confusion network) -> an alt-CTM whose 1-best is the sausage's MBR
  words, whose alternatives are the bins' words with their posteriors and whose oracle is that of
  the confusion network.

  Systems may also be CTMs (1-best output with word confidences; ``*.ctm`` or ``nbest_format="ctm"``):
  a CTM's utterance key is its file field, and its words of an utterance become a confusion network in
  which **each word's confidence is its posterior** (an arc of probability ``c`` beside an epsilon arc of
  ``1 - c``; no confidence = 1; :func:`~.nbest_merge.confidence_lattice`).  The utterance's lattice is
  then the mixture of the N-best systems' lattice (weight: the sum of their weights) and each CTM's
  network (its weight) (:func:`~.nbest_merge.mix_lattices`), whose sausage is written as above.  A
  CTM without lines for an utterance that other systems have is an empty output there (its network is
  one epsilon path).  Without CTM systems nothing changes.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from ..core._budget import DEFAULT_MAX_MEMORY, check_memory, memory_budget
from ..core.alternatives_network import DEFAULT_CHANNEL, Alternatives
from ..core.errors import FormatError, LatticeToolsError, MismatchError
from ..core.symbols import SymbolTable
from ..io.lattices.lattice_files import write_lattices
from ..io.transcripts.altctm import AltCtmStatistics, write_alternatives_ctm
from ..io.transcripts.ctm import CtmAltBlock, read_ctm
from ..io.transcripts.nbest_files import read_nbest
from .nbest_merge import combine_nbests, confidence_lattice, mix_lattices, nbest_lattice
from .rover import RoverSummary, rover_combine
from .sausages import sausage

__all__ = ["nbest_to_lattices", "combine_systems", "COMBINE_METHODS"]

COMBINE_METHODS = ("posterior", "rover")


def nbest_to_lattices(nbest: str, out: str, *, nbest_format: str | None = None, out_format: str | None = None,
                      join: str = "paths", score_kind: str = "logprob", score_scale: float = 1.0,
                      words: str | None = None, acoustic_scale: float = 1.0, frame_shift: float = 0.01,
                      write_words: str | None = None, nemo_manifest: str | None = None,
                      max_memory: int | None = DEFAULT_MAX_MEMORY) -> int:
    """Write the lattice of every N-best list of ``nbest`` to ``out`` (a lattice spec, e.g. ``ark:x.ark``,
    an SLF directory, ``x.pt``); returns the number of lattices (utterances) written.  The word table is ``words`` (a
    ``words.txt``; Kaldi input needs it) extended with the new words of the lists; ``write_words``
    writes it (the ids of Kaldi, k2 and OpenFst output).  ``max_memory``: bytes of resident memory that
    reading, merging and writing may hold (None: no budget); past it BudgetExceededError, and no output."""
    with memory_budget(max_memory):
        return _nbest_to_lattices(nbest, out, nbest_format, out_format, join, score_kind, score_scale, words,
                                  acoustic_scale, frame_shift, write_words, nemo_manifest)


def _nbest_to_lattices(nbest, out, nbest_format, out_format, join, score_kind, score_scale, words, acoustic_scale,
                       frame_shift, write_words, nemo_manifest) -> int:
    table = SymbolTable.read(words) if words else None

    def lattices():
        nonlocal table
        for nb in read_nbest(nbest, nbest_format, score_kind=score_kind, score_scale=score_scale, symbols=table,
                             acoustic_scale=acoustic_scale, frame_shift=frame_shift, nemo_manifest=nemo_manifest):
            lat = nbest_lattice(nb, join=join, symbols=table, frame_shift=frame_shift)
            table = lat.symbols
            check_memory("building the N-best lattices", lat.key or None, advice="")
            yield lat

    n = write_lattices(lattices(), out, out_format)
    if write_words:
        (table if table is not None else SymbolTable()).write(write_words)
    return n


def _system_lists(spec: str, nbest_format: str | None, score_kind: str, score_scale: float,
                  symbols: SymbolTable | None, acoustic_scale: float, frame_shift: float,
                  lattice_nbest: int, nemo_manifest: str | None, keys: str | None = None) -> Iterator[Alternatives]:
    """One system's N-best lists: read from an N-best file, or, with ``nbest_format="lattice"``, the
    exact ``lattice_nbest``-best list of each lattice of ``spec`` (any lattice format, read as every command
    reads lattices: :func:`~lattice_tools.io.lattices.inputs.read_lattice_inputs`, ``keys`` naming them), with
    posteriors under ``acoustic_scale``."""
    if nbest_format != "lattice":
        if keys is not None:
            raise LatticeToolsError("keys name the lattices of lattice inputs (nbest_format='lattice'); an N-best "
                                    "file names its utterances", path=spec)
        yield from read_nbest(spec, nbest_format, score_kind=score_kind, score_scale=score_scale, symbols=symbols,
                              acoustic_scale=acoustic_scale, frame_shift=frame_shift, nemo_manifest=nemo_manifest)
        return
    from ..io.lattices.inputs import read_lattice_inputs
    from .nbest_lists import nbest

    for lat in read_lattice_inputs([spec], words=symbols, frame_shift=frame_shift, keys=keys):
        yield nbest(lat, lattice_nbest, acoustic_scale=acoustic_scale)


#: a CTM system's words of one utterance: (word, start, end, confidence), in time order
CtmWords = list[tuple[str, float, float, float]]


def is_ctm_system(spec: str, nbest_format: str | None) -> bool:
    """Whether a system of ``combine`` is a CTM: ``nbest_format="ctm"``, or no format and a ``.ctm``
    (``.ctm.gz``) name."""
    if nbest_format is not None:
        return nbest_format == "ctm"
    name = spec[:-3] if spec.endswith(".gz") else spec
    return name.endswith(".ctm")


def read_ctm_system(path: str) -> dict[str, CtmWords]:
    """A CTM system's words per utterance (its file field), in time order.  Refused (FormatError naming
    the line): ALT blocks, words without times (``*``), confidences outside [0, 1], a file with words on
    two channels.  A word without a confidence gets 1."""
    words: dict[str, CtmWords] = {}
    channels: dict[str, str] = {}
    for item in read_ctm(path):
        if isinstance(item, CtmAltBlock):
            raise FormatError("an ALT block in a CTM system (posterior combination takes 1-best CTMs; "
                              "give N-best lists instead)", path=path, line=item.lineno)
        if item.start is None or item.duration is None:
            raise FormatError(f"the word {item.word!r} has no time ('*'); posterior combination needs word times",
                              path=path, line=item.lineno)
        conf = 1.0 if item.confidence is None else item.confidence
        if not 0.0 <= conf <= 1.0:
            raise FormatError(f"confidence {conf!r} is not in [0, 1] (it is read as the word's posterior)",
                              path=path, line=item.lineno)
        if channels.setdefault(item.file, item.channel) != item.channel:
            raise FormatError(f"file {item.file!r} has words on channels {channels[item.file]!r} and "
                              f"{item.channel!r}; one channel per utterance", path=path, line=item.lineno)
        words.setdefault(item.file, []).append((item.word, item.start, item.start + item.duration, conf))
        if not len(words[item.file]) & 1023:
            check_memory("reading the CTM systems", item.file)
    for ws in words.values():
        ws.sort(key=lambda w: (w[1], w[2]))
    return words


def _aligned_lists(systems: Sequence[str], nbest_format: str | None, score_kind: str, score_scale: float,
                   symbols: SymbolTable | None, acoustic_scale: float,
                   frame_shift: float, lattice_nbest: int,
                   nemo_manifest: str | None, keys: str | None = None
                   ) -> Iterator[tuple[str, list[Alternatives | CtmWords]]]:
    """``(key, the systems' lists)`` of each utterance, in the first N-best system's order (with only CTM systems:
    their utterances sorted); every N-best system must have the same utterances (MismatchError naming the
    first one missing); a CTM system may lack an utterance (an empty output), not have one of its own."""
    ctms = {i: read_ctm_system(spec) for i, spec in enumerate(systems) if is_ctm_system(spec, nbest_format)}
    per_system = []
    for i, spec in enumerate(systems):
        if i in ctms:
            continue
        lists: dict[str, Alternatives] = {}
        for nb in _system_lists(spec, nbest_format, score_kind, score_scale, symbols, acoustic_scale, frame_shift,
                                lattice_nbest, nemo_manifest, keys):
            lists[nb.key] = nb
            check_memory("reading the systems' lists (all are held to match their utterances)", nb.key)
        per_system.append((spec, lists))
    if per_system:
        first_spec, first = per_system[0]
        utterances: Sequence[str] = list(first)
    else:
        first_spec, utterances = systems[0], sorted({k for words in ctms.values() for k in words})
    for spec, lists in per_system[1:]:
        for key in first:
            if key not in lists:
                raise MismatchError(f"utterance {key!r} of {first_spec} is missing", path=spec, key=key)
        for key in lists:
            if key not in first:
                raise MismatchError(f"utterance {key!r} is not in {first_spec}", path=spec, key=key)
    known = set(utterances)
    for i, words in ctms.items():
        for key in words:
            if key not in known:
                raise MismatchError(f"utterance {key!r} (a file of the CTM) is not in {first_spec}", path=systems[i],
                                    key=key)
    lists_of = iter(per_system)
    order = [ctms[i] if i in ctms else next(lists_of)[1] for i in range(len(systems))]
    for key in utterances:
        yield key, [system.get(key, []) if i in ctms else system[key] for i, system in enumerate(order)]


@dataclass(frozen=True)
class CombineSummary:
    """What :func:`combine_systems` wrote: the ``method`` and the number of ``systems``; ``posterior``: the
    alt-CTM's ``statistics`` and the ``utterances`` combined; ``rover``: ``rover`` (the CTM lines written).  The
    fields of the other method are None."""

    method: str
    systems: int
    statistics: AltCtmStatistics | None = None
    utterances: int | None = None
    rover: RoverSummary | None = None

    def to_dict(self) -> dict:
        """The summary as JSON values (what ``lattice-tools combine`` prints): the alt-CTM's statistics with
        ``systems`` and ``utterances``, or rover's ``systems`` and ``lines``."""
        if self.rover is not None:
            return self.rover.to_dict()
        assert self.statistics is not None, "a posterior combination has the statistics of its alt-CTM"
        return {**self.statistics.to_dict(), "systems": self.systems, "utterances": self.utterances}


def combine_systems(systems: Sequence[str], out: str, *, method: str = "posterior", weights: Sequence[float] = (),
                    n: int | None = None, nbest_format: str | None = None, score_kind: str = "logprob",
                    score_scale: float = 1.0, words: str | None = None, acoustic_scale: float = 1.0,
                    frame_shift: float = 0.01, channel: str = DEFAULT_CHANNEL, allow_untimed: bool = False,
                    rover_method: str = "meth1", alpha: float = 1.0, null_conf: float = 0.0,
                    use_times: bool = False, lattice_nbest: int = 100, nemo_manifest: str | None = None,
                    keys: str | None = None, max_memory: int | None = DEFAULT_MAX_MEMORY) -> CombineSummary:
    """Combine several systems' outputs of the same utterances into one (alt-)CTM ``out``.

    ``method="posterior"``: N-best lists, see the module docstring; with ``nbest_format="lattice"``
    the systems are lattices (any lattice format; ``words`` maps Kaldi/k2 ids) and each lattice's
    exact ``lattice_nbest``-best list is its system's list.  ``method="rover"``: CTMs,
    NIST rover's combination (:mod:`lattice_tools.alternatives.rover`) with ``rover_method``
    (rover's ``-m``), ``alpha`` (``-a``), ``null_conf`` (``-c``) and ``use_times`` (``-T``); the
    N-best options do not apply.  ``weights``: one per system (default equal).
    ``n``: alternatives kept per slot (None = all).  ``allow_untimed``: accept lists without word
    times (every CTM time is then 0); otherwise they raise FormatError.  ``keys``: a file naming the lattices
    of every system in input order (lattice inputs: the systems hold the same utterances).  ``max_memory``:
    bytes of resident memory that every step (reading, merging, the confusion networks, rover) may hold (None:
    no budget); past it BudgetExceededError, and no output.  Returns the :class:`CombineSummary`.
    """
    with memory_budget(max_memory):
        return _combine_systems(systems, out, method, weights, n, nbest_format, score_kind, score_scale, words,
                                acoustic_scale, frame_shift, channel, allow_untimed, rover_method, alpha, null_conf,
                                use_times, lattice_nbest, nemo_manifest, keys)


def _combine_systems(systems, out, method, weights, n, nbest_format, score_kind, score_scale, words, acoustic_scale,
                     frame_shift, channel, allow_untimed, rover_method, alpha, null_conf, use_times, lattice_nbest,
                     nemo_manifest, keys) -> CombineSummary:
    if method not in COMBINE_METHODS:
        raise LatticeToolsError(f"unknown combination method {method!r} (expected one of {', '.join(COMBINE_METHODS)})")
    if len(systems) < 2:
        raise LatticeToolsError("combination needs at least two systems")
    if method == "rover":
        rover = rover_combine(systems, out, rover_method=rover_method, alpha=alpha, null_conf=null_conf,
                              use_times=use_times)
        return CombineSummary(method, len(systems), rover=rover)
    if weights and len(weights) != len(systems):
        raise LatticeToolsError(f"{len(weights)} weights for {len(systems)} systems")
    if weights and any(not math.isfinite(w) or w < 0 for w in weights):
        raise LatticeToolsError("system weights must be finite numbers >= 0")
    table = SymbolTable.read(words) if words else None
    count = 0

    def sausages():
        nonlocal table, count
        ctm = [is_ctm_system(spec, nbest_format) for spec in systems]
        w = list(weights) if weights else [1.0] * len(systems)
        nbest_weight = math.fsum(x for x, c in zip(w, ctm, strict=True) if not c)
        for key, lists in _aligned_lists(systems, nbest_format, score_kind, score_scale, table, acoustic_scale,
                                         frame_shift, lattice_nbest, nemo_manifest, keys):
            # an N-best system's list is an Alternatives, a CTM system's the words of the utterance
            nbests = [(x, wt) for x, wt in zip(lists, w, strict=True) if isinstance(x, Alternatives)]
            if not any(ctm):  # N-best lists only: their merged list's lattice
                merged = combine_nbests([x for x, _ in nbests], list(weights) if weights else None)
                lat = nbest_lattice(merged, join="paths", symbols=table, frame_shift=frame_shift)
            else:  # the mixture of the N-best lists' lattice and the CTMs' confusion networks
                parts = []
                if nbest_weight > 0:
                    merged = combine_nbests([x for x, _ in nbests], [wt for _, wt in nbests])
                    parts.append((nbest_lattice(merged, join="paths", symbols=table, frame_shift=frame_shift),
                                  nbest_weight))
                    table = parts[-1][0].symbols
                for words_of, wt in zip(lists, w, strict=True):
                    if not isinstance(words_of, Alternatives) and wt > 0:
                        parts.append((confidence_lattice(key, words_of, symbols=table, frame_shift=frame_shift), wt))
                        table = parts[-1][0].symbols
                lat = mix_lattices(parts, key=key)
            table = lat.symbols
            count += 1
            confusion = sausage(lat)
            check_memory("combine", lat.key)
            if not lat.has_times:
                if not allow_untimed:
                    raise FormatError("the N-best lists have no word times, a CTM needs them "
                                      "(--allow-untimed writes every time as 0)", key=lat.key or None)
                confusion = replace(confusion, slots=tuple(replace(s, start=0.0, end=0.0) for s in confusion.slots))
            yield confusion.with_location(lat.key, channel)

    stats = write_alternatives_ctm(out, sausages(), n)
    return CombineSummary(method, len(systems), statistics=stats, utterances=count)
