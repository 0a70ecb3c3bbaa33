"""``lattice-tools mbr-decode|...``: Kaldi latbin jobs with Kaldi's answers (``docs/kaldi.md``)."""
from __future__ import annotations

import json

import click

from ._inputs import lattice_input_options
from ._options import LATTICE_FORMATS


def _input_options(f):
    """LATTICES, --format and the options every command that reads lattices takes (cli/_inputs.py: --words,
    --frame-shift, --frame-subsampling-factor, --keys, --max-memory)."""
    f = lattice_input_options(f)
    f = click.option("--format", "format", type=click.Choice(LATTICE_FORMATS), default=None,
                     help="Lattice format (default: from the name).")(f)
    f = click.argument("lattices", nargs=-1, required=True)(f)
    return f


def _scale_options(f):
    f = click.option("--word-penalty", type=float, default=0.0, show_default=True,
                     help="Added to the graph cost of every word arc after scaling (lattice-add-penalty).")(f)
    f = click.option("--lm-scale", type=float, default=1.0, show_default=True)(f)
    f = click.option("--acoustic-scale", type=float, default=1.0, show_default=True)(f)
    return f


@click.command("mbr-decode")
@_input_options
@_scale_options
@click.option("--tra", type=click.Path(dir_okay=False), default=None,
              help="MBR word ids per utterance ('utt id id ...', Kaldi's transcription table).")
@click.option("--bayes-risk", type=click.Path(dir_okay=False), default=None, help="Bayes risk per utterance.")
@click.option("--sausage-stats", type=click.Path(dir_okay=False), default=None,
              help="Every sausage bin, Kaldi's posterior format '[ word post ... ]' (epsilon = 0).")
@click.option("--times", type=click.Path(dir_okay=False), default=None,
              help="Start and end frame of every bin (or of every MBR word with --one-best-times).")
@click.option("--one-best-times", is_flag=True, help="--times gives the MBR words' times, not the bins'.")
@click.option("--ctm", type=click.Path(dir_okay=False), default=None,
              help="lattice-to-ctm-conf's CTM: 'utt 1 start dur word confidence' (seconds).")
@click.option("--confidence-digits", type=int, default=2, show_default=True, help="Decimals of the CTM numbers.")
def mbr_decode_command(lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory, acoustic_scale, lm_scale,
                       word_penalty, tra, bayes_risk,
                       sausage_stats, times, one_best_times, ctm, confidence_digits):
    """Kaldi's lattice-mbr-decode and lattice-to-ctm-conf on LATTICES: the same MBR words, Bayes
    risk, sausage bins (pure-epsilon bins included), times and confidences.  '-' = stdout."""
    from ..pipelines.latbin import mbr_decode

    result = mbr_decode(list(lattices), tra=tra, bayes_risk=bayes_risk, sausage_stats=sausage_stats, times=times,
                        one_best_times=one_best_times, ctm=ctm, confidence_digits=confidence_digits, format=format,
                        words=words, frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                        max_memory=max_memory,
                        acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                        word_penalty=word_penalty)
    click.echo(json.dumps(result.to_dict(), sort_keys=True), err=True)


@click.command("best-path")
@_input_options
@_scale_options
@click.option("--tra", type=click.Path(dir_okay=False), default=None, help="Best-path word ids per utterance.")
@click.option("--ctm", type=click.Path(dir_okay=False), default=None,
              help="lattice-1best | nbest-to-ctm: 'utt 1 start dur word' (seconds).")
@click.option("--costs", type=click.Path(dir_okay=False), default=None,
              help="'utt graph acoustic total frames' (after scaling, as lattice-best-path logs them).")
def best_path_command(lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory, acoustic_scale, lm_scale,
                      word_penalty, tra, ctm, costs):
    """Kaldi's lattice-best-path (and lattice-1best | nbest-to-ctm) on LATTICES: the same path, ties
    broken in Kaldi's order of states.  '-' = stdout."""
    from ..pipelines.latbin import best_path

    result = best_path(list(lattices), tra=tra, ctm=ctm, costs=costs, format=format, words=words,
                       frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                       max_memory=max_memory,
                       acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                       word_penalty=word_penalty)
    click.echo(json.dumps(result.to_dict(), sort_keys=True), err=True)


@click.command("nbest-paths")
@_input_options
@click.option("--acoustic-scale", type=float, default=1.0, show_default=True)
@click.option("--lm-scale", type=float, default=1.0, show_default=True)
@click.option("-n", "n", type=int, default=10, show_default=True, help="Number of distinct word sequences.")
@click.option("--tra", type=click.Path(dir_okay=False), default=None, help="Word ids, keys utt-1 .. utt-n.")
@click.option("--ctm", type=click.Path(dir_okay=False), default=None, help="nbest-to-ctm of every entry.")
@click.option("--costs", type=click.Path(dir_okay=False), default=None,
              help="'utt-k graph acoustic total frames' (unscaled, as the N-best lattices store them).")
