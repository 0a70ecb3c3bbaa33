"""Small commands used by the recipe stages (``recipes/``): split inputs into jobs, run a command on a
job's list, merge job outputs, and map CTMs from utterances to recordings.  Thin wrappers over
:mod:`lattice_tools.pipelines.recipe`."""
from __future__ import annotations

import os

import click

from ..core.errors import LatticeToolsError
from ..pipelines import recipe
from ._options import out_option


@click.command("split-list")
@click.argument("list_path", type=click.Path(dir_okay=False))
@click.argument("out_pattern")
@click.option("--nj", type=int, default=None, help="Number of jobs: NJ nearly equal chunks.")
@click.option("--chunk-size", type=int, default=None, help="Or: chunks of this many items (split independent of NJ).")
def split_list_command(list_path, out_pattern, nj, chunk_size):
    """Split LIST_PATH (one item per line) into contiguous chunks OUT_PATTERN (JOB -> 1, 2, ...).

    Prints the chunk paths, one per line.  Fails if the list has fewer items than NJ."""
    for out in recipe.split_list(list_path, nj, out_pattern, chunk_size=chunk_size):
        click.echo(out)


@click.command("merge")
@click.argument("parts", nargs=-1, required=True)
@click.option("-o", "--out", required=True, help="Merged output (gzip if it ends in .gz).")
@click.option("--stats", "is_stats", is_flag=True, help="PARTS are statistics JSON files: merge depth statistics.")
@click.option("--measure", default=None, type=click.Path(dir_okay=False),
              help="With --stats: measure bytes/gzip_bytes/MB on this (merged) CTM instead of summing them.")
def merge_command(parts, out, is_stats, measure):
    """Concatenate job outputs PARTS in order into OUT (or merge statistics JSON with --stats).

    The merged bytes do not depend on how the content was split into parts, so recipes give
    byte-identical outputs for any --nj."""
    if measure and not is_stats:
        raise LatticeToolsError("--measure only applies with --stats")
    if is_stats:
        recipe.merge_json_stats(parts, out, measure=measure)
    else:
        recipe.merge_files(parts, out)


@click.command("with-list", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("list_path", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def with_list_command(list_path, command):
    """Run COMMAND with every line of LIST_PATH appended as one argument each (spaces kept).

    Recipe jobs use it to pass their chunk of lattice specs or audio files, e.g.

        lattice-tools with-list split2/lattices.1.list lattice-tools nbest -n 10 -o out.1.ctm

    The command replaces this process (its exit status is the job's)."""
    argv = recipe.command_with_list(list_path, command)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        hint = " (too many items for one command line: use more jobs)" if exc.errno == 7 else ""
        raise LatticeToolsError(f"cannot run {argv[0]!r}: {exc.strerror}{hint}", path=list_path) from None


@click.command("convert-ctm")
@click.argument("ctm", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("out_path", metavar="[OUT]", type=click.Path(dir_okay=False, allow_dash=True), required=False)
@out_option("Output CTM ('-' = stdout; without -o: the second argument).", default=None,
            type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--segments", type=click.Path(dir_okay=False), default=None,
              help="Kaldi segments 'utt recording start end': utterance ids -> recordings, times made absolute.")
@click.option("--reco2file-and-channel", "reco2file_and_channel", type=click.Path(dir_okay=False), default=None,
              help="Kaldi 'recording file channel': recordings -> STM file and channel ids.")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of the CTM (the output keeps it), e.g. latin-1, gb2312.")
def convert_ctm_command(ctm, out_path, out, segments, reco2file_and_channel, encoding):
    """Map a CTM/alt-CTM from utterance ids and times to the STM's file/channel ids and absolute
    times (Kaldi's utils/convert_ctm.pl, ALT blocks kept)."""
    if (out is None) == (out_path is None):
        raise click.UsageError("give the output once: -o/--out OUT (or CTM OUT)")
    out = out if out is not None else out_path
    if not segments and not reco2file_and_channel:
        raise LatticeToolsError("give --segments and/or --reco2file-and-channel (nothing to convert)")
    recipe.convert_ctm(ctm, out, segments=segments, reco2file_and_channel=reco2file_and_channel, encoding=encoding)
