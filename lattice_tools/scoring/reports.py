"""Reports of a :class:`~lattice_tools.scoring.sclite.ScoreResult`.

- :func:`kaldi_line` -- Kaldi's ``%WER 12.34 [ e / n, i ins, d del, s sub ]``;
- :func:`sys_report` -- sclite's ``.sys`` (percentages) or ``.raw`` (counts) summary table: one
  row per speaker, ``Sum/Avg``, ``Mean``, ``S.D.``, ``Median`` rows, same columns as sclite
  (``# Snt # Wrd | Corr Sub Del Ins Err S.Err``);
- :func:`pra_report` -- sclite's ``.pra`` per-segment alignments (``REF:``/``HYP:``/``Eval:``
  lines, errors upper-cased, ``*`` for the empty side), block for block like sclite's;
- :func:`dtl_report` -- sclite's ``-o dtl`` detailed report (confusion pairs, insertions, ...);
- :func:`json_report` -- counts, WER, precision and recall per speaker and overall (and sclite's
  NCE of the CTM confidences when the CTM has them);
- :func:`write_reports` writes ``<name>.sys``, ``.raw``, ``.pra``, ``.dtl`` and ``.json`` into a directory.
"""
from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from ..core.counts import ErrorCounts
from ..core.files import discard_temporary, json_text, make_temporary, output_mode, remove_stale_temporaries
from .network import upper_case

if TYPE_CHECKING:
    from .align import AlignedPair


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


SPEAKER_STATS = ("sclite", "corrected")


def _sclite_shifted(rows: list, zero: list) -> list:
    """The per-speaker rows sclite's Mean/S.D./Median use when some speakers have no reference
    words (scores.c): for each such speaker, in order, the later rows are shifted up one place and
    the last set to -1000 -- but the array of word counts that says which speakers are empty is
    not shifted, so with two or more empty speakers an empty speaker's counts stay in and a
    non-empty speaker's percentages drop out.  The first ``len(rows) - #empty`` rows are used."""
    arr = [list(r) for r in rows]
    n = len(arr)
    for k in range(n):
        if zero[k]:
            for j in range(k, n - 1):
                arr[j] = arr[j + 1]
            arr[n - 1] = [-1000.0] * len(arr[n - 1]) if n else []
    return arr[:n - sum(zero)]


