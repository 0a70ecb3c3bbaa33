"""``lattice-tools nbest-to-lattices`` and ``lattice-tools combine``: N-best lists of any decoder as
lattices, and several systems combined (thin wrappers over :mod:`lattice_tools.alternatives.combine`)."""
from __future__ import annotations

import click

from ..core.files import json_text
from ._inputs import allow_untimed_option, channel_option
from ._options import DEPTH, LATTICE_FORMATS, max_memory_option, out_option

NBEST_FORMATS = ("tsv", "jsonl", "sherpa", "espnet", "kaldi", "nemo")
#: what combine reads: the N-best formats, lattices (each lattice's exact N-best list) or CTMs (1-best with confidences)
SYSTEM_FORMATS = (*NBEST_FORMATS, "lattice", "ctm")


def _nbest_options(f, formats=NBEST_FORMATS):
    f = click.option("--nemo-manifest", type=click.Path(dir_okay=False, exists=True), default=None,
                     help="NeMo input: the manifest whose utterances the predictions are (their keys).")(f)
    f = click.option("--frame-shift", type=float, default=0.01, show_default=True,
                     help="Seconds per frame of the lattices (and of a Kaldi archive's alignments).")(f)
    f = click.option("--acoustic-scale", type=float, default=1.0, show_default=True,
                     help="Kaldi input: a path's cost is graph + acoustic-scale x acoustic.")(f)
    f = click.option("--words", type=click.Path(dir_okay=False, exists=True), default=None,
                     help="words.txt: the word ids of Kaldi input (and the numbering of the output lattices).")(f)
    f = click.option("--score-scale", type=float, default=1.0, show_default=True,
                     help="Posteriors are softmax(score-scale x log-probability) over each list (docs/nbest.md).")(f)
    f = click.option("--score-kind", type=click.Choice(("logprob", "cost")), default="logprob", show_default=True,
                     help="What the scores of the generic tsv/jsonl formats are (other formats know theirs).")(f)
    f = click.option("--nbest-format", type=click.Choice(formats), default=None,
                     help="N-best input format (default: from the name; a directory is ESPnet's)"
                          + ("; 'lattice': lattice files, each lattice's exact N-best list; 'ctm': 1-best CTMs, "
                             "each confidence a word posterior (*.ctm are CTMs by default)." if "lattice" in formats
                             else "."))(f)
    return f


@click.command("nbest-to-lattices")
@click.argument("nbest")
@_nbest_options
@click.option("--join", type=click.Choice(("paths", "times", "align")), default="paths", show_default=True,
              help="paths: no new paths, path probabilities = N-best posteriors; times: words that agree and span "
                   "the same frames are joined (new paths; arc posteriors = N-best word posteriors); align: "
                   "ROVER's alignment of the entries into a confusion network (no times needed; new paths).")
@click.option("--out-format", type=click.Choice(LATTICE_FORMATS), default=None,
              help="Lattice format of the output (default: from -o).")
@click.option("--write-words", type=click.Path(dir_okay=False), default=None,
              help="Write the output's words.txt here (ids used in Kaldi/k2/OpenFst output).")
@out_option("Output lattices (ark:x.ark, a directory of SLF files, x.pt, ...).", required=True)
@max_memory_option
def nbest_to_lattices_command(nbest, out, out_format, join, nbest_format, score_kind, score_scale, words,
                              acoustic_scale, frame_shift, write_words, nemo_manifest, max_memory):
    """N-best lists (sherpa-onnx, ESPnet, Kaldi lattice-to-nbest, generic TSV/JSONL) as word lattices."""
    from ..alternatives.combine import nbest_to_lattices

    n = nbest_to_lattices(nbest, out, nbest_format=nbest_format, out_format=out_format, join=join,
                          score_kind=score_kind, score_scale=score_scale, words=words, acoustic_scale=acoustic_scale,
                          frame_shift=frame_shift, write_words=write_words, nemo_manifest=nemo_manifest,
                          max_memory=max_memory)
    click.echo(json_text({"utterances": n}, indent=None), err=True)


@click.command("combine")
@click.argument("systems", nargs=-1, required=True)
@click.option("--method", type=click.Choice(("posterior", "rover")), default="posterior", show_default=True,
              help="posterior: the systems' N-best posteriors (weighted) merged into one lattice (CTM systems: "
                   "their confidences as word posteriors, mixed in), then its confusion network; rover: CTMs "
                   "combined exactly as NIST rover does.")
@click.option("--rover-method", type=click.Choice(("meth1", "maxconf", "avgconf", "oracle")), default="meth1",
              show_default=True, help="rover's -m: the vote (oracle: every word of a slot in an ALT block).")
@click.option("--alpha", type=float, default=1.0, show_default=True,
              help="rover's -a: weight of word frequency against confidence.")
@click.option("--null-conf", type=float, default=0.0, show_default=True,
              help="rover's -c: the confidence of a missing word (@).")
@click.option("--use-times", is_flag=True, help="rover's -T: align by word times instead of word identity.")
@click.option("--weights", "weights", type=float, multiple=True,
              help="A system's weight (repeat once per system, in order; default equal).")
@click.option("-n", "n", type=DEPTH, default="inf", show_default=True,
              help="Alternatives kept per slot of the alt-CTM (1 = plain CTM).")
@(lambda f: _nbest_options(f, SYSTEM_FORMATS))
@click.option("--lattice-nbest", type=click.IntRange(min=1), default=100, show_default=True,
              help="--nbest-format lattice: the depth of each lattice's exact N-best list.")
@channel_option
@allow_untimed_option
@out_option("Output alt-CTM (.gz = compressed, - = stdout).", required=True,
            type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--keys", "keys", type=click.Path(dir_okay=False), default=None,
              help="--nbest-format lattice: name each system's lattices from this file, one key per line in input "
                   "order (e.g. the icefall cut ids of k2 .pt files), as every command that reads lattices does.")
@max_memory_option
def combine_command(systems, out, method, weights, n, nbest_format, score_kind, score_scale, words, acoustic_scale,
                    frame_shift, channel, allow_untimed, rover_method, alpha, null_conf, use_times, lattice_nbest,
                    nemo_manifest, keys, max_memory):
    """Combine several SYSTEMS (same utterances) into one CTM/alt-CTM: N-best lists (posterior) or CTMs (rover)."""
    from ..alternatives.combine import combine_systems

    result = combine_systems(systems, out, method=method, weights=weights, n=n, nbest_format=nbest_format,
                             score_kind=score_kind, score_scale=score_scale, words=words,
                             acoustic_scale=acoustic_scale, frame_shift=frame_shift, channel=channel,
                             allow_untimed=allow_untimed, rover_method=rover_method, alpha=alpha,
                             null_conf=null_conf, use_times=use_times, lattice_nbest=lattice_nbest,
                             nemo_manifest=nemo_manifest, keys=keys, max_memory=max_memory)
    if out != "-":
        click.echo(json_text(result.to_dict(), indent=None), err=True)
