"""The options every command that reads lattices takes, spelled once (see
:mod:`lattice_tools.io.lattices.inputs`): ``--words``, ``--frame-shift``, ``--frame-subsampling-factor``,
``--keys`` and ``--max-memory``; and ``--channel`` for every command that writes a CTM."""
from __future__ import annotations

import click

from ..core.alternatives_network import DEFAULT_CHANNEL
from ._options import max_memory_option


def lattice_input_options(f):
    """``--words``, ``--frame-shift``, ``--frame-subsampling-factor``, ``--keys`` and ``--max-memory``
    (parameters ``words``, ``frame_shift``, ``frame_subsampling_factor``, ``keys``, ``max_memory``)."""
    f = max_memory_option(f)
    f = click.option("--keys", "keys", type=click.Path(dir_okay=False), default=None,
                     help="Name the lattices from this file: one key per line, in input order, one per lattice "
                          "(e.g. the icefall cut ids of a k2 .pt file, whose lattices are otherwise numbered "
                          "0, 1, ...).")(f)
    f = click.option("--frame-subsampling-factor", "frame_subsampling_factor", type=click.IntRange(min=1),
                     default=None,
                     help="Input frames per lattice frame (Kaldi's option): a lattice frame lasts "
                          "--frame-shift x this.  Chain models: 3 (0.03 s).  Default 1.")(f)
    f = click.option("--frame-shift", "frame_shift", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Seconds per input frame: default 0.01 (k2 .pt files without "
                          "--frame-subsampling-factor: 0.04, icefall's 10 ms x subsampling 4).  A wrong value "
                          "moves every time and the STM segment each word is scored in.")(f)
    f = click.option("--words", "words", type=click.Path(dir_okay=False), default=None,
                     help="words.txt mapping the word ids of Kaldi/OpenFst/k2 lattices to words (needed to "
                          "compare them with text).")(f)
    return f


def channel_option(f):
    """``--channel`` (parameter ``channel``) for commands that write CTMs."""
    return click.option("--channel", default=DEFAULT_CHANNEL, show_default=True,
                        help="CTM channel field; must match the reference STM's channel (docs/formats.md).")(f)


def allow_untimed_option(f):
    """``--allow-untimed`` (parameter ``allow_untimed``)."""
    return click.option("--allow-untimed", "allow_untimed", is_flag=True,
                        help="Accept lattices without word times (no alignment): every CTM time is then 0 "
                             "and there is one phrase per utterance.")(f)
