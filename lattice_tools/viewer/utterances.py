"""What the view shows of one utterance, as plain JSON-able dicts computed by the toolkit's own functions.

Nothing here scores, aligns or searches by itself:

* the 1-best alignment and its counts come from :func:`lattice_tools.scoring.score_files` (what
  ``lattice-tools score`` runs) on a scratch hypothesis file of the 1-best words, GLM applied to both
  sides like ``csrfilt.sh``;
* the oracle of every representation comes from :func:`lattice_tools.oracle.lattice_oracle` and
  :func:`lattice_tools.oracle.api.alternatives_oracle_many` against the references of
  :func:`lattice_tools.oracle.representations.load_references` (what ``lattice-tools oracle`` runs);
* N-best lists, sausages and phrases from :func:`lattice_tools.oracle.representations.make_alternatives`;
* posteriors and the best path from :mod:`lattice_tools.algorithms`;
* which reference words the oracle recovers: the reference network of
  :func:`lattice_tools.scoring.parse_transcript` aligned (:func:`lattice_tools.scoring.align_networks`)
  once with the 1-best and once with the oracle words; a reference arc that is wrong in the first and
  correct in the second is recovered.
"""
from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.errors import LatticeToolsError

# counts as the page shows them (ErrorCounts fields under short names)
_COUNT_KEYS = (("correct", "C"), ("substitutions", "S"), ("deletions", "D"), ("insertions", "I"),
               ("ref_words", "N"), ("errors", "E"))


def counts_dict(counts) -> dict:
    """ErrorCounts -> ``{"C", "S", "D", "I", "N", "E", "wer"}`` (WER a fraction; None without reference words)."""
    d: dict[str, Any] = {short: int(getattr(counts, name)) for name, short in _COUNT_KEYS}
    d["wer"] = (d["E"] / d["N"]) if d["N"] else None
    return d


def _r(x: float, digits: int = 3) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), digits)


# ----------------------------------------------------------------------------------------------
# 1-best alignment through the scorer
# ----------------------------------------------------------------------------------------------
def score_one_best(reference: str, ref_format: str, one_best: Sequence, glms: Sequence[str], *, encoding: str,
                   optional_deletable: bool, mode: str) -> dict:
    """Score the 1-best :class:`Alternatives` of every utterance with ``score_files`` (a scratch CTM for an
    STM reference, a scratch trn otherwise) and return ``{key: {"counts", "align"}}``: the counts and the
    alignment pairs ``[op, ref, hyp]`` of the key's segments in order (STM: every scored segment of the
    recording ``key``; trn/text: the utterance ``key``)."""
    from ..core.counts import ErrorCounts
    from ..core.files import discard_temporary, make_temporary
    from ..scoring import score_files

    suffix = "ctm" if ref_format == "stm" else "trn"
    fd, tmp = make_temporary(os.path.join(tempfile.gettempdir(), "view-1best." + suffix))
    os.close(fd)
    try:
        if ref_format == "stm":
            from ..io.transcripts.altctm import write_alternatives_ctm

            write_alternatives_ctm(tmp, one_best, n=1)
            hyp_format = "ctm"
        else:
            from ..io.transcripts.trn import TrnUtterance, write_trn

            write_trn(tmp, [TrnUtterance(a.key, " ".join(a.one_best())) for a in one_best], encoding=encoding)
            hyp_format = "trn"
        # (id_type "sp": an utterance id is its own speaker, so any id scores; the counts per utterance do not
        # depend on how sclite groups utterances into speakers)
        result = score_files(reference, tmp, glms=list(glms), ref_format=ref_format, hyp_format=hyp_format,
                             optional_deletable=optional_deletable, mode=mode, allow_missing=True, encoding=encoding,
                             id_type="sp")
    finally:
        discard_temporary(tmp)
    by_key: dict = {}
    keys = {a.key for a in one_best}
    folded = {k.casefold(): k for k in keys}
    first_channel: dict = {}  # an STM recording's first channel only, as the oracle's references (load_references)
    for seg in result.segments:
        if ref_format == "stm" and first_channel.setdefault(seg.file, seg.channel) != seg.channel:
            continue
        name = seg.file if ref_format == "stm" else seg.id
        if ref_format != "stm" and name.startswith("(") and name.endswith(")"):  # the scorer keeps trn's "(id)"
            name = name[1:-1]
        key = name if name in keys else folded.get(str(name).casefold())
        if key is not None:
            by_key.setdefault(key, []).append(seg)
    out = {}
    for key, segs in by_key.items():
        out[key] = {"counts": counts_dict(ErrorCounts.sum(s.counts for s in segs)),
                    "align": [[p.op, p.ref, p.hyp] for s in segs for p in s.alignment.pairs]}
    return out


