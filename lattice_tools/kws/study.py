"""The spoken-term-detection study: index every representation of the alternatives, search one keyword
list in each index and score it with the F4DE-exact scorer.

For each *representation* of the same lattices -- the 1-best, N-best lists, sausages, phrase alternatives
(several N and posterior thresholds theta) and the whole lattice -- :func:`run_kws_study`

1. derives the alternatives from every lattice (not for the lattice itself) and builds an SQLite term index
   (:mod:`lattice_tools.kws.build`; the same ``max_length`` and ``max_silence`` everywhere, exact:
   ``min_posterior`` 0);
2. searches the keyword list (:func:`lattice_tools.kws.search.search`) and writes the detections as a NIST
   kwslist (``kwslist/<representation>.kwslist.xml``);
3. scores that file with :func:`lattice_tools.kws.score.score_kws` (F4DE KWSEval's numbers: ATWV, MTWV,
   OTWV, STWV);

and records the index size (entries = hits, bytes = the SQLite file) and the CPU seconds of deriving,
indexing and searching.  Outputs under ``out_dir``: ``kws_study.md`` (the table and the invariants),
``kws_study.json``, ``kws_study.png`` (STWV and MTWV against index entries, log x), ``indexes/*.db``,
``kwslist/*.kwslist.xml``.

Invariants (checked and reported; see docs/kws.md, "The STD study", for when each is a theorem): STWV of
the lattice >= STWV of phrases (every N, theta) >= STWV of the 1-best; STWV of the lattice >= STWV of every
N-best list; STWV never falls as N rises (N-best; phrases at one theta).
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..core._budget import DEFAULT_MAX_MEMORY, budgeted
from ..core.errors import BudgetExceededError, LatticeToolsError, MismatchError
from ..core.files import atomic_write, write_json
from ..core.lattice import Lattice
from ..io.keyword_search.ecf import Ecf, EcfExcerpt
from ..io.keyword_search.kwlist import KeywordTerm
from ..io.keyword_search.rttm import RttmRecord
from .index import DEFAULT_MAX_LENGTH, DEFAULT_MAX_SILENCE

if TYPE_CHECKING:
    from .build import IndexSummary

KINDS = ("1best", "nbest", "sausage", "phrase", "lattice")


@dataclass(frozen=True)
class Representation:
    """One row of the study: ``kind`` (one of :data:`KINDS`), depth ``n`` (None = every alternative;
    N-best, sausage, phrase) and the phrase boundary threshold ``theta`` (phrase only)."""

    kind: str
    n: int | None = None
    theta: float | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise LatticeToolsError(f"unknown representation {self.kind!r} (expected one of {', '.join(KINDS)})")
        if self.n is not None and self.n < 1:
            raise LatticeToolsError(f"representation {self.kind}: N must be >= 1 or inf, got {self.n}")
        if self.kind == "phrase" and (self.theta is None or not 0 < self.theta < 1):
            raise LatticeToolsError(f"phrase representation needs a threshold theta in (0, 1), got {self.theta}")

    @property
    def label(self) -> str:
        n = "inf" if self.n is None else str(self.n)
        if self.kind == "phrase":
            return f"phrases N={n} θ={self.theta:g}"
        return {"1best": "1-best", "lattice": "lattice", "nbest": f"N-best N={n}", "sausage": f"sausage N={n}"}[self.kind]

    @property
    def slug(self) -> str:
        n = "inf" if self.n is None else str(self.n)
        if self.kind == "phrase":
            return f"phrase-{n}-{self.theta:g}"
        return {"1best": "1best", "lattice": "lattice", "nbest": f"nbest-{n}", "sausage": f"sausage-{n}"}[self.kind]


def parse_representation(spec: str) -> Representation:
    """``1best``, ``lattice``, ``nbest:N``, ``sausage[:N]``, ``phrase:N:THETA`` (N an integer or ``inf``)."""
    parts = spec.strip().split(":")
    kind = parts[0]
    try:
        n = None if len(parts) < 2 or parts[1] in ("inf", "all") else int(parts[1])
        theta = float(parts[2]) if len(parts) > 2 else (0.1 if kind == "phrase" else None)
    except ValueError:
        raise LatticeToolsError(f"bad representation {spec!r}: expected 1best, lattice, nbest:N, sausage[:N] or "
                                "phrase:N:THETA (N an integer or inf)") from None
    if (kind == "nbest" and len(parts) < 2) or len(parts) > (3 if kind == "phrase" else 2) \
            or (kind in ("1best", "lattice") and len(parts) > 1):
        raise LatticeToolsError(f"bad representation {spec!r}: expected 1best, lattice, nbest:N, sausage[:N] or "
                                "phrase:N:THETA")
    return Representation(kind, n, theta)


#: The study's default rows (the bundled recordings run all of them in a few seconds).
#: Sausages and phrases at N = inf are not among them: every bin entry of every sausage bin makes
#: 118 MB of 3-word combinations on the bundled lattices, and phrases at N = inf exceed the exact
#: search's budget on two of them.
DEFAULT_REPRESENTATIONS = tuple(parse_representation(s) for s in (
    "1best", "nbest:10", "nbest:100", "nbest:1000", "sausage:3", "sausage:10",
    "phrase:1:0.1", "phrase:10:0.1", "phrase:100:0.1", "phrase:1000:0.1",
    "phrase:10:0.5", "phrase:100:0.5", "phrase:1000:0.5", "lattice"))


def representation_alternatives(lat: Lattice, rep: Representation, *, acoustic_scale: float = 1.0,
                                lm_scale: float = 1.0, word_penalty: float = 0.0):
    """The alternatives of ``lat`` for ``rep`` (not for the lattice itself).  The 1-best is the consensus
    1-best with its bin posteriors as word confidences (Kaldi's ``lattice-to-ctm-conf``), as in
    ``lattice-tools kws index --from 1best``."""
    from ..alternatives import nbest, phrases, sausage

    scales: dict[str, Any] = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    if rep.kind == "1best":
        alts = sausage(lat, 1, **scales)  # bins whose best entry is epsilon are not in a 1-best
        return replace(alts, kind="1best", slots=tuple(sl for sl in alts.slots if not sl.best.is_empty))
    if rep.kind == "nbest":
        return nbest(lat, rep.n, **scales)
    if rep.kind == "sausage":
        return sausage(lat, rep.n, **scales)
    if rep.kind == "phrase":
        assert rep.theta is not None, "a phrase representation has its threshold"
        return phrases(lat, rep.n, rep.theta, **scales)
    raise LatticeToolsError("the lattice is indexed as it is, not as alternatives")


def ecf_from_lattices(lattices: Sequence[Lattice], channel: str = "1") -> Ecf:
    """One excerpt per lattice: recording = its key, from 0 to the lattice's last time."""
    out = []
    for lat in lattices:
        if not lat.has_times:
            raise MismatchError(f"lattice {lat.key!r} has no times: give an ECF", key=lat.key)
        out.append(EcfExcerpt(lat.key, channel, 0.0, round(lat.duration, 3)))
    return Ecf(tuple(out))


@dataclass(frozen=True, slots=True)
class KwsStudyRow:
    """One representation's row of the study.

    A row whose index build exceeded the memory budget says why in ``skipped`` and has no measure (every other
    field None).  Otherwise: the F4DE-exact scores of the written kwslist (``atwv``, ``mtwv`` and its threshold,
    ``otwv``, ``stwv``; None when no keyword has a reference occurrence; ``p_miss``/``p_fa`` at the ATWV
    threshold), the scorer's trial counts (``keywords`` evaluated, ``n_true``, ``n_nontarg``, ``n_sys``,
    ``n_corr``, ``n_corr_nondet``, ``n_fa``, ``n_miss``), the index size (``entries`` = hits, ``bytes`` of the
    SQLite file), the CPU seconds of deriving the alternatives, indexing and searching (``ms_per_query``: search
    per keyword), the search's ``detections``, ``oov``, ``no_hits`` and ``too_long`` keyword counts, and the paths
    of the ``index`` and the ``kwslist``."""

    representation: Representation
    skipped: str | None = None
    atwv: float | None = None
    mtwv: float | None = None
    mtwv_threshold: float | str | None = None  # F4DE's "NaN" when no keyword has a reference occurrence
    otwv: float | None = None
    stwv: float | None = None
    p_miss: float | None = None
    p_fa: float | None = None
    keywords: int | None = None
    n_true: int | None = None
    n_nontarg: int | None = None
    n_sys: int | None = None
    n_corr: int | None = None
    n_corr_nondet: int | None = None
    n_fa: int | None = None
    n_miss: int | None = None
    entries: int | None = None
    bytes: int | None = None
    derive_seconds: float | None = None
    index_seconds: float | None = None
    search_seconds: float | None = None
    ms_per_query: float | None = None
    detections: int | None = None
    oov: int | None = None
    no_hits: int | None = None
    too_long: int | None = None
    index: str | None = None
    kwslist: str | None = None

    def to_dict(self) -> dict:
        """The row as JSON values (a line of ``kws_study.json`` and of ``kws study --json``): the representation's
        ``representation`` (label), ``kind``, ``slug``, ``n``, ``theta``, then ``skipped`` or every measure."""
        rep = self.representation
        out: dict[str, Any] = {"representation": rep.label, "kind": rep.kind, "slug": rep.slug, "n": rep.n,
                               "theta": rep.theta}
        if self.skipped is not None:
            out["skipped"] = self.skipped
            return out
        out.update((name, getattr(self, name)) for name in _MEASURES)
        return out


#: The measures of a row that ran, in the order of its dict.
_MEASURES = ("atwv", "mtwv", "mtwv_threshold", "otwv", "stwv", "p_miss", "p_fa", "keywords", "n_true", "n_nontarg",
             "n_sys", "n_corr", "n_corr_nondet", "n_fa", "n_miss", "entries", "bytes", "derive_seconds",
             "index_seconds", "search_seconds", "ms_per_query", "detections", "oov", "no_hits", "too_long", "index",
             "kwslist")


@dataclass(frozen=True, slots=True)
class KwsInvariant:
    """One STWV ordering between two rows (:func:`check_invariants`): its ``rule`` (e.g. ``lattice>=nbest``),
    the ``check`` as text, the two sides ``lhs`` >= ``rhs``, whether it ``holds`` (to 1e-12) and what
    ``guarantee`` stands behind it (a theorem, or empirical)."""

    rule: str
    check: str
    lhs: float
    rhs: float
    holds: bool
    guarantee: str

    def to_dict(self) -> dict:
        return {"rule": self.rule, "check": self.check, "lhs": self.lhs, "rhs": self.rhs, "holds": self.holds,
                "guarantee": self.guarantee}


@dataclass(frozen=True)
class KwsStudyResult:
    """What :func:`run_kws_study` found: one :class:`KwsStudyRow` per representation (in the order given), the
    :class:`KwsInvariant` checks, and the files written by name (``markdown``, ``json``, ``plot`` when drawn: a
    mapping of output name to path, as the demo lists every output)."""

    rows: tuple[KwsStudyRow, ...]
    invariants: tuple[KwsInvariant, ...]
    files: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The rows and invariants as JSON values (what ``lattice-tools kws study --json`` writes)."""
        return {"rows": [r.to_dict() for r in self.rows], "invariants": [i.to_dict() for i in self.invariants]}


def _check_settings(max_length: int, normalization: str) -> None:
    if max_length < 1:
        raise LatticeToolsError(f"max_length must be >= 1, got {max_length}")
    if normalization not in ("none", "kst", "sum-to-one"):
        raise LatticeToolsError(f"unknown normalization {normalization!r} (expected none, kst or sum-to-one)")


def _check_inputs(lattices, references, terms, ecf, channel) -> None:
    if not lattices:
        raise LatticeToolsError("the KWS study needs at least one lattice")
    if not terms:
        raise LatticeToolsError("the keyword list is empty")
    keys = [lat.key for lat in lattices]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise MismatchError(f"lattice key(s) given twice: {' '.join(dup[:5])}", key=dup[0])
    known = {(e.file, e.channel) for e in ecf.excerpts}
    missing = [k for k in keys if (k, channel) not in known]
    if missing:
        raise MismatchError(f"{len(missing)} lattice(s) not in the ECF (as file, channel {channel}), e.g. "
                            f"{missing[0]!r}", key=missing[0])
    ref_files = {r.file for r in references if r.type == "LEXEME"}
    if not ref_files & set(keys):
        raise MismatchError(f"no reference word belongs to a lattice: reference files {sorted(ref_files)[:3]} "
                            f"vs lattice keys {keys[:3]}")


def _build(rep, lattices, path, *, max_length, max_silence, scales, channel, tick) -> tuple[IndexSummary, float, float]:
    """Build ``rep``'s index; returns (build counts, CPU seconds deriving the alternatives, CPU seconds
    indexing them), after an untimed warm-up."""
    from .build import build_alternatives_index, build_lattice_index
    from .index import index_alternatives, index_lattice

    common = dict(max_length=max_length, max_silence=max_silence, min_posterior=0.0)
    # Untimed warm-up on the smallest lattice: the first call of a kind pays imports and compilation.
    smallest = min(lattices, key=lambda lat: lat.num_arcs)
    if rep.kind == "lattice":
        index_lattice(smallest, **common, **scales)
        t0 = time.process_time()
        built = build_lattice_index(lattices, path, channel=channel, progress=lambda _key: tick(), **scales, **common)
        return built, 0.0, time.process_time() - t0
    index_alternatives(representation_alternatives(smallest, rep, **scales), **common)
    derive = [0.0]

    def alternatives():
        for lat in lattices:
            t0 = time.process_time()
            alts = representation_alternatives(lat, rep, **scales)
            derive[0] += time.process_time() - t0
            alts.meta["vocabulary"] = [w for w, _ in lat.symbols]
            yield alts.with_location(lat.key, channel)
            tick()

    t0 = time.process_time()
    built = build_alternatives_index(alternatives(), path, rep.kind, **common)
    return built, derive[0], time.process_time() - t0 - derive[0]


def _study_row(rep, lattices, references, terms, ecf, out_dir, opts, tick) -> KwsStudyRow:
    from ..io.keyword_search.kwslist import read_kwslist, write_kwslist
    from .score import score_kws
    from .search import search

    idx_path = os.path.join(out_dir, "indexes", f"{rep.slug}.db")
    try:
        built, derive_s, index_s = _build(rep, lattices, idx_path, max_length=opts["max_length"],
                                 max_silence=opts["max_silence"], scales=opts["scales"], channel=opts["channel"],
                                 tick=tick)
    except BudgetExceededError as e:
        return KwsStudyRow(rep, skipped=str(e))
    t0 = time.process_time()
    res = search(idx_path, terms, normalization=opts["normalization"], threshold=opts["threshold"],
                 duration=ecf.total_duration(), duptime=opts["duptime"])
    search_s = time.process_time() - t0
    kws_path = os.path.join(out_dir, "kwslist", f"{rep.slug}.kwslist.xml")
    write_kwslist(kws_path, res.detections, kwlist_filename=opts["kwlist_filename"], system_id=rep.slug,
                  kwids=[t.kwid for t in terms], oov_kwids=res.oov)
    # Scored as written, so that `lattice-tools kws score` on the files gives the same numbers.
    s = score_kws(ecf, references, opts["kwlist"], read_kwslist(kws_path), **opts["score_options"]).overall

    def tw(p):
        return None if p.twv is None else float(p.twv)

    c = s.counts()
    return KwsStudyRow(rep, atwv=tw(s.atwv), mtwv=tw(s.mtwv), mtwv_threshold=s.mtwv.threshold, otwv=tw(s.otwv),
                       stwv=tw(s.stwv), p_miss=s.atwv.p_miss, p_fa=s.atwv.p_fa, keywords=c["keywords"],
                       n_true=c["n_true"], n_nontarg=c["n_nontarg"], n_sys=c["n_sys"], n_corr=c["n_corr"],
                       n_corr_nondet=c["n_corr_nondet"], n_fa=c["n_fa"], n_miss=c["n_miss"],
                       entries=built.hits, bytes=os.path.getsize(idx_path), derive_seconds=derive_s,
                       index_seconds=index_s, search_seconds=search_s, ms_per_query=1000 * search_s / len(terms),
                       detections=len(res.detections), oov=len(res.oov), no_hits=len(res.no_hits),
                       too_long=len(res.too_long), index=idx_path, kwslist=kws_path)


def run_kws_study(lattices: Iterable[Lattice], references: Sequence[RttmRecord], terms: Sequence[KeywordTerm], *,
                  out_dir: str, ecf: Ecf | None = None,
                  representations: Sequence[Representation] = DEFAULT_REPRESENTATIONS,
                  max_length: int = DEFAULT_MAX_LENGTH, max_silence: float | None = DEFAULT_MAX_SILENCE,
                  normalization: str = "none", threshold: float = 0.5, duptime: float = 0.5,
                  acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                  channel: str = "1", kwlist_filename: str = "kwlist.xml", compare_normalize: str = "lowercase",
                  title: str | None = None, plots: bool = True, progress: bool | None = None,
                  score_options: Mapping | None = None) -> KwsStudyResult:
    """Index, search and score every representation of ``lattices`` (see the module docstring).

    Args:
      lattices: the lattices (utterance key = recording, channel ``channel``, times from 0).
      references: reference LEXEMEs (:func:`lattice_tools.io.keyword_search.rttm.read_rttm` or ``lexemes_from_ctm``).
      terms: the keyword list.  ``compare_normalize``: its KWlist attribute (``lowercase``: the scorer
        lower-cases both sides, as for a list made by ``lattice-tools kws kwlist``).
      ecf: the evaluation's excerpts (default: :func:`ecf_from_lattices`).
      representations: the rows (default :data:`DEFAULT_REPRESENTATIONS`).
      max_length, max_silence: the index settings, the same for every representation.
      normalization, threshold, duptime: the search settings (:func:`lattice_tools.kws.search.search`).
      score_options: extra keyword arguments of :func:`lattice_tools.kws.score.score_kws`.
    Returns:
      :class:`KwsStudyResult`; every file is written atomically under ``out_dir``.
    Raises:
      MismatchError when lattices, ECF and references do not belong together; LatticeToolsError for an
      empty keyword list.  A representation whose search budget is exceeded is a skipped row, not an error.
    """
    from tqdm import tqdm

    from ..io.keyword_search.kwlist import KwList

    lattices = list(lattices)
    _check_settings(max_length, normalization)
    if ecf is None:
        ecf = ecf_from_lattices(lattices, channel)
    _check_inputs(lattices, references, terms, ecf, channel)
    for sub in ("indexes", "kwslist"):
        os.makedirs(os.path.join(out_dir, sub), exist_ok=True)
    opts = {"max_length": max_length, "max_silence": max_silence, "normalization": normalization,
            "threshold": threshold, "duptime": duptime, "channel": channel, "kwlist_filename": kwlist_filename,
            "scales": dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty),
            "kwlist": KwList(tuple(terms), compare_normalize=compare_normalize),
            "score_options": dict(score_options or {})}
    disable = (not _isatty()) if progress is None else not progress
    rows = []
    with tqdm(total=len(representations) * len(lattices), desc="kws study", unit="lattice", disable=disable) as bar:
        for rep in representations:
            bar.set_postfix_str(rep.label)
            rows.append(_study_row(rep, lattices, references, terms, ecf, out_dir, opts, lambda: bar.update(1)))
    invariants = check_invariants(rows)
    settings = {"max_length": max_length, "max_silence": max_silence, "normalization": normalization,
                "threshold": threshold, "duptime": duptime, "lattices": len(lattices), "keywords": len(terms),
                "multiword_keywords": sum(1 for t in terms if len(t.words) > 1), "ecf_seconds": ecf.total_duration()}
    files = write_study(rows, invariants, out_dir, settings=settings, title=title, plots=plots)
    return KwsStudyResult(tuple(rows), tuple(invariants), files)


@budgeted
def kws_study_files(inputs: Sequence[str], out: str, *, rttm: str | None = None, ctm: str | None = None,
                    ecf: str | None = None, kwlist: str | None = None, num_terms: int = 100, seed: int = 0,
                    representations: Sequence[str] = (), format: str | None = None, words: str | None = None,
                    frame_shift: float | None = None, frame_subsampling_factor: int | None = None,
                    keys: str | None = None, max_memory: int | None = DEFAULT_MAX_MEMORY,
                    encoding: str = "utf-8", allow_overlapping_reference: bool = False,
                    max_length: int = DEFAULT_MAX_LENGTH, max_silence: float | None = DEFAULT_MAX_SILENCE,
                    normalization: str = "none", threshold: float = 0.5, duptime: float = 0.5,
                    acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                    channel: str = "1", title: str | None = None, plots: bool = True,
                    progress: bool | None = None) -> KwsStudyResult:
    """:func:`run_kws_study` on files: lattices (``inputs``, any format :func:`lattice_tools.io.read_lattice_inputs`
    reads), the reference word times (exactly one of an ``rttm`` or a ``ctm``), an ``ecf`` (default: one
    excerpt per lattice) and a ``kwlist`` (NIST KWlist XML; default: ``num_terms``
    keywords drawn from the reference with ``seed`` by :func:`lattice_tools.kws.kwlist_make.make_kwlist`,
    written to ``out/kwlist.xml``).  ``representations``: specs for :func:`parse_representation` (default:
    :data:`DEFAULT_REPRESENTATIONS`).  ``keys``: a file naming the lattices in input order; ``max_memory``: bytes
    of resident memory every step may use (None: no bound; BudgetExceededError past it).  The other arguments
    are :func:`run_kws_study`'s."""
    from ..io import read_lattice_inputs
    from ..io.keyword_search.ecf import read_ecf
    from ..io.keyword_search.kwlist import read_kwlist_file, write_kwlist
    from ..io.keyword_search.rttm import check_overlaps, lexemes_from_ctm, read_rttm
    from .kwlist_make import make_kwlist

    if (rttm is None) == (ctm is None):
        raise MismatchError("give the reference word times as exactly one of an RTTM or a CTM")
    _check_settings(max_length, normalization)
    reps = tuple(parse_representation(r) for r in representations) or DEFAULT_REPRESENTATIONS
    ref_path = rttm if rttm is not None else ctm
    assert ref_path is not None  # exactly one of them: checked above
    refs = read_rttm(ref_path, encoding=encoding, types=("LEXEME",)) if rttm else lexemes_from_ctm(ref_path,
                                                                                                   encoding=encoding)
    if not allow_overlapping_reference:
        check_overlaps(refs, ref_path)
    enc = None if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    if kwlist is None:
        terms, compare = make_kwlist(refs, num_terms=num_terms, seed=seed), "lowercase"
    else:
        kwl = read_kwlist_file(kwlist, encoding=encoding)
        terms, compare = list(kwl.terms), kwl.compare_normalize
    lattices = list(read_lattice_inputs(list(inputs), format=format, words=words, frame_shift=frame_shift,
                                        frame_subsampling_factor=frame_subsampling_factor, keys=keys))
    the_ecf = read_ecf(ecf, encoding=enc) if ecf else ecf_from_lattices(lattices, channel)
    _check_inputs(lattices, refs, terms, the_ecf, channel)  # before anything is written
    if kwlist is None:
        os.makedirs(out, exist_ok=True)
        kwlist = os.path.join(out, "kwlist.xml")
        write_kwlist(kwlist, terms, compare_normalize=compare)
    return run_kws_study(lattices, refs, terms, out_dir=out, ecf=the_ecf, representations=reps,
                         kwlist_filename=os.path.basename(kwlist), compare_normalize=compare, max_length=max_length,
                         max_silence=max_silence, normalization=normalization, threshold=threshold, duptime=duptime,
                         acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty, channel=channel,
                         title=title, plots=plots, progress=progress)


