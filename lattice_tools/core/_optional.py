"""The optional parts of the install and how their absence is reported.

``pip install lattice-tools`` gives reading, alternatives, scoring, oracles and keyword search (numpy, click,
kaldialign, networkx, tqdm).  Decoding audio and CTC graphs need the ``[decode]`` extra (pocketsphinx,
kaldifst, kaldi-decoder); plots need ``[plots]`` (matplotlib).  Each is imported where it is used, through
:func:`lattice_tools.core.errors.require`, so its absence is a one-line error naming the extra."""
from __future__ import annotations

from .errors import MissingDependencyError, require

__all__ = ["kaldi_decoder", "kaldifst", "pocketsphinx", "pyplot"]


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend (plots are written, never shown)."""
    try:
        matplotlib = require("matplotlib", "plots")
    except MissingDependencyError as exc:
        raise MissingDependencyError(f"{exc} (a command that draws plots by default takes --no-plots)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def kaldifst():
    return require("kaldifst", "decode")


def kaldi_decoder():
    # kaldi_decoder does not import kaldifst itself but needs its types registered first
    kaldifst()
    return require("kaldi_decoder", "decode")


def pocketsphinx():
    return require("pocketsphinx", "decode")
