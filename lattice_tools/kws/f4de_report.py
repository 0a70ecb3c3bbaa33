"""F4DE ``KWSEval`` text reports, character for character: the summary (``-o``), block summary (``-b``) and
their conditional versions (``-O``, ``-B``), and the alignment CSV (``-c``).

The tables are laid out by a port of F4DE's ``AutoTable::renderTxtTable`` (column groups, widths spread
evenly over sub-columns, right-justified cells), so that a report can be compared with F4DE's own output
with ``diff``.  Numbers use F4DE's formats: P_FA ``%6.5f``, P_miss ``%6.3f``, TWV ``%6.4f``.
"""
from __future__ import annotations

import io
from collections.abc import Iterable

from .score import AlignmentRow, KwsEvaluation, KwsScore, perl_num

FMT_MISS = "%6.3f"
FMT_FA = "%6.5f"
FMT_COMB = "%6.4f"


def _pn(fmt: str, value) -> str:
    """F4DE's ``_PN``: NA for undefined, non-numbers verbatim, else formatted."""
    if value is None:
        return "NA"
    if isinstance(value, str):
        import re

        if not re.match(r"^[\-\d\.]+", value):
            return value
        value = float(value)
    return fmt % value


class AutoTable:
    """Minimal port of F4DE's AutoTable text rendering."""

    def __init__(self, *, key_column: bool = True, row_sort: str = "AsAdded"):
        self.data: dict[tuple[str, str], str] = {}
        self.cols: dict[str, int] = {}        # col id -> insertion number
        self.col_len: dict[str, int] = {}     # widest datum
        self.rows: dict[str, int] = {}
        self.key_column = key_column
        self.row_sort = row_sort

    def add(self, value, col: str, row: str, replace: bool = False) -> None:
        value = "" if value is None else str(value)
        if col not in self.cols:
            self.cols[col] = len(self.cols)
            self.col_len[col] = 0
        if row not in self.rows:
            self.rows[row] = len(self.rows)
        if len(value) > self.col_len[col]:
            self.col_len[col] = len(value)
        if (row, col) in self.data and not replace:
            return
        self.data[(row, col)] = value

    @staticmethod
    def _labels(id_: str) -> list[str]:
        return id_.split("|")

    def _build_tree(self, ids: list[str], level: int, max_level: int, min_width: int, gap: int):
        nodes: list[dict] = []
        last = None
        for id_ in ids:
            lab = self._labels(id_)[level]
            if last is None or lab != last:
                nodes.append({"subs": [], "id": lab, "width": -1, "nodes": []})
            last = lab
            nodes[-1]["subs"].append(id_)
        if level + 1 < max_level:
            this_width = 0
            computed = []
            for i, nd in enumerate(nodes):
                sub_nodes, sub_w = self._build_tree(nd["subs"], level + 1, max_level, len(nd["id"]) + gap * 2, gap)
                nd["nodes"], nd["width"] = sub_nodes, sub_w
                this_width += sub_w + (1 if i else 0)
                computed.append(sub_w)
            if min_width > this_width:
                resid = min_width - this_width
                per = int(resid / len(nodes))
                this_width = 0
                for i, nd in enumerate(nodes):
                    extra = per if i < len(nodes) - 1 else resid - (len(nodes) - 1) * per
                    sub_nodes, sub_w = self._build_tree(nd["subs"], level + 1, max_level, computed[i] + extra, gap)
                    nd["nodes"], nd["width"] = sub_nodes, sub_w
                    this_width += sub_w + (1 if i else 0)
            return nodes, this_width
        this_width = 0
        for i, nd in enumerate(nodes):
            data_len = self.col_len[nd["subs"][0]]
            nd["width"] = gap * 2 + max(len(nd["id"]), data_len)
            this_width += nd["width"] + (1 if i else 0)
        if min_width > this_width:
            resid = min_width - this_width
            per = int(resid / len(nodes))
            for i, nd in enumerate(nodes):
                extra = per if i < len(nodes) - 1 else resid - (len(nodes) - 1) * per
                nd["width"] += extra
                this_width += extra
        return nodes, this_width

    @staticmethod
    def _center(s: str, n: int) -> str:
        left = int((n - len(s)) / 2)
        return " " * left + s + " " * (n - len(s) - left)

    def render(self, gap: int = 2) -> str:
        if not self.data:
            return "Warning: Empty table.  Nothing to produce.\n"
        col_ids = sorted(self.cols, key=self.cols.__getitem__)
        levels = len(self._labels(col_ids[0]))
        tree, _ = self._build_tree(col_ids, 0, levels, 0, gap)
        row_ids = sorted(self.rows, key=self.rows.__getitem__) if self.row_sort == "AsAdded" else sorted(self.rows)
        row_levels = len(self._labels(row_ids[0]))
        row_w = [max(len(self._labels(r)[lv]) for r in row_ids) for lv in range(row_levels)]
        out = []
        node_set = tree
        for level in range(levels):
            line = ""
            if self.key_column:
                for w in row_w:
                    line += " " * w + " " * gap
            line += "|"
            node_set = tree
            for _ in range(level):
                node_set = [c for nd in node_set for c in nd["nodes"]]
            line += "|".join(self._center(nd["id"], nd["width"]) for nd in node_set)
            out.append(line + "|\n")
        leaf_cols = [nd["subs"][0] for nd in node_set]
        widths = [nd["width"] for nd in node_set]
        last_labels = [""] * row_levels
        for r_i, row in enumerate(row_ids):
            if r_i == 0:
                sep = "".join("-" * (w + gap) for w in row_w) + "+" if self.key_column else "|"
                out.append(sep + "".join("-" * w + "+" for w in widths) + "\n")
            line = ""
            if self.key_column:
                ids = self._labels(row)
                for lv in range(row_levels):
                    show = last_labels[lv] != ids[lv]
                    if show:
                        for lower in range(lv + 1, row_levels):
                            last_labels[lower] = ""
                    lab = ids[lv] if show else ""
                    line += lab + " " * (row_w[lv] - len(lab)) + " " * gap
                    last_labels[lv] = ids[lv]
            line += "|"
            for col, w in zip(leaf_cols, widths, strict=False):
                v = self.data.get((row, col), "")
                line += " " + " " * (w - 2 - len(v)) + v + " |"
            out.append(line + "\n")
        return "".join(out)