def _stats(xs: list) -> tuple:
    """(mean, S.D., median) as sclite's calc_mean_var_std_dev_Zstat computes them (0 for no data)."""
    n = len(xs)
    if n == 0:
        return 0.0, 0.0, 0.0
    mean = sum(xs) / n
    ordered = sorted(xs)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2] + ordered[n // 2 - 1]) / 2
    ss = sum((x - mean) * (x - mean) for x in xs)
    if any(isinstance(x, float) and not math.isfinite(x) for x in xs):
        ss = math.nan  # an undefined NCE (zero entropy) makes its S.D. undefined too
    if ss != ss:
        sd = math.nan
    else:  # (a non-zero sum of squares needs two values)
        sd = math.sqrt(ss / (n - 1)) if ss != 0.0 else 0.0
    return mean, sd, median


def _nb(s: str, encoding: str = "utf-8") -> int:
    # sclite works on bytes: widths are bytes of the text's encoding
    return len(s.encode(encoding, errors="replace"))


def _center(s: str, width: int, encoding: str = "utf-8") -> str:
    """sclite's ``center``: the odd blank goes to the right; a longer text is left as it is."""
    ft = max(0, (width - _nb(s, encoding)) // 2)
    return " " * ft + s + " " * max(0, width - _nb(s, encoding) - ft)


def desc_table(rows: list, page_width: int = 80, encoding: str = "utf-8") -> list[str]:
    """Lay out a table as sclite's report generator (rpg.c ``Desc_dump_report``) does.

    ``rows``: ``(separators, format, cells)``: ``separators`` the characters of the rule lines
    drawn before the row (``"-"``, ``"="``, ``""``), ``format`` sclite's column format (``c``
    centred / ``l`` left, ``|`` between two columns draws a bar, e.g. ``"l|cc|cccccc|c"``),
    ``cells`` the texts.  Rows with the same number of columns share column widths (the widest
    cell, in bytes); the table is as wide as its widest kind of row and narrower rows spread the
    difference over their columns; lines are centred on a ``page_width`` page.
    """
    parsed = []
    for seps, fmt, cells in rows:
        just, inter = [], []
        i = 0
        while i < len(fmt):
            just.append(fmt[i])
            i += 1
            if i < len(fmt) and fmt[i] == "|":
                inter.append("|")
                i += 1
            else:
                inter.append(" ")
        parsed.append((seps, just, inter, list(cells)))
    sizes: dict = {}
    for _, just, _, cells in parsed:
        sz = sizes.setdefault(len(just), [0] * len(just))
        for c, cell in enumerate(cells):
            sz[c] = max(sz[c], _nb(cell, encoding))
    min_width = {n: 2 + sum(sz) + n - 1 for n, sz in sizes.items()}
    width = max(min_width.values())
    pad = " " * ((page_width - width) // 2) if width < page_width else ""
    out = [pad + "," + "-" * (width - 2) + "."]
    prev_inter = None
    for seps, just, inter, cells in parsed:
        n = len(just)
        under = width - min_width[n]
        col, added = [], 0
        for c in range(n):
            if c != n - 1:
                adj = int(under / n * (c + 1) + 0.5) - added
                added += adj
            else:
                adj = under - added
            col.append(sizes[n][c] + adj)
        for p in seps:
            line = "|"
            for c in range(n):
                line += p * col[c]
                if c < n - 1:
                    cchr = inter[c]
                    lcchr = prev_inter[c] if prev_inter is not None and c < len(prev_inter) else ""
                    line += "+" if cchr == "|" and p == "-" and lcchr == "|" else p
            out.append(pad + line + "|")
        line = "|"
        for c in range(n):
            text = cells[c] if c < len(cells) else ""
            ts = sizes[n][c]
            left = (col[c] - ts) // 2
            body = _center(text, ts, encoding) if just[c] == "c" else text + " " * max(0, ts - _nb(text, encoding))
            line += " " * left + body + " " * (col[c] - ts - left)
            if c < n - 1:
                line += inter[c]
        out.append(pad + line + "|")
        prev_inter = inter
    out.append(pad + "`" + "-" * (width - 2) + "'")
    return out


def sys_report(result, raw: bool = False, speaker_stats: str = "sclite") -> str:
    """sclite-style summary table (``raw=False``: ``.sys`` percentages, ``raw=True``: ``.raw`` counts),
    laid out exactly like sclite's (:func:`desc_table`): one row per speaker, ``Sum/Avg`` (``Sum``
    for counts), ``Mean``/``S.D.``/``Median`` over speakers, and an ``NCE`` column when the CTM had
    confidences (an undefined NCE prints as sclite prints it, -2147483.648, and widens the column).

    ``speaker_stats``: with two or more speakers without reference words sclite's Mean/S.D./Median of
    the Corr..Err columns are computed on the wrong speakers (see :func:`_sclite_shifted`);
    ``"sclite"`` (default) reproduces them so reports stay identical, ``"corrected"`` uses exactly
    the speakers that have reference words."""
    if speaker_stats not in SPEAKER_STATS:
        raise ValueError(f"speaker_stats must be one of {SPEAKER_STATS}, not {speaker_stats!r}")
    names = list(result.speakers)
    with_nce = result.nce is not None
    title = result.hyp_name or "hypothesis"
    fr = _f_round
    pct_fmt = "{:5.0f} " if raw else "{:5.1f} "
    prec = 0 if raw else 1
    nce_col = "|c" if with_nce else ""
    row_fmt = "l|cc|cccccc" + nce_col
    rows = [("", "c", [title]),
            ("-", row_fmt, [" SPKR", " # Snt", "# Wrd", "Corr", " Sub", " Del", " Ins", " Err", "S.Err"]
             + (["NCE"] if with_nce else []))]
    empty = [x for x in names if result.speakers[x].ref_words == 0] if not raw else []
    for name in names:
        c = result.speakers[name]
        if raw or c.ref_words > 0:
            vals = _row_values(c, raw)[:5]
            cells = [pct_fmt.format(fr(v, prec)) for v in vals]
        else:
            cells = [f"{fr(v, 0):5.0f}*" for v in (c.correct, c.substitutions, c.deletions, c.insertions,
                                                          c.errors)]
        cells.append(pct_fmt.format(fr(_row_values(c, raw)[5], prec)))
        if with_nce:
            cells.append(f"{fr(result.speaker_nce.get(name, 0.0), 3):7.3f} " if c.ref_words > 0 else "# ")
        rows.append(("-", row_fmt, [f" {name} ", f"{c.segments:5d}", f"{c.ref_words:5d}"] + cells))
    tot = result.total
    if raw:
        cells = [" Sum", f"{tot.segments:5d}", f"{tot.ref_words:5d}"] + [
            pct_fmt.format(fr(float(v), 0)) for v in _row_values(tot, True)]
    else:
        cells = [" Sum/Avg", f"{tot.segments:5d}", f"{tot.ref_words:5d}"] + [
            f"{fr(v, 1):5.1f} " for v in _row_values(tot, False)]
    if with_nce:
        cells.append(f"{fr(result.nce, 3):7.3f} ")
    rows.append(("=", row_fmt, cells))
    per = [result.speakers[x] for x in names]
    values = [_row_values(c, raw) for c in per]
    if empty and speaker_stats == "sclite":
        # what sclite holds for an empty speaker: its counts
        rows_in = [[c.correct, c.substitutions, c.deletions, c.insertions, c.errors] if x in empty else v[:5]
                   for x, c, v in zip(names, per, values, strict=False)]
        kept = _sclite_shifted(rows_in, [x in empty for x in names])
    else:
        kept = [v[:5] for x, v in zip(names, values, strict=False) if x not in empty]
    cols = [list(col) for col in zip(*kept, strict=False)] if kept else [[] for _ in range(5)]
    stats = [_stats(col) for col in cols]
    serr_s = _stats([v[5] for v in values])
    snt_s, wrd_s = _stats([c.segments for c in per]), _stats([c.ref_words for c in per])
    nce_s = _stats([result.speaker_nce.get(x, 0.0) for x in names])
    tpct = "{:5.1f}+" if empty else "{:5.1f} "
    for k, label in enumerate((" Mean ", " S.D. ", "Median")):
        cells = [label, f"{fr(snt_s[k], 1):5.1f} ", f"{fr(wrd_s[k], 1):5.1f} "]
        cells += [tpct.format(fr(st[k], 1)) for st in stats] + [f"{fr(serr_s[k], 1):5.1f} "]
        if with_nce:
            cells.append(("{:7.3f}#" if empty else "{:7.3f} ").format(fr(nce_s[k], 3)))
        rows.append(("=" if k == 0 else "", "c|cc|cccccc" + nce_col, cells))
    head = "SYSTEM SUMMARY PERCENTAGES by SPEAKER"
    text = "\n".join(["", "", "", _center(head, 80), ""] +
                     desc_table(rows, encoding=result.options.get("encoding") or "utf-8")) + "\n"
    if empty:
        text += ("\n* No Reference words for this/these speaker(s).  Word counts supplied\n  rather than percents.\n"
                 "# No Reference words for this/these speaker(s).  NCE not computable.\n"
                 "+ Speaker(s) with no reference data is ignored\n")
    return text


def _column(p: AlignedPair, language: str | None = None,
            encoding: str = "utf-8") -> tuple[str | None, str | None, str, int]:
    """(ref text, hyp text, eval letter, column width) of one aligned pair as sclite prints it:
    error words upper-cased, ``None`` for the empty side; the width (UTF-8 bytes, as sclite counts)
    is that of the words *before* upper-casing."""
    r, h = p.ref, p.hyp
    width = max(_nbytes(r or "", encoding), _nbytes(h or "", encoding), 0 if p.op == "C" else 1)
    if p.op == "C":
        return r or "", h or "", "", width

    def upper(word: str | None) -> str | None:
        return None if word is None else upper_case(word, language)

    if p.op == "S":
        return upper(r), upper(h), "S", width
    if p.op == "D":
        return upper(r), None, "D", width
    return None, upper(h), "I", width


def _nbytes(s: str, encoding: str = "utf-8") -> int:
    # sclite pads its columns by bytes (of the inputs' encoding), not by characters
    return len(s.encode(encoding, errors="replace"))


def _pad(s: str, w: int, encoding: str = "utf-8") -> str:
    return s + " " * max(0, w - _nbytes(s, encoding))


def alignment_lines(alignment, language: str | None = None, encoding: str = "utf-8") -> list[str]:
    """``REF:``, ``HYP:`` and ``Eval:`` lines of one alignment, padded like sclite's .pra (column
    widths in UTF-8 bytes, as sclite counts them).  An empty alignment gives no lines."""
    if not alignment.pairs:
        return []
    refs, hyps, evs = ["REF: "], ["HYP: "], ["Eval:"]
    for p in alignment.pairs:
        r, h, e, w = _column(p, language, encoding)
        refs.append(("*" * w) if r is None else _pad(r, w, encoding))
        hyps.append(("*" * w) if h is None else _pad(h, w, encoding))
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
            out.extend(alignment_lines(seg.alignment, result.options.get("case_language"),
                                       result.options.get("encoding") or "utf-8"))
            out.append("")
    out.append("")
    return "\n".join(out) + "\n"


def _pct1(x: int, n: int) -> str:
    return f"{_f_round(_pct(x, n), 1):5.1f}%"


def _lexicon_block(title: str, counts: dict, encoding: str) -> list[str]:
    """sclite's ``AUTO_LEX_printout``: entries by decreasing count, equal counts in byte order."""
    entries = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].encode(encoding, errors="replace")))
    out = [f"{title:<30}   Total                 ({len(entries)})",
           f"{'':<30}   With >={1:3d} occurrences ({len(entries)})", ""]
    out += [f"{k:4d}: {n:4d}  ->  {word}" for k, (word, n) in enumerate(entries, 1)]
    out += ["     -------", f"     {sum(counts.values()):5d}", ""]
    return out