# ----------------------------------------------------------------------------------------------
# Recovered words
# ----------------------------------------------------------------------------------------------
def _ref_ops(ref_net, words: Sequence[str], options) -> tuple[dict, list]:
    """``{reference arc: op}`` and the hypothesis arc's op per hypothesis word, of ``words`` aligned with
    the reference network by the scorer's DP."""
    from ..scoring import align_networks, linear_network

    hyp = linear_network(list(words), case_sensitive=False)
    al = align_networks(ref_net, hyp, options)
    by_ref = {p.ref_arc: p.op for p in al.pairs if p.ref_arc >= 0}
    hyp_ref = [(p.hyp_arc, p.ref_arc, p.op) for p in al.pairs if p.hyp is not None and p.hyp_arc >= 0]
    return by_ref, hyp_ref


def recovered_flags(ref_text: str, one_best: Sequence[str], oracle_words: Sequence[str], *,
                    optional_deletable: bool, mode: str) -> list[bool]:
    """Per oracle word: True when it is correct and its reference word is not correct in the 1-best's
    alignment (both aligned with the same reference network by the scorer)."""
    from ..scoring import AlignOptions, parse_transcript

    if not oracle_words:
        return []
    options = AlignOptions(mode=mode, optional_deletable=optional_deletable)
    ref_net = parse_transcript(ref_text)
    best_by_ref, _ = _ref_ops(ref_net, one_best, options)
    _, oracle_hyp = _ref_ops(ref_net, oracle_words, options)
    # hypothesis arcs of a linear network are numbered in word order (null words have none)
    flags = [False] * len(oracle_words)
    arcs = sorted(oracle_hyp)
    for i, (_, ref_arc, op) in enumerate(arcs[:len(flags)]):
        flags[i] = op == "C" and best_by_ref.get(ref_arc) != "C"
    return flags


# ----------------------------------------------------------------------------------------------
# Alternatives: slots, posteriors and the oracle's choice in each slot
# ----------------------------------------------------------------------------------------------
def chosen_alternatives(alts, oracle_words: Sequence[str], nonword: Callable[[str], bool]) -> list[int] | None:
    """Which alternative of each slot the oracle word sequence takes: the first choice (slots in order,
    alternatives in listed order) whose words, without non-words and ``@``, concatenate to
    ``oracle_words``.  None when no choice does (not expected: the oracle chose among these)."""
    target = [w.casefold() for w in oracle_words if w != "@" and not nonword(w)]
    slots = [[[w.casefold() for w in a.words if w != "@" and not nonword(w)] for a in s.alternatives]
             for s in alts.slots]
    n = len(target)
    # reach[s][i]: from slot s with i words matched, the rest can be matched (computed backwards)
    reach = [[False] * (n + 1) for _ in range(len(slots) + 1)]
    reach[len(slots)][n] = True
    for s in range(len(slots) - 1, -1, -1):
        for i in range(n + 1):
            reach[s][i] = any(target[i:i + len(ws)] == ws and reach[s + 1][i + len(ws)] for ws in slots[s])
    if not reach[0][0]:
        return None
    choice, i = [], 0
    for s, options in enumerate(slots):
        for j, ws in enumerate(options):
            if target[i:i + len(ws)] == ws and reach[s + 1][i + len(ws)]:
                choice.append(j)
                i += len(ws)
                break
    return choice


