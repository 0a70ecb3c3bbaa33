"""Reports of a :class:`~lattice_tools.scoring.sclite.ScoreResult`.

- :func:`kaldi_line` -- Kaldi's ``%WER 12.34 [ e / n, i ins, d del, s sub ]``;
- :func:`sys_report` -- sclite's ``.sys`` (percentages) or ``.raw`` (counts) summary table: one
  row per speaker, ``Sum/Avg``, ``Mean``, ``S.D.``, ``Median`` rows, same columns as sclite
  (``# Snt # Wrd | Corr Sub Del Ins Err S.Err``);
- :func:`pra_report` -- sclite's ``.pra`` per-segment alignments (``REF:``/``HYP:``/``Eval:``
  lines, errors upper-cased, ``*`` for the empty side), block for block like sclite's;
- :func:`json_report` -- counts, WER, precision and recall per speaker and overall (and sclite's
  NCE of the CTM confidences when the CTM has them);
- :func:`write_reports` writes ``<name>.sys``, ``.raw``, ``.pra`` and ``.json`` into a directory.
"""
from __future__ import annotations

import math
import os

from ..io.common import json_text
from .counts import ErrorCounts


def kaldi_line(counts: ErrorCounts, label: str = "%WER") -> str:
    return counts.kaldi_line(label)


def _f_round(x: float, p: int) -> float:
    """sclite's ``F_ROUND``: round half away from zero before printing (printf alone would round
    half to even: sclite prints a mean of 15.25 as 15.3)."""
    scale = 10.0 ** p
    if not math.isfinite(x):
        # sclite's C cast of NaN/inf to int gives INT_MIN on x86: e.g. an NCE with all words
        # correct (zero entropy) prints as -2147483.648; print what sclite prints.
        return float(-2147483648) / scale
    return float(int(x * scale + (0.5 if x > 0 else -0.5))) / scale


def _pct(x: int, n: int) -> float:
    return 100.0 * x / n if n else 0.0


def _row_values(c: ErrorCounts, raw: bool):
    n = c.ref_words
    if raw:
        return [c.correct, c.substitutions, c.deletions, c.insertions, c.errors, c.segment_errors]
    return [_pct(c.correct, n), _pct(c.substitutions, n), _pct(c.deletions, n), _pct(c.insertions, n),
            _pct(c.errors, n), _pct(c.segment_errors, c.segments)]


