"""``lattice-tools view``: one self-contained HTML page of lattices, alternatives, alignments and keyword hits."""
from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core._budget import budgeted
from ..core.counts import ErrorCounts
from ..core.errors import LatticeToolsError, MismatchError
from .utterances import (
    check_representation,
    chosen_alternatives,
    counts_dict,
    lattice_dict,
    recovered_flags,
    score_one_best,
    slots_dict,
)

REPRESENTATIONS = ("nbest", "sausage", "phrase", "lattice")


@dataclass(frozen=True, slots=True)
class ViewSummary:
    """What :func:`view` wrote: the page's path ``out``, its ``utterances`` and ``bytes``, and with a reference
    the ``totals``: the error counts summed over the utterances, of the 1-best (``1best``) and of every
    representation's oracle (by name, as the page lists them; empty without a reference)."""

    out: str
    utterances: int
    bytes: int
    totals: Mapping[str, ErrorCounts]

    def to_dict(self) -> dict:
        """The summary as JSON values (what ``lattice-tools view --json`` writes; counts as the page shows them:
        ``C``, ``S``, ``D``, ``I``, ``N``, ``E`` and ``wer``)."""
        return {"out": self.out, "utterances": self.utterances, "bytes": self.bytes,
                "totals": {name: counts_dict(c) for name, c in self.totals.items()}}


