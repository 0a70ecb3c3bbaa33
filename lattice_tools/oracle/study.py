"""The density-vs-oracle study: Faria et al., Tables 3-6 for your own lattices, with bootstrap CIs and plots.

For every *density* (a lattice set, optionally posterior-pruned at several thresholds) and every
*representation* (N-best, sausage, phrase, whole lattice; the 1-best is always added as the
baseline), the oracle WER is computed exactly for every requested depth N, together with the
columns of Faria et al.'s tables: N, N_max, N_.9, N_.5 (depth of the deepest, 90th-percentile and
median block) and MB (size of the gzip-compressed alt-CTM of that representation), plus C/S/D/I,
precision, recall and utterance-bootstrap 95% intervals.

Outputs under ``out_dir``:

* ``cells/<density>/<representation>-<N>.json`` -- one finished cell (per-utterance counts and
  costs, depths, MB); a rerun skips finished cells, so a killed study resumes;
* ``altctm/<density>/<representation>-<N>.ctm.gz`` -- the alt-CTM files whose size is MB;
* ``study.md`` (one table per representation, shaped like Tables 3-6), ``study.csv``, ``study.json``
  (all rows and the invariant checks);
* ``oracle_vs_n.png`` and ``oracle_vs_mb.png`` -- oracle WER against N and against MB, one line per
  representation, one panel per density.

Invariants checked on every density (exact, on the summed optimal alignment *cost*, which is what
the oracle minimises -- its integer part, because sclite charges 0.001 for skipping the NULL word
``@`` of an empty alternative while a lattice epsilon is free; in Levenshtein mode the cost is the
error count):
lattice <= N-best(N) <= N-best(1); lattice <= 1-best; N-best and phrase never rise with N;
phrase(N=inf) <= lattice (Faria et al., eq. 6).  The same checks on error counts are reported too
(in sclite mode the cheapest alignment need not have the fewest errors).
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core._budget import memory_budget
from ..core.alternatives_network import depth_statistics
from ..core.counts import ErrorCounts
from ..core.errors import BudgetExceededError, FormatError, LatticeError, LatticeToolsError
from ..core.files import atomic_write, write_json
from ..io.lattices.inputs import check_times, check_word_table, is_text, is_word_ids
from .api import alternatives_oracle_many, lattice_oracle_many
from .bootstrap import bootstrap_systems
from .representations import (
    deletions_only,
    filter_alternatives,
    glm_list,
    lattice_specs,
    make_alternatives,
    refuse_glm_on_lattice,
)

DEFAULT_NS = (1, 2, 10, 100, 1000, 10000)
DEFAULT_REPRESENTATIONS = ("nbest", "sausage", "phrase", "lattice")


def _n_label(n: int | None) -> str:
    return "inf" if n is None else str(int(n))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]", "_", name)


@dataclass(frozen=True, slots=True)
class StudyUtterance:
    """One utterance of a study cell: its key, the oracle's optimal alignment cost and its error counts (what
    the bootstrap draws and what says two cells are over the same utterances)."""

    key: str
    cost: float
    counts: ErrorCounts

    def to_dict(self) -> dict:
        c = self.counts
        return {"key": self.key, "cost": self.cost, "correct": c.correct, "substitutions": c.substitutions,
                "deletions": c.deletions, "insertions": c.insertions, "ref_words": c.ref_words}


#: JSON key -> attribute of a :class:`StudyRow`, in the order of its dict: the cell's name, then (a computed cell)
#: its numbers, then its block depths; ``skipped`` stands for the numbers of a cell a search budget stopped.
_ROW_HEAD = (("representation", "representation"), ("N", "n"), ("density", "density"), ("set", "lattice_set"),
             ("prune", "prune"))
_ROW_NUMBERS = (("utterances", "utterances"), ("arcs", "arcs"), ("cost", "cost"), ("wer", "wer"),
                ("precision", "precision"), ("recall", "recall"), ("C", "correct"), ("S", "substitutions"),
                ("D", "deletions"), ("I", "insertions"), ("ref_words", "ref_words"), ("MB", "MB"),
                ("seconds", "seconds"))
_ROW_DEPTHS = (("N_max", "n_max"), ("N_.9", "n_90"), ("N_.5", "n_50"), ("blocks", "blocks"))
_ROW_INTERVAL = (("wer_low", "wer_low"), ("wer_high", "wer_high"))
_ROW_TYPES = {"representation": "str", "N": "str", "density": "str", "set": "str", "prune": "number", "skipped": "str",
              "utterances": "int", "arcs": "int", "cost": "number", "wer": "number?", "precision": "number?",
              "recall": "number?", "C": "int", "S": "int", "D": "int", "I": "int", "ref_words": "int", "MB": "number",
              "seconds": "number", "N_max": "int?", "N_.9": "int?", "N_.5": "int?", "blocks": "int?",
              "wer_low": "number?", "wer_high": "number?"}
_UTTERANCE_KEYS = ("key", "cost", "correct", "substitutions", "deletions", "insertions", "ref_words")


@dataclass(frozen=True, slots=True)
class StudyRow:
    """One cell of :func:`run_study`: a ``representation`` (``1best``, ``nbest``, ``sausage``, ``phrase``,
    ``lattice``) at depth ``n`` (``"1"``, ``"2"``, ... or ``"inf"``) on one ``density`` (the lattice set
    ``lattice_set`` posterior-pruned at ``prune``, 0 = as given).

    A computed cell has its exact oracle: the summed optimal alignment ``cost``, ``wer`` (%), ``precision``,
    ``recall``, C/S/D/I, ``ref_words``, the ``utterances`` and lattice ``arcs`` it covers, ``MB`` (gzip-compressed
    alt-CTM, for the lattice its SLF), ``seconds`` measured, the block depths N_max / N_.9 / N_.5 and ``blocks``
    (:class:`~lattice_tools.core.alternatives_network.DepthStatistics`; None for the whole lattice), the 95%
    utterance-bootstrap interval ``wer_low``/``wer_high`` (None without a bootstrap) and ``per_utterance`` (the
    cached cell's, while the study runs; not in :meth:`to_dict`).  A cell a search budget stopped has
    ``skipped`` (why) and no numbers."""

    representation: str
    n: str
    density: str
    lattice_set: str
    prune: float
    skipped: str | None = None
    utterances: int | None = None
    arcs: int | None = None
    cost: float | None = None
    wer: float | None = None
    precision: float | None = None
    recall: float | None = None
    correct: int | None = None
    substitutions: int | None = None
    deletions: int | None = None
    insertions: int | None = None
    ref_words: int | None = None
    MB: float | None = None
    seconds: float | None = None
    n_max: int | None = None
    n_90: int | None = None
    n_50: int | None = None
    blocks: int | None = None
    wer_low: float | None = None
    wer_high: float | None = None
    per_utterance: tuple[StudyUtterance, ...] | None = None

    @property
    def cell(self) -> tuple[str, str]:
        """``(representation, n)``: which cell of its density this is."""
        return self.representation, self.n

    @property
    def errors(self) -> int:
        """S + D + I of a computed cell."""
        assert self.skipped is None, "a stopped cell has no counts"
        return int(self.substitutions or 0) + int(self.deletions or 0) + int(self.insertions or 0)

    def to_dict(self) -> dict:
        """The row of ``study.json``: the cell's name, then ``skipped`` or its numbers and block depths, then the
        bootstrap interval when drawn."""
        out = {key: getattr(self, attr) for key, attr in _ROW_HEAD}
        if self.skipped is not None:
            out["skipped"] = self.skipped
            return out
        out.update((key, getattr(self, attr)) for key, attr in _ROW_NUMBERS + _ROW_DEPTHS)
        if self.wer_low is not None or self.wer_high is not None:
            out.update((key, getattr(self, attr)) for key, attr in _ROW_INTERVAL)
        return out

    def cache_dict(self) -> dict:
        """What the cell's cache file holds (besides the settings it was computed with): :meth:`to_dict` with
        ``per_utterance`` after ``seconds`` (read back by :meth:`from_dict`)."""
        out = self.to_dict()
        if self.per_utterance is None:
            return out
        head = {k: v for k, v in out.items() if k not in dict(_ROW_DEPTHS)}
        return {**head, "per_utterance": [u.to_dict() for u in self.per_utterance],
                **{k: out[k] for k, _ in _ROW_DEPTHS}}

    @classmethod
    def from_dict(cls, d: Mapping, path: str | None = None) -> StudyRow:
        """The row of a cached cell (:meth:`cache_dict`) or of :meth:`to_dict` (``per_utterance`` is optional).
        Raises FormatError naming
        ``path`` and the key when a key is missing, unknown or of the wrong type (a cache another version
        wrote, or an edited one)."""
        if not isinstance(d, Mapping):
            raise FormatError("a study cell must be a JSON object", path=path)
        skipped = "skipped" in d
        required = [k for k, _ in _ROW_HEAD] + (["skipped"] if skipped else [k for k, _ in _ROW_NUMBERS + _ROW_DEPTHS])
        allowed = set(required) | ({"per_utterance"} | {k for k, _ in _ROW_INTERVAL} if not skipped else set())
        for key in required:
            if key not in d:
                raise FormatError(f"study cell without {key!r}", path=path, key=key)
        for key in d:
            if key not in allowed:
                raise FormatError(f"unknown key {key!r} in a study cell" +
                                  (" stopped by the search budget" if skipped else ""), path=path, key=str(key))
        for key, value in d.items():
            if key != "per_utterance":
                _check_type(key, value, _ROW_TYPES[key], path)
        values: dict[str, Any] = {attr: d.get(key) for key, attr in _ROW_HEAD + _ROW_NUMBERS + _ROW_DEPTHS + _ROW_INTERVAL}
        return cls(**values, skipped=d.get("skipped"),
                   per_utterance=None if d.get("per_utterance") is None else
                   tuple(_utterance_from_dict(u, path) for u in _as_list(d["per_utterance"], path)))


def _as_list(value, path) -> list:
    if not isinstance(value, list):
        raise FormatError("'per_utterance' of a study cell must be a list", path=path, key="per_utterance")
    return value


def _utterance_from_dict(u, path) -> StudyUtterance:
    if not isinstance(u, Mapping):
        raise FormatError("an utterance of 'per_utterance' must be a JSON object", path=path, key="per_utterance")
    for key in _UTTERANCE_KEYS:
        if key not in u:
            raise FormatError(f"an utterance of 'per_utterance' without {key!r}", path=path, key=key)
    for key in u:
        if key not in _UTTERANCE_KEYS:
            raise FormatError(f"unknown key {key!r} in an utterance of 'per_utterance'", path=path, key=str(key))
    _check_type("key", u["key"], "str", path)
    _check_type("cost", u["cost"], "number", path)
    for key in _UTTERANCE_KEYS[2:]:
        _check_type(key, u[key], "int", path)
    return StudyUtterance(u["key"], u["cost"], ErrorCounts(**{k: u[k] for k in _UTTERANCE_KEYS[2:]}))


def _check_type(key: str, value, kind: str, path) -> None:
    """``value`` of ``key`` is of ``kind``: ``str``, ``int`` or ``number``, with ``?``: or null."""
    if value is None and kind.endswith("?"):
        return
    base = kind.rstrip("?")
    if base == "str":
        ok = isinstance(value, str)
    else:
        ok = isinstance(value, int if base == "int" else (int, float)) and not isinstance(value, bool)
    if not ok:
        what = {"number": "a number", "int": "a whole number", "str": "a string"}[base]
        raise FormatError(f"{key!r} of a study cell must be {what}, not {value!r}"[:200], path=path, key=key)


#: JSON key -> attribute of a :class:`StudyBothWaysRow` (the JSON key is the attribute but for the ``N`` and ``set``).
_BOTH_HEAD = ("density", "set", "prune", "sides", "arcs", "representation", "N")
_BOTH_SEGMENTED = ("seg_wer", "seg_C", "seg_S", "seg_D", "seg_I", "ref_words")
_BOTH_FREE = ("free_wer", "free_C", "free_S", "free_D", "free_I", "ref_words")
_BOTH_ATTR = {"set": "lattice_set", "N": "n"}


@dataclass(frozen=True, slots=True)
class StudyBothWaysRow:
    """One cell of :func:`run_study_both_ways`: a ``representation`` at depth ``n`` on one ``density`` (the
    lattice set ``lattice_set`` pruned at ``prune``; ``sides`` lattices of ``arcs`` arcs), its alt-CTM scored
    *segmented* (``seg_*``: WER in %, C/S/D/I, the summed alignment cost) and *segment-free* (``free_*``),
    ``ref_words``, the words ``moved`` across a segment boundary out of ``paired``, ``MB`` and ``seconds``.  The
    whole lattice has the segment-free numbers only (the ``seg_*``, ``paired`` and ``moved`` are None); a cell a
    search budget stopped has ``skipped`` (why) and no numbers."""

    density: str
    lattice_set: str
    prune: float
    sides: int
    arcs: int
    representation: str
    n: str
    skipped: str | None = None
    seg_wer: float | None = None
    seg_C: int | None = None
    seg_S: int | None = None
    seg_D: int | None = None
    seg_I: int | None = None
    free_wer: float | None = None
    free_C: int | None = None
    free_S: int | None = None
    free_D: int | None = None
    free_I: int | None = None
    ref_words: int | None = None
    seg_cost: float | None = None
    free_cost: float | None = None
    paired: int | None = None
    moved: int | None = None
    MB: float | None = None
    seconds: float | None = None

    @property
    def cell(self) -> tuple[str, str]:
        return self.representation, self.n

    def to_dict(self) -> dict:
        """The row of ``study.json`` (both ways): the cell's name, then ``skipped`` or its numbers."""
        keys: tuple = _BOTH_HEAD
        if self.skipped is not None:
            keys += ("skipped",)
        elif self.seg_cost is not None:
            keys += _BOTH_SEGMENTED + _BOTH_FREE[:-1] + ("seg_cost", "free_cost", "paired", "moved", "MB", "seconds")
        else:
            keys += _BOTH_FREE + ("free_cost", "MB", "seconds")
        return {k: getattr(self, _BOTH_ATTR.get(k, k)) for k in keys}


@dataclass(frozen=True, slots=True)
class StudyInvariant:
    """One check of :func:`check_invariants` on a ``density``: the ``check`` as text (e.g. ``lattice <= 1best``),
    the two cells' sclite costs (``lhs_cost`` <= ``rhs_cost`` on their integer part: sclite prices skipping an
    empty alternative's ``@`` at 0.001, a lattice epsilon is free) and error counts, and whether each ``holds``."""

    density: str
    check: str
    lhs_cost: float
    rhs_cost: float
    holds: bool
    lhs_errors: int
    rhs_errors: int
    holds_on_errors: bool

    def to_dict(self) -> dict:
        """The check as in ``study.json``."""
        return {"density": self.density, "check": self.check, "lhs_cost": self.lhs_cost, "rhs_cost": self.rhs_cost,
                "holds": self.holds, "lhs_errors": self.lhs_errors, "rhs_errors": self.rhs_errors,
                "holds_on_errors": self.holds_on_errors}


@dataclass(frozen=True, slots=True)
class BothWaysInvariant:
    """One check of :func:`check_both_ways` on a ``density``: the ``check`` as text, its two sides (costs or error
    counts, ``lhs`` against ``rhs``) and whether it ``holds``."""

    density: str
    check: str
    lhs: float
    rhs: float
    holds: bool

    def to_dict(self) -> dict:
        """The check as in the both-ways ``study.json``."""
        return {"density": self.density, "check": self.check, "lhs": self.lhs, "rhs": self.rhs, "holds": self.holds}


@dataclass(frozen=True)
class StudyResult:
    """What :func:`run_study` found: one row per cell (:class:`StudyRow`; :class:`StudyBothWaysRow` for the study
    both ways), the invariant checks (:class:`StudyInvariant`; :class:`BothWaysInvariant` for the study both
    ways) and the files written by name (a mapping of output name to path)."""

    rows: tuple[StudyRow, ...] | tuple[StudyBothWaysRow, ...]
    invariants: tuple[StudyInvariant, ...] | tuple[BothWaysInvariant, ...]
    files: dict = field(default_factory=dict)

    def table(self, representation: str) -> list:
        """The rows of one representation, in study order."""
        return [r for r in self.rows if r.representation == representation]

    def to_dict(self) -> dict:
        """The rows and invariants as JSON values (the ``rows`` and ``invariants`` of ``study.json``)."""
        return {"rows": [r.to_dict() for r in self.rows], "invariants": [i.to_dict() for i in self.invariants]}


def _load_set(spec, name: str, **inputs) -> list:
    """One study set: a lattice spec, a list of specs (several archives or a glob: their lattices
    joined, never one dropped) or a list of :class:`Lattice`."""
    if isinstance(spec, (list, tuple)) and not all(isinstance(x, (str, os.PathLike)) for x in spec):
        return list(spec)
    from ..io import read_lattice_inputs

    return list(read_lattice_inputs(lattice_specs(spec), **inputs))


def _density_lattices(lats: list, threshold: float, acoustic_scale: float, lm_scale: float) -> tuple[list, str]:
    """Posterior-prune every lattice at ``threshold`` (0 = as given).  If log-semiring pruning
    leaves no complete path (possible at high thresholds), fall back to tropical max-marginal
    pruning for that lattice (which always keeps the best path) and say so."""
    if threshold <= 0:
        return lats, ""
    from ..algorithms import prune

    out, fallback = [], 0
    for lat in lats:
        try:
            out.append(prune(lat, threshold, acoustic_scale=acoustic_scale, lm_scale=lm_scale))
        except LatticeError:
            out.append(prune(lat, threshold, acoustic_scale=acoustic_scale, lm_scale=lm_scale, log_semiring=False))
            fallback += 1
    return out, (f"{fallback} lattice(s) pruned with tropical max-marginals" if fallback else "")


def _slf_gzip_mb(lats: list) -> float:
    from ..io.lattices.slf import format_slf

    total = 0
    for lat in lats:
        data = format_slf(lat).encode("utf-8")
        total += len(gzip.compress(data, mtime=0))
    return total / 1e6


def _cell_path(out_dir: str, density: str, rep: str, n) -> str:
    return os.path.join(out_dir, "cells", _safe(density), f"{rep}-{_n_label(n)}.json")


def _read_cell(path: str) -> StudyRow:
    """The row of a cached cell (its settings left out); FormatError naming the file and key if it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except ValueError as exc:
        raise FormatError(f"not a study cell ({exc}; remove it to recompute)", path=path) from None
    if not isinstance(d, dict):
        raise FormatError("a study cell must be a JSON object", path=path)
    d.pop("settings", None)
    row = StudyRow.from_dict(d, path)
    if row.skipped is None and row.per_utterance is None:
        raise FormatError("study cell without 'per_utterance'", path=path, key="per_utterance")
    return row


def _notes_path(out_dir: str, density: str) -> str:
    return os.path.join(out_dir, "cells", _safe(density), "notes.json")


def _read_notes(path: str, settings: dict) -> list[tuple[str, str]]:
    """The notes a density's lattices gave when its cells were computed with ``settings`` (none if the cache has
    no current notes file); FormatError naming the file if it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except OSError:
        return []
    except ValueError as exc:
        raise FormatError(f"not a study notes file ({exc}; remove it to recompute)", path=path) from None
    if not isinstance(d, dict) or d.get("settings") != settings:
        return []
    pairs = d.get("notes")
    if not (isinstance(pairs, list) and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                            for p in pairs)):
        raise FormatError("study notes must be a list of [name, note] pairs", path=path, key="notes")
    return [(name, note) for name, note in pairs]