def sys_report(result, raw: bool = False) -> str:
    """sclite-style summary table (``raw=False``: ``.sys`` percentages, ``raw=True``: ``.raw`` counts),
    laid out like sclite's: one row per speaker, ``Sum/Avg`` (``Sum`` for counts) and, for
    percentages, ``Mean``/``S.D.``/``Median`` over speakers; an ``NCE`` column when the CTM had
    confidences."""
    names = list(result.speakers)
    w = max([len(x) for x in names] + [4 if raw else 6])
    with_nce = result.nce is not None
    title = result.hyp_name or "hypothesis"

    def label_cell(label, center=False):
        if center:  # sclite centres with the odd space on the right
            left = (w + 2 - len(label)) // 2
            text = " " * left + label + " " * (w + 2 - len(label) - left)
        else:
            text = f" {label:<{w}} "
        return text[:w + 2] if len(text) > w + 2 else text

    def values_cell(vals, fractional, mark=""):
        if raw and not fractional:
            return f"{int(vals[0]):5d}" + "".join(f"{int(v):7d}" for v in vals[1:]) + " "
        if mark == "*":  # no reference words: counts instead of percentages (S.Err stays a percentage)
            return (f"{int(vals[0]):5d}*" + "".join(f"{int(v):6d}*" for v in vals[1:-1]) +
                    f"{_f_round(vals[-1], 1):6.1f} ")
        vals = [_f_round(v, 1) for v in vals]
        if mark == "+":  # speakers without reference words left out of the statistic
            return f"{vals[0]:5.1f}+" + "".join(f"{v:6.1f}+" for v in vals[1:-1]) + f"{vals[-1]:6.1f} "
        return f"{vals[0]:5.1f}" + "".join(f"{v:7.1f}" for v in vals[1:]) + " "

    def row(label, snt, wrd, vals, nce=None, center=False, fractional=False, mark=""):
        if fractional:
            counts = f"{_f_round(snt, 1):5.1f}{_f_round(wrd, 1):7.1f} "
        else:
            counts = f"{snt:5d}{wrd:7d} "
        text = "|" + label_cell(label, center) + "|" + counts + "|" + values_cell(vals, fractional, mark) + "|"
        if with_nce:
            text += (f" {_f_round(nce, 3):6.3f} " if nce is not None else " " * 8) + "|"
        return text

    header = "|" + label_cell("SPKR") + "| # Snt # Wrd | Corr    Sub    Del    Ins    Err  S.Err |"
    if with_nce:
        header += "  NCE   |"
    width = len(header)
    rule = "|" + "-" * (w + 2) + "+" + "-" * 13 + "+" + "-" * 41 + ("+" + "-" * 8 if with_nce else "") + "|"
    dbl = "|" + "=" * (width - 2) + "|"
    left = (width - 2 - len(title)) // 2  # odd space on the right, as sclite
    title_line = "|" + " " * left + title + " " * (width - 2 - len(title) - left) + "|"
    out = ["," + "-" * (width - 2) + ".", title_line, "|" + "-" * (width - 2) + "|",
           header, rule]
    empty = [x for x in names if result.speakers[x].ref_words == 0] if not raw else []
    for i, name in enumerate(names):
        c = result.speakers[name]
        if name in empty:
            vals = [c.correct, c.substitutions, c.deletions, c.insertions, c.errors,
                    _pct(c.segment_errors, c.segments)]
            out.append(row(name, c.segments, c.ref_words, vals, result.speaker_nce.get(name), mark="*"))
        else:
            out.append(row(name, c.segments, c.ref_words, _row_values(c, raw), result.speaker_nce.get(name)))
        if i < len(names) - 1:
            out.append(rule)
    out.append(dbl)
    tot = result.total
    out.append(row("Sum" if raw else "Sum/Avg", tot.segments, tot.ref_words, _row_values(tot, raw), result.nce))
    out.append(dbl)
    if names:
        per = [result.speakers[x] for x in names]
        kept = [result.speakers[x] for x in names if x not in empty] or per
        cols = list(zip(*[_row_values(c, raw) for c in kept]))
        serr = [_row_values(c, raw)[-1] for c in per]
        snt = [c.segments for c in per]
        wrd = [c.ref_words for c in per]
        nces = [result.speaker_nce.get(x, 0.0) for x in names]

        import statistics  # (only the .sys/.raw summaries need it: not imported on every run)

        def sd(xs):
            if any(isinstance(x, float) and not math.isfinite(x) for x in xs):
                return math.nan  # an undefined NCE (zero entropy) makes its summary undefined too
            return statistics.stdev(xs) if len(xs) > 1 else 0.0

        for label, fn in ((" Mean ", statistics.mean), (" S.D. ", sd), ("Median", statistics.median)):
            vals = [fn(list(col)) for col in cols[:-1]] + [fn(serr)]
            out.append(row(label, fn(snt), fn(wrd), vals, fn(nces) if with_nce else None, center=True,
                           fractional=True, mark="+" if empty else ""))
    out.append("`" + "-" * (width - 2) + "'")
    head = "SYSTEM SUMMARY PERCENTAGES by SPEAKER"
    # sclite centres the title and the table on an 80-column page
    pad = " " * max(0, (80 - width) // 2)
    text = "\n".join(["", "", "", " " * ((80 - len(head)) // 2) + head, ""] + [pad + x for x in out]) + "\n"
    if empty:
        text += ("\n* No Reference words for this/these speaker(s).  Word counts supplied\n  rather than percents.\n"
                 "# No Reference words for this/these speaker(s).  NCE not computable.\n"
                 "+ Speaker(s) with no reference data is ignored\n")
    return text


def _column(p, language=None):
    """(ref text, hyp text, eval letter, column width) of one aligned pair as sclite prints it:
    error words upper-cased, ``None`` for the empty side; the width (UTF-8 bytes, as sclite counts)
    is that of the words *before* upper-casing."""
    from .network import upper_case

    r = p.ref if p.ref is not None else None
    h = p.hyp if p.hyp is not None else None
    width = max(_nbytes(r or ""), _nbytes(h or ""), 0 if p.op == "C" else 1)
    if p.op == "C":
        return r or "", h or "", "", width
    if p.op == "S":
        return upper_case(r, language), upper_case(h, language), "S", width
    if p.op == "D":
        return upper_case(r, language), None, "D", width
    return None, upper_case(h, language), "I", width


def _nbytes(s: str) -> int:
    # sclite pads its columns by bytes of UTF-8, not by characters
    return len(s.encode("utf-8"))


def _pad(s: str, w: int) -> str:
    return s + " " * max(0, w - _nbytes(s))


def alignment_lines(alignment, language: str | None = None) -> list[str]:
    """``REF:``, ``HYP:`` and ``Eval:`` lines of one alignment, padded like sclite's .pra (column
    widths in UTF-8 bytes, as sclite counts them).  An empty alignment gives no lines."""
    if not alignment.pairs:
        return []
    refs, hyps, evs = ["REF: "], ["HYP: "], ["Eval:"]
    for p in alignment.pairs:
        r, h, e, w = _column(p, language)
        refs.append(("*" * w) if r is None else _pad(r, w))
        hyps.append(("*" * w) if h is None else _pad(h, w))
        evs.append(_pad(e, w))
    return [" ".join(refs) + " ", " ".join(hyps) + " ", " ".join(evs) + " "]


def pra_report(result) -> str:
    """sclite-style ``.pra``: per speaker, per segment, counts and the aligned word columns."""
    out = ["", "", "\t\tDUMP OF SYSTEM ALIGNMENT STRUCTURE", "", f"System name:   {result.hyp_name}", "",
           "Speakers: "]
    names = list(result.speakers)
    for i, s in enumerate(names):
        out.append(f"{i:5d}:  {s}")
    out.append("")
    by_spk: dict = {s: [] for s in names}
    for seg in result.segments:
        by_spk[seg.speaker].append(seg)
    for i, s in enumerate(names):
        out.append(f"Speaker sentences{i:4d}:  {s}   #utts: {len(by_spk[s])}")
        for seg in by_spk[s]:
            out.append(f"id: {seg.id}")
            labels = getattr(seg, "labels", None)
            if labels:
                out.append(f"Labels: {labels}")
            if seg.file:
                out.append(f"File: {seg.file}")
                out.append(f"Channel: {seg.channel}")
            c = seg.counts
            out.append(f"Scores: (#C #S #D #I) {c.correct} {c.substitutions} {c.deletions} {c.insertions}")
            out.extend(alignment_lines(seg.alignment, result.options.get("case_language")))
            out.append("")
    out.append("")
    return "\n".join(out) + "\n"


def _metrics(c: ErrorCounts) -> dict:
    d = c.as_dict()
    for k in ("wer", "precision", "recall"):
        v = d[k]
        d[k] = None if (isinstance(v, float) and math.isinf(v)) else v
    return d


def json_report(result) -> dict:
    """Counts, WER, precision, recall per speaker and overall (JSON-serializable)."""
    out = {
        "ref": result.ref_name,
        "hyp": result.hyp_name,
        "options": dict(result.options),
        "overall": _metrics(result.total),
        "speakers": {s: _metrics(c) for s, c in result.speakers.items()},
        "warnings": list(result.warnings),
    }
    if result.nce is not None:  # confidences present: sclite's normalized cross-entropy
        out["overall"]["nce"] = result.nce
        for s, v in result.speaker_nce.items():
            out["speakers"][s]["nce"] = v
    return out


#: The members of a report set, in the order they are renamed into place; the last one (the JSON
#: report) marks a complete set.
REPORT_KINDS = ("sys", "raw", "pra", "json")


def write_reports(result, out_dir: str, name: str | None = None) -> dict:
    """Write the report set ``<name>.sys``, ``<name>.raw``, ``<name>.pra`` and ``<name>.json`` into
    ``out_dir``; returns {kind: path}.  ``name`` defaults to the hypothesis file's base name.

    A reader never sees members of two runs together: every member is first written to a
    temporary file, then the previous set is removed (its ``.json`` first) and the new members are
    renamed into place in the order of :data:`REPORT_KINDS`, the ``.json`` last.  So ``<name>.json``
    exists only beside a complete set from the same run; a run killed in between leaves some
    members of the new set and no ``.json`` (an incomplete set, never a mix), and its temporaries
    are removed on SIGTERM/SIGINT or by the next run."""
    from ..io.common import discard_temporary, make_temporary, output_mode, remove_stale_temporaries

    os.makedirs(out_dir, exist_ok=True)
    if name is None:
        name = os.path.basename(result.hyp_name or "score") or "score"
    texts = {"sys": sys_report(result), "raw": sys_report(result, raw=True), "pra": pra_report(result),
             "json": json_text(json_report(result))}
    paths = {kind: os.path.join(out_dir, f"{name}.{kind}") for kind in REPORT_KINDS}
    temps: dict = {}
    try:
        for kind in REPORT_KINDS:
            remove_stale_temporaries(paths[kind])
            fd, temps[kind] = make_temporary(paths[kind])
            os.fchmod(fd, output_mode(paths[kind]))
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(texts[kind])
        for kind in reversed(REPORT_KINDS):  # the completion marker first
            try:
                os.unlink(paths[kind])
            except FileNotFoundError:
                pass
        for kind in REPORT_KINDS:
            os.replace(temps[kind], paths[kind])
            discard_temporary(temps.pop(kind), remove=False)
    finally:
        for tmp in temps.values():
            discard_temporary(tmp)
    return paths