@budgeted
def view(inputs: Sequence[str] = (), out: str = "view.html", *, alt_ctm: Sequence[str] = (),
         reference: str | None = None, ref_format: str | None = None, glm: str | Sequence[str] | None = None,
         kwslist: str | None = None, kwlist: str | None = None, index: str | None = None,
         representations: Sequence[str] = REPRESENTATIONS, n: int | None = 10, posterior_threshold: float = 0.1,
         acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
         optional_deletable: bool = False, mode: str = "sclite", max_arcs: int = 5000, top_k: int = 300,
         max_alternatives: int = 10, title: str | None = None, format: str | None = None,
         words: str | None = None, frame_shift: float | None = None, frame_subsampling_factor: int | None = None,
         keys: str | None = None, allow_untimed: bool = False, max_memory: int | None = None,
         encoding: str = "utf-8") -> ViewSummary:
    """Write ``out``: ONE self-contained HTML file (inline JavaScript, SVG and CSS; no request of any kind
    leaves it, so it opens from ``file://`` offline) showing, per utterance, the 1-best aligned with the
    reference, the alternatives with their posteriors and the oracle's choice, the lattice on a time axis
    and keyword hits.

    Args:
      inputs: lattice specs (:func:`lattice_tools.io.read_lattice_inputs` with ``format``, ``words``,
        ``frame_shift``, ``frame_subsampling_factor``, ``keys``).
      alt_ctm: (alt-)CTM files, each one more representation (named by its file name); an utterance is a
        CTM file id.  Without lattices the 1-best is the first alternative of every slot.
      reference, ref_format: STM, trn or Kaldi text (optional).  Utterances match it by key as in
        ``lattice-tools oracle`` (trn/text: utterance id; STM: recording, its segments in time order).
      glm: NIST GLM(s) applied like ``csrfilt.sh`` to both sides, as ``score`` and ``oracle`` do (the
        1-best's scoring, and the words of every representation's alternatives for their oracles); refused
        with the lattice representation, as by ``oracle``.
      kwslist: keyword-search detections (NIST kwslist, e.g. ``lattice-tools kws search -o``) drawn on the
        time axis of the utterance whose key is their file id; ``kwlist`` (NIST KWlist XML) names the keywords.
      index: a term index (``lattice-tools kws index``) searched for the keywords of ``kwlist`` with
        :func:`lattice_tools.kws.search.search` at its defaults (what ``kws search`` does by default),
        instead of a ``kwslist``.
      representations: which of ``nbest``, ``sausage``, ``phrase``, ``lattice`` to compute from lattices;
        ``n`` their depth (None: all), ``posterior_threshold`` the phrase boundary threshold, the scales
        those of the searches, posteriors and best path.
      optional_deletable, mode: sclite ``-D``; ``sclite`` or ``levenshtein`` costs.
      max_arcs: the most probable word arcs of each lattice kept in the page (plus the best path); the
        page's top-K control (initially ``top_k``) draws the K most probable of them.
      max_alternatives: alternatives per slot listed (the oracle's choice is added when deeper).
      allow_untimed: accept lattices without word times for phrases and STM references (as ``oracle`` does);
        their lattice is not drawn.
      max_memory: memory budget (bytes of resident memory) of every step: reading, the searches, the page
        (None: none).
    Returns:
      a :class:`ViewSummary` (the page's path, utterances, bytes and the total error counts of the 1-best and of
      every representation's oracle).
    """
    from ..algorithms import arc_posteriors, best_path
    from ..oracle import lattice_oracle
    from ..oracle.api import alternatives_oracle_many
    from ..oracle.graphs import is_nonword
    from ..oracle.representations import (
        filter_alternatives,
        glm_list,
        lattice_specs,
        load_references,
        make_alternatives,
        one_best,
        refuse_glm_on_lattice,
    )
    from .page import write_page

    reps = list(representations)
    for r in reps:
        check_representation(r, REPRESENTATIONS)
    glms = glm_list(glm)
    refuse_glm_on_lattice(glms, reps)   # as `oracle` does: a GLM on the reference side only is a wrong number
    if mode not in ("sclite", "levenshtein"):
        raise LatticeToolsError(f"unknown mode {mode!r}; expected sclite or levenshtein")
    if max_arcs < 1 or top_k < 1 or max_alternatives < 1:
        raise LatticeToolsError("max_arcs, top_k and max_alternatives must be at least 1")
    # lattice specs as `oracle` takes them (quoted patterns such as 'lat.*.gz' expanded, never silently empty)
    specs = lattice_specs([inputs] if isinstance(inputs, (str, os.PathLike)) else [str(x) for x in inputs])
    if not specs and not alt_ctm:
        raise LatticeToolsError("nothing to show: give lattices and/or --alt-ctm files")
    scales: dict[str, Any] = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    opts: dict[str, Any] = dict(mode=mode, optional_deletable=optional_deletable)

    rfmt: str | None = None
    refs: dict | None = None
    if reference is not None:
        from ..io.transcripts.detect import detect_transcript_format

        rfmt = detect_transcript_format(str(reference), ref_format, allowed=("stm", "trn", "text"), role="reference",
                                        option="--ref-format", encoding=encoding)
        refs = load_references(str(reference), glm=glms, fmt=rfmt, encoding=encoding)

    utts: dict = {}          # key -> the page's record
    sources: dict = {}       # key -> where its 1-best comes from (default: the lattice's best path)
    best_alts: dict = {}     # key -> 1-best Alternatives
    rep_alts: dict = {}      # representation -> {key: Alternatives}
    lattice_results: dict = {}
    if specs:
        from ..io import read_lattice_inputs
        from ..io.lattices.inputs import check_times, check_word_table, is_text, is_word_ids

        text_refs = refs is not None and is_text(refs.values())
        id_refs = refs is not None and is_word_ids(refs.values())
        for lat in read_lattice_inputs(specs, format=format, words=words, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor, keys=keys):
            if refs is not None and lat.key not in refs:
                raise MismatchError(f"lattice {lat.key!r} has no reference (references are keyed by utterance id "
                                    "(trn/text) or recording file (stm))", path=str(reference), key=lat.key)
            if refs is not None:
                check_word_table(lat, text_refs, ids=id_refs)
            if "phrase" in reps or rfmt == "stm":
                check_times(lat, allow_untimed=allow_untimed, what="phrase segmentation" if "phrase" in reps
                            else "the assignment of the 1-best's words to STM segments")
            post = arc_posteriors(lat, **scales)
            best = best_path(lat, **scales)
            record = utts.setdefault(lat.key, {"key": lat.key, "reps": {}})
            record["lat"] = lattice_dict(lat, post, best, is_nonword, max_arcs)
            best_alts[lat.key] = one_best(lat, **scales)
            for r in reps:
                if r == "lattice":
                    if refs is not None:
                        lattice_results[lat.key] = lattice_oracle(lat, refs[lat.key], **opts)
                    continue
                kw = {"posterior_threshold": posterior_threshold} if r == "phrase" else {}
                rep_alts.setdefault(r, {})[lat.key] = make_alternatives(lat, r, n, **scales, **kw)
    ctm_names = []
    for path in alt_ctm:
        from ..io.transcripts.altctm import read_alternatives_ctm

        name = os.path.basename(str(path))
        if name in rep_alts or name in ctm_names:
            raise LatticeToolsError(f"two representations named {name!r}: rename one of the files", path=str(path))
        ctm_names.append(name)
        rep_alts[name] = {}
        for alts in read_alternatives_ctm(str(path), encoding=encoding):
            key = alts.file or alts.key
            if refs is not None and key not in refs:
                raise MismatchError(f"CTM file id {key!r} has no reference", path=str(path), key=key)
            rep_alts[name][key] = alts
            utts.setdefault(key, {"key": key, "reps": {}})
            if key not in best_alts:  # no lattice: the first alternative of every slot
                best_alts[key] = alts.truncated(1)
                sources[key] = f"the first alternative of every slot of {name}"
    if not utts:
        raise LatticeToolsError("nothing to show: the inputs hold no utterance")

    # the 1-best, scored like `lattice-tools score`
    order = list(utts)
    for key in order:
        ob = best_alts[key]
        record = utts[key]
        record["onebest"] = {"words": [w for s in ob.slots for a in s.alternatives[:1] for w in a.words],
                             "source": sources.get(key, "the lattice's best path (Viterbi, the given scales)")}
        ends = [s.end for s in ob.slots if math.isfinite(s.end)]
        lat = record.get("lat")
        if lat and lat["f0"]:
            ends.append(max(f + d for f, d in zip(lat["f0"], lat["d"], strict=True)) * lat["fs"])
        record["dur"] = round(max(ends), 2) if ends else 0.0
    totals: dict[str, ErrorCounts] = {}
    if refs is not None:
        scored = score_one_best(str(reference), str(rfmt), [best_alts[k] for k in order], glms, encoding=encoding,
                                **opts)
        missing = [k for k in order if k not in scored]
        if missing:
            raise MismatchError(f"the scorer found no reference segment for {missing[0]!r}", path=str(reference),
                                key=missing[0])
        for key in order:
            utts[key]["onebest"].update(scored[key])
            utts[key]["ref"] = refs[key]
        totals["1best"] = _total([utts[k]["onebest"]["counts"] for k in order])

    # the alternatives and their oracles
    names = [r for r in reps if r != "lattice" and r in rep_alts] + ctm_names
    for name in names:
        nonword = (lambda w: False) if name in ctm_names else is_nonword
        by_key = rep_alts[name]
        have = [k for k in order if k in by_key]
        # the oracle of the alternatives with the GLM applied to their words as to a hypothesis alt-CTM (what
        # `oracle` scores); the page lists them as computed
        results = alternatives_oracle_many(filter_alternatives([by_key[k] for k in have], glms, encoding=encoding),
                                           [refs[k] for k in have], nonword=nonword,
                                           **opts) if refs is not None else [None] * len(have)
        for key, res in zip(have, results, strict=True):
            alts = by_key[key]
            entry: dict = {"kind": name, "n_slots": len(alts.slots)}
            recovered: list = []
            choice = None
            if res is not None:
                oracle_words = [w for w in res.words if w != "@" and not nonword(w)]
                entry.update(counts=counts_dict(res.counts), words=oracle_words)
                ref_text = refs[key]  # type: ignore[index]  # (res is None without a reference)
                recovered = recovered_flags(ref_text, utts[key]["onebest"]["words"], oracle_words, **opts)
                entry["recovered"] = [i for i, f in enumerate(recovered) if f]
                choice = chosen_alternatives(alts, oracle_words, nonword)
            entry["slots"] = slots_dict(alts, choice, recovered, nonword, max_alternatives)
            utts[key]["reps"][name] = entry
        if res_counts := [utts[k]["reps"][name]["counts"] for k in have if "counts" in utts[k]["reps"][name]]:
            totals[name] = _total(res_counts)
    if "lattice" in reps and lattice_results:
        assert refs is not None  # (lattice oracles exist only with a reference)
        for key, res in lattice_results.items():
            words_ = list(res.words)
            recovered = recovered_flags(refs[key], utts[key]["onebest"]["words"], words_, **opts)
            utts[key]["reps"]["lattice"] = {
                "kind": "lattice", "counts": counts_dict(res.counts), "words": words_,
                "starts": [_round(x) for x in res.starts], "durs": [_round(x) for x in res.durations],
                "recovered": [i for i, f in enumerate(recovered) if f]}
        totals["lattice"] = _total([utts[k]["reps"]["lattice"]["counts"] for k in lattice_results])

    for key in order:
        record = utts[key]
        base = record["onebest"].get("counts")
        oracle_errors = [r["counts"]["E"] for r in record["reps"].values() if "counts" in r]
        record["gain"] = (base["E"] - min(oracle_errors)) if base and oracle_errors else None
        record["wer"] = base["wer"] if base else None
    notes = []
    if refs is not None and (unseen := [k for k in refs if k not in utts]):
        notes.append(f"{len(unseen)} reference utterance(s) have no lattice or CTM and are not shown "
                     f"(e.g. {unseen[0]!r})")
    if kwslist is not None or index is not None:
        unplaced = _attach_hits(utts, kwslist, kwlist, index, encoding)
        if unplaced:
            notes.append(f"{unplaced} detection(s) of {os.path.basename(str(kwslist or index))} are on files not shown")

    data = {"title": title or "lattice-tools view", "utterances": [utts[k] for k in order],
            "totals": {name: counts_dict(c) for name, c in totals.items()},
            "notes": notes,
            "representations": [r for r in ["1best", *names, "lattice"] if r in totals or r in names],
            "settings": {"n": n, "posterior_threshold": posterior_threshold, "mode": mode,
                         "optional_deletable": optional_deletable, "max_arcs": max_arcs, "top_k": top_k,
                         "reference": os.path.basename(str(reference)) if reference else None,
                         "glm": ", ".join(os.path.basename(str(g)) for g in glms) or None,
                         "kwslist": os.path.basename(str(kwslist or index)) if kwslist or index else None}}
    size = write_page(out, data)
    return ViewSummary(str(out), len(order), size, totals)


