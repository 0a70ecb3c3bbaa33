"""Kaldi ``latbin`` jobs with Kaldi's answers, over whole archives (see ``docs/kaldi.md``).

Each function reads lattices (any format :func:`lattice_tools.io.read_lattices` reads; Kaldi
archives keep their stored state order; ``keys``: a file naming them, see
:func:`~lattice_tools.io.lattices.inputs.read_lattice_inputs`), runs one job per lattice and writes Kaldi's text
tables (:mod:`lattice_tools.io.lattices.kaldi_tables`), within ``max_memory`` bytes of resident memory (None: no
bound; past it BudgetExceededError naming the lattice, and no output is left).  Every output is written atomically: a failure leaves no
half-written file.  The jobs that Kaldi ends with a summary line return it as a frozen record
(:class:`MbrDecodeSummary`, :class:`BestPathSummary`, :class:`NbestPathsSummary`, :class:`DepthSummary`,
:class:`OraclePathSummary`; ``to_dict()`` is what the command prints); the lattice rewrites return the number of
lattices written.  The ``lattice-tools`` commands of the same names are thin wrappers.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..core._budget import DEFAULT_MAX_MEMORY, memory_budget
from ..core.files import atomic_write
from ..io.lattices import kaldi_tables as T
from ..io.lattices.inputs import read_lattice_inputs


@dataclass(frozen=True, slots=True)
class MbrDecodeSummary:
    """What ``lattice-mbr-decode`` logs at the end: the ``lattices`` decoded, the MBR ``words``, the Bayes risk
    per lattice (``average_bayes_risk``) and per word (``bayes_risk_per_word``; 0 without lattices or words)."""

    lattices: int
    words: int
    average_bayes_risk: float
    bayes_risk_per_word: float

    def to_dict(self) -> dict:
        return {"lattices": self.lattices, "words": self.words, "average_bayes_risk": self.average_bayes_risk,
                "bayes_risk_per_word": self.bayes_risk_per_word}


@dataclass(frozen=True, slots=True)
class BestPathSummary:
    """What ``lattice-best-path`` logs at the end: the ``lattices``, their ``frames`` and the best paths' costs
    per frame (total, graph and acoustic, after scaling, summed in float as Kaldi sums them; 0 without frames)."""

    lattices: int
    frames: int
    cost_per_frame: float
    graph_per_frame: float
    acoustic_per_frame: float

    def to_dict(self) -> dict:
        return {"lattices": self.lattices, "frames": self.frames, "cost_per_frame": self.cost_per_frame,
                "graph_per_frame": self.graph_per_frame, "acoustic_per_frame": self.acoustic_per_frame}


@dataclass(frozen=True, slots=True)
class NbestPathsSummary:
    """What ``lattice-to-nbest`` logs: the ``lattices`` and the N-best ``entries`` written (at most n each)."""

    lattices: int
    entries: int

    def to_dict(self) -> dict:
        return {"lattices": self.lattices, "entries": self.entries}


@dataclass(frozen=True, slots=True)
class DepthSummary:
    """What ``lattice-depth`` logs at the end: the ``lattices``, their ``frames`` and the overall ``density``
    (arcs crossing a frame, frame-weighted over all lattices; 0 without frames)."""

    lattices: int
    frames: int
    density: float

    def to_dict(self) -> dict:
        return {"lattices": self.lattices, "frames": self.frames, "density": self.density}


@dataclass(frozen=True, slots=True)
class UtteranceErrors:
    """One utterance of :class:`OraclePathSummary`: the oracle path's word ``errors`` against its reference
    ``words``."""

    errors: int
    words: int

    def to_dict(self) -> dict:
        return {"errors": self.errors, "words": self.words}


@dataclass(frozen=True)
class OraclePathSummary:
    """What ``lattice-oracle`` logs: the total ``errors`` against the reference ``words`` and ``wer`` (percent; 0
    without words); ``insertions``, ``deletions``, ``substitutions`` of one optimal alignment per utterance;
    ``missing_references``: lattices without a reference (left out); ``utterances``: the errors of every
    utterance scored, by key (a mapping: one entry per lattice, in input order)."""

    errors: int
    words: int
    insertions: int
    deletions: int
    substitutions: int
    wer: float
    missing_references: int
    utterances: Mapping[str, UtteranceErrors]

    def totals(self) -> dict:
        """The totals as JSON values (what ``lattice-tools oracle-path`` prints without ``--json``)."""
        return {"errors": self.errors, "words": self.words, "insertions": self.insertions,
                "deletions": self.deletions, "substitutions": self.substitutions, "wer": self.wer,
                "missing_references": self.missing_references}

    def to_dict(self) -> dict:
        """The totals and every utterance's errors as JSON values (what ``oracle-path --json`` writes)."""
        return {**self.totals(), "utterances": {k: u.to_dict() for k, u in self.utterances.items()}}