def _header_table(score: KwsScore, variable: set[str]) -> str:
    at = AutoTable(key_column=False)
    col = "Performance Summary Over and Ensemble of Subsets"
    rows = [("System Title", "NA"), ("Decision ID", "Segment" if score.segment_based else "Occurrence")]
    for k, v in sorted(_trial_params(score).items()):
        if k not in variable:
            rows.append((k, v))
    for k, v in sorted(_metric_params(score).items()):
        if k not in variable:
            rows.append((k, v))
    for i, (k, v) in enumerate(rows):
        at.add(k, col + "|Key", str(i))
        at.add(v, col + "|Value", str(i))
    return at.render(2)


def _trial_params(score: KwsScore) -> dict[str, str]:
    tps = score.params.get("trials_per_second", 1.0)
    if score.segment_based:
        return {"IncludeBlocksWithNoTargets": "1" if score.include_no_targets else "0",
                "TotTrials": str(score.tot_trials)}
    return {"IncludeBlocksWithNoTargets": "1" if score.include_no_targets else "0",
            "TotDur": perl_num(score.tot_dur), "TotTrials": str(score.tot_trials), "TrialsPerSecond": perl_num(tps)}


def _metric_params(score: KwsScore) -> dict[str, str]:
    cost = score.params.get("cost", 0.1)
    return {"BETA": perl_num(score.beta), "Cost": f"{cost:.4f}",
            "Ptarg": perl_num(score.params.get("prob_of_term", 0.0001)),
            "Value": perl_num(score.params.get("value", 1.0))}


def _variable_params(scores: list[KwsScore]) -> set[str]:
    vals: dict[str, set[str]] = {}
    for s in scores:
        for k, v in {**_trial_params(s), **_metric_params(s)}.items():
            vals.setdefault(k, set()).add(v)
    return {k for k, v in vals.items() if len(v) != 1}