def _isatty() -> bool:
    import sys

    return sys.stderr.isatty()


# ----------------------------------------------------------------------------------------------
# Invariants
_GUARANTEE = {
    "lattice>=nbest": "theorem at the occurrence level (every N-best entry is a lattice path)",
    "lattice>=phrase": "theorem for single words and terms inside one phrase; a term across a phrase boundary "
                       "can combine alternatives no lattice path joins",
    "phrase>=1best": "empirical (the consensus 1-best is a sausage path, not necessarily a phrase path)",
    "lattice>=1best": "empirical (the consensus 1-best is a sausage path, not necessarily a lattice path)",
    "nbest_rises": "theorem at the occurrence level (the N-best list is a prefix of the N'-best list)",
    "phrase_rises": "theorem at the occurrence level (at one θ the phrases are the same; N keeps a prefix of each)",
}


def check_invariants(rows: Sequence[KwsStudyRow]) -> list[KwsInvariant]:
    """STWV orderings between the study's rows (skipped rows are left out); one :class:`KwsInvariant` per check."""
    done = [r for r in rows if r.skipped is None]

    def by(kind):
        return [r for r in done if r.representation.kind == kind]

    def order(r):
        return math.inf if r.representation.n is None else r.representation.n

    out = []

    def add(rule, hi, lo):
        if hi.stwv is None or lo.stwv is None:  # no keyword with a reference occurrence
            return
        out.append(KwsInvariant(rule, f"STWV({hi.representation.label}) ≥ STWV({lo.representation.label})",
                                hi.stwv, lo.stwv, bool(hi.stwv >= lo.stwv - 1e-12), _GUARANTEE[rule]))

    lattice, best = by("lattice"), by("1best")
    for lat in lattice:
        for r in by("nbest"):
            add("lattice>=nbest", lat, r)
        for r in by("phrase"):
            add("lattice>=phrase", lat, r)
        for b in best:
            add("lattice>=1best", lat, b)
    for b in best:
        for r in by("phrase"):
            add("phrase>=1best", r, b)
    nb = sorted(by("nbest"), key=order)
    for lo, hi in zip(nb, nb[1:], strict=False):
        add("nbest_rises", hi, lo)
    for theta in sorted({r.representation.theta for r in by("phrase")}):
        ph = sorted((r for r in by("phrase") if r.representation.theta == theta), key=order)
        for lo, hi in zip(ph, ph[1:], strict=False):
            add("phrase_rises", hi, lo)
    return out