def nbest_paths_command(lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory, acoustic_scale, lm_scale, n,
                        tra, ctm, costs):
    """Kaldi's lattice-determinize | lattice-to-nbest --n on LATTICES: the N distinct word sequences
    with the cheapest best path (tropical), best first.  For posteriors use 'nbest' (log semiring)."""
    from ..pipelines.latbin import nbest_paths

    result = nbest_paths(list(lattices), n, tra=tra, ctm=ctm, costs=costs, format=format, words=words,
                         frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                         max_memory=max_memory,
                         acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    click.echo(json.dumps(result.to_dict(), sort_keys=True), err=True)


def _out_options(f):
    f = click.option("--out-format", "out_format", type=click.Choice(LATTICE_FORMATS), default=None,
                     help="Output lattice format (default: from the name).")(f)
    f = click.option("-o", "--out", required=True, help="Output lattices: a Kaldi wspecifier (ark:, ark,t:), SLF "
                     "directory, OpenFst or k2 file.")(f)
    return f


@click.command("scale")
@_input_options
@_out_options
@click.option("--acoustic-scale", type=float, default=1.0, show_default=True)
@click.option("--lm-scale", type=float, default=1.0, show_default=True)
def scale_command(lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory, out, out_format, acoustic_scale,
                  lm_scale):
    """Kaldi's lattice-scale: LATTICES with graph costs x --lm-scale and acoustic costs x --acoustic-scale."""
    from ..pipelines.latbin import scale

    n = scale(list(lattices), out, acoustic_scale=acoustic_scale, lm_scale=lm_scale, format=format, words=words,
              frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
              max_memory=max_memory, out_format=out_format)
    click.echo(json.dumps({"lattices": n}), err=True)


@click.command("add-penalty")
@_input_options
@_out_options
@click.option("--word-penalty", type=float, required=True, help="Added to the graph cost of every word arc.")
def add_penalty_command(lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory, out, out_format,
                        word_penalty):
    """Kaldi's lattice-add-penalty --word-ins-penalty on LATTICES."""
    from ..pipelines.latbin import add_penalty

    n = add_penalty(list(lattices), out, word_penalty=word_penalty, format=format, words=words,
                    frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                    max_memory=max_memory, out_format=out_format)
    click.echo(json.dumps({"lattices": n}), err=True)


@click.command("prune")
@_input_options
@_out_options
@click.option("--beam", type=float, default=10.0, show_default=True, help="Cost beam around the best path.")
@click.option("--acoustic-scale", type=float, default=1.0, show_default=True)
def prune_command(lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory, out, out_format, beam,
                  acoustic_scale):
    """Kaldi's lattice-prune on LATTICES: keep what lies on a path within --beam of the best one."""
    from ..pipelines.latbin import prune

    n = prune(list(lattices), out, beam=beam, acoustic_scale=acoustic_scale, format=format, words=words,
              frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
              max_memory=max_memory, out_format=out_format)
    click.echo(json.dumps({"lattices": n}), err=True)


@click.command("depth")
@_input_options
@click.option("-o", "--out", default=None, help="Table 'utt depth' (default: only the summary).")
def depth_command(lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory, out):
    """Kaldi's lattice-depth on LATTICES: average number of arcs crossing each frame."""
    from ..pipelines.latbin import depth

    summary = depth(list(lattices), out=out, format=format, words=words, frame_shift=frame_shift,
                    frame_subsampling_factor=frame_subsampling_factor, keys=keys, max_memory=max_memory)
    click.echo(json.dumps(summary.to_dict(), sort_keys=True), err=True)


@click.command("oracle-path")
@_input_options
@click.option("-r", "--ref", "reference", required=True, help="Reference: Kaldi int table 'utt id id ...'.")
@click.option("--tra", default=None, help="Oracle path word ids per utterance.")
@click.option("--errors", default=None, help="Table 'utt errors' (Kaldi's edit-distance output).")
@click.option("--wildcard-symbols", default="", help="Colon-separated word ids removed from lattice and "
              "reference first (Kaldi's --wildcard-symbols).")
@click.option("--json", "json_out", default=None, metavar="PATH|-",
              help="Write the totals and per-utterance errors as JSON ('-' = stdout).")
def oracle_path_command(lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory, reference, tra, errors,
                        wildcard_symbols, json_out):
    """Kaldi's lattice-oracle on LATTICES: the path with the fewest word errors (Levenshtein, weights
    ignored) against word ids.  For STM/trn references, sclite costs and other representations use 'oracle'."""
    from ..core.errors import FormatError
    from ..core.files import atomic_write
    from ..pipelines.latbin import oracle

    try:
        wild = [int(x) for x in wildcard_symbols.split(":") if x.strip()]
    except ValueError:
        raise FormatError(f"--wildcard-symbols expects colon-separated integers, got {wildcard_symbols!r}") from None
    result = oracle(list(lattices), reference, tra=tra, errors=errors, wildcard_symbols=wild, format=format,
                    words=words, frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                    max_memory=max_memory)
    click.echo(f"%WER {result.wer:.4f} [ {result.errors} / {result.words} ]", err=True)
    if json_out:
        with atomic_write(json_out) as f:
            json.dump(result.to_dict(), f, indent=1, sort_keys=True)
            f.write("\n")
    else:
        click.echo(json.dumps(result.totals(), sort_keys=True), err=True)