def summary_table(scores: list[KwsScore], *, optimum: bool = False, supremum: bool = False) -> str:
    """F4DE's summary report (header table, two blank lines, summary table)."""
    variable = _variable_params(scores)
    at = AutoTable(key_column=False, row_sort="Alpha")
    for s in scores:
        key = s.title
        at.add(s.title, " |Title", key)
        for k, v in _trial_params(s).items():
            if k in variable:
                at.add(v, "Parameters|" + k, key)
        for k, v in _metric_params(s).items():
            if k in variable:
                at.add(v, "Parameters|" + k, key)
        c = s.counts()
        if c["keywords"] > 1:
            at.add(str(c["keywords"]), "Inputs|#Keyword", key)
        at.add(str(c["n_true"]), "Inputs|#Targ", key)
        at.add(str(c["n_nontarg"]), "Inputs|#NTarg", key)
        at.add(str(c["n_sys"]), "Inputs|#Sys", key)
        a = "Actual Decision TWV Analysis|"
        at.add(str(c["n_corr"]), a + "#CorDet", key)
        at.add(str(c["n_corr_nondet"]), a + "#Cor!Det", key)
        at.add(str(c["n_fa"]), a + "#FA", key)
        at.add(str(c["n_miss"]), a + "#Miss", key)
        at.add(_pn(FMT_FA, s.atwv.p_fa), a + "PFA", key)
        at.add(_pn(FMT_MISS, s.atwv.p_miss), a + "PMiss", key)
        at.add(_pn(FMT_COMB, s.atwv.twv), a + "TWV", key)
        at.add(_pn(FMT_COMB, s.atwv.threshold), a + "Dec. Tresh", key)
        m = "Maximum TWV Analysis|"
        at.add(_pn(FMT_FA, s.mtwv.p_fa), m + "PFA", key)
        at.add(_pn(FMT_MISS, s.mtwv.p_miss), m + "PMiss", key)
        at.add(_pn(FMT_COMB, s.mtwv.twv), m + "TWV", key)
        at.add(_pn(FMT_MISS, s.mtwv.threshold), m + "Dec. Thresh", key)
        for flag, name, p in ((optimum, "Optimum", s.otwv), (supremum, "Supremum", s.stwv)):
            if flag:
                g = f"{name} TWV Analysis|"
                at.add(_pn(FMT_FA, p.p_fa), g + "PFA", key)
                at.add(_pn(FMT_MISS, p.p_miss), g + "PMiss", key)
                at.add(_pn(FMT_COMB, p.twv), g + "TWV", key)
                at.add(_pn(FMT_MISS, p.threshold), g + "Dec. Thresh", key)
    return _header_table(scores[0], variable) + "\n\n" + at.render(2)


def block_table(scores: list[KwsScore], *, optimum: bool = False, supremum: bool = False) -> str:
    """F4DE's block (per keyword) summary report."""
    variable = _variable_params(scores)
    at = AutoTable(key_column=True)
    for s in scores:
        key = s.title
        per_opt = {t.kwid: t for t in s.terms}
        beta, T = s.beta, s.tot_trials
        for kwid in sorted(s.blocks):
            b = s.blocks[kwid]
            row = "Keyword|" + kwid
            if b.text:                # the pooled block (F4DE -P) has no text
                at.add(b.text, "MetaData|Text", row, replace=True)
            if not s.is_evaluated(b):
                continue
            at.add(str(b.n_true), key + "|#Targ", row)
            at.add(str(b.n_corr), key + "|#Corr", row)
            if s.segment_based:       # F4DE shows correct non-detections of segments only
                at.add(str(b.no_nontarg), key + "|#Corr!Det", row)
            at.add(str(b.n_fa), key + "|#FA", row)
            at.add(str(b.n_miss), key + "|#Miss", row)
            pm = b.n_miss / b.n_true if b.n_true > 0 else None
            pf = b.n_fa / (T - b.n_true) if T != b.n_true else None
            twv = None if (pm is None or pf is None) else 1 - (pm + beta * pf)
            at.add(_pn(FMT_COMB, twv), key + "|TWV", row)
            at.add(_pn(FMT_FA, pf) if pf is not None else "0", key + "|PFA", row)
            at.add(_pn(FMT_MISS, pm), key + "|PMISS", row)
            t = per_opt[kwid]
            if optimum:
                at.add(_pn(FMT_FA, t.otwv_p_fa), "Optimum TWV|PFA", row)
                at.add(_pn(FMT_MISS, t.otwv_p_miss), "Optimum TWV|PMiss", row)
                at.add(_pn(FMT_COMB, t.otwv), "Optimum TWV|TWV", row)
                at.add(_pn(FMT_MISS, t.otwv_threshold), "Optimum TWV|Dec. Thresh", row)
            if supremum:
                # Without any scored hit F4DE computes no per-keyword supremum at all.
                scored = s.mtwv.threshold != "NaN"
                sm = b.omitted / b.n_true if (b.n_true > 0 and scored) else None
                at.add(_pn(FMT_FA, 0.0 if scored else None), "Supremum TWV|PFA", row)
                at.add(_pn(FMT_MISS, sm), "Supremum TWV|PMiss", row)
                at.add(_pn(FMT_COMB, t.stwv), "Supremum TWV|TWV", row)
                at.add(_pn(FMT_MISS, 0.5 if scored else None), "Supremum TWV|Dec. Thresh", row)
    for s in scores:
        key = s.title
        ev = s.evaluated_blocks
        c = s.counts()
        at.add(str(c["n_true"]), key + "|#Targ", "Summary|Totals")
        at.add(str(c["n_corr"]), key + "|#Corr", "Summary|Totals")
        if s.segment_based:
            at.add(str(c["n_corr_nondet"]), key + "|#Corr!Det", "Summary|Totals")
        at.add(str(c["n_fa"]), key + "|#FA", "Summary|Totals")
        at.add(str(c["n_miss"]), key + "|#Miss", "Summary|Totals")

        def mean0(vals):
            return f"{(sum(vals) / len(vals)) if vals else 0:.0f}"

        at.add(mean0([b.n_true for b in ev]), key + "|#Targ", "Summary|Means")
        at.add(mean0([b.n_corr for b in ev]), key + "|#Corr", "Summary|Means")
        if s.segment_based:
            at.add(mean0([b.no_nontarg for b in ev]), key + "|#Corr!Det", "Summary|Means")
        at.add(mean0([b.n_fa for b in ev]), key + "|#FA", "Summary|Means")
        at.add(mean0([b.n_miss for b in ev]), key + "|#Miss", "Summary|Means")
        at.add(_pn(FMT_FA, s.atwv.p_fa), key + "|PFA", "Summary|Means")
        at.add(_pn(FMT_MISS, s.atwv.p_miss), key + "|PMISS", "Summary|Means")
        at.add(_pn(FMT_COMB, s.atwv.twv), key + "|TWV", "Summary|TWV")
        if optimum:
            at.add(_pn(FMT_FA, s.otwv.p_fa), "Optimum TWV|PFA", "Summary|Means")
            at.add(_pn(FMT_MISS, s.otwv.p_miss), "Optimum TWV|PMiss", "Summary|Means")
            at.add(_pn(FMT_COMB, s.otwv.twv), "Optimum TWV|TWV", "Summary|Means")
        if supremum:
            at.add(_pn(FMT_FA, s.stwv.p_fa), "Supremum TWV|PFA", "Summary|Means")
            at.add(_pn(FMT_MISS, s.stwv.p_miss), "Supremum TWV|PMiss", "Summary|Means")
            at.add(_pn(FMT_COMB, s.stwv.twv), "Supremum TWV|TWV", "Summary|Means")
    return _header_table(scores[0], variable) + "\n\n" + at.render(2)