def _total(counts: list[dict]) -> ErrorCounts:
    """The sum of the page's per-utterance counts (:func:`counts_dict`'s short names)."""
    return ErrorCounts(correct=sum(c["C"] for c in counts), substitutions=sum(c["S"] for c in counts),
                       deletions=sum(c["D"] for c in counts), insertions=sum(c["I"] for c in counts),
                       ref_words=sum(c["N"] for c in counts))


def _round(x: float) -> float | None:
    return round(float(x), 3) if x is not None and math.isfinite(x) else None


def _attach_hits(utts: dict, kwslist: str | None, kwlist: str | None, index: str | None, encoding: str) -> int:
    """Every detection of ``kwslist`` (or of searching ``index`` for ``kwlist``) on the utterance whose key is
    its file id; returns how many are on other files."""
    if kwslist is not None and index is not None:
        raise LatticeToolsError("give either a kwslist or an index to search, not both")
    terms: Sequence = []
    if kwlist is not None:
        from ..io.keyword_search.kwlist import read_kwlist

        terms = read_kwlist(str(kwlist), encoding=encoding)
    texts = {t.kwid: t.text for t in terms}
    if index is not None:
        if kwlist is None:
            raise LatticeToolsError("searching an index needs the keywords: give a KWlist (--kwlist)", path=str(index))
        from ..kws.search import search

        detections: Sequence = search(str(index), terms).detections
    else:
        from ..io.keyword_search.kwslist import read_kwslist

        detections = read_kwslist(str(kwslist)).detections
    unplaced = 0
    for d in detections:
        record = utts.get(d.file)
        if record is None:
            unplaced += 1
            continue
        record.setdefault("hits", []).append({"kwid": d.kwid, "text": texts.get(d.kwid, ""), "tbeg": round(d.tbeg, 3),
                                              "dur": round(d.dur, 3), "score": d.score, "yes": bool(d.decision)})
    for record in utts.values():
        record.setdefault("hits", [])
        record["hits"].sort(key=lambda h: (h["tbeg"], -h["score"]))
    return unplaced


#: The line of a Markdown report that links to its view (a rerun replaces it).
VIEW_MARKER = "<!-- view -->"


def link_view(report_md: str, page: str, what: str) -> None:
    """Put one line linking ``page`` (relative to the report) under the first heading of ``report_md``
    (``study.md``), replacing the link an earlier run put there."""
    from ..core.files import atomic_write

    with open(report_md, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i in reversed([i for i, x in enumerate(lines) if x.startswith(VIEW_MARKER)]):  # with the blank line before it
        del lines[i - 1 if i and not lines[i - 1] else i:i + 1]
    rel = os.path.relpath(os.path.abspath(page), os.path.dirname(os.path.abspath(report_md))).replace(os.sep, "/")
    line = (f"{VIEW_MARKER}Browse the data: [{rel}]({rel}) -- {what} (one HTML file: open it in a browser, "
            "no network needed; docs/view.md).")
    at = next((i + 1 for i, x in enumerate(lines) if x.startswith("#")), 0)
    lines[at:at] = ["", line] if at else [line, ""]
    with atomic_write(report_md) as f:
        f.write("\n".join(lines))
