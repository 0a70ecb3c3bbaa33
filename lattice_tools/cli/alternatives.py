"""``lattice-tools nbest|sausage|phrases``: lattices -> alternatives -> alt-CTM (+ statistics JSON).

Each command is a thin wrapper over :func:`make_alternatives_ctm`, which streams the lattices
one utterance at a time (memory bounded by one lattice plus the list of slot depths).
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator

import click

from ..errors import MismatchError
from ..io.common import json_text, write_json
from ._inputs import DEFAULT_CHANNEL, allow_untimed_option, channel_option, lattice_input_options
from ._options import DEPTH, LATTICE_FORMATS, SIZE, check_one_stdout, json_option, out_option

#: The default memory budget of the searches (bytes of resident memory): what the demo's densest
#: N = inf search needs (3.9 GB measured) fits; a runaway search stops well before a laptop swaps.
DEFAULT_MAX_MEMORY = 4 << 30


def read_segments(path: str, channel: str = DEFAULT_CHANNEL) -> dict[str, tuple[str, str, float]]:
    """Kaldi ``segments`` -> ``{utt: (file, channel, start)}`` (the recording id is the CTM file)."""
    from ..io.kaldi_data import read_segments as read_kaldi_segments

    return {utt: (reco, channel, start) for utt, (reco, start, _end) in read_kaldi_segments(path).items()}


def iter_lattices(specs: Iterable[str], format: str | None = None, words: str | None = None,
                  frame_shift: float | None = None, frame_subsampling_factor: int | None = None) -> Iterator:
    """Lattices from files/archives (:func:`lattice_tools.io.read_lattice_inputs`: keys unique across inputs)."""
    from ..io import read_lattice_inputs

    yield from read_lattice_inputs(specs, format=format, words=words, frame_shift=frame_shift,
                                   frame_subsampling_factor=frame_subsampling_factor)


def make_alternatives_ctm(lattices: Iterable[str], kind: str, n: int | None, ctm: str, *, stats: str | None = None,
                          segments: str | None = None, posterior_threshold: float = 0.1, acoustic_scale: float = 1.0,
                          lm_scale: float = 1.0, word_penalty: float = 0.0, format: str | None = None,
                          words: str | None = None, frame_shift: float | None = None,
                          frame_subsampling_factor: int | None = None, channel: str = DEFAULT_CHANNEL,
                          allow_untimed: bool = False, progress: bool | None = None,
                          max_memory: int | None = DEFAULT_MAX_MEMORY) -> dict:
    """Compute ``kind`` (``nbest``/``sausage``/``phrases``) alternatives of every lattice, write them as
    an alt-CTM cut to depth ``n`` (None = all) and return (and optionally write) the statistics.

    Each lattice goes to CTM file = its key (or its recording with ``segments``) and ``channel``.
    A lattice without word times is refused (FormatError naming ``--allow-untimed``) unless
    ``allow_untimed``: its CTM times would all be 0 and, for phrases, it would be one block.

    The searches (N-best, phrases) are bounded by ``max_memory`` bytes of resident memory (None: no
    bound) instead of counts of search nodes and determinized states; past it they stop with
    :class:`~lattice_tools.errors.BudgetExceededError` naming ``max_memory`` (the CLI says
    ``--max-memory``)."""
    from tqdm import tqdm

    from .._budget import memory_budget
    from ..io.altctm import AlternativesCtmWriter
    from ..io.inputs import check_times, has_bare_word_ids

    bare: list[str] = []
    seg = read_segments(segments, channel) if segments else None
    kw = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    # the memory budget replaces the node/state counts (which a user cannot relate to the machine)
    unbounded = dict(max_pops=sys.maxsize, max_states=sys.maxsize)
    if kind == "nbest":
        from ..alternatives.nbest_lists import nbest

        def compute(lat):
            return nbest(lat, n, **kw, **unbounded)
    elif kind == "sausage":
        from ..alternatives.sausages import sausage

        def compute(lat):
            return sausage(lat, n, **kw)
    elif kind == "phrases":
        from ..alternatives.phrase_alternatives import phrases

        def compute(lat):
            return phrases(lat, n, posterior_threshold, **kw, **unbounded)
    else:
        raise ValueError(f"unknown kind {kind!r}")
    disable = (not sys.stderr.isatty()) if progress is None else not progress
    with memory_budget(max_memory), AlternativesCtmWriter(ctm, n) as writer:
        lats = iter_lattices(lattices, format, words, frame_shift, frame_subsampling_factor)
        for lat in tqdm(lats, desc=kind, unit="lat", disable=disable, file=sys.stderr):
            check_times(lat, allow_untimed=allow_untimed, what=f"the {kind} alt-CTM")
            if has_bare_word_ids(lat.symbols):
                bare.append(lat.key)
            alts = compute(lat)
            if seg is not None:
                if lat.key not in seg:
                    raise MismatchError(f"utterance {lat.key!r} is not in the segments file {segments}", key=lat.key)
                alts = alts.with_location(*seg[lat.key])
            elif alts.channel != channel:
                alts = alts.with_location(alts.file, channel, 0.0)
            writer.write(alts)
    result = writer.stats()
    result["kind"] = kind
    if bare:
        # ids in a CTM score as 100 % errors against any text reference
        result["warnings"] = [f"{len(bare)} lattice(s) (first: {bare[0]!r}) have bare integer word ids (no word "
                              "table): the CTM has ids, not words; pass --words words.txt"]
    if kind == "phrases":
        result["posterior_threshold"] = posterior_threshold
    if stats:
        write_json(stats, result)
    return result


def _options(f):
    f = click.option("--format", "format", type=click.Choice(LATTICE_FORMATS), default=None,
                     help="Lattice format (default: from the file name).")(f)
    f = lattice_input_options(f)
    f = channel_option(f)
    f = allow_untimed_option(f)
    f = click.option("--segments", type=click.Path(dir_okay=False), default=None,
                     help="Kaldi segments file 'utt file start end' (default: file = utterance, offset 0).")(f)
    f = json_option("Write the statistics (N, N_max, N_.9, N_.5, blocks, gzip MB) as JSON here ('-' = stdout).",
                    hidden_aliases=("--stats",))(f)
    f = out_option("Output alt-CTM (.gz = compressed, - = stdout).", hidden_aliases=("--ctm",), required=True,
                   type=click.Path(dir_okay=False, allow_dash=True))(f)
    f = click.option("--max-memory", type=SIZE, default="4G", show_default=True,
                     help="Memory budget of the searches (resident memory: 2G, 500M; 'inf' = none).")(f)
    f = click.option("--word-penalty", type=float, default=0.0, show_default=True)(f)
    f = click.option("--lm-scale", type=float, default=1.0, show_default=True)(f)
    f = click.option("--acoustic-scale", type=float, default=1.0, show_default=True)(f)
    f = click.option("-n", "n", type=DEPTH, default="10", show_default=True,
                     help="Depth N: alternatives kept per slot, an integer >= 1 or 'inf' (all).")(f)
    f = click.argument("lattices", nargs=-1, required=True)(f)
    return f


def _run(kind, lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
         **extra):
    check_one_stdout(**{"-o/--out": out, "--json": json_out})
    result = make_alternatives_ctm(lattices, kind, n, out, stats=json_out, segments=segments, format=format,
                                   acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                                   max_memory=max_memory, **extra)
    for w in result.get("warnings", ()):
        click.echo(f"lattice-tools: warning: {w}", err=True)
    if json_out != "-":
        click.echo(json_text(result, indent=None), err=True, nl=False)


@click.command("nbest")
@_options
def nbest_command(lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
                  **inputs):
    """Exact N-best lists (utterance-level alternatives) of LATTICES as alt-CTM."""
    _run("nbest", lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
         **inputs)


@click.command("sausage")
@_options
def sausage_command(lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
                    **inputs):
    """Confusion networks (word-level alternatives, Xu et al. 2011 MBR) of LATTICES as alt-CTM."""
    _run("sausage", lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
         **inputs)


@click.command("phrases")
@_options
@click.option("--posterior-threshold", type=float, default=0.1, show_default=True,
              help="Phrase boundaries are times not crossed by a word arc with at least this posterior.")
def phrases_command(lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
                    posterior_threshold, **inputs):
    """Phrase alternatives (seed 001 section 3.4) of LATTICES as alt-CTM."""
    _run("phrases", lattices, n, out, json_out, segments, format, acoustic_scale, lm_scale, word_penalty, max_memory,
         posterior_threshold=posterior_threshold, **inputs)
