"""``lattice-tools nbest|sausage|phrases``: lattices -> alternatives -> alt-CTM (+ statistics JSON).

Each command is a thin wrapper over :func:`lattice_tools.alternatives.lattices_to_ctm.make_alternatives_ctm`.
"""
from __future__ import annotations

import click

from ..alternatives.lattices_to_ctm import AlternativesCtmSummary, make_alternatives_ctm
from ..core.files import json_text
from ..core.parallel import open_executor, shard_dir_for
from ._inputs import allow_untimed_option, channel_option, lattice_input_options
from ._options import DEPTH, LATTICE_FORMATS, check_one_stdout, json_option, out_option, parallel_options


def _options(f):
    f = click.option("--format", "format", type=click.Choice(LATTICE_FORMATS), default=None,
                     help="Lattice format (default: from the file name).")(f)
    f = lattice_input_options(f)
    f = parallel_options(f)
    f = channel_option(f)
    f = allow_untimed_option(f)
    f = click.option("--segments", type=click.Path(dir_okay=False), default=None,
                     help="Kaldi segments file 'utt file start end' (default: file = utterance, offset 0).")(f)
    f = json_option("Write the statistics (N, N_max, N_.9, N_.5, blocks, gzip MB) as JSON here ('-' = stdout).",
                    hidden_aliases=("--stats",))(f)
    f = out_option("Output alt-CTM (.gz = compressed, - = stdout).", hidden_aliases=("--ctm",), required=True,
                   type=click.Path(dir_okay=False, allow_dash=True))(f)
    f = click.option("--word-penalty", type=float, default=0.0, show_default=True)(f)
    f = click.option("--lm-scale", type=float, default=1.0, show_default=True)(f)
    f = click.option("--acoustic-scale", type=float, default=1.0, show_default=True)(f)
    f = click.option("-n", "n", type=DEPTH, default="10", show_default=True,
                     help="Depth N: alternatives kept per slot, an integer >= 1 or 'inf' (all).")(f)
    f = click.argument("lattices", nargs=-1, required=True)(f)
    return f


def _report(result: AlternativesCtmSummary, json_out: str | None) -> None:
    for w in result.warnings:
        click.echo(f"lattice-tools: warning: {w}", err=True)
    stopped = result.best_effort or ()
    if stopped:
        click.echo(f"lattice-tools: warning: {len(stopped)} lattice(s) (first: {stopped[0]['key']!r}) have a "
                   "best-effort N-best list: a budget stopped the search (see the ';;' lines of the alt-CTM)",
                   err=True)
    if json_out != "-":
        click.echo(json_text(result.to_dict(), indent=None), err=True, nl=False)


@click.command("nbest")
@_options
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds (wall clock) the search of one lattice may take (default: no limit).")
@click.option("--best-effort", is_flag=True,
              help="When a budget (--max-memory, --time-limit) stops the search of a lattice, write the sequences "
                   "found with a certified bound on the rest (a ';;' line in the alt-CTM, 'best_effort' in the "
                   "JSON) and exit 0, instead of the error.")
def nbest_command(lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
                  time_limit, best_effort, jobs, scheduler, **inputs):
    """Exact N-best lists (utterance-level alternatives) of LATTICES as alt-CTM."""
    check_one_stdout(**{"-o/--out": out, "--json": json_out})
    with open_executor(jobs=jobs, scheduler=scheduler) as executor:
        result = make_alternatives_ctm(lattices, "nbest", n, out, json_out=json_out, segments=segments,
                                       format=format, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                                       word_penalty=word_penalty, max_memory=max_memory, time_limit=time_limit,
                                       best_effort=best_effort, executor=executor,
                                       shard_dir=shard_dir_for(out, executor), **inputs)
    _report(result, json_out)


@click.command("sausage")
@_options
def sausage_command(lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
                    jobs, scheduler, **inputs):
    """Confusion networks (word-level alternatives, Xu et al. 2011 MBR) of LATTICES as alt-CTM."""
    check_one_stdout(**{"-o/--out": out, "--json": json_out})
    with open_executor(jobs=jobs, scheduler=scheduler) as executor:
        result = make_alternatives_ctm(lattices, "sausage", n, out, json_out=json_out, segments=segments,
                                       format=format, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                                       word_penalty=word_penalty, max_memory=max_memory, executor=executor,
                                       shard_dir=shard_dir_for(out, executor), **inputs)
    _report(result, json_out)


@click.command("phrases")
@_options
@click.option("--posterior-threshold", type=float, default=0.1, show_default=True,
              help="Phrase boundaries are times not crossed by a word arc with at least this posterior.")
def phrases_command(lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
                    posterior_threshold, jobs, scheduler, **inputs):
    """Phrase alternatives (Faria et al., section 3.4) of LATTICES as alt-CTM."""
    check_one_stdout(**{"-o/--out": out, "--json": json_out})
    with open_executor(jobs=jobs, scheduler=scheduler) as executor:
        result = make_alternatives_ctm(lattices, "phrases", n, out, json_out=json_out, segments=segments,
                                       format=format, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                                       word_penalty=word_penalty, max_memory=max_memory,
                                       posterior_threshold=posterior_threshold, executor=executor,
                                       shard_dir=shard_dir_for(out, executor), **inputs)
    _report(result, json_out)
