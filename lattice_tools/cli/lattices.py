"""``lattice-tools info`` and ``lattice-tools convert``: thin wrappers over
:func:`lattice_info` and :func:`convert_lattices`."""
from __future__ import annotations

import math
from collections.abc import Sequence

import click
import numpy as np

from ..io.common import write_json
from ..lattice import Lattice
from ._inputs import lattice_input_options
from ._options import LATTICE_FORMATS, json_option, option, out_option


def posterior_sanity(lat: Lattice, posteriors: np.ndarray) -> float:
    """``max |sum of posteriors of arcs crossing a frame - 1|`` over the frames every path covers.

    Every complete path covers the frames from the start state's time to its final state's time,
    so in a consistent lattice the posteriors of the arcs spanning any such frame sum to 1.
    Frames are taken from the start time to the earliest final time.  NaN when times are unknown.
    """
    if not lat.has_times or lat.num_arcs == 0:
        return float("nan")
    live = lat.t1 > lat.t0
    if not live.any():
        return float("nan")
    start = int(lat.t0[lat.src == 0].min()) if np.any(lat.src == 0) else 0
    into_final = lat.is_final[lat.dst]
    end = int(lat.t1[into_final].min()) if into_final.any() else lat.num_frames
    if end <= start:
        return float("nan")
    n = lat.num_frames + 1
    diff = np.zeros(n + 1)
    np.add.at(diff, lat.t0[live], posteriors[live])
    np.add.at(diff, lat.t1[live], -posteriors[live])
    mass = np.cumsum(diff)[start:end]
    return float(np.abs(mass - 1.0).max())


def lattice_stats(lat: Lattice, *, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
                  word_penalty: float = 0.0) -> dict:
    """Statistics of one lattice (see :func:`lattice_info`)."""
    from ..algorithms import arc_posteriors, best_path, lattice_depth, total_log_prob

    kw = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    duration = lat.duration if lat.has_times else float("nan")
    post = arc_posteriors(lat, **kw)
    return {
        "key": lat.key,
        "states": lat.num_states,
        "arcs": lat.num_arcs,
        "word_arcs": int(np.count_nonzero(lat.word)),
        "duration": duration,
        "arcs_per_second": lat.num_arcs / duration if duration and duration > 0 else float("nan"),
        "depth": lattice_depth(lat) if lat.has_times else float("nan"),
        "best_path": " ".join(lat.words(best_path(lat, **kw))),
        "log_likelihood": total_log_prob(lat, **kw),
        "posterior_sanity": posterior_sanity(lat, post),
    }


def lattice_info(inputs: Sequence[str], *, format: str | None = None, words: str | None = None,
                 frame_shift: float | None = None, frame_subsampling_factor: int | None = None,
                 acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                 progress: bool | None = None) -> dict:
    """Per-lattice and total statistics of the lattices in ``inputs``.

    For each lattice: states, arcs, word arcs, duration (s), arcs per second, depth (Kaldi's
    ``lattice-depth``: frames covered by arcs / frames), best-path words (minimum cost under the
    scales), log-likelihood (log-sum over all paths of ``-cost``) and the posterior sanity value
    ``max |sum of posteriors crossing a frame - 1|`` (should be ~1e-12; larger means times or
    scores are inconsistent).  ``total`` sums counts and durations and gives overall ratios.
    Returns ``{"lattices": [...], "total": {...}}``.
    """
    from tqdm import tqdm

    from ..io import read_lattice_inputs

    rows = []
    lats = read_lattice_inputs(inputs, format=format, words=words, frame_shift=frame_shift,
                               frame_subsampling_factor=frame_subsampling_factor)
    for lat in tqdm(lats, desc="info", unit="lat", disable=(None if progress is None else not progress)):
        rows.append(lattice_stats(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty))
    total = {"lattices": len(rows), "states": sum(r["states"] for r in rows), "arcs": sum(r["arcs"] for r in rows),
             "word_arcs": sum(r["word_arcs"] for r in rows)}
    durs = [r["duration"] for r in rows if not math.isnan(r["duration"])]
    total["duration"] = float(sum(durs)) if durs else float("nan")
    total["arcs_per_second"] = (sum(r["arcs"] for r in rows if not math.isnan(r["duration"])) / total["duration"]
                                if durs and total["duration"] > 0 else float("nan"))
    depth_rows = [r for r in rows if not math.isnan(r["depth"])]
    # overall depth = all covered frames / all frames, i.e. the duration-weighted mean
    total["depth"] = (sum(r["depth"] * r["duration"] for r in depth_rows) / sum(r["duration"] for r in depth_rows)
                      if depth_rows and sum(r["duration"] for r in depth_rows) > 0 else float("nan"))
    total["log_likelihood"] = float(sum(r["log_likelihood"] for r in rows))
    sanity = [r["posterior_sanity"] for r in rows if not math.isnan(r["posterior_sanity"])]
    total["posterior_sanity"] = max(sanity) if sanity else float("nan")
    return {"lattices": rows, "total": total}


