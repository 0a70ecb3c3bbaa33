"""``lattice-tools mbr-decode|...``: Kaldi latbin jobs with Kaldi's answers (``docs/kaldi.md``)."""
from __future__ import annotations

import json

import click


def _input_options(f):
    f = click.option("--frame-shift", type=float, default=None, help="Seconds per frame (default 0.01; k2 0.04).")(f)
    f = click.option("--words", type=click.Path(dir_okay=False), default=None, help="words.txt symbol table.")(f)
    f = click.option("--format", "format", default=None, help="Lattice format (default: from the name).")(f)
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
def mbr_decode_command(lattices, format, words, frame_shift, acoustic_scale, lm_scale, word_penalty, tra, bayes_risk,
                       sausage_stats, times, one_best_times, ctm, confidence_digits):
    """Kaldi's lattice-mbr-decode and lattice-to-ctm-conf on LATTICES: the same MBR words, Bayes
    risk, sausage bins (pure-epsilon bins included), times and confidences.  '-' = stdout."""
    from ..latbin import mbr_decode

    result = mbr_decode(list(lattices), tra=tra, bayes_risk=bayes_risk, sausage_stats=sausage_stats, times=times,
                        one_best_times=one_best_times, ctm=ctm, confidence_digits=confidence_digits, format=format,
                        words=words, frame_shift=frame_shift, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                        word_penalty=word_penalty)
    click.echo(json.dumps(result, sort_keys=True), err=True)


@click.command("best-path")
@_input_options
@_scale_options
@click.option("--tra", type=click.Path(dir_okay=False), default=None, help="Best-path word ids per utterance.")
@click.option("--ctm", type=click.Path(dir_okay=False), default=None,
              help="lattice-1best | nbest-to-ctm: 'utt 1 start dur word' (seconds).")
@click.option("--costs", type=click.Path(dir_okay=False), default=None,
              help="'utt graph acoustic total frames' (after scaling, as lattice-best-path logs them).")
def best_path_command(lattices, format, words, frame_shift, acoustic_scale, lm_scale, word_penalty, tra, ctm, costs):
    """Kaldi's lattice-best-path (and lattice-1best | nbest-to-ctm) on LATTICES: the same path, ties
    broken in Kaldi's order of states.  '-' = stdout."""
    from ..latbin import best_path

    result = best_path(list(lattices), tra=tra, ctm=ctm, costs=costs, format=format, words=words,
                       frame_shift=frame_shift, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                       word_penalty=word_penalty)
    click.echo(json.dumps(result, sort_keys=True), err=True)


@click.command("nbest-paths")
@_input_options
@click.option("--acoustic-scale", type=float, default=1.0, show_default=True)
@click.option("--lm-scale", type=float, default=1.0, show_default=True)
@click.option("-n", "n", type=int, default=10, show_default=True, help="Number of distinct word sequences.")
@click.option("--tra", type=click.Path(dir_okay=False), default=None, help="Word ids, keys utt-1 .. utt-n.")
@click.option("--ctm", type=click.Path(dir_okay=False), default=None, help="nbest-to-ctm of every entry.")
@click.option("--costs", type=click.Path(dir_okay=False), default=None,
              help="'utt-k graph acoustic total frames' (unscaled, as the N-best lattices store them).")
def nbest_paths_command(lattices, format, words, frame_shift, acoustic_scale, lm_scale, n, tra, ctm, costs):
    """Kaldi's lattice-determinize | lattice-to-nbest --n on LATTICES: the N distinct word sequences
    with the cheapest best path (tropical), best first.  For posteriors use 'nbest' (log semiring)."""
    from ..latbin import nbest_paths

    result = nbest_paths(list(lattices), n, tra=tra, ctm=ctm, costs=costs, format=format, words=words,
                         frame_shift=frame_shift, acoustic_scale=acoustic_scale, lm_scale=lm_scale)
    click.echo(json.dumps(result, sort_keys=True), err=True)