def dtl_report(result) -> str:
    """sclite's ``-o dtl`` report (``sc_dtl.c``): sentence and word performance, then the confusion
    pairs, insertions, deletions, substitutions and falsely recognized words with their counts."""
    encoding = result.options.get("encoding") or "utf-8"
    n_sent = n_serr = w_sub = w_del = w_ins = 0
    corr = sub = dele = ins = 0
    pairs: dict = {}
    inserted: dict = {}
    deleted: dict = {}
    substituted: dict = {}
    false_rec: dict = {}

    def bump(d, k):
        d[k] = d.get(k, 0) + 1

    for seg in result.segments:
        ops = {p.op for p in seg.alignment.pairs}
        w_sub += "S" in ops
        w_del += "D" in ops
        w_ins += "I" in ops
        for p in seg.alignment.pairs:
            if p.op == "S":
                bump(pairs, f"{p.ref} ==> {p.hyp}")
                bump(substituted, p.ref)
                bump(false_rec, p.hyp)
            elif p.op == "I":
                bump(inserted, p.hyp)
            elif p.op == "D":
                bump(deleted, p.ref)
    for c in result.speakers.values():
        corr, sub, dele, ins = corr + c.correct, sub + c.substitutions, dele + c.deletions, ins + c.insertions
        n_sent, n_serr = n_sent + c.segments, n_serr + c.segment_errors
    r, e = corr + sub + dele, sub + dele + ins
    out = [f"DETAILED OVERALL REPORT FOR THE SYSTEM: {result.hyp_name}", "", "SENTENCE RECOGNITION PERFORMANCE", "",
           f" sentences                                        {n_sent:4d}",
           f" with errors                            {_pct1(n_serr, n_sent)}   ({n_serr:4d})", "",
           f"   with substitutions                   {_pct1(w_sub, n_sent)}   ({w_sub:4d})",
           f"   with deletions                       {_pct1(w_del, n_sent)}   ({w_del:4d})",
           f"   with insertions                      {_pct1(w_ins, n_sent)}   ({w_ins:4d})", "", "",
           "WORD RECOGNITION PERFORMANCE", ""]
    if r > 0:
        out += [f"Percent Total Error       =  {_pct1(e, r)}   ({e:4d})", "",
                f"Percent Correct           =  {_pct1(corr, r)}   ({corr:4d})", "",
                f"Percent Substitution      =  {_pct1(sub, r)}   ({sub:4d})",
                f"Percent Deletions         =  {_pct1(dele, r)}   ({dele:4d})",
                f"Percent Insertions        =  {_pct1(ins, r)}   ({ins:4d})",
                f"Percent Word Accuracy     =  {_f_round(100.0 - _pct(e, r), 1):5.1f}%"]
    else:
        out += [f"Percent Total Error       =  UNDEF%   ({e:4d})", "",
                f"Percent Correct           =  UNDEF%   ({corr:4d})", "",
                f"Percent Substitution      =  UNDEF%   ({sub:4d})",
                f"Percent Deletions         =  UNDEF%   ({dele:4d})",
                f"Percent Insertions        =  UNDEF%   ({ins:4d})",
                "Percent Word Accuracy     =  UNDEF%"]
    out += ["", "", f"Ref. words                =           ({r:4d})",
            f"Hyp. words                =           ({corr + sub + ins:4d})",
            f"Aligned words             =           ({corr + sub + ins + dele:4d})", ""]
    out += _lexicon_block("CONFUSION PAIRS", pairs, encoding) + ["", ""]
    out += _lexicon_block("INSERTIONS", inserted, encoding) + ["", ""]
    out += _lexicon_block("DELETIONS", deleted, encoding) + ["", ""]
    out += _lexicon_block("SUBSTITUTIONS", substituted, encoding) + [
        "", "* NOTE: The 'Substitution' words are those reference words",
        "        for which the recognizer supplied an incorrect word.", "", ""]
    out += _lexicon_block("FALSELY RECOGNIZED", false_rec, encoding) + [
        "", "* NOTE: The 'Falsely Recognized' words are those hypothesis words",
        "        which the recognizer incorrectly substituted for a reference word.", ""]
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
        # (undefined -- zero entropy, all words right or all wrong -- is null: JSON has no NaN)
        def finite(v):
            return v if math.isfinite(v) else None

        out["overall"]["nce"] = finite(result.nce)
        for s, v in result.speaker_nce.items():
            out["speakers"][s]["nce"] = finite(v)
    return out