def slots_dict(alts, choice: list[int] | None, recovered: list[bool], nonword: Callable[[str], bool],
               max_alternatives: int) -> list[dict]:
    """The slots as the page draws them: time span, alternatives (words, posterior), the oracle's choice and,
    per word of the chosen alternative, whether the oracle recovers it."""
    out = []
    k = 0  # index into the oracle words (recovered flags)
    for s, slot in enumerate(alts.slots):
        shown = slot.alternatives[:max_alternatives]
        chosen = choice[s] if choice is not None else -1
        alt_rows: list[dict[str, Any]] = [{"w": " ".join(a.words) if a.words else "@", "p": _r(a.posterior, 4)}
                                          for a in shown]
        if chosen >= 0:
            full = slot.alternatives[chosen].words
            kept = [i for i, w in enumerate(full) if w != "@" and not nonword(w)]  # positions of the oracle's words
            rec = recovered[k:k + len(kept)]
            k += len(kept)
            marks = [i for i, r in zip(kept, rec, strict=False) if r]
            if chosen >= len(alt_rows):  # the oracle's alternative lies beyond the shown depth: show it too
                a = slot.alternatives[chosen]
                alt_rows.append({"w": " ".join(a.words) if a.words else "@", "p": _r(a.posterior, 4), "rank": chosen})
                chosen = len(alt_rows) - 1
            alt_rows[chosen]["rec"] = marks
        out.append({"t0": _r(slot.start, 2), "t1": _r(slot.end, 2), "depth": slot.depth, "alts": alt_rows,
                    "chosen": chosen})
    return out


# ----------------------------------------------------------------------------------------------
# The lattice on a time axis
# ----------------------------------------------------------------------------------------------
def lattice_dict(lat, posteriors: np.ndarray, best: np.ndarray, nonword: Callable[[str], bool],
                 max_arcs: int) -> dict | None:
    """The word arcs of ``lat`` with times, posterior and costs, the ``max_arcs`` most probable (plus every
    best-path arc), most probable first; None for a lattice without word times."""
    word = lat.word
    if lat.num_arcs == 0:
        return {"n_arcs": 0, "vocab": [], "w": [], "fs": float(lat.frame_shift), "f0": [], "f1": [], "q": [], "ac": [],
                "lm": [], "best": []}
    if not lat.has_times or lat.num_frames == 0:  # unknown times, or none spanning a frame (no alignment)
        return None
    wids = np.unique(word)
    is_word = np.zeros(int(wids.max()) + 1, bool)
    for w in wids.tolist():
        is_word[w] = w != 0 and not nonword(lat.symbols.word(int(w)))
    candidates = np.flatnonzero(is_word[word])
    order = candidates[np.argsort(-posteriors[candidates], kind="stable")]
    keep = order[:max_arcs]
    best_words = np.asarray([a for a in best.tolist() if is_word[word[a]]], dtype=np.int64)
    extra = np.setdiff1d(best_words, keep)
    keep = np.concatenate([keep, extra])
    vocab_ids, w_index = np.unique(word[keep], return_inverse=True)
    fs = lat.frame_shift
    pos = {int(a): i for i, a in enumerate(keep.tolist())}
    out = {
        "n_arcs": int(lat.num_arcs), "n_word_arcs": int(candidates.size),
        "vocab": [lat.symbols.word(int(w)) for w in vocab_ids.tolist()],
        "w": w_index.astype(int).tolist(),
        # compact (the page is mostly arcs): times in frames of ``fs`` seconds, posteriors in 1e-4 units
        "fs": float(fs), "f0": lat.t0[keep].astype(int).tolist(),
        "d": (lat.t1[keep] - lat.t0[keep]).astype(int).tolist(),
        "q": np.round(posteriors[keep] * 1e4).astype(int).tolist(),
        "ac": _column(lat.acoustic_cost[keep], 2), "lm": _column(lat.graph_cost[keep], 2),
        "best": [pos[int(a)] for a in best_words.tolist()],
    }
    if "orig_acoustic_cost" in lat.attrs:  # weights made from the file's posteriors (pocketsphinx): its own costs too
        out["ac0"] = _column(np.asarray(lat.attrs["orig_acoustic_cost"])[keep], 0)
        out["lm0"] = _column(np.asarray(lat.attrs["orig_graph_cost"])[keep], 0)
    return out


def _column(values: np.ndarray, digits: int):
    """Costs for the page: rounded to ``digits``, whole numbers written without a fraction, one number when
    every arc has the same (pocketsphinx lattices reweighted from posteriors have acoustic cost 0 everywhere)."""
    r = np.round(np.asarray(values, dtype=np.float64), digits)
    if r.size and (r == r[0]).all():
        return int(r[0]) if float(r[0]).is_integer() else float(r[0])
    return [int(x) if x.is_integer() else x for x in r.tolist()]


def check_representation(name: str, known: Sequence[str]) -> None:
    if name not in known:
        raise LatticeToolsError(f"unknown representation {name!r}; expected a comma-separated list of "
                                f"{', '.join(known)}")