def f4de_stdout(ev: KwsEvaluation, *, ecf: str, rttm: str, kwslist: str, kwlist: str, summary: bool = False,
                block: bool = False, cond_summary: bool = False, cond_block: bool = False,
                optimum: bool = False, supremum: bool = False) -> str:
    """What ``KWSEval.pl ... -f -`` prints on standard output."""
    out = [f"Loading ECF {ecf}\n", f"Loading KWSList File {kwslist}\n", f"Loading KWList File {kwlist}\n",
           f"Loading RTTM File {rttm}\n",
           f"Performing {'Segment' if ev.overall.segment_based else 'Occurrence'} Alignment\n",
           "Computing requested DET curves and reports\n"]
    if summary:
        out.append("Summary Report: -\n")
        out.append(summary_table([ev.overall], optimum=optimum, supremum=supremum))
    if block:
        out.append("Block Summary Report: -\n")
        out.append(block_table([ev.overall], optimum=optimum, supremum=supremum))
    conds = list(ev.conditions.values())
    if cond_summary:
        if conds:
            out.append("Conditional Summary Report: -\n")
            out.append(summary_table(conds, optimum=optimum, supremum=supremum))
        else:
            out.append("  No Conditional Summary Report will be generated.  No conditional DET Curves found\n")
    if cond_block:
        if conds:
            out.append("Conditional Block Summary Report: -\n")
            # F4DE renders the conditional block report without its DET options: no per-keyword optimum or
            # supremum columns, whatever -zG asks for
            out.append(block_table(conds))
        else:
            out.append("  No Conditional Summary Report will be generated.  No conditional DET Curves found\n")
    return "".join(out)


ALIGNMENT_HEADER = ("language", "file", "channel", "termid", "term", "ref_bt", "ref_et", "sys_bt", "sys_et",
                    "sys_score", "sys_decision", "alignment")


def alignment_csv(rows: Iterable[AlignmentRow], language: str = "") -> str:
    """F4DE's alignment CSV (``-c``): one line per matched pair, missed occurrence and unmatched hit.
    Fields are joined with commas without quoting, as F4DE writes them."""
    buf = io.StringIO()
    buf.write(",".join(ALIGNMENT_HEADER) + "\n")
    for r in rows:
        buf.write(",".join((language, r.file, r.channel, r.kwid, r.text, r.ref_tbeg, r.ref_tend, r.sys_tbeg,
                            r.sys_tend, r.sys_score, r.sys_decision, r.alignment)) + "\n")
    return buf.getvalue()