def convert_lattices(inputs: Sequence[str] | str, output: str, *, from_format: str | None = None,
                     to_format: str | None = None, words: str | None = None, frame_shift: float | None = None,
                     frame_subsampling_factor: int | None = None, write_words: str | None = None,
                     progress: bool | None = None, **write_options) -> int:
    """Read lattices from ``inputs`` (any readable format) and write them to ``output``.

    Streams one lattice at a time for Kaldi archives and SLF directories.  ``words`` is a
    ``words.txt`` used to map ids to words when reading; ``write_words`` writes the symbol table
    of the output (for SLF inputs: all words seen in all inputs, with the ids used in the output --
    give it to Kaldi/k2 tools together with the archive).  Returns the number converted.
    """
    from tqdm import tqdm

    from ..io import read_lattice_inputs, write_lattices

    last_symbols = []

    def stream():
        # SLF inputs share one growing word table (read_lattice_inputs), so ids agree across files
        for lat in read_lattice_inputs(inputs, format=from_format, words=words, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor):
            last_symbols[:] = [lat.symbols]
            yield lat

    bar = tqdm(stream(), desc="convert", unit="lat", disable=(None if progress is None else not progress))
    n = write_lattices(bar, output, format=to_format, **write_options)
    if write_words and last_symbols:
        # tables of later lattices extend earlier ones (see read_lattices), so the last is complete
        last_symbols[0].write(write_words)
    return n


def _fmt(x) -> str:
    if isinstance(x, float):
        return "nan" if math.isnan(x) else f"{x:.4g}"
    return str(x)


_FORMATS = click.Choice(LATTICE_FORMATS)


@click.command("info")
@click.argument("lattices", nargs=-1, required=True)
@click.option("--format", "format", type=_FORMATS, default=None, help="Input format (default: from the name).")
@lattice_input_options
@click.option("--acoustic-scale", type=float, default=1.0, show_default=True)
@click.option("--lm-scale", type=float, default=1.0, show_default=True)
@click.option("--word-penalty", type=float, default=0.0, show_default=True)
@json_option("Write the statistics as JSON here ('-' = stdout instead of the table; undefined values are null).")
def info_command(lattices, format, words, frame_shift, frame_subsampling_factor, acoustic_scale, lm_scale,
                 word_penalty, json_out):
    """Per-lattice and total statistics: states, arcs, duration, arcs/s, depth, best path,
    log-likelihood and posterior sanity (max |posterior mass crossing a frame - 1|)."""
    result = lattice_info(list(lattices), format=format, words=words, frame_shift=frame_shift,
                          frame_subsampling_factor=frame_subsampling_factor, acoustic_scale=acoustic_scale,
                          lm_scale=lm_scale, word_penalty=word_penalty)
    if json_out:
        write_json(json_out, result, indent=1, sort_keys=False)
        if json_out == "-":
            return
    cols = ["key", "states", "arcs", "duration", "arcs_per_second", "depth", "log_likelihood", "posterior_sanity"]
    click.echo("\t".join(cols + ["best_path"]))
    for r in result["lattices"]:
        click.echo("\t".join(_fmt(r[c]) for c in cols) + "\t" + r["best_path"])
    t = result["total"]
    click.echo("\t".join(["TOTAL"] + [_fmt(t.get(c, "")) for c in cols[1:]]) + f"\t({t['lattices']} lattices)")


@click.command("convert")
@click.argument("inputs", nargs=-1, required=True)
@out_option("Output: an SLF directory or file, a Kaldi wspecifier (ark,t:out.txt), an OpenFst .fst/.txt or a "
            "k2 .pt (without -o: the last argument).", default=None)
@option("--format", "from_format", type=_FORMATS, default=None, hidden_aliases=("--from",),
        help="Input lattice format (default: from the name).")
@option("--out-format", "to_format", type=_FORMATS, default=None, hidden_aliases=("--to",),
        help="Output lattice format (default: from the name).")
@lattice_input_options
@click.option("--write-words", type=click.Path(dir_okay=False), default=None,
              help="Write the output's words.txt here (ids used in Kaldi/k2/OpenFst output).")
def convert_command(inputs, out, from_format, to_format, words, frame_shift, frame_subsampling_factor,
                    write_words):
    """Convert lattices: INPUTS (files, SLF directories, Kaldi rspecifiers) -> -o OUT (an SLF
    directory or file, a Kaldi wspecifier such as ark,t:out.txt, an OpenFst .fst/.txt, a k2 .pt)."""
    inputs = list(inputs)
    if out is None:  # the older form: INPUTS... OUTPUT
        if len(inputs) < 2:
            raise click.UsageError("give the output with -o/--out")
        inputs, out = inputs[:-1], inputs[-1]
    output = out
    n = convert_lattices(list(inputs), output, from_format=from_format, to_format=to_format, words=words,
                         frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor,
                         write_words=write_words)
    click.echo(f"converted {n} lattice(s) -> {output}", err=True)