def _cell_current(path: str, settings: dict) -> bool:
    """A cached cell that exists and was computed with ``settings``."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f).get("settings") == settings
    except (OSError, ValueError):
        return False


def _write_json(path: str, obj) -> None:
    write_json(path, obj, indent=1)


def run_study(lattice_sets: Mapping[str, object], references, *, ns: Sequence = DEFAULT_NS,
              representations: Sequence[str] = DEFAULT_REPRESENTATIONS, prune_thresholds: Sequence[float] = (0.0,),
              out_dir: str, mode: str = "sclite", optional_deletable: bool = False, include_infinity: bool = True,
              posterior_threshold: float = 0.1, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
              word_penalty: float = 0.0, bootstrap: int = 1000, seed: int = 0, max_pops: int = 2_000_000,
              inf_max_pops: int = 200_000, plots: bool = True, progress: bool | None = None,
              ref_format: str | None = None, format: str | None = None, words: str | None = None,
              frame_shift: float | None = None, frame_subsampling_factor: int | None = None,
              keys: str | None = None, allow_untimed: bool = False, title: str | None = None,
              baselines: list | None = None, encoding: str = "utf-8", allow_missing: bool = False,
              glm=None, max_memory: int | None = None, segments: str | None = None,
              segment_free: bool = False, collar: float | None = None, executor=None) -> StudyResult:
    """Sweep N per representation and lattice density; write tables, plots and per-cell caches.

    Args:
      lattice_sets: ``{name: lattices}``, each a spec for :func:`lattice_tools.io.read_lattices`
        (SLF directory, ``ark:``, ``.pt`` ...), a list of specs (e.g. the archives ``lat.1.gz``,
        ``lat.2.gz`` of one Kaldi decode: joined into one set) or a list of :class:`Lattice` --
        e.g. the same audio decoded with different beams.
      references: ``{key: transcript}`` or a path (stm/trn/text, read by the scorer's input layer
        :mod:`lattice_tools.scoring.inputs`; ``encoding``: its text encoding); keys must match the
        lattice keys (per-utterance lattices, reference segmentation).
      glm: one GLM file or several, applied like csrfilt to the reference file and to the words of
        every representation's alternatives (as ``score --glm`` does to an alt-CTM); refused with
        the ``lattice`` representation (a whole lattice is no transcript).
      ns: depths N to request; ``include_infinity`` adds N=inf (every alternative) for sausage
        and phrase and N-best, each when the search budget ``inf_max_pops`` allows it (else the
        cell is recorded as skipped); ``max_pops`` bounds the finite-N searches.
      prune_thresholds: posterior-pruning thresholds; each (set, threshold) is one density.
      mode: ``"sclite"`` (sclite weights and tie rules, as for an alt-CTM) or ``"levenshtein"``.
      bootstrap, seed: utterance-bootstrap replications (0 = no intervals) and its seed.
      ref_format: ``stm``/``trn``/``text`` (default: detected, see :func:`load_references`).
      format, words, frame_shift, frame_subsampling_factor, keys: how lattice specs are read
        (:func:`lattice_tools.io.read_lattice_inputs`; ``keys`` names the lattices of every set, in input
        order: the sets are densities of the same utterances).
      allow_untimed: accept lattices without word times although the study writes alt-CTMs (every
        time 0.00) and phrase cells (one phrase per utterance); otherwise FormatError.
      title: what the data is, for the table and plot titles (default: the set names and the
        reference file name).
      baselines: other 1-best hypotheses to show beside the lattice's best path, e.g. the
        decoder's own: ``[{"density", "name", "wer", "C", "S", "D", "I", "ref_words"}]``.
      segments: a Kaldi ``segments`` file keying an STM reference by utterance (as ``oracle --segments``).
      max_memory: bytes of resident memory every step may reach (reading, pruning, the searches, the
        oracles): past it BudgetExceededError (at N=inf the cell is recorded as stopped by the budget
        instead); None: the searches' node budgets ``max_pops``/``inf_max_pops`` only.
      executor: None computes here; a :class:`concurrent.futures.Executor` or a ``dask.distributed.Client``
        computes each cell's per-utterance work (searches, oracles) in shards of utterances on its
        workers (:mod:`lattice_tools.core.parallel`); the cells, tables and alt-CTMs are the same (but for
        their ``seconds``: the computation's time summed over the shards); the bootstrap is drawn
        after gathering.  The per-cell cache makes a killed study resume at the cells not yet written.
      allow_missing: as ``score`` and ``oracle`` (:func:`lattice_tools.scoring.inputs.match_keys`):
        lattices without reference are left out, reference utterances without a lattice are left
        out of every WER (trn/text) or scored as all deletions (STM files), said in the table's
        notes; otherwise :class:`MismatchError`, since leaving their words out makes every WER too
        low.
      segment_free, collar: whole-side lattices against an STM, every cell scored both ways -- segmented
        as Faria et al. do and segment-free (with ``collar``) -- with the words that moved across a segment
        boundary counted: :func:`run_study_both_ways` (no bootstrap intervals, plots or cell cache); there
        ``segments`` places per-utterance lattices on their recording's side at the utterance's start.
    Raises:
      LatticeToolsError instead of writing tables whose invariants fail or could not be checked
      (no two cells of a density comparable, or cells of one density over different utterances).
    Returns:
      :class:`StudyResult`.  Files are written atomically under ``out_dir``.
    """
    from tqdm import tqdm

    if segment_free:
        if not isinstance(references, (str, os.PathLike)) or ref_format not in (None, "stm") or baselines \
                or allow_untimed:
            raise LatticeToolsError("the segment-free study needs the reference as an STM file, lattices with "
                                    "times, and no baselines")
        return run_study_both_ways(lattice_sets, str(references), ns=ns, representations=representations,
                                   prune_thresholds=prune_thresholds, out_dir=out_dir, mode=mode,
                                   optional_deletable=optional_deletable, include_infinity=include_infinity,
                                   posterior_threshold=posterior_threshold, acoustic_scale=acoustic_scale,
                                   lm_scale=lm_scale, word_penalty=word_penalty, max_pops=max_pops,
                                   inf_max_pops=inf_max_pops, collar=collar, format=format, words=words,
                                   frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor,
                                   keys=keys, title=title, encoding=encoding, allow_missing=allow_missing, glm=glm,
                                   max_memory=max_memory, segments=segments)
    if collar is not None:
        raise LatticeToolsError("a collar applies to the segment-free study only (segment_free=True)")

    from ..scoring.inputs import match_keys, read_reference, reference_transcripts

    reference_name = str(references) if isinstance(references, (str, os.PathLike)) else None
    reference_format = "trn"
    glms = glm_list(glm)
    if isinstance(references, (str, os.PathLike)):
        ref = read_reference(str(references), ref_format, glms=glms, encoding=encoding)
        reference_format = ref.format
        from ..io.transcripts.kaldi_data import read_segments

        references = reference_transcripts(ref, read_segments(segments) if segments else None)
    elif glms or segments:
        raise LatticeToolsError("glm and segments need the reference as a file")
    if not references:
        raise LatticeToolsError("nothing to score: the reference has no utterances")
    reps = [r for r in representations if r != "1best"]
    refuse_glm_on_lattice(glms, reps)
    os.makedirs(out_dir, exist_ok=True)
    unknown = set(reps) - {"nbest", "sausage", "phrase", "lattice"}
    if unknown:
        raise LatticeToolsError(f"unknown representation(s) {sorted(unknown)}; expected nbest, sausage, phrase, lattice")
    finite_ns = sorted({int(n) for n in ns if n is not None and n != math.inf})
    if any(n < 1 for n in finite_ns):
        raise LatticeToolsError(f"N must be >= 1, got {finite_ns}")
    want_inf = include_infinity or any(n is None or n == math.inf for n in ns)

    # Plan the cells per density: (representation, N).
    def cells_for(rep: str) -> list:
        if rep == "lattice":
            return [None]
        out: list[int | None] = list(finite_ns)
        if want_inf:
            out.append(None)
        return out

    densities = []
    for set_name in lattice_sets:
        for thr in prune_thresholds:
            densities.append((set_name, float(thr), set_name if thr == 0 else f"{set_name}@{thr:g}"))
    total_cells = sum(1 + sum(len(cells_for(r)) for r in reps) for _ in densities)
    # (on a terminal, shown once the study has run ~2 s)
    bar = tqdm(total=total_cells, desc="study cells", unit="cell", delay=2,
               disable=(not _isatty()) if progress is None else not progress)
    scales = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    opts = dict(mode=mode, optional_deletable=optional_deletable)
    # what a cached cell's numbers depend on besides its lattices: a cell made otherwise is recomputed
    settings = {"mode": mode, "optional_deletable": bool(optional_deletable), "glm": [str(g) for g in glms],
                "reference": reference_name, "reference_keys": len(references), "segments": str(segments) if segments else None,
                "allow_missing": bool(allow_missing),
                "posterior_threshold": float(posterior_threshold), **{k: float(v) for k, v in scales.items()},
                "max_pops": int(max_pops), "inf_max_pops": int(inf_max_pops)}
    rows: list[StudyRow] = []
    notes: dict = {}
    loaded: dict = {}
    with memory_budget(max_memory):
        for set_name, thr, density in densities:
            plan = [("1best", 1)] + [(r, n) for r in reps for n in cells_for(r)]
            missing = [(r, n) for r, n in plan if not _cell_current(_cell_path(out_dir, density, r, n), settings)]
            lats, absent = None, []
            density_notes: list[tuple[str, str]] = []  # what this density adds to the notes, in order
            if missing:
                if set_name not in loaded:
                    loaded[set_name] = _load_set(lattice_sets[set_name], set_name, format=format, words=words,
                                                 frame_shift=frame_shift,
                                                 frame_subsampling_factor=frame_subsampling_factor, keys=keys)
                base = loaded[set_name]
                uncovered: list = []
                no_lattice = match_keys([lat.key for lat in base], references, allow_missing=allow_missing,
                                     warnings=uncovered, hyp_what="lattice", hyp_name=set_name,
                                     ref_name=reference_name or "references", ref_format=reference_format, show=repr)
                base = [lat for lat in base if lat.key in references]
                if uncovered:
                    density_notes.append((set_name, "; ".join(uncovered)))
                absent = no_lattice if reference_format == "stm" else []
                text_refs = is_text(references[lat.key] for lat in base)
                id_refs = is_word_ids(references[lat.key] for lat in base)
                for lat in base:
                    check_word_table(lat, text_refs, ids=id_refs)
                    check_times(lat, allow_untimed=allow_untimed, what="the study (alt-CTMs, phrase cells)")
                lats, note = _density_lattices(base, thr, acoustic_scale, lm_scale)
                if note:
                    density_notes.append((density, note))
                os.makedirs(os.path.dirname(_notes_path(out_dir, density)), exist_ok=True)
                _write_json(_notes_path(out_dir, density), {"settings": settings, "notes": density_notes})
            else:
                # every cell comes from the cache: so do the notes its lattices gave (a cache without them
                # gives none)
                density_notes = _read_notes(_notes_path(out_dir, density), settings)
            notes.update(density_notes)
            for rep in ["1best"] + reps:
                rep_cells = [(r, n) for r, n in plan if r == rep]
                todo = [(r, n) for r, n in rep_cells if (r, n) in missing]
                if todo:
                    _compute_cells(rep, todo, lats, references, density, set_name, thr, out_dir, scales, opts,
                                   posterior_threshold, max_pops, inf_max_pops, absent=absent, glms=glms,
                                   encoding=encoding, settings=settings, executor=executor, max_memory=max_memory)
                for r, n in rep_cells:
                    path = _cell_path(out_dir, density, r, n)
                    if os.path.exists(path):
                        rows.append(_read_cell(path))
                    bar.update(1)
    bar.close()

    rows = _add_intervals(rows, bootstrap, seed)
    invariants = check_invariants(rows)
    refuse_unchecked(rows, invariants)
    rows = [replace(r, per_utterance=None) for r in rows]
    if title is None:  # name the data: the lattice sets and the reference
        ref_name = os.path.basename(str(reference_name)) if reference_name else "references"
        title = f"{', '.join(map(str, lattice_sets))} against {ref_name}"
    files = write_tables(rows, invariants, out_dir, mode=mode, notes=notes, title=title, baselines=baselines,
                         glms=[os.path.basename(str(g)) for g in glms])
    if plots:
        files.update(plot_study(rows, out_dir, title=title, baselines=baselines))
    return StudyResult(rows=tuple(rows), invariants=tuple(invariants), files=files)


def _isatty() -> bool:
    import sys

    return sys.stderr.isatty()


def _compute_cells(rep, todo, lats, references, density, set_name, thr, out_dir, scales, opts,
                   posterior_threshold, max_pops, inf_max_pops, *, absent=(), glms=(), encoding="utf-8",
                   settings=None, executor=None, max_memory=None) -> None:
    """Compute and cache the cells ``todo`` of one representation at one density.  The
    alternatives are built once at the deepest requested N and cut to each shallower N (exact for
    N-best lists, phrases and sausages: their slots do not depend on N).  N-best at N=inf is a
    separate search under the budget ``inf_max_pops``.  ``absent``: reference keys without a
    lattice scored as all deletions in every cell; ``glms`` are applied to the alternatives'
    words before their oracle; ``settings`` is stored in each cell (a rerun with other settings
    recomputes it).  The per-utterance work runs in shards (:func:`study_cells_of_shard`) here or on
    the workers of ``executor``, each under the memory budget ``max_memory``; the cells are the same."""
    from ..io.transcripts.altctm import write_alternatives_ctm

    def write(n, cell: StudyRow):
        _write_json(_cell_path(out_dir, density, rep, n), {**cell.cache_dict(), "settings": settings})

    keys = [lat.key for lat in lats] + list(absent)
    arcs = [int(lat.num_arcs) for lat in lats]
    if rep == "lattice":
        job = StudyCellsJob(rep, (None,), None, dict(scales), {}, tuple(glms), encoding, dict(opts), max_memory)
        _alts, (res,), (seconds,) = _run_study_cells(job, lats, references, executor)
        res += deletions_only(absent, references, **opts)
        write(None, _cell(rep, None, density, set_name, thr, keys, res, None, _slf_gzip_mb(lats), seconds, arcs))
        return
    ns = [n for _, n in todo]
    if None in ns and len(ns) > 1:
        # N=inf may exceed the search budget: compute the finite depths on their own first
        finite = [(rep, n) for n in ns if n is not None]
        _compute_cells(rep, finite, lats, references, density, set_name, thr, out_dir, scales, opts,
                       posterior_threshold, max_pops, inf_max_pops, absent=absent, glms=glms, encoding=encoding,
                       settings=settings, executor=executor, max_memory=max_memory)
        ns = [None]
    deepest = None if any(n is None for n in ns) else max(ns)
    kw = {}
    if rep in ("nbest", "phrase"):
        kw["max_pops"] = inf_max_pops if deepest is None else max_pops
    if rep == "phrase":
        kw["posterior_threshold"] = posterior_threshold
    job = StudyCellsJob(rep, tuple(ns), deepest, dict(scales), kw, tuple(glms), encoding, dict(opts), max_memory)
    try:
        alts_list, results, seconds = _run_study_cells(job, lats, references, executor)
    except BudgetExceededError as exc:
        if deepest is not None:
            raise
        # N=inf is out of budget (e.g. N-best of a dense lattice): record it as not computable.
        write(None, StudyRow(rep, "inf", density, set_name, thr,
                             skipped=f"N=inf exceeds the search budget ({exc.message})"))
        return
    for n, res, cell_seconds in zip(ns, results, seconds, strict=True):
        t = time.time()
        cut = [a.truncated(n) for a in alts_list]
        res = res + deletions_only(absent, references, **opts)
        ctm_path = os.path.join(out_dir, "altctm", _safe(density), f"{rep}-{_n_label(n)}.ctm.gz")
        write_alternatives_ctm(ctm_path, [_located(a) for a in cut])
        mb = os.path.getsize(ctm_path) / 1e6
        depths = [d for a in cut for d in a.depths]
        write(n, _cell(rep, n, density, set_name, thr, keys, res, depths, mb, time.time() - t + cell_seconds, arcs))


@dataclass(frozen=True)
class StudyCellsJob:
    """What the cells of one representation at one density compute per utterance (sent with each shard):
    the alternatives at the ``deepest`` depth (None: all; the lattice itself for ``representation``
    ``lattice``), cut to each of ``ns``, and their oracles."""

    representation: str
    ns: tuple
    deepest: int | None
    scales: dict
    search: dict          # the search's own options (max_pops, posterior_threshold)
    glms: tuple
    encoding: str
    opts: dict            # the oracle's (mode, optional_deletable)
    max_memory: int | None


def study_cells_of_shard(job: StudyCellsJob, items) -> tuple:
    """What a worker computes for the ``(lattice, reference)`` pairs of one shard: ``(alternatives,
    [results per N], [seconds per N])`` (alternatives None for the lattice representation); the
    seconds of a cell are the shared search's plus its own oracle's, as a serial study measures them."""
    with memory_budget(job.max_memory):
        refs = [reference for _lat, reference in items]
        if job.representation == "lattice":
            t = time.time()
            res = lattice_oracle_many([lat for lat, _reference in items], refs, **job.opts)
            return None, [res], [time.time() - t]
        t = time.time()
        alts_list = [make_alternatives(lat, job.representation, job.deepest, **job.scales, **job.search)
                     for lat, _reference in items]
        build = time.time() - t
        results, seconds = [], []
        for n in job.ns:
            t = time.time()
            scored = filter_alternatives([a.truncated(n) for a in alts_list], job.glms, encoding=job.encoding)
            results.append(alternatives_oracle_many(scored, refs, **job.opts))
            seconds.append(build + time.time() - t)
        return alts_list, results, seconds


def _run_study_cells(job: StudyCellsJob, lats: list, references, executor) -> tuple:
    """:func:`study_cells_of_shard` over shards of ``lats`` (here, or on the workers of ``executor``),
    gathered in input order: ``(alternatives, [results per N], [seconds per N summed over shards])``."""
    from ..core.parallel import run_shards, shard_lattices, with_companions

    alts_list: list = []
    results: list = [[] for _ in job.ns]
    seconds = [0.0] * len(job.ns)
    shards = with_companions(shard_lattices(lats), references.__getitem__)
    for _shard, (alts, shard_results, shard_seconds) in run_shards(study_cells_of_shard, shards, executor=executor,
                                                                   args=(job,)):
        if alts is not None:
            alts_list.extend(alts)
        for i, (res, sec) in enumerate(zip(shard_results, shard_seconds, strict=True)):
            results[i].extend(res)
            seconds[i] += sec
    return alts_list, results, seconds


def _located(alts):
    """Per-utterance alternatives are written as their own recording (file = key, channel ``1``, the
    toolkit's convention), times as given."""
    return alts if (alts.file == alts.key and alts.channel == "1") else alts.with_location(alts.key, "1", 0.0)


def _cell(rep, n, density, set_name, thr, keys, results, depths, mb, seconds, arcs) -> StudyRow:
    counts = ErrorCounts.sum(r.counts for r in results)
    per_utterance = tuple(StudyUtterance(k, r.cost, ErrorCounts(r.counts.correct, r.counts.substitutions,
                                                                r.counts.deletions, r.counts.insertions,
                                                                r.counts.ref_words))
                          for k, r in zip(keys, results, strict=False))
    st = depth_statistics(depths) if depths is not None else None
    return StudyRow(rep, _n_label(n), density, set_name, thr, utterances=len(results), arcs=int(sum(arcs)),
                    cost=float(sum(r.cost for r in results)), wer=100 * counts.wer, precision=counts.precision,
                    recall=counts.recall, correct=counts.correct, substitutions=counts.substitutions,
                    deletions=counts.deletions, insertions=counts.insertions, ref_words=counts.ref_words, MB=mb,
                    seconds=seconds, n_max=st.n_max if st else None, n_90=st.n_90 if st else None,
                    n_50=st.n_50 if st else None, blocks=st.blocks if st else None,
                    per_utterance=per_utterance)


def _add_intervals(rows: list[StudyRow], replications: int, seed: int) -> list[StudyRow]:
    """``rows`` with their 95% utterance-bootstrap intervals; cells of one density share the draws (paired)."""
    if replications <= 0:
        return rows
    by_density: dict = {}
    for r in rows:
        if r.per_utterance is not None:
            by_density.setdefault(r.density, []).append(r)
    interval: dict = {}
    for rs in by_density.values():
        systems = {r.cell: [u.counts for u in sorted(r.per_utterance, key=lambda u: u.key)] for r in rs}
        ivs = bootstrap_systems(systems, replications=replications, seed=seed)
        for r in rs:
            iv = ivs[r.cell]["wer"]
            interval[id(r)] = (100 * iv.low, 100 * iv.high)
    return [replace(r, wer_low=interval[id(r)][0], wer_high=interval[id(r)][1]) if id(r) in interval else r
            for r in rows]


def refuse_unchecked(rows: Sequence[StudyRow], invariants: Sequence[StudyInvariant]) -> None:
    """No table whose numbers the invariants could not vouch for: every cell of a density must be
    over the same utterances (else their comparison means nothing), at least one invariant must be
    checkable, and every invariant on the optimal cost must hold (a violation is a wrong number
    somewhere).  Raises LatticeToolsError naming what failed; the cached cells stay for a rerun."""
    by_density: dict = {}
    for r in rows:
        if r.per_utterance is not None:
            by_density.setdefault(r.density, []).append(r)
    for density, cells in by_density.items():
        keys = {c.cell: sorted(u.key for u in c.per_utterance) for c in cells}
        (first, first_keys), *rest = keys.items()
        for cell, ks in rest:
            if ks != first_keys:
                raise LatticeToolsError(f"study density {density!r}: the cells {first[0]}(N={first[1]}) and "
                                        f"{cell[0]}(N={cell[1]}) are over different utterances ({len(first_keys)} vs "
                                        f"{len(ks)}); their invariants cannot be checked (remove the cells/ "
                                        "directory to recompute)", key=density)
    if not invariants:
        raise LatticeToolsError("the study has no two comparable cells, so none of its invariants can be checked "
                                "(lattice <= 1best, deeper N never worse, ...): add the lattice representation or "
                                "a second depth N")
    bad = [i for i in invariants if not i.holds]
    if bad:
        i = bad[0]
        raise LatticeToolsError(f"study invariant violated on {i.density!r}: {i.check} "
                                f"(cost {i.lhs_cost} > {i.rhs_cost}; {len(bad)} of {len(invariants)} fail); "
                                "the tables are not written", key=i.density)


def check_invariants(rows: Sequence[StudyRow]) -> list[StudyInvariant]:
    """The invariants of Faria et al.'s tables on every density (see the module docstring)."""
    out: list[StudyInvariant] = []
    by_density: dict = {}
    for r in rows:
        if r.cost is not None:
            by_density.setdefault(r.density, {})[r.cell] = r

    def order(nlabel):
        return math.inf if nlabel == "inf" else int(nlabel)

    for density, cells in by_density.items():
        def add(name, lhs: StudyRow | None, rhs: StudyRow | None, density=density):
            if lhs is None or rhs is None:
                return
            # sclite prices skipping a NULL word '@' (an empty alternative) at 0.001 while a lattice
            # epsilon is free, so costs are compared on their integer part (real edits cost 2-4).
            assert lhs.cost is not None and rhs.cost is not None, "computed cells"
            out.append(StudyInvariant(density=density, check=name, lhs_cost=lhs.cost, rhs_cost=rhs.cost,
                                      holds=bool(math.floor(lhs.cost + 1e-9) <= math.floor(rhs.cost + 1e-9)),
                                      lhs_errors=lhs.errors, rhs_errors=rhs.errors,
                                      holds_on_errors=bool(lhs.errors <= rhs.errors)))

        lat = cells.get(("lattice", "inf"))
        one = cells.get(("1best", "1"))
        add("lattice <= 1best", lat, one)
        for rep in ("nbest", "phrase", "sausage"):
            ns = sorted((n for (r, n) in cells if r == rep), key=order)
            for a, b in zip(ns[1:], ns[:-1], strict=False):  # deeper slots only add choices: never worse
                add(f"{rep}(N={a}) <= {rep}(N={b})", cells[(rep, a)], cells[(rep, b)])
            if rep == "nbest":
                for n in ns:
                    add(f"lattice <= nbest(N={n})", lat, cells[(rep, n)])
        if ("phrase", "inf") in cells:
            add("phrase(N=inf) <= lattice", cells[("phrase", "inf")], lat)
    return out


# ----------------------------------------------------------------------------------------------
# Tables and plots
# ----------------------------------------------------------------------------------------------
_COLUMNS = ["density", "representation", "N", "wer", "wer_low", "wer_high", "N_max", "N_.9", "N_.5", "MB",
            "C", "S", "D", "I", "ref_words", "precision", "recall", "utterances", "arcs", "cost", "seconds"]
_TITLES = {"1best": "1-best: the lattice's best path (Viterbi under the study's scales; baseline)",
           "nbest": "Oracle WER for utterance-level (N-best) alternatives (Table 3)",
           "sausage": "Oracle WER for word-level alternatives (Table 4)",
           "phrase": "Oracle WER for phrase-level alternatives (Tables 5-6)",
           "lattice": "Exact full-lattice oracle WER"}


def _fmt(v, col):
    if v is None:
        return ""
    if isinstance(v, float):
        if col in ("wer", "wer_low", "wer_high"):
            return f"{v:.2f}"
        if col == "MB":
            return f"{v:.4f}"
        if col in ("precision", "recall"):
            return f"{v:.3f}"
        if col == "seconds":
            return f"{v:.2f}"
        return f"{v:g}"
    return str(v)


def write_tables(rows: Sequence[StudyRow], invariants: Sequence[StudyInvariant], out_dir: str, *, mode: str = "sclite", notes: dict | None = None,
                 title: str | None = None, baselines: list | None = None, glms: list | None = None) -> dict:
    """``study.md`` (tables shaped like Faria et al., Tables 3-6, plus CI, C/S/D/I and precision/recall),
    ``study.csv`` and ``study.json``.  ``title`` names the data; ``baselines``: extra 1-best rows
    (e.g. the decoder's own hypothesis, ``{"density", "name", "wer", ...}``) shown beside the
    lattice's best path; ``glms``: the GLM files applied (named in the heading, since they change every
    number)."""
    scoring = f"{mode} scoring" + (f", GLM {', '.join(glms)}" if glms else "")
    md = [f"# Oracle WER study: {title} ({scoring})" if title else f"# Oracle WER study ({scoring})", "",
          "WER in %, 95% utterance-bootstrap interval [low, high]. N = requested depth (inf = all), "
          "N_max / N_.9 / N_.5 = depth of the deepest / 90th-percentile / median block, "
          "MB = gzip-compressed alt-CTM size (for the lattice: gzip-compressed SLF). "
          "Two different 1-bests: the *lattice best path* (the single most probable path, baseline rows) and "
          "N-best at N=1 (the most probable *word sequence*, summed over its paths); a decoder's own "
          "hypothesis can differ from both (listed separately when known). A cell that a search budget "
          "stopped is marked *stopped by the search budget*, not left out.", ""]
    if baselines:
        md += ["## 1-best hypotheses compared", "", "| density | 1-best | wer | C | S | D | I | ref_words |",
               "|---|---|---|---|---|---|---|---|"]
        found = [(b["density"], 0, b["name"], b) for b in baselines]
        for r in rows:
            if r.representation == "1best" and r.skipped is None:
                found.append((r.density, 1, "lattice best path", r.to_dict()))
            if r.cell == ("nbest", "1") and r.skipped is None:
                found.append((r.density, 2, "most probable word sequence (N-best, N=1)", r.to_dict()))
        order = {d: i for i, d in enumerate(dict.fromkeys(d for d, *_ in found))}
        for density, _, name, b in sorted(found, key=lambda x: (order[x[0]], x[1])):
            md.append(f"| {density} | {name} | {_fmt(b.get('wer'), 'wer')} | {b.get('C', '')} | {b.get('S', '')} | "
                      f"{b.get('D', '')} | {b.get('I', '')} | {b.get('ref_words', '')} |")
        md.append("")
    show = ["density", "N", "wer", "wer_low", "wer_high", "N_max", "N_.9", "N_.5", "MB", "C", "S", "D", "I",
            "precision", "recall", "arcs"]
    notes = _representation_tables(md, rows, _TITLES, show, show, _fmt, notes)
    if invariants:
        bad = [i for i in invariants if not i.holds]
        md += ["## Invariants (on the optimal alignment cost)", "",
               f"{len(invariants) - len(bad)} of {len(invariants)} hold." + ("" if not bad else " Violations:"), ""]
        for i in bad:
            md.append(f"- {i.density}: {i.check}: {i.lhs_cost} > {i.rhs_cost}")
        err_bad = [i for i in invariants if not i.holds_on_errors]
        md += ["", f"On error counts: {len(invariants) - len(err_bad)} of {len(invariants)} hold."]
        for i in err_bad:
            md.append(f"- {i.density}: {i.check}: {i.lhs_errors} > {i.rhs_errors} errors")
        md.append("")
    files = _write_markdown(md, notes, out_dir)
    with atomic_write(files["csv"]) as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(_COLUMNS + ["skipped"])
        for r in rows:
            d = r.to_dict()
            w.writerow([_fmt(d.get(c), c) for c in _COLUMNS] + [d.get("skipped", "")])
    _write_json(files["json"], {"mode": mode, "glm": list(glms or []), "title": title,
                                "rows": [r.to_dict() for r in rows], "invariants": [i.to_dict() for i in invariants],
                                "baselines": baselines or [], "notes": notes or {}})
    return files


def _write_markdown(md: list, notes: dict | None, out_dir: str) -> dict:
    """Write ``md`` (with the ``notes`` section when there are notes) as ``out_dir/study.md``; returns the paths
    of the study's three files (markdown, csv, json)."""
    if notes:
        md += ["## Notes", ""] + [f"- {k}: {v}" for k, v in notes.items()] + [""]
    files = {"markdown": os.path.join(out_dir, "study.md"), "csv": os.path.join(out_dir, "study.csv"),
             "json": os.path.join(out_dir, "study.json")}
    with atomic_write(files["markdown"]) as f:
        f.write("\n".join(md))
    return files


def _representation_tables(md: list, rows: Sequence[StudyRow] | Sequence[StudyBothWaysRow], titles: dict, heads: list,
                           show: list, fmt, notes) -> dict | None:
    """Append one Markdown table per representation (columns ``show``: keys of the rows' dicts, headed ``heads``,
    cells by ``fmt``) to ``md``; a cell a search budget stopped is a row saying so, and its reason joins the
    returned ``notes``."""
    for rep in ("1best", "nbest", "sausage", "phrase", "lattice"):
        rs = [r for r in rows if r.representation == rep]
        if not rs:
            continue
        md += [f"## {titles[rep]}", "", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        for r in rs:
            if r.skipped is not None:
                md.append(f"| {r.density} | {r.n} | *stopped by the search budget* |" + " |" * (len(show) - 3))
                notes = {**(notes or {}), f"{r.density} {rep} N={r.n}": r.skipped}
                continue
            d = r.to_dict()
            md.append("| " + " | ".join(fmt(d.get(c), c) for c in show) + " |")
        md.append("")
    return notes


def plot_study(rows: Sequence[StudyRow], out_dir: str, title: str | None = None, baselines: list | None = None) -> dict:
    """``oracle_vs_n.png`` and ``oracle_vs_mb.png`` (matplotlib, Agg backend): oracle WER with its
    95% bootstrap interval (error bars) against N and against MB, one line per representation, one
    panel per density.  N = inf is its own labelled point beyond a gap (not on the line of finite
    N); a cell stopped by the search budget is drawn as a labelled marker at its N instead of
    being left out; MB points are labelled with their N; titles name the data and each panel its
    size.  The lattice's best path and, when given, the decoder's hypothesis (``baselines``) are
    drawn as separate, named 1-best lines."""
    from ..core._optional import pyplot

    plt = pyplot()

    densities = list(dict.fromkeys(r.density for r in rows))
    if not densities:
        return {}
    colors = {"nbest": "C0", "sausage": "C1", "phrase": "C2", "lattice": "C3", "1best": "k", "decoder": "C4"}
    names = {"nbest": "N-best", "sausage": "sausage", "phrase": "phrase", "lattice": "whole lattice (MB: gzip SLF)",
             "1best": "1-best: lattice best path", "decoder": "1-best: decoder hypothesis"}
    finite = [int(r.n) for r in rows if r.n != "inf"]
    max_finite = max(finite + [10])
    inf_x = 10 ** (math.ceil(math.log10(max_finite)) + 1)  # a decade beyond the largest finite N

    def n_of(r: StudyRow) -> int:
        return inf_x if r.n == "inf" else int(r.n)

    def wer_of(r) -> float:  # a computed row or a baseline's dict
        return _drawn(r["wer"] if isinstance(r, dict) else r.wer, "wer")

    def mb_of(r: StudyRow) -> float:
        return _drawn(r.MB, "MB")

    def err(pts):
        lo = [wer_of(r) - _drawn(_low(r), "wer_low") if _low(r) is not None else 0.0 for r in pts]
        hi = [_drawn(_high(r), "wer_high") - wer_of(r) if _high(r) is not None else 0.0 for r in pts]
        return [lo, hi] if any(lo) or any(hi) else None

    files = {}
    for kind in ("n", "mb"):
        fig, axes = plt.subplots(1, len(densities), figsize=(4.8 * len(densities), 4.2), squeeze=False, sharey=True)
        top = max([r.wer_high or wer_of(r) for r in rows if r.skipped is None] + [1.0])
        for ax, density in zip(axes[0], densities, strict=False):
            rs = [r for r in rows if r.density == density]
            for rep in ("nbest", "sausage", "phrase"):
                pts = [r for r in rs if r.representation == rep and r.skipped is None]
                stopped = [r for r in rs if r.representation == rep and r.skipped is not None]
                c = colors[rep]
                if kind == "n":
                    line = sorted((r for r in pts if r.n != "inf"), key=n_of)
                    if line:
                        ax.errorbar([n_of(r) for r in line], [wer_of(r) for r in line], yerr=err(line), fmt="o-",
                                    color=c, capsize=3, label=names[rep])
                    infs = [r for r in pts if r.n == "inf"]
                    if infs:
                        ax.errorbar([inf_x], [wer_of(infs[0])], yerr=err(infs), fmt="D", color=c, capsize=3,
                                    mfc="white", label=None if line else names[rep])
                else:
                    line = sorted(pts, key=mb_of)
                    if line:
                        ax.errorbar([mb_of(r) for r in line], [wer_of(r) for r in line], yerr=err(line), fmt="o-",
                                    color=c, capsize=3, label=names[rep])
                        same: dict = {}  # points that coincide (e.g. N=100 and N=inf) share one label
                        for r in line:
                            same.setdefault((round(mb_of(r), 7), round(wer_of(r), 6)), []).append(r.n)
                        for (mb, w), labels_ in same.items():
                            ax.annotate("N=" + ",".join(labels_), (mb, w), textcoords="offset points",
                                        xytext=(4, 4), fontsize=6.5, color=c)
                for r in stopped:  # a search budget stopped this cell: say so where its point would be
                    x = n_of(r) if kind == "n" else max([p.MB for p in rs if p.MB is not None] + [1e-3])
                    ax.plot([x], [top * 1.02], marker="x", ms=9, mew=2, color=c, ls="none")
                    ax.annotate(f"{names[rep]} N={r.n}:\nstopped by the\nsearch budget", (x, top * 1.02),
                                textcoords="offset points", xytext=(-4, -30), ha="right", fontsize=6.5, color=c)
            one: list = [r for r in rs if r.representation == "1best" and r.skipped is None]
            lat: list = [r for r in rs if r.representation == "lattice" and r.skipped is None]
            dec: list = [b for b in (baselines or []) if b.get("density") == density and b.get("wer") is not None]
            for rep, pts, style, marker in (("lattice", lat, "--", "s"), ("1best", one, ":", "x"),
                                            ("decoder", dec, "-.", "+")):
                for r in pts:
                    mb = r.get("MB") if isinstance(r, dict) else r.MB
                    if kind == "n":  # a line across, its interval as an error bar beside "inf"
                        ax.axhline(wer_of(r), ls=style, color=colors[rep], label=names[rep], lw=1)
                        ax.errorbar([inf_x * 10 ** (0.25 + 0.12 * ("lattice", "1best", "decoder").index(rep))],
                                    [wer_of(r)], yerr=err([r]), fmt=marker, color=colors[rep], capsize=3)
                    elif mb is not None:
                        ax.errorbar([mb], [wer_of(r)], yerr=err([r]), fmt=marker, color=colors[rep], capsize=3,
                                    label=names[rep])
                    else:
                        ax.axhline(wer_of(r), ls=style, color=colors[rep], label=names[rep])
            ax.set_xscale("log")
            if kind == "n":
                ticks = [10 ** k for k in range(0, int(math.log10(inf_x)))] + [inf_x]
                ax.set_xticks(ticks)
                ax.set_xticklabels([f"{t:g}" for t in ticks[:-1]] + ["inf"])
                ax.axvspan(10 ** (math.log10(inf_x) - 0.6), 10 ** (math.log10(inf_x) - 0.4), color="0.85", lw=0)
            sized = next((r for r in rs if r.utterances is not None), None)
            what = f"{density}" + (f": {sized.utterances} utt., {sized.ref_words} ref. words, "
                                   f"{sized.arcs} arcs" if sized else "")
            ax.set_title(what, fontsize=9)
            ax.set_xlabel("N (alternatives per slot; 'inf' = all)" if kind == "n"
                          else "gzip-compressed alt-CTM size (MB); labels: N")
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("oracle WER (%) with 95% CI")
        handles, labels = [], []
        for ax in axes[0]:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=False):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        axes[0][-1].legend(handles, labels, fontsize=7)
        data = title or ", ".join(densities)
        fig.suptitle(f"Oracle WER vs {'N' if kind == 'n' else 'size'}: {data}", fontsize=10)
        fig.tight_layout()
        path = os.path.join(out_dir, f"oracle_vs_{kind}.png")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        with atomic_write(path, "wb") as f:
            f.write(buf.getvalue())
        files[f"plot_{kind}"] = path
    return files


def _drawn(value: float | None, what: str) -> float:
    """A number the plot draws: an undefined one (an infinite WER: errors but no reference word) is refused."""
    if value is None:
        raise LatticeToolsError(f"cannot plot an undefined {what} (errors against no reference word); "
                                "the tables are written, rerun with plots=False / --no-plots")
    return value


def _low(r) -> float | None:
    """The interval's low end of a row or of a baseline's dict (None: not drawn)."""
    return r.get("wer_low") if isinstance(r, dict) else r.wer_low


def _high(r) -> float | None:
    return r.get("wer_high") if isinstance(r, dict) else r.wer_high


# ----------------------------------------------------------------------------------------------
# The study both ways: the paper's segmented scoring beside segment-free scoring
# ----------------------------------------------------------------------------------------------
def run_study_both_ways(lattice_sets: Mapping[str, object], reference: str, *, ns: Sequence = DEFAULT_NS,
                        representations: Sequence[str] = DEFAULT_REPRESENTATIONS,
                        prune_thresholds: Sequence[float] = (0.0,), out_dir: str, mode: str = "sclite",
                        optional_deletable: bool = False, include_infinity: bool = True,
                        posterior_threshold: float = 0.1, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                        word_penalty: float = 0.0, max_pops: int = 2_000_000, inf_max_pops: int = 200_000,
                        collar: float | None = None, format: str | None = None, words: str | None = None,
                        frame_shift: float | None = None, frame_subsampling_factor: int | None = None,
                        keys: str | None = None, title: str | None = None, encoding: str = "utf-8",
                        allow_missing: bool = False,
                        glm=None, max_memory: int | None = None, segments: str | None = None) -> StudyResult:
    """The oracle study on whole-side lattices, scored both ways on the same alternatives.

    Every lattice is one file/channel of the STM ``reference`` (key ``file-channel``, ``file_channel`` or
    ``file``, :func:`~lattice_tools.oracle.segment_free.side_of_key`); its alternatives (1-best, N-best,
    sausage, phrase at every depth N) are written as one alt-CTM per cell (``altctm/``) and that file is
    scored twice against the STM's segments: *segmented*, as sclite scores it and as Faria et al. score
    alternatives (every CTM item -- a word or a whole ALT block -- goes to one segment by its midpoint,
    :func:`~lattice_tools.scoring.sclite.score_stm_ctm`), and *segment-free*, one alignment per side
    (:func:`~lattice_tools.scoring.segment_free.score_segment_free`, with ``collar`` if given).  The whole
    lattice has only the segment-free oracle (:func:`~lattice_tools.oracle.segment_free.segment_free_oracle`).
    Each row counts the *words that moved across a boundary*: hypothesis words the segment-free alignment
    pairs (correct or substituted) with a reference word of another segment than the one the segmented
    scoring hands their CTM item to (:func:`~lattice_tools.scoring.segment_free.boundary_moves`).

    Invariants, on every cell without a collar: segment-free cost <= segmented cost (in Levenshtein mode
    also on errors); equal costs when no word moved; on the segment-free costs: lattice <= 1-best and
    lattice <= N-best(N) (their paths are lattice paths).  Costs are compared on their integer part, as in
    :func:`check_invariants` (sclite's 0.001 for skipping an empty alternative's ``@``).  A violation raises LatticeToolsError and no table is written.

    With ``segments`` (a Kaldi ``segments`` file: ``utterance recording start end``) the lattices are
    per-utterance ones (keys = utterance ids, times from the utterance's start) and their alternatives are
    placed on their recording's side (recording ``file-channel``, ``file_channel`` or ``file``) at the
    utterance's start: the same alt-CTMs a recipe writes from them, scored both ways.  The whole-lattice
    row needs whole-side lattices and is left out then (said in the notes).

    Writes ``study.md`` (one table per representation: segmented and segment-free WER side by side, their
    C/S/D/I, the words moved), ``study.csv`` and ``study.json`` under ``out_dir``.  Arguments as
    :func:`run_study`; ``glm`` is applied to the STM and to every alt-CTM (refused with the lattice
    representation).
    """
    from ..io.transcripts.altctm import write_alternatives_ctm
    from ..io.transcripts.stm import Stm
    from ..scoring.inputs import read_hypothesis, read_reference
    from ..scoring.sclite import score_stm_ctm
    from ..scoring.segment_free import score_segment_free
    from ..scoring.segments import group_segments
    from .segment_free import segment_free_oracle, side_of_key

    glms = glm_list(glm)
    reps = [r for r in representations if r != "1best"]
    unknown = set(reps) - {"nbest", "sausage", "phrase", "lattice"}
    if unknown:
        raise LatticeToolsError(f"unknown representation(s) {sorted(unknown)}; expected nbest, sausage, phrase, lattice")
    refuse_glm_on_lattice(glms, reps)
    if collar is not None and not (math.isfinite(float(collar)) and float(collar) >= 0):
        raise LatticeToolsError(f"collar must be a number of seconds >= 0, not {collar!r}")
    finite_ns = sorted({int(n) for n in ns if n is not None and n != math.inf})
    if any(n < 1 for n in finite_ns):
        raise LatticeToolsError(f"N must be >= 1, got {finite_ns}")
    depths = finite_ns + ([None] if include_infinity or any(n is None or n == math.inf for n in ns) else [])
    ref = read_reference(str(reference), "stm", glms=glms, encoding=encoding)
    stm = ref.records
    assert isinstance(stm, Stm), "read as an STM"
    sides = group_segments(list(stm.segments), False, None)
    utterances = None
    if segments:
        from ..io.transcripts.kaldi_data import read_segments

        utterances = read_segments(segments)
    os.makedirs(out_dir, exist_ok=True)
    scales = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    score_opts: dict[str, Any] = dict(mode=mode, optional_deletable=optional_deletable, allow_missing=allow_missing)
    rows: list[StudyBothWaysRow] = []
    notes: dict = {}
    with memory_budget(max_memory):
        for set_name, spec in lattice_sets.items():
            base = _load_set(spec, set_name, format=format, words=words, frame_shift=frame_shift,
                             frame_subsampling_factor=frame_subsampling_factor, keys=keys)
            located = {}
            for lat in base:
                check_times(lat, what="the study both ways (alt-CTMs scored against the STM's segments)")
                side_key, offset = lat.key, 0.0
                if utterances is not None:
                    if lat.key not in utterances:
                        raise LatticeToolsError(f"lattice {lat.key!r} of set {set_name!r} is not in {segments}",
                                                key=lat.key)
                    side_key, offset = utterances[lat.key][0], float(utterances[lat.key][1])
                side = side_of_key(side_key, sides)
                if side is None:
                    raise LatticeToolsError(f"{'recording' if utterances is not None else 'lattice key'} "
                                            f"{side_key!r} of set {set_name!r} names no file/channel of {reference} "
                                            "(expected file-channel, file_channel, or a file with one channel)",
                                            key=lat.key)
                located[lat.key] = (*side, offset)
            for thr in prune_thresholds:
                density = set_name if thr == 0 else f"{set_name}@{thr:g}"
                lats, note = _density_lattices(base, float(thr), acoustic_scale, lm_scale)
                if note:
                    notes[density] = note
                arcs = int(sum(int(lat.num_arcs) for lat in lats))
                common: dict[str, Any] = dict(density=density, lattice_set=set_name, prune=float(thr),
                                              sides=len(lats), arcs=arcs)
                for rep in ["1best"] + [r for r in reps if r != "lattice"]:
                    cells = [1] if rep == "1best" else depths
                    stopped = None
                    finite_cells = [c for c in cells if c is not None]
                    deepest = max(finite_cells) if len(finite_cells) == len(cells) else None
                    t = time.time()
                    try:
                        kw: dict = {}
                        if rep in ("nbest", "phrase"):
                            kw["max_pops"] = inf_max_pops if deepest is None else max_pops
                        if rep == "phrase":
                            kw["posterior_threshold"] = posterior_threshold
                        alts = [make_alternatives(lat, rep, deepest, **scales, **kw) for lat in lats]
                    except BudgetExceededError as exc:
                        if deepest is not None:
                            raise
                        # N=inf out of the search budget: the finite depths on their own, N=inf recorded as stopped
                        stopped = StudyBothWaysRow(**common, representation=rep, n="inf",
                                                   skipped=f"N=inf exceeds the search budget ({exc.message})")
                        cells = [n for n in cells if n is not None]
                        if not cells:
                            rows.append(stopped)
                            continue
                        deepest = max(cells)
                        kw["max_pops"] = max_pops
                        alts = [make_alternatives(lat, rep, deepest, **scales, **kw) for lat in lats]
                    build = time.time() - t
                    for n in cells:
                        t = time.time()
                        # a side's alternatives in time order: sclite keeps the file order of a CTM with ALT blocks
                        cut = sorted((a.truncated(n).with_location(*located[a.key]) for a in alts),
                                     key=lambda a: (a.file, a.channel, located[a.key][2]))
                        ctm_path = os.path.join(out_dir, "altctm", _safe(density), f"{rep}-{_n_label(n)}.ctm.gz")
                        write_alternatives_ctm(ctm_path, cut)
                        items, _ = read_hypothesis(ctm_path, "ctm", glms=glms, encoding=encoding)
                        segmented = score_stm_ctm(stm, items, **score_opts)
                        moved: list = []
                        free = score_segment_free(stm, items, collar=collar, moved=moved, **score_opts)
                        rows.append(_both_ways_row(common, rep, n, segmented, free, moved,
                                                   MB=os.path.getsize(ctm_path) / 1e6, seconds=time.time() - t + build))
                    if stopped:
                        rows.append(stopped)
                if "lattice" in reps and utterances is not None:
                    notes["lattice"] = ("no whole-lattice row: per-utterance lattices (segments) have no "
                                        "segment-free lattice oracle; it needs one lattice per side")
                elif "lattice" in reps:
                    t = time.time()
                    res = segment_free_oracle(lats, stm, collar=collar, mode=mode,
                                              optional_deletable=optional_deletable, allow_missing=allow_missing,
                                              ref_name=str(reference))
                    counts = ErrorCounts.sum(r.counts for r in res)
                    rows.append(StudyBothWaysRow(**common, representation="lattice", n="inf",
                                                 **_wer_fields("free", counts),
                                                 free_cost=float(sum(r.cost for r in res)), MB=_slf_gzip_mb(lats),
                                                 seconds=time.time() - t))
    invariants = check_both_ways(rows, mode=mode, collar=collar)
    bad = [i for i in invariants if not i.holds]
    if bad:
        raise LatticeToolsError(f"study invariant violated on {bad[0].density!r}: {bad[0].check} "
                                f"({bad[0].lhs} > {bad[0].rhs}; {len(bad)} of {len(invariants)} fail); "
                                "the tables are not written", key=bad[0].density)
    if title is None:
        title = f"{', '.join(map(str, lattice_sets))} against {os.path.basename(str(reference))}"
    files = write_both_ways_tables(rows, invariants, out_dir, mode=mode, collar=collar, notes=notes, title=title)
    return StudyResult(rows=tuple(rows), invariants=tuple(invariants), files=files)


def _wer_fields(prefix: str, counts: ErrorCounts) -> dict:
    return {f"{prefix}_wer": 100 * counts.wer, f"{prefix}_C": counts.correct, f"{prefix}_S": counts.substitutions,
            f"{prefix}_D": counts.deletions, f"{prefix}_I": counts.insertions, "ref_words": counts.ref_words}


def _both_ways_row(common: dict, rep: str, n, segmented, free, moved: list, *, MB: float,
                   seconds: float) -> StudyBothWaysRow:
    """One cell: the segmented and the segment-free scores of one alt-CTM and the words moved."""
    if segmented.total.ref_words != free.total.ref_words:
        raise AssertionError("the two scorings counted different reference words")
    scores = {**_wer_fields("seg", segmented.total), **_wer_fields("free", free.total)}  # one ref_words
    return StudyBothWaysRow(**common, representation=rep, n=_n_label(n), **scores,
                            seg_cost=float(sum(s.alignment.cost for s in segmented.segments)),
                            free_cost=float(sum(s.alignment.cost for s in free.segments)),
                            paired=int(sum(m["paired"] for m in moved)), moved=int(sum(m["moved"] for m in moved)),
                            MB=MB, seconds=seconds)


def check_both_ways(rows: Sequence[StudyBothWaysRow], *, mode: str = "sclite",
                    collar: float | None = None) -> list[BothWaysInvariant]:
    """The invariants of :func:`run_study_both_ways` (see its docstring)."""
    out: list[BothWaysInvariant] = []

    def add(density, name, lhs, rhs, holds):
        out.append(BothWaysInvariant(density=density, check=name, lhs=lhs, rhs=rhs, holds=bool(holds)))

    def whole(cost):
        # sclite prices skipping a NULL word '@' (an empty alternative) at 0.001 and the two scorings may skip
        # different numbers of them, so costs are compared on their integer part (real edits cost 3 or 4)
        return math.floor(cost + 1e-6)

    for r in rows:
        if r.seg_cost is None or r.free_cost is None or collar is not None:
            continue  # a collar constrains the segment-free alignment: it may be worse than the segmented one
        cell = f"{r.representation}(N={r.n})"
        add(r.density, f"{cell}: segment-free cost <= segmented cost", r.free_cost, r.seg_cost,
            whole(r.free_cost) <= whole(r.seg_cost))
        if mode == "levenshtein":
            e_free = int(r.free_S or 0) + int(r.free_D or 0) + int(r.free_I or 0)
            e_seg = int(r.seg_S or 0) + int(r.seg_D or 0) + int(r.seg_I or 0)
            add(r.density, f"{cell}: segment-free errors <= segmented errors", e_free, e_seg, e_free <= e_seg)
        if r.moved == 0:
            add(r.density, f"{cell}: no word moved, so equal costs", r.free_cost, r.seg_cost,
                whole(r.free_cost) == whole(r.seg_cost))
    for density in dict.fromkeys(r.density for r in rows):
        cells = {r.cell: r for r in rows if r.density == density and r.free_cost is not None}
        lat = cells.get(("lattice", "inf"))
        if lat is None or lat.free_cost is None:
            continue
        for (rep, n), r in cells.items():
            if rep in ("1best", "nbest") and r.free_cost is not None:
                add(density, f"segment-free: lattice <= {rep}(N={n})", lat.free_cost, r.free_cost,
                    whole(lat.free_cost) <= whole(r.free_cost))
    return out


_BOTH_TITLES = {"1best": "1-best: the lattice's best path", "nbest": "Utterance-level (N-best) alternatives",
                "sausage": "Word-level alternatives (sausages)", "phrase": "Phrase-level alternatives",
                "lattice": "Whole lattice (segment-free oracle only)"}


def write_both_ways_tables(rows: Sequence[StudyBothWaysRow], invariants: Sequence[BothWaysInvariant], out_dir: str, *, mode: str = "sclite",
                           collar: float | None = None, notes: dict | None = None, title: str | None = None) -> dict:
    """``study.md``, ``study.csv`` and ``study.json`` of :func:`run_study_both_ways`."""
    how = "without collar" if collar is None else f"collar {collar:g} s"
    md = [f"# Oracle WER study both ways: {title} ({mode} scoring)", "",
          "The same alternatives scored two ways against the STM's segments. *Segmented*: as sclite and "
          "Faria et al. score them, every CTM item (a word or a whole ALT block) in the one segment its midpoint "
          f"falls in. *Segment-free* ({how}): one alignment per file and channel, so an ALT block or a word "
          "may pair with the words of the next segment. WER in %. *moved* = hypothesis words the segment-free "
          "alignment pairs (correct or substituted) with a reference word of another segment than the one the "
          "segmented scoring hands their CTM item to, out of *paired* such words. MB = gzip-compressed "
          "alt-CTM size (whole lattice: gzip-compressed SLF).", ""]
    show = ["density", "N", "seg_wer", "free_wer", "moved", "paired", "seg_C", "seg_S", "seg_D", "seg_I",
            "free_C", "free_S", "free_D", "free_I", "ref_words", "MB"]
    heads = ["density", "N", "segmented WER", "segment-free WER", "moved", "paired", "C", "S", "D", "I",
             "C (free)", "S (free)", "D (free)", "I (free)", "ref words", "MB"]
    notes = _representation_tables(md, rows, _BOTH_TITLES, heads, show, _both_fmt, notes)
    bad = [i for i in invariants if not i.holds]
    md += ["## Invariants", "", f"{len(invariants) - len(bad)} of {len(invariants)} hold" +
           (" (none checked with a collar but lattice <= 1-best and N-best)." if collar is not None else "."), ""]
    files = _write_markdown(md, notes, out_dir)
    columns = ["density", "representation", "N", "seg_wer", "free_wer", "moved", "paired", "seg_C", "seg_S",
               "seg_D", "seg_I", "free_C", "free_S", "free_D", "free_I", "ref_words", "seg_cost", "free_cost",
               "sides", "arcs", "MB", "seconds"]
    with atomic_write(files["csv"]) as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns + ["skipped"])
        for r in rows:
            d = r.to_dict()
            w.writerow([_both_fmt(d.get(c), c) for c in columns] + [d.get("skipped", "")])
    _write_json(files["json"], {"mode": mode, "collar": collar, "title": title, "rows": [r.to_dict() for r in rows],
                                "invariants": [i.to_dict() for i in invariants], "notes": notes or {}})
    return files


def _both_fmt(v, col):
    if isinstance(v, float) and col in ("seg_wer", "free_wer"):
        return f"{v:.2f}"
    return _fmt(v, col)
