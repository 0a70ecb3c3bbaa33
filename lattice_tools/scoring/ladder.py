"""The scoring ladder of Faria et al., Table 1: WER of each system under successively improved scoring
configurations.

Rows (each one adds to the previous configuration; rows whose input is missing are skipped):

1. ``STM & GLM`` -- the reference STM and the first (base) GLM;
2. ``+ <GLM>`` -- one row per further GLM, applied after the previous ones (e.g. RT-03, RT-04F);
3. ``STM with corrections`` -- a corrected STM instead of the original (when given);
4. ``+ GLM with alternations`` -- contraction expansions ``I'M => I AM`` rewritten as alternations
   ``I'M => { I'M / I AM }`` (original form first, so that sclite favours it on ties, section 2.2);
5. ``+ Exclude hesitations`` -- hesitation words (``%HESITATION`` and what the GLMs map to it) removed
   from the CTMs (they are optional deletions in the reference already);
6. ``+ Optional backchannels`` -- backchannels (``%BCACK``/``%BCNACK`` and what maps to them) made
   optional deletions in the reference;
7. ``+ Exclude backchannels`` -- and removed from the CTMs;
8. ``+ Single-segment STM`` -- each speaker/channel's segments merged into one (section 2.4);
9. ``+ Reference segmentation`` -- CTMs of the systems run on the reference segmentation (when given),
   scored with the multi-segment STM.

GLM filtering is :mod:`lattice_tools.scoring.glm` (csrfilt-exact); scoring is
:func:`lattice_tools.scoring.sclite.score_stm_ctm` with ``-D -F`` like NIST's hubscr.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from ..core.errors import FormatError
from ..io.transcripts.ctm import read_ctm
from ..io.transcripts.glm import Glm, read_glm
from ..io.transcripts.stm import Stm, read_stm
from .glm import (
    GlmFilterOptions,
    apply_glm,
    drop_ctm_words,
    glm_word_classes,
    optionalize_words,
    repair_optional_alternations,
)
from .sclite import score_stm_ctm, without_rt_fields


def alternation_glm(glm):
    """A copy of ``glm`` where every contraction expansion ``A => B C`` (A one word with an
    apostrophe, B C several words) becomes ``A => { A / B C }``, and an alternation ``A => { B / C }``
    not listing ``A`` becomes ``A => { A / B / C }``.  Other rules are unchanged."""
    g = glm if isinstance(glm, Glm) else read_glm(glm)
    rules = []
    for r in g.rules:
        lhs = r.lhs.strip()
        rhs = r.rhs.strip()
        if " " not in lhs and "'" in lhs and lhs:
            if rhs.startswith("{") and rhs.endswith("}"):
                alts = [a.strip() for a in rhs[1:-1].split("/")]
                if lhs.upper() not in (a.upper() for a in alts):
                    r = replace(r, rhs="{ " + " / ".join([lhs] + alts) + " }")
            elif len(rhs.split()) > 1 and "{" not in rhs:
                r = replace(r, rhs="{ " + lhs + " / " + rhs + " }")
        rules.append(r)
    return replace(g, rules=tuple(rules))


def _filtered(glms, stm, ctm, encoding="utf-8"):
    ref_options = GlmFilterOptions(purpose="ref", encoding=encoding)
    hyp_options = GlmFilterOptions(purpose="hyp", flatten_alternations=True, encoding=encoding)
    for g in glms:
        stm = apply_glm(g, stm, fmt="stm", options=ref_options)
        ctm = apply_glm(g, ctm, fmt="ctm", options=hyp_options)
    return stm, ctm


def _optionalize_stm(stm, words):
    segs = tuple(replace(s, text=optionalize_words(s.text, words), raw=None) for s in stm.segments)
    return Stm(segs, stm.header, stm.path)


def _repair_stm(stm):
    """Alternations holding optional words crash sclite; rewrite them (a repair of scoring.glm)."""
    segs = tuple(replace(s, text=repair_optional_alternations(s.text), raw=None) for s in stm.segments)
    return Stm(segs, stm.header, stm.path)


def run_ladder(stm_path: str, systems: Sequence[tuple], glms: Sequence[str], *, corrected_stm: str | None = None,
               reference_segmentation: dict | None = None, optional_deletable: bool = True,
               fragments: bool = True, encoding: str = "utf-8", allow_missing: bool = False) -> dict:
    """Score every system under every configuration of the ladder (see the module docstring).

    Args:
      stm_path: the reference STM.
      systems: ``(name, ctm_path)`` pairs.
      glms: GLM paths; ``glms[0]`` is the base GLM, the others are added one per row.
      corrected_stm: a corrected reference STM (row 3); without it rows 3- use ``stm_path``.
      reference_segmentation: ``{name: ctm_path}`` of systems run on the reference segmentation.
      encoding: text encoding of every STM, CTM and GLM file (e.g. ``latin-1``, ``gb2312``).
      allow_missing: as ``score``: CTM files/channels absent from the STM are ignored and STM
        files/channels without CTM words scored as deletions (said in the result's ``warnings``);
        otherwise MismatchError (a CTM with another channel than the STM's would score 100 %).
    Returns:
      ``{"systems": [...], "rows": [{"config": str, "wer": {name: percent}, "counts": {name: dict}}]}``.
    """
    if not glms:
        raise FormatError("the ladder needs at least one GLM (the base GLM)")
    names = [n for n, _ in systems]
    # (NIST RT CTM type/speaker fields are cut before csrfilt, as hubscr does)
    ctms = {n: without_rt_fields(read_ctm(p, encoding)) for n, p in systems}
    base_stm = read_stm(stm_path, encoding)
    glm_objs = [read_glm(g, encoding=encoding) for g in glms]
    hes: set[str] = set()
    bc: set[str] = set()
    for g in glm_objs:
        h, b = glm_word_classes(g)
        hes.update(w.upper() for w in h)
        bc.update(w.upper() for w in b)
    rows: list = []
    warnings: list = []
    seen_warnings: set = set()

    def score_row(label, stm, glm_list, *, exclude=(), optional=(), single=False, ctm_map=None):
        wer, counts = {}, {}
        for name in names:
            ctm = (ctm_map or ctms).get(name)
            if ctm is None:
                continue
            s, c = _filtered(glm_list, stm, ctm, encoding)
            if optional:
                s = _optionalize_stm(s, sorted(optional))
            s = _repair_stm(s)
            if exclude:
                c = drop_ctm_words(c, sorted(exclude))
            res = score_stm_ctm(s, c, optional_deletable=optional_deletable, fragments=fragments,
                                single_segment=single, allow_missing=allow_missing)
            warnings.extend(f"{name}, {label}: {w}" for w in res.warnings if w not in seen_warnings)
            seen_warnings.update(res.warnings)
            wer[name] = round(100.0 * res.total.wer, 2)
            counts[name] = res.total.as_dict()
        rows.append({"config": label, "wer": wer, "counts": counts})

    score_row(f"STM & {os.path.basename(glms[0])}", base_stm, glm_objs[:1])
    for k in range(1, len(glm_objs)):
        score_row(f"+ {os.path.basename(glms[k])}", base_stm, glm_objs[:k + 1])
    stm = base_stm
    if corrected_stm:
        stm = read_stm(corrected_stm, encoding)
        score_row("STM with corrections", stm, glm_objs)
    alt_glms = [alternation_glm(g) for g in glm_objs]
    score_row("+ GLM with alternations", stm, alt_glms)
    score_row("+ Exclude hesitations", stm, alt_glms, exclude=hes)
    score_row("+ Optional backchannels", stm, alt_glms, exclude=hes, optional=bc)
    score_row("+ Exclude backchannels", stm, alt_glms, exclude=hes | bc, optional=bc)
    score_row("+ Single-segment STM", stm, alt_glms, exclude=hes | bc, optional=bc, single=True)
    if reference_segmentation:
        refseg = {n: without_rt_fields(read_ctm(p, encoding)) for n, p in reference_segmentation.items()}
        for n in refseg:
            if n not in names:
                names.append(n)
        score_row("+ Reference segmentation", stm, alt_glms, exclude=hes | bc, optional=bc, ctm_map=refseg)
    return {"systems": names, "rows": rows, "options": {"optional_deletable": optional_deletable,
                                                         "fragments": fragments}, "warnings": warnings}


def ladder_markdown(result: dict) -> str:
    """The ladder as a Markdown table (WER in percent, one column per system)."""
    names = result["systems"]
    lines = ["| configuration | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for row in result["rows"]:
        cells = [f"{row['wer'][n]:.2f}" if n in row["wer"] else "" for n in names]
        lines.append(f"| {row['config']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
