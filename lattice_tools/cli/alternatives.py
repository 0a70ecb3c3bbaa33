"""``lattice-tools nbest|sausage|phrases``: lattices -> alternatives -> alt-CTM (+ statistics JSON).

Each command is a thin wrapper over :func:`make_alternatives_ctm`, which streams the lattices
one utterance at a time (memory bounded by one lattice plus the list of slot depths).
"""
from __future__ import annotations

import json
import sys
from typing import Iterable, Iterator

import click

from ..errors import MismatchError
from ..io.common import atomic_write


def read_segments(path: str) -> dict[str, tuple[str, str, float]]:
    """Kaldi ``segments`` -> ``{utt: (file, channel "1", start)}`` (the recording id is the CTM file)."""
    from ..io.kaldi_data import read_segments as read_kaldi_segments

    return {utt: (reco, "1", start) for utt, (reco, start, _end) in read_kaldi_segments(path).items()}


def iter_lattices(specs: Iterable[str], format: str | None = None, symbols: str | None = None) -> Iterator:
    """Lattices from files/archives (any format :func:`lattice_tools.io.read_lattices` reads)."""
    from ..io import read_lattices

    for spec in specs:
        yield from read_lattices(spec, format=format, symbols=symbols)


def make_alternatives_ctm(lattices: Iterable[str], kind: str, n: int | None, ctm: str, *, stats: str | None = None,
                          segments: str | None = None, posterior_threshold: float = 0.1, acoustic_scale: float = 1.0,
                          lm_scale: float = 1.0, word_penalty: float = 0.0, format: str | None = None,
                          symbols: str | None = None, progress: bool | None = None) -> dict:
    """Compute ``kind`` (``nbest``/``sausage``/``phrases``) alternatives of every lattice, write them as
    an alt-CTM cut to depth ``n`` (None = all) and return (and optionally write) the statistics."""
    from tqdm import tqdm

    from ..io.altctm import AlternativesCtmWriter

    seg = read_segments(segments) if segments else None
    kw = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    if kind == "nbest":
        from ..alternatives.nbest import nbest

        def compute(lat):
            return nbest(lat, n, **kw)
    elif kind == "sausage":
        from ..alternatives.sausage import sausage

        def compute(lat):
            return sausage(lat, n, **kw)
    elif kind == "phrases":
        from ..alternatives.phrases import phrases

        def compute(lat):
            return phrases(lat, n, posterior_threshold, **kw)
    else:
        raise ValueError(f"unknown kind {kind!r}")
    disable = (not sys.stderr.isatty()) if progress is None else not progress
    with AlternativesCtmWriter(ctm, n) as writer:
        for lat in tqdm(iter_lattices(lattices, format, symbols), desc=kind, unit="lat", disable=disable, file=sys.stderr):
            if isinstance(lat, tuple):  # readers returning (lattice, header)
                lat = lat[0]
            alts = compute(lat)
            if seg is not None:
                if lat.key not in seg:
                    raise MismatchError(f"utterance {lat.key!r} is not in the segments file {segments}", key=lat.key)
                alts = alts.with_location(*seg[lat.key])
            writer.write(alts)
    result = writer.stats()
    result["kind"] = kind
    if kind == "phrases":
        result["posterior_threshold"] = posterior_threshold
    if stats:
        with atomic_write(stats, "w") as out:
            json.dump(result, out, indent=2, sort_keys=True)
            out.write("\n")
    return result


def _depth(value: str) -> int | None:
    if value.lower() in ("inf", "all", "0"):
        return None
    return int(value)


def _options(f):
    f = click.option("--format", "format", default=None, help="Lattice format (default: from the file name).")(f)
    f = click.option("--symbols", default=None, type=click.Path(dir_okay=False),
                     help="words.txt mapping the word ids of Kaldi/OpenFst/k2 lattices.")(f)
    f = click.option("--segments", type=click.Path(dir_okay=False), default=None,
                     help="Kaldi segments file 'utt file start end' (default: file = utterance, channel 1, offset 0).")(f)
    f = click.option("--stats", type=click.Path(dir_okay=False), default=None,
                     help="Write N, N_max, N_.9, N_.5, blocks and gzip MB as JSON here.")(f)
    f = click.option("--ctm", required=True, type=click.Path(dir_okay=False),
                     help="Output alt-CTM (.gz = compressed, - = stdout).")(f)
    f = click.option("--word-penalty", type=float, default=0.0, show_default=True)(f)
    f = click.option("--lm-scale", type=float, default=1.0, show_default=True)(f)
    f = click.option("--acoustic-scale", type=float, default=1.0, show_default=True)(f)
    f = click.option("-n", "n", default="10", show_default=True,
                     help="Depth N: alternatives kept per slot ('inf' = all).")(f)
    f = click.argument("lattices", nargs=-1, required=True)(f)
    return f


def _run(kind, lattices, n, ctm, stats, segments, format, symbols, acoustic_scale, lm_scale, word_penalty, **extra):
    result = make_alternatives_ctm(lattices, kind, _depth(n), ctm, stats=stats, segments=segments, format=format,
                                   symbols=symbols,
                                   acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty, **extra)
    click.echo(json.dumps(result, sort_keys=True), err=True)


@click.command("nbest")
@_options
def nbest_command(lattices, n, ctm, stats, segments, format, symbols, acoustic_scale, lm_scale, word_penalty):
    """Exact N-best lists (utterance-level alternatives) of LATTICES as alt-CTM."""
    _run("nbest", lattices, n, ctm, stats, segments, format, symbols, acoustic_scale, lm_scale, word_penalty)


@click.command("sausage")
@_options
def sausage_command(lattices, n, ctm, stats, segments, format, symbols, acoustic_scale, lm_scale, word_penalty):
    """Confusion networks (word-level alternatives, Xu et al. 2011 MBR) of LATTICES as alt-CTM."""
    _run("sausage", lattices, n, ctm, stats, segments, format, symbols, acoustic_scale, lm_scale, word_penalty)


@click.command("phrases")
@_options
@click.option("--posterior-threshold", type=float, default=0.1, show_default=True,
              help="Phrase boundaries are times not crossed by a word arc with at least this posterior.")
def phrases_command(lattices, n, ctm, stats, segments, format, symbols, acoustic_scale, lm_scale, word_penalty,
                    posterior_threshold):
    """Phrase alternatives (seed 001 section 3.4) of LATTICES as alt-CTM."""
    _run("phrases", lattices, n, ctm, stats, segments, format, symbols, acoustic_scale, lm_scale, word_penalty,
         posterior_threshold=posterior_threshold)
