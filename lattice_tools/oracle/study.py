"""The density-vs-oracle study: seed 001 Tables 3-6 for your own lattices, with bootstrap CIs and plots.

For every *density* (a lattice set, optionally posterior-pruned at several thresholds) and every
*representation* (N-best, sausage, phrase, whole lattice; the 1-best is always added as the
baseline), the oracle WER is computed exactly for every requested depth N, together with the
columns of seed 001's tables: N, N_max, N_.9, N_.5 (depth of the deepest, 90th-percentile and
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
phrase(N=inf) <= lattice (seed 001 eq. 6).  The same checks on error counts are reported too
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
from dataclasses import dataclass, field
from typing import Mapping, Sequence


from ..alternatives.network import depth_statistics
from ..errors import BudgetExceededError, LatticeError, LatticeToolsError
from ..io.common import atomic_write
from ..scoring.counts import ErrorCounts
from .bootstrap import bootstrap_systems
from ..io.inputs import check_times, check_word_table, is_text
from .representations import load_references, make_alternatives, match_references
from .batch import alternatives_oracle_many
from .lattice_oracle import lattice_oracle

DEFAULT_NS = (1, 2, 10, 100, 1000, 10000)
DEFAULT_REPRESENTATIONS = ("nbest", "sausage", "phrase", "lattice")


def _n_label(n: int | None) -> str:
    return "inf" if n is None else str(int(n))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]", "_", name)


@dataclass
class StudyResult:
    """Rows (one per cell), invariant checks and the written file paths."""

    rows: list
    invariants: list
    files: dict = field(default_factory=dict)

    def table(self, representation: str) -> list:
        return [r for r in self.rows if r["representation"] == representation]


def _load_set(spec, name: str, **inputs) -> list:
    if isinstance(spec, (list, tuple)):
        return list(spec)
    from ..io import read_lattice_inputs

    return list(read_lattice_inputs(str(spec), **inputs))


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
    from ..io.slf import format_slf

    total = 0
    for lat in lats:
        data = format_slf(lat).encode("utf-8")
        total += len(gzip.compress(data, mtime=0))
    return total / 1e6


def _cell_path(out_dir: str, density: str, rep: str, n) -> str:
    return os.path.join(out_dir, "cells", _safe(density), f"{rep}-{_n_label(n)}.json")


def _write_json(path: str, obj) -> None:
    with atomic_write(path) as f:
        json.dump(obj, f, indent=1, sort_keys=True, allow_nan=True)
        f.write("\n")


def run_study(lattice_sets: Mapping[str, object], references, *, ns: Sequence = DEFAULT_NS,
              representations: Sequence[str] = DEFAULT_REPRESENTATIONS, prune_thresholds: Sequence[float] = (0.0,),
              out_dir: str, mode: str = "sclite", optional_deletable: bool = False, include_infinity: bool = True,
              posterior_threshold: float = 0.1, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
              word_penalty: float = 0.0, bootstrap: int = 1000, seed: int = 0, max_pops: int = 2_000_000,
              inf_max_pops: int = 200_000, plots: bool = True, progress: bool | None = None,
              ref_format: str | None = None, format: str | None = None, words: str | None = None,
              frame_shift: float | None = None, frame_subsampling_factor: int | None = None,
              allow_untimed: bool = False) -> StudyResult:
    """Sweep N per representation and lattice density; write tables, plots and per-cell caches.

    Args:
      lattice_sets: ``{name: lattices}``, each a spec for :func:`lattice_tools.io.read_lattices`
        (SLF directory, ``ark:``, ``.pt`` ...) or a list of :class:`Lattice` -- e.g. the same audio
        decoded with different beams.
      references: ``{key: transcript}`` or a path (stm/trn/text, see :func:`load_references`);
        keys must match the lattice keys (per-utterance lattices, reference segmentation).
      ns: depths N to request; ``include_infinity`` adds N=inf (every alternative) for sausage
        and phrase and N-best, each when the search budget ``inf_max_pops`` allows it (else the
        cell is recorded as skipped); ``max_pops`` bounds the finite-N searches.
      prune_thresholds: posterior-pruning thresholds; each (set, threshold) is one density.
      mode: ``"sclite"`` (sclite weights and tie rules, as for an alt-CTM) or ``"levenshtein"``.
      bootstrap, seed: utterance-bootstrap replications (0 = no intervals) and its seed.
      ref_format: ``stm``/``trn``/``text`` (default: detected, see :func:`load_references`).
      format, words, frame_shift, frame_subsampling_factor: how lattice specs are read
        (:func:`lattice_tools.io.read_lattice_inputs`).
      allow_untimed: accept lattices without word times although the study writes alt-CTMs (every
        time 0.00) and phrase cells (one phrase per utterance); otherwise FormatError.
    Returns:
      :class:`StudyResult`.  Files are written atomically under ``out_dir``.
    """
    from tqdm import tqdm

    if isinstance(references, (str, os.PathLike)):
        references = load_references(str(references), fmt=ref_format)
    os.makedirs(out_dir, exist_ok=True)
    reps = [r for r in representations if r != "1best"]
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
        out = list(finite_ns)
        if want_inf:
            out.append(None)
        return out

    densities = []
    for set_name in lattice_sets:
        for thr in prune_thresholds:
            densities.append((set_name, float(thr), set_name if thr == 0 else f"{set_name}@{thr:g}"))
    total_cells = sum(1 + sum(len(cells_for(r)) for r in reps) for _ in densities)
    bar = tqdm(total=total_cells, desc="study cells", unit="cell", disable=(not _isatty()) if progress is None else not progress)
    scales = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    opts = dict(mode=mode, optional_deletable=optional_deletable)
    rows, notes = [], {}
    loaded: dict = {}
    for set_name, thr, density in densities:
        plan = [("1best", 1)] + [(r, n) for r in reps for n in cells_for(r)]
        missing = [(r, n) for r, n in plan if not os.path.exists(_cell_path(out_dir, density, r, n))]
        lats = None
        if missing:
            if set_name not in loaded:
                loaded[set_name] = _load_set(lattice_sets[set_name], set_name, format=format, words=words,
                                             frame_shift=frame_shift,
                                             frame_subsampling_factor=frame_subsampling_factor)
            base = loaded[set_name]
            match_references([l.key for l in base], references)
            text_refs = is_text(references[lat.key] for lat in base)
            for lat in base:
                check_word_table(lat, text_refs)
                check_times(lat, allow_untimed=allow_untimed, what="the study (alt-CTMs, phrase cells)")
            lats, note = _density_lattices(base, thr, acoustic_scale, lm_scale)
            if note:
                notes[density] = note
        for rep in ["1best"] + reps:
            rep_cells = [(r, n) for r, n in plan if r == rep]
            todo = [(r, n) for r, n in rep_cells if (r, n) in missing]
            if todo:
                _compute_cells(rep, todo, lats, references, density, set_name, thr, out_dir, scales, opts,
                               posterior_threshold, max_pops, inf_max_pops)
            for r, n in rep_cells:
                path = _cell_path(out_dir, density, r, n)
                if os.path.exists(path):
                    with open(path, encoding="utf-8") as f:
                        rows.append(json.load(f))
                bar.update(1)
    bar.close()

    _add_intervals(rows, bootstrap, seed)
    invariants = check_invariants(rows)
    for r in rows:
        r.pop("per_utterance", None)
    files = write_tables(rows, invariants, out_dir, mode=mode, notes=notes)
    if plots:
        files.update(plot_study(rows, out_dir))
    return StudyResult(rows=rows, invariants=invariants, files=files)


def _isatty() -> bool:
    import sys

    return sys.stderr.isatty()


def _compute_cells(rep, todo, lats, references, density, set_name, thr, out_dir, scales, opts,
                   posterior_threshold, max_pops, inf_max_pops) -> None:
    """Compute and cache the cells ``todo`` of one representation at one density.  The
    alternatives are built once at the deepest requested N and cut to each shallower N (exact for
    N-best lists, phrases and sausages: their slots do not depend on N).  N-best at N=inf is a
    separate search under the budget ``inf_max_pops``."""
    from ..io.altctm import write_alternatives_ctm

    keys = [l.key for l in lats]
    arcs = [int(l.num_arcs) for l in lats]
    if rep == "lattice":
        t = time.time()
        res = [lattice_oracle(l, references[l.key], **opts) for l in lats]
        cell = _cell(rep, None, density, set_name, thr, keys, res, None, _slf_gzip_mb(lats), time.time() - t, arcs)
        _write_json(_cell_path(out_dir, density, rep, None), cell)
        return
    ns = [n for _, n in todo]
    if None in ns and len(ns) > 1:
        # N=inf may exceed the search budget: compute the finite depths on their own first
        finite = [(rep, n) for n in ns if n is not None]
        _compute_cells(rep, finite, lats, references, density, set_name, thr, out_dir, scales, opts,
                       posterior_threshold, max_pops, inf_max_pops)
        ns = [None]
    deepest = None if any(n is None for n in ns) else max(ns)
    t = time.time()
    alts_list = []
    try:
        for l in lats:
            kw = {}
            if rep in ("nbest", "phrase"):
                kw["max_pops"] = inf_max_pops if deepest is None else max_pops
            if rep == "phrase":
                kw["posterior_threshold"] = posterior_threshold
            alts_list.append(make_alternatives(l, rep, deepest, **scales, **kw))
    except BudgetExceededError as exc:
        if deepest is not None:
            raise
        # N=inf is out of budget (e.g. N-best of a dense lattice): record it as not computable.
        cell = {"representation": rep, "N": "inf", "density": density, "set": set_name, "prune": thr,
                "skipped": f"N=inf exceeds the search budget ({exc.message})"}
        _write_json(_cell_path(out_dir, density, rep, None), cell)
        return
    build_seconds = time.time() - t
    for n in ns:
        t = time.time()
        cut = [a.truncated(n) for a in alts_list]
        res = alternatives_oracle_many(cut, [references[a.key] for a in cut], **opts)
        ctm_path = os.path.join(out_dir, "altctm", _safe(density), f"{rep}-{_n_label(n)}.ctm.gz")
        write_alternatives_ctm(ctm_path, [_located(a) for a in cut])
        mb = os.path.getsize(ctm_path) / 1e6
        depths = [d for a in cut for d in a.depths]
        cell = _cell(rep, n, density, set_name, thr, keys, res, depths, mb, time.time() - t + build_seconds, arcs)
        _write_json(_cell_path(out_dir, density, rep, n), cell)


def _located(alts):
    """Per-utterance alternatives are written as their own recording (file = key, channel ``1``, the
    toolkit's convention), times as given."""
    return alts if (alts.file == alts.key and alts.channel == "1") else alts.with_location(alts.key, "1", 0.0)


def _cell(rep, n, density, set_name, thr, keys, results, depths, mb, seconds, arcs) -> dict:
    counts = ErrorCounts.sum(r.counts for r in results)
    d = {"representation": rep, "N": _n_label(n), "density": density, "set": set_name, "prune": thr,
         "utterances": len(results), "arcs": int(sum(arcs)), "cost": float(sum(r.cost for r in results)),
         "wer": 100 * counts.wer, "precision": counts.precision, "recall": counts.recall,
         "C": counts.correct, "S": counts.substitutions, "D": counts.deletions, "I": counts.insertions,
         "ref_words": counts.ref_words, "MB": mb, "seconds": seconds,
         "per_utterance": [{"key": k, "cost": r.cost, **{f: getattr(r.counts, f) for f in
                                                          ("correct", "substitutions", "deletions", "insertions",
                                                           "ref_words")}} for k, r in zip(keys, results)]}
    if depths is not None:
        st = depth_statistics(depths)
        d.update({"N_max": st["N_max"], "N_.9": st["N_.9"], "N_.5": st["N_.5"], "blocks": st["blocks"]})
    else:
        d.update({"N_max": None, "N_.9": None, "N_.5": None, "blocks": None})
    return d


def _add_intervals(rows: list, replications: int, seed: int) -> None:
    """95% utterance-bootstrap intervals; cells of one density share the draws (paired)."""
    if replications <= 0:
        return
    by_density: dict = {}
    for r in rows:
        if "per_utterance" in r:
            by_density.setdefault(r["density"], []).append(r)
    for density, rs in by_density.items():
        systems = {}
        for r in rs:
            pu = sorted(r["per_utterance"], key=lambda x: x["key"])
            systems[(r["representation"], r["N"])] = [ErrorCounts(**{k: v for k, v in u.items() if k not in ("key", "cost")})
                                                       for u in pu]
        ivs = bootstrap_systems(systems, replications=replications, seed=seed)
        for r in rs:
            iv = ivs[(r["representation"], r["N"])]["wer"]
            r["wer_low"], r["wer_high"] = 100 * iv.low, 100 * iv.high


def check_invariants(rows: list) -> list:
    """The seed-001 invariants on every density (see the module docstring); one dict per check."""
    out = []
    by_density: dict = {}
    for r in rows:
        if "cost" in r:
            by_density.setdefault(r["density"], {})[(r["representation"], r["N"])] = r

    def order(nlabel):
        return math.inf if nlabel == "inf" else int(nlabel)

    for density, cells in by_density.items():
        def add(name, lhs, rhs):
            if lhs is None or rhs is None:
                return
            # sclite prices skipping a NULL word '@' (an empty alternative) at 0.001 while a lattice
            # epsilon is free, so costs are compared on their integer part (real edits cost 2-4).
            out.append({"density": density, "check": name, "lhs_cost": lhs["cost"], "rhs_cost": rhs["cost"],
                        "holds": bool(math.floor(lhs["cost"] + 1e-9) <= math.floor(rhs["cost"] + 1e-9)),
                        "lhs_errors": lhs["S"] + lhs["D"] + lhs["I"],
                        "rhs_errors": rhs["S"] + rhs["D"] + rhs["I"],
                        "holds_on_errors": bool(lhs["S"] + lhs["D"] + lhs["I"] <= rhs["S"] + rhs["D"] + rhs["I"])})

        lat = cells.get(("lattice", "inf"))
        one = cells.get(("1best", "1"))
        add("lattice <= 1best", lat, one)
        for rep in ("nbest", "phrase", "sausage"):
            ns = sorted((n for (r, n) in cells if r == rep), key=order)
            for a, b in zip(ns[1:], ns[:-1]):  # deeper slots only add choices: never worse
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
_TITLES = {"1best": "1-best (baseline)", "nbest": "Oracle WER for utterance-level (N-best) alternatives (Table 3)",
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


def write_tables(rows: list, invariants: list, out_dir: str, *, mode: str = "sclite", notes: dict | None = None) -> dict:
    """``study.md`` (tables shaped like seed 001 Tables 3-6, plus CI, C/S/D/I and precision/recall),
    ``study.csv`` and ``study.json``."""
    md = [f"# Oracle WER study ({mode} scoring)", "",
          "WER in %, 95% utterance-bootstrap interval [low, high]. N = requested depth (inf = all), "
          "N_max / N_.9 / N_.5 = depth of the deepest / 90th-percentile / median block, "
          "MB = gzip-compressed alt-CTM size (for the lattice: gzip-compressed SLF).", ""]
    show = ["density", "N", "wer", "wer_low", "wer_high", "N_max", "N_.9", "N_.5", "MB", "C", "S", "D", "I",
            "precision", "recall", "arcs"]
    for rep in ("1best", "nbest", "sausage", "phrase", "lattice"):
        rs = [r for r in rows if r.get("representation") == rep]
        if not rs:
            continue
        md += [f"## {_TITLES[rep]}", "", "| " + " | ".join(show) + " |", "|" + "---|" * len(show)]
        for r in rs:
            if "skipped" in r:
                md.append(f"| {r['density']} | {r['N']} | *{r['skipped']}* |" + " |" * (len(show) - 3))
                continue
            md.append("| " + " | ".join(_fmt(r.get(c), c) for c in show) + " |")
        md.append("")
    if invariants:
        bad = [i for i in invariants if not i["holds"]]
        md += ["## Invariants (on the optimal alignment cost)", "",
               f"{len(invariants) - len(bad)} of {len(invariants)} hold." + ("" if not bad else " Violations:"), ""]
        for i in bad:
            md.append(f"- {i['density']}: {i['check']}: {i['lhs_cost']} > {i['rhs_cost']}")
        err_bad = [i for i in invariants if not i["holds_on_errors"]]
        md += ["", f"On error counts: {len(invariants) - len(err_bad)} of {len(invariants)} hold."]
        for i in err_bad:
            md.append(f"- {i['density']}: {i['check']}: {i['lhs_errors']} > {i['rhs_errors']} errors")
        md.append("")
    if notes:
        md += ["## Notes", ""] + [f"- {k}: {v}" for k, v in notes.items()] + [""]
    files = {"markdown": os.path.join(out_dir, "study.md"), "csv": os.path.join(out_dir, "study.csv"),
             "json": os.path.join(out_dir, "study.json")}
    with atomic_write(files["markdown"]) as f:
        f.write("\n".join(md))
    with atomic_write(files["csv"]) as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(_COLUMNS + ["skipped"])
        for r in rows:
            w.writerow([_fmt(r.get(c), c) for c in _COLUMNS] + [r.get("skipped", "")])
    _write_json(files["json"], {"mode": mode, "rows": rows, "invariants": invariants, "notes": notes or {}})
    return files


def plot_study(rows: list, out_dir: str) -> dict:
    """``oracle_vs_n.png`` and ``oracle_vs_mb.png`` (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if "wer" in r]
    densities = list(dict.fromkeys(r["density"] for r in rows))
    if not densities:
        return {}
    colors = {"nbest": "C0", "sausage": "C1", "phrase": "C2", "lattice": "C3", "1best": "k"}
    finite = [int(r["N"]) for r in rows if r["N"] != "inf"]
    inf_x = 10 ** (math.ceil(math.log10(max(finite + [10]))) + 1)
    files = {}
    for kind in ("n", "mb"):
        fig, axes = plt.subplots(1, len(densities), figsize=(4.2 * len(densities), 3.6), squeeze=False, sharey=True)
        for ax, density in zip(axes[0], densities):
            rs = [r for r in rows if r["density"] == density]
            for rep in ("nbest", "sausage", "phrase"):
                pts = [r for r in rs if r["representation"] == rep]
                if not pts:
                    continue
                if kind == "n":
                    pts.sort(key=lambda r: inf_x if r["N"] == "inf" else int(r["N"]))
                    xs = [inf_x if r["N"] == "inf" else int(r["N"]) for r in pts]
                else:
                    pts.sort(key=lambda r: r["MB"])
                    xs = [r["MB"] for r in pts]
                ax.plot(xs, [r["wer"] for r in pts], "o-", color=colors[rep], label=rep)
            for rep, style in (("lattice", "--"), ("1best", ":")):
                for r in rs:
                    if r["representation"] == rep:
                        if kind == "n":
                            ax.axhline(r["wer"], ls=style, color=colors[rep], label=rep)
                        else:
                            ax.plot([r["MB"]], [r["wer"]], "s" if rep == "lattice" else "x", color=colors[rep],
                                    label=rep)
            ax.set_xscale("log")
            ax.set_title(density)
            ax.set_xlabel("N (rightmost = inf)" if kind == "n" else "gzip-compressed size (MB)")
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("oracle WER (%)")
        axes[0][-1].legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"oracle_vs_{kind}.png")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        with atomic_write(path, "wb") as f:
            f.write(buf.getvalue())
        files[f"plot_{kind}"] = path
    return files