# ----------------------------------------------------------------------------------------------
# Tables and plot
_COLUMNS = (("representation", "representation"), ("ATWV", "atwv"), ("MTWV", "mtwv"), ("OTWV", "otwv"),
            ("STWV", "stwv"), ("YES correct/N_true", None), ("entries", "entries"), ("bytes", "bytes"),
            ("derive s", "derive_seconds"), ("index s", "index_seconds"), ("search ms/query", "ms_per_query"))


def _cell(row: KwsStudyRow, key: str | None) -> str:
    if key is None:
        return f"{row.n_corr}/{row.n_true}"
    v = row.representation.label if key == "representation" else getattr(row, key)
    if v is None:
        return "–"
    if key in ("atwv", "mtwv", "otwv", "stwv"):
        return f"{v:.4f}"
    if key.endswith("seconds"):
        return f"{v:.2f}"
    if key == "ms_per_query":
        return f"{v:.3f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def markdown_table(rows: Sequence[KwsStudyRow]) -> str:
    """The study table (one line per representation; skipped rows say why)."""
    lines = ["| " + " | ".join(c for c, _ in _COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    for r in rows:
        if r.skipped is not None:
            lines.append(f"| {r.representation.label} | skipped: {r.skipped} |" + " |" * (len(_COLUMNS) - 2))
        else:
            lines.append("| " + " | ".join(_cell(r, k) for _, k in _COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def invariants_markdown(invariants: Sequence[KwsInvariant]) -> str:
    lines = []
    for inv in invariants:
        mark = "holds" if inv.holds else "FAILS"
        lines.append(f"- {inv.check}: {inv.lhs:.4f} vs {inv.rhs:.4f} — **{mark}** ({inv.guarantee})")
    held = sum(inv.holds for inv in invariants)
    return f"{held} of {len(invariants)} invariants hold.\n\n" + "\n".join(lines) + "\n"


def study_markdown(rows: Sequence[KwsStudyRow], invariants: Sequence[KwsInvariant], settings: Mapping, *,
                   title: str | None = None, heading: str = "#") -> str:
    s = settings
    sil = "none" if s["max_silence"] is None else f"{s['max_silence']:g} s"
    parts = [f"{heading} Spoken term detection{': ' + title if title else ''}\n",
             f"{s['keywords']} keywords ({s['multiword_keywords']} multi-word), {s['lattices']} lattices, "
             f"T = {s['ecf_seconds']:g} s of ECF excerpts. Every index holds the word sequences of up to "
             f"{s['max_length']} words (silence limit {sil}, exact: no posterior pruning); search: "
             f"normalization {s['normalization']}, threshold {s['threshold']:g}, duplicate removal "
             f"{s['duptime']:g} s; scores: the F4DE-exact scorer on the written kwslist. STWV is the "
             "keyword-averaged recall of the hit list; entries = index hits, bytes = the SQLite file; "
             "times are CPU seconds (derive = computing the alternatives from the lattices).\n",
             markdown_table(rows), f"\n{heading}# Invariants\n", invariants_markdown(invariants)]
    return "\n".join(parts)


def _plot(rows: Sequence[KwsStudyRow], path: str, title: str | None) -> None:
    from ..core._optional import pyplot

    plt = pyplot()

    done = [r for r in rows if r.skipped is None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, name in ((axes[0], "stwv", "STWV (recall)"), (axes[1], "mtwv", "MTWV")):
        for kind, marker in (("nbest", "o-"), ("phrase", "s-"), ("sausage", "D-"), ("1best", "*"), ("lattice", "P")):
            groups: dict = {}
            for r in done:
                if r.representation.kind == kind and getattr(r, key) is not None:
                    groups.setdefault(r.representation.theta, []).append(r)
            for theta, rs in groups.items():
                rs.sort(key=lambda r: r.entries)
                label = {"nbest": "N-best", "phrase": f"phrases θ={theta:g}" if theta is not None else "phrases",
                         "sausage": "sausage", "1best": "1-best", "lattice": "lattice"}[kind]
                ax.plot([max(r.entries, 1) for r in rs], [getattr(r, key) for r in rs], marker, label=label, ms=7)
        ax.set_xscale("log")
        ax.set_xlabel("index size (entries)")
        ax.set_ylabel(name)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Spoken term detection{': ' + title if title else ''}", fontsize=10)
    fig.tight_layout()
    try:
        with atomic_write(path, "wb") as out:
            fig.savefig(out, format="png", dpi=110)
    finally:
        plt.close(fig)


def write_study(rows: Sequence[KwsStudyRow], invariants: Sequence[KwsInvariant], out_dir: str, *,
                settings: Mapping, title: str | None = None, plots: bool = True) -> dict[str, str]:
    """Write ``kws_study.md``, ``kws_study.json`` and (``plots``) ``kws_study.png`` under ``out_dir``; returns
    their paths by name (``markdown``, ``json``, ``plot``)."""
    files = {"markdown": os.path.join(out_dir, "kws_study.md"), "json": os.path.join(out_dir, "kws_study.json")}
    with atomic_write(files["markdown"]) as f:
        f.write(study_markdown(rows, invariants, settings, title=title))
    write_json(files["json"], {"title": title, "settings": dict(settings), "rows": [r.to_dict() for r in rows],
                               "invariants": [i.to_dict() for i in invariants]}, indent=1)
    if plots:
        files["plot"] = os.path.join(out_dir, "kws_study.png")
        _plot(rows, files["plot"], title)
    return files


__all__ = ["Representation", "parse_representation", "DEFAULT_REPRESENTATIONS", "representation_alternatives",
           "ecf_from_lattices", "run_kws_study", "kws_study_files", "KwsStudyResult", "KwsStudyRow", "KwsInvariant",
           "check_invariants", "markdown_table", "study_markdown", "write_study"]
