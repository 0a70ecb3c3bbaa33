"""``lattice-tools info`` and ``lattice-tools convert``: thin wrappers over
:func:`lattice_tools.algorithms.lattice_info` and :func:`lattice_tools.io.convert_lattices`."""
from __future__ import annotations

import math

import click

from ..algorithms.statistics import lattice_info
from ..core.files import write_json
from ..io.lattices.convert import convert_lattices
from ._inputs import lattice_input_options
from ._options import LATTICE_FORMATS, json_option, option, out_option, parallel_options


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
def info_command(lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory, acoustic_scale,
                 lm_scale, word_penalty, json_out):
    """Per-lattice and total statistics: states, arcs, trimmed arcs (on no complete path, dropped when
    read), duration, arcs/s, depth, best path, log-likelihood and posterior sanity (max |posterior mass
    crossing a frame - 1|)."""
    result = lattice_info(list(lattices), format=format, words=words, frame_shift=frame_shift,
                          frame_subsampling_factor=frame_subsampling_factor, acoustic_scale=acoustic_scale,
                          lm_scale=lm_scale, word_penalty=word_penalty, keys=keys, max_memory=max_memory)
    if json_out:
        write_json(json_out, result, indent=1, sort_keys=False)
        if json_out == "-":
            return
    cols = ["key", "states", "arcs", "trimmed_arcs", "duration", "arcs_per_second", "depth", "log_likelihood", "posterior_sanity"]
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
@parallel_options
def convert_command(inputs, out, from_format, to_format, words, frame_shift, frame_subsampling_factor,
                    write_words, keys, max_memory, jobs, scheduler):
    """Convert lattices: INPUTS (files, SLF directories, Kaldi rspecifiers) -> -o OUT (an SLF
    directory or file, a Kaldi wspecifier such as ark,t:out.txt, an OpenFst .fst/.txt, a k2 .pt)."""
    inputs = list(inputs)
    if out is None:  # the older form: INPUTS... OUTPUT
        if len(inputs) < 2:
            raise click.UsageError("give the output with -o/--out")
        inputs, out = inputs[:-1], inputs[-1]
    output = out
    from ..core.parallel import open_executor

    with open_executor(jobs=jobs, scheduler=scheduler) as executor:
        n = convert_lattices(list(inputs), output, from_format=from_format, to_format=to_format, words=words,
                             frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor,
                             write_words=write_words, keys=keys, max_memory=max_memory, executor=executor)
    click.echo(f"converted {n} lattice(s) -> {output}", err=True)
