"""Small commands used by the recipe stages (splitting inputs into jobs, merging job outputs)."""
from __future__ import annotations

import click

from .. import recipe


@click.command("split-list")
@click.argument("list_path", type=click.Path(dir_okay=False))
@click.argument("out_pattern")
@click.option("--nj", type=int, required=True, help="Number of jobs (chunks).")
def split_list_command(list_path, out_pattern, nj):
    """Split LIST_PATH (one item per line) into NJ contiguous chunks OUT_PATTERN (JOB -> 1..NJ)."""
    for out in recipe.split_list(list_path, nj, out_pattern):
        click.echo(out)


@click.command("merge")
@click.argument("parts", nargs=-1, required=True)
@click.option("-o", "--out", required=True, help="Merged output (gzip if it ends in .gz).")
@click.option("--stats", "is_stats", is_flag=True, help="PARTS are statistics JSON files: merge depth statistics.")
def merge_command(parts, out, is_stats):
    """Concatenate job outputs PARTS in order into OUT (or merge statistics JSON with --stats)."""
    if is_stats:
        recipe.merge_json_stats(parts, out)
    else:
        recipe.merge_files(parts, out)