#: The members of a report set, in the order they are renamed into place; the last one (the JSON
#: report) marks a complete set.
REPORT_KINDS = ("sys", "raw", "pra", "dtl", "json")


def write_reports(result, out_dir: str, name: str | None = None, speaker_stats: str = "sclite") -> dict:
    """Write the report set ``<name>.sys``, ``<name>.raw``, ``<name>.pra``, ``<name>.dtl`` and
    ``<name>.json`` into ``out_dir``; returns {kind: path}.  ``name`` defaults to the hypothesis
    file's base name; ``speaker_stats`` as :func:`sys_report`.  The sclite-like reports are written
    in the inputs' encoding (``result.options["encoding"]``, as sclite writes their bytes), the JSON
    in UTF-8.

    A reader never sees members of two runs together: every member is first written to a
    temporary file, then the previous set is removed (its ``.json`` first) and the new members are
    renamed into place in the order of :data:`REPORT_KINDS`, the ``.json`` last.  So ``<name>.json``
    exists only beside a complete set from the same run; a run killed in between leaves some
    members of the new set and no ``.json`` (an incomplete set, never a mix), and its temporaries
    are removed on SIGTERM/SIGINT or by the next run."""
    os.makedirs(out_dir, exist_ok=True)
    if name is None:
        name = os.path.basename(result.hyp_name or "score") or "score"
    texts = {"sys": sys_report(result, speaker_stats=speaker_stats),
             "raw": sys_report(result, raw=True, speaker_stats=speaker_stats), "pra": pra_report(result),
             "dtl": dtl_report(result), "json": json_text(json_report(result))}
    encoding = result.options.get("encoding") or "utf-8"
    paths = {kind: os.path.join(out_dir, f"{name}.{kind}") for kind in REPORT_KINDS}
    temps: dict = {}
    try:
        for kind in REPORT_KINDS:
            remove_stale_temporaries(paths[kind])
            fd, temps[kind] = make_temporary(paths[kind])
            os.fchmod(fd, output_mode(paths[kind]))
            with os.fdopen(fd, "w", encoding="utf-8" if kind == "json" else encoding, newline="\n") as f:
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
