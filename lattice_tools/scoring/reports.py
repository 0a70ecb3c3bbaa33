"""Reports of a :class:`~lattice_tools.scoring.sclite.ScoreResult`.

- :func:`kaldi_line` -- Kaldi's ``%WER 12.34 [ e / n, i ins, d del, s sub ]``;
- :func:`sys_report` -- sclite's ``.sys`` (percentages) or ``.raw`` (counts) summary table: one
  row per speaker, ``Sum/Avg``, ``Mean``, ``S.D.``, ``Median`` rows, same columns as sclite
  (``# Snt # Wrd | Corr Sub Del Ins Err S.Err``);
- :func:`pra_report` -- sclite's ``.pra`` per-segment alignments (``REF:``/``HYP:``/``Eval:``
  lines, errors upper-cased, ``*`` for the empty side), block for block like sclite's;
- :func:`json_report` -- counts, WER, precision and recall per speaker and overall;
- :func:`write_reports` writes ``<name>.sys``, ``.raw``, ``.pra`` and ``.json`` into a directory.
"""
from __future__ import annotations

import json
import math
import os
import statistics

from ..io.common import atomic_write
from .counts import ErrorCounts


def kaldi_line(counts: ErrorCounts, label: str = "%WER") -> str:
    return counts.kaldi_line(label)


def _pct(x: int, n: int) -> float:
    return 100.0 * x / n if n else 0.0


def _row_values(c: ErrorCounts, raw: bool):
    n = c.ref_words
    if raw:
        return [c.correct, c.substitutions, c.deletions, c.insertions, c.errors, c.segment_errors]
    return [_pct(c.correct, n), _pct(c.substitutions, n), _pct(c.deletions, n), _pct(c.insertions, n),
            _pct(c.errors, n), _pct(c.segment_errors, c.segments)]


def sys_report(result, raw: bool = False) -> str:
    """sclite-style summary table (``raw=False``: ``.sys`` percentages, ``raw=True``: ``.raw``)."""
    names = list(result.speakers)
    spk_w = max([len(s) for s in names] + [len("Sum/Avg") if not raw else len("Sum"), 6])
    fnum = (lambda v: f"{v:6d}") if raw else (lambda v: f"{v:6.1f}")
    title = result.hyp_name or "hypothesis"

    def line(label, snt, wrd, vals, snt_fmt="{:5d}", wrd_fmt="{:6d}"):
        cells = " ".join(fnum(v) if not isinstance(v, str) else v for v in vals)
        return f"| {label:<{spk_w}} | {snt_fmt.format(snt)} {wrd_fmt.format(wrd)} | {cells[1:] if cells.startswith(' ') else cells} |"

    header = f"| {'SPKR':<{spk_w}} | # Snt # Wrd | Corr    Sub    Del    Ins    Err  S.Err |"
    width = len(header)
    rule = "|" + "-" * (spk_w + 2) + "+" + "-" * 13 + "+" + "-" * (width - spk_w - 19) + "|"
    dbl = "|" + "=" * (width - 2) + "|"
    out = [",".rjust(1) + "-" * (width - 2) + ".", "|" + title.center(width - 2) + "|",
           "|" + "-" * (width - 2) + "|", header, rule]
    for i, s in enumerate(names):
        c = result.speakers[s]
        out.append(line(s, c.segments, c.ref_words, _row_values(c, raw)))
        if i < len(names) - 1:
            out.append(rule)
    out.append(dbl)
    tot = result.total
    out.append(line("Sum" if raw else "Sum/Avg", tot.segments, tot.ref_words, _row_values(tot, raw)))
    out.append(dbl)
    if names and not raw:
        per = [result.speakers[s] for s in names]
        cols = list(zip(*[_row_values(c, False) for c in per]))
        snt = [c.segments for c in per]
        wrd = [c.ref_words for c in per]

        def sd(xs):
            return statistics.stdev(xs) if len(xs) > 1 else 0.0

        for label, fn in (("Mean", statistics.mean), ("S.D.", sd), ("Median", statistics.median)):
            vals = [fn(list(col)) for col in cols]
            out.append(line(label.center(spk_w), fn(snt), fn(wrd), vals, "{:5.1f}", "{:6.1f}"))
    out.append("`" + "-" * (width - 2) + "'")
    head = "SYSTEM SUMMARY PERCENTAGES by SPEAKER"
    return "\n".join([head.center(width + 14), ""] + ["       " + x for x in out]) + "\n"


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
    return "\n".join(out) + "\n"


def _metrics(c: ErrorCounts) -> dict:
    d = c.as_dict()
    for k in ("wer", "precision", "recall"):
        v = d[k]
        d[k] = None if (isinstance(v, float) and math.isinf(v)) else v
    return d


def json_report(result) -> dict:
    """Counts, WER, precision, recall per speaker and overall (JSON-serializable)."""
    return {
        "ref": result.ref_name,
        "hyp": result.hyp_name,
        "options": dict(result.options),
        "overall": _metrics(result.total),
        "speakers": {s: _metrics(c) for s, c in result.speakers.items()},
        "warnings": list(result.warnings),
    }


def write_reports(result, out_dir: str, name: str | None = None) -> dict:
    """Write ``<name>.sys``, ``<name>.raw``, ``<name>.pra`` and ``<name>.json`` (atomically) into
    ``out_dir``; returns {kind: path}.  ``name`` defaults to the hypothesis file's base name."""
    os.makedirs(out_dir, exist_ok=True)
    if name is None:
        name = os.path.basename(result.hyp_name or "score") or "score"
    paths = {}
    for kind, text in (("sys", sys_report(result)), ("raw", sys_report(result, raw=True)),
                       ("pra", pra_report(result)),
                       ("json", json.dumps(json_report(result), indent=2, sort_keys=True) + "\n")):
        path = os.path.join(out_dir, f"{name}.{kind}")
        with atomic_write(path) as f:
            f.write(text)
        paths[kind] = path
    return paths