def _open_all(stack: contextlib.ExitStack, **paths):
    return {k: (stack.enter_context(atomic_write(p)) if p else None) for k, p in paths.items()}


def mbr_decode(lattices: Iterable[str] | str, *, tra: str | None = None, bayes_risk: str | None = None,
               sausage_stats: str | None = None, times: str | None = None, one_best_times: bool = False,
               ctm: str | None = None, confidence_digits: int = 2, format: str | None = None, words: str | None = None,
               frame_shift: float | None = None, frame_subsampling_factor: int | None = None, keys: str | None = None,
               max_memory: int | None = DEFAULT_MAX_MEMORY,
               acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0) -> MbrDecodeSummary:
    """Kaldi's ``lattice-mbr-decode`` (``tra``, ``bayes_risk``, ``sausage_stats``, ``times``, with
    ``--one-best-times``) and ``lattice-to-ctm-conf`` (``ctm``: the MBR words with their
    confidences; times are seconds = frames x the lattices' frame shift).  Returns the
    :class:`MbrDecodeSummary` Kaldi logs."""
    from ..alternatives.sausages import mbr_decode as decode_one

    n_done = n_words = 0
    total_risk = 0.0
    with contextlib.ExitStack() as stack:
        stack.enter_context(memory_budget(max_memory))
        out = _open_all(stack, tra=tra, bayes_risk=bayes_risk, sausage_stats=sausage_stats, times=times, ctm=ctm)
        for lat in read_lattice_inputs(lattices, format=format, words=words, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor, keys=keys):
            r = decode_one(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
            key = lat.key
            if out["tra"]:
                out["tra"].write(T.int_vector_line(key, r.words))
            if out["bayes_risk"]:
                out["bayes_risk"].write(T.float_line(key, r.bayes_risk))
            if out["sausage_stats"]:
                out["sausage_stats"].write(T.posterior_line(key, r.bins))
            if out["times"]:
                out["times"].write(T.float_pairs_line(key, r.one_best_times if one_best_times else r.bin_times))
            if out["ctm"]:
                names = [lat.symbols.word(w) for w in r.words]
                out["ctm"].writelines(T.ctm_conf_lines(key, names, r.one_best_times, r.confidences,
                                                       lat.frame_shift, confidence_digits))
            n_done += 1
            n_words += len(r.words)
            total_risk += r.bayes_risk
    return MbrDecodeSummary(lattices=n_done, words=n_words,
                            average_bayes_risk=total_risk / n_done if n_done else 0.0,
                            bayes_risk_per_word=total_risk / n_words if n_words else 0.0)


def best_path(lattices: Iterable[str] | str, *, tra: str | None = None, ctm: str | None = None,
              costs: str | None = None, format: str | None = None, words: str | None = None,
              frame_shift: float | None = None, frame_subsampling_factor: int | None = None, keys: str | None = None,
              max_memory: int | None = DEFAULT_MAX_MEMORY,
              acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0) -> BestPathSummary:
    """Kaldi's ``lattice-best-path`` (``tra``: word ids), ``lattice-1best | nbest-to-ctm`` (``ctm``:
    the best path's words with their frames, in seconds) and the costs ``lattice-best-path`` logs
    (``costs``: ``key graph acoustic total frames``, after scaling).  Returns Kaldi's summary
    (:class:`BestPathSummary`)."""
    import numpy as np

    from ..algorithms.kaldi_ops import best_path_kaldi, compact_best_path_reader
    from ..core.symbols import SymbolTable
    from ..io.lattices.kaldi import CompiledRecord

    table = SymbolTable.read(os.fspath(words)) if isinstance(words, (str, os.PathLike)) else words
    # binary CompactLattices: the best path computed as the archive is read (the same engine, no hub lattice)
    compact = compact_best_path_reader(table, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                                       word_penalty=word_penalty)
    n_done = n_frames = 0
    tot_g = tot_a = np.float32(0.0)
    with contextlib.ExitStack() as stack:
        stack.enter_context(memory_budget(max_memory))
        out = _open_all(stack, tra=tra, ctm=ctm, costs=costs)
        for lat in read_lattice_inputs(lattices, format=format, words=table, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                                       kaldi_compact=compact):
            if isinstance(lat, CompiledRecord):
                words_, starts, durations, graph_cost, acoustic_cost, num_frames = lat.value
                symbols, frame_shift_ = table, lat.frame_shift
            else:
                bp = best_path_kaldi(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
                arcs = [a for a in bp.arcs if lat.word[a] != 0]
                words_, graph_cost, acoustic_cost, num_frames = bp.words, bp.graph_cost, bp.acoustic_cost, bp.num_frames
                starts = [int(lat.t0[a]) for a in arcs]
                durations = [int(lat.t1[a] - lat.t0[a]) for a in arcs]
                symbols, frame_shift_ = lat.symbols, lat.frame_shift
            key = lat.key
            if out["tra"]:
                out["tra"].write(T.int_vector_line(key, words_))
            if out["costs"]:
                out["costs"].write(f"{key} {graph_cost:.6g} {acoustic_cost:.6g} "
                                   f"{float(np.float32(graph_cost + acoustic_cost)):.6g} {num_frames}\n")
            if out["ctm"]:
                names = [symbols.word(w) if symbols is not None else str(w) for w in words_]
                out["ctm"].writelines(T.nbest_ctm_lines(key, names, starts, durations, frame_shift_))
            n_done += 1
            n_frames += num_frames
            tot_g = np.float32(tot_g + np.float32(graph_cost))
            tot_a = np.float32(tot_a + np.float32(acoustic_cost))
    def per_frame(x):
        return float(x) / n_frames if n_frames else 0.0

    return BestPathSummary(lattices=n_done, frames=n_frames, cost_per_frame=per_frame(tot_g + tot_a),
                           graph_per_frame=per_frame(tot_g), acoustic_per_frame=per_frame(tot_a))


def nbest_paths(lattices: Iterable[str] | str, n: int, *, tra: str | None = None, ctm: str | None = None,
                costs: str | None = None, format: str | None = None, words: str | None = None,
                frame_shift: float | None = None, frame_subsampling_factor: int | None = None, keys: str | None = None,
                max_memory: int | None = DEFAULT_MAX_MEMORY,
                acoustic_scale: float = 1.0, lm_scale: float = 1.0) -> NbestPathsSummary:
    """Kaldi's ``lattice-determinize | lattice-to-nbest --n`` (tropical N-best: the ``n`` distinct
    word sequences with the cheapest best path, best first), keyed ``utt-1 .. utt-n`` as Kaldi
    keys them: ``tra`` (word ids), ``ctm`` (``nbest-to-ctm``: each entry's best path) and ``costs``
    (``key graph acoustic total frames``, unscaled as the N-best lattices store them).  Returns the
    :class:`NbestPathsSummary`."""
    import numpy as np

    from ..algorithms.kaldi_ops import nbest_kaldi

    n_lat = n_ent = 0
    with contextlib.ExitStack() as stack:
        stack.enter_context(memory_budget(max_memory))
        out = _open_all(stack, tra=tra, ctm=ctm, costs=costs)
        for lat in read_lattice_inputs(lattices, format=format, words=words, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor, keys=keys):
            entries = nbest_kaldi(lat, n, acoustic_scale=acoustic_scale, lm_scale=lm_scale)
            dur = (lat.t1 - lat.t0) if lat.has_times else np.zeros(lat.num_arcs, np.int64)
            for i, e in enumerate(entries, 1):
                key = f"{lat.key}-{i}"
                if out["tra"]:
                    out["tra"].write(T.int_vector_line(key, e.words))
                if out["costs"]:
                    frames = int(dur[list(e.arcs)].sum()) if e.arcs else 0
                    out["costs"].write(f"{key} {e.graph_cost:.6g} {e.acoustic_cost:.6g} "
                                       f"{e.graph_cost + e.acoustic_cost:.6g} {frames}\n")
                if out["ctm"]:
                    arcs = [a for a in e.arcs if lat.word[a] != 0]
                    out["ctm"].writelines(T.nbest_ctm_lines(key, [lat.symbols.word(int(lat.word[a])) for a in arcs],
                                                            [int(lat.t0[a]) for a in arcs],
                                                            [int(dur[a]) for a in arcs], lat.frame_shift))
            n_lat += 1
            n_ent += len(entries)
    return NbestPathsSummary(lattices=n_lat, entries=n_ent)


def oracle(lattices: Iterable[str] | str, reference: str, *, tra: str | None = None, errors: str | None = None,
           wildcard_symbols: Iterable[int] = (), format: str | None = None, words: str | None = None,
           frame_shift: float | None = None, frame_subsampling_factor: int | None = None, keys: str | None = None,
           max_memory: int | None = DEFAULT_MAX_MEMORY) -> OraclePathSummary:
    """Kaldi's ``lattice-oracle``: for every lattice, the path with the fewest word errors
    (Levenshtein, unit costs, lattice weights ignored) against ``reference`` (Kaldi's int table
    ``utt id id ...``); ``wildcard_symbols`` (ids) are removed from the lattice and the reference
    first, as ``--wildcard-symbols`` does.  Writes ``tra`` (the oracle word ids) and ``errors``
    (``utt errors``, Kaldi's edit-distance table).  Returns the totals Kaldi logs (errors,
    reference words, %WER; insertions/deletions/substitutions of one optimal alignment -- Kaldi
    may split the same total differently when alignments tie) and per-utterance errors
    (:class:`OraclePathSummary`)."""
    from ..core.errors import MismatchError
    from ..oracle.api import lattice_oracle

    refs = T.read_int_vectors(reference)
    wild = {int(w) for w in wildcard_symbols}
    per_utt: dict[str, UtteranceErrors] = {}
    n_missing = n_errors = n_words = n_ins = n_del = n_sub = 0
    with contextlib.ExitStack() as stack:
        stack.enter_context(memory_budget(max_memory))
        out = _open_all(stack, tra=tra, errors=errors)
        for lat in read_lattice_inputs(lattices, format=format, words=words, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor, keys=keys):
            if lat.key not in refs:
                n_missing += 1
                continue
            syms = lat.symbols
            nonwords = {"", "<eps>"} | {syms.word(w) for w in wild if w in syms}
            ref_words = [syms.word(i) if i in syms else str(i) for i in refs[lat.key] if i not in wild and i != 0]
            res = lattice_oracle(lat, ref_words, mode="levenshtein", case_sensitive=True, sclite_ties=False,
                                 nonword=nonwords.__contains__)
            c = res.counts
            errs = c.substitutions + c.deletions + c.insertions
            ids = [syms.id(w) for w in res.words]
            if out["tra"]:
                out["tra"].write(T.int_vector_line(lat.key, ids))
            if out["errors"]:
                out["errors"].write(f"{lat.key} {errs} \n")
            per_utt[lat.key] = UtteranceErrors(errs, len(ref_words))
            n_errors += errs
            n_words += len(ref_words)
            n_ins += c.insertions
            n_del += c.deletions
            n_sub += c.substitutions
    if not per_utt:
        raise MismatchError(f"no lattice has a reference in {reference}")
    return OraclePathSummary(errors=n_errors, words=n_words, insertions=n_ins, deletions=n_del,
                             substitutions=n_sub, wer=100.0 * n_errors / n_words if n_words else 0.0,
                             missing_references=n_missing, utterances=per_utt)


def _rewrite(lattices, out: str, fn, *, out_format, max_memory, **inputs) -> int:
    from ..io import write_lattices

    with memory_budget(max_memory):
        return write_lattices((fn(lat) for lat in read_lattice_inputs(lattices, **inputs)), out, format=out_format)


def scale(lattices: Iterable[str] | str, out: str, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
          format: str | None = None, words: str | None = None, frame_shift: float | None = None,
          frame_subsampling_factor: int | None = None, keys: str | None = None,
          max_memory: int | None = DEFAULT_MAX_MEMORY, out_format: str | None = None) -> int:
    """Kaldi's ``lattice-scale``: every lattice with scaled weights, written to ``out`` (a Kaldi
    wspecifier or any lattice output :func:`lattice_tools.io.write_lattices` takes)."""
    from ..algorithms.kaldi_ops import scale as scale_one

    return _rewrite(lattices, out, lambda lat: scale_one(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale),
                    format=format, words=words, frame_shift=frame_shift,
                    frame_subsampling_factor=frame_subsampling_factor, keys=keys, max_memory=max_memory,
                    out_format=out_format)


def add_penalty(lattices: Iterable[str] | str, out: str, *, word_penalty: float, format: str | None = None,
                words: str | None = None, frame_shift: float | None = None,
                frame_subsampling_factor: int | None = None, keys: str | None = None,
                max_memory: int | None = DEFAULT_MAX_MEMORY, out_format: str | None = None) -> int:
    """Kaldi's ``lattice-add-penalty --word-ins-penalty``: the penalty added to every word arc's graph cost."""
    from ..algorithms.kaldi_ops import add_word_penalty

    return _rewrite(lattices, out, lambda lat: add_word_penalty(lat, word_penalty), format=format, words=words,
                    frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                    max_memory=max_memory, out_format=out_format)


def prune(lattices: Iterable[str] | str, out: str, *, beam: float = 10.0, acoustic_scale: float = 1.0,
          format: str | None = None, words: str | None = None, frame_shift: float | None = None,
          frame_subsampling_factor: int | None = None, keys: str | None = None,
          max_memory: int | None = DEFAULT_MAX_MEMORY, out_format: str | None = None) -> int:
    """Kaldi's ``lattice-prune --beam --acoustic-scale``: arcs and final weights off every path within
    ``beam`` of the best path (costs with the acoustic scale) removed, weights written unscaled."""
    from ..algorithms.kaldi_ops import prune_beam

    return _rewrite(lattices, out, lambda lat: prune_beam(lat, beam, acoustic_scale=acoustic_scale), format=format,
                    words=words, frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor,
                    keys=keys, max_memory=max_memory, out_format=out_format)


def depth(lattices: Iterable[str] | str, *, out: str | None = None, format: str | None = None,
          words: str | None = None, frame_shift: float | None = None,
          frame_subsampling_factor: int | None = None, keys: str | None = None,
          max_memory: int | None = DEFAULT_MAX_MEMORY) -> DepthSummary:
    """Kaldi's ``lattice-depth``: per lattice the average number of arcs crossing a frame (table
    ``utt depth`` to ``out``); returns the overall density (frame-weighted) and the frames
    (:class:`DepthSummary`)."""
    from ..algorithms import lattice_depth

    total = frames = 0.0
    n = 0
    with contextlib.ExitStack() as stack:
        stack.enter_context(memory_budget(max_memory))
        o = _open_all(stack, out=out)["out"]
        for lat in read_lattice_inputs(lattices, format=format, words=words, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor, keys=keys):
            d = lattice_depth(lat)
            t = lat.num_frames
            if o:
                o.write(T.float_line(lat.key, d))
            total += d * t
            frames += t
            n += 1
    return DepthSummary(lattices=n, frames=int(frames), density=total / frames if frames else 0.0)
