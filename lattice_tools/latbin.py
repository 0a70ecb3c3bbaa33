"""Kaldi ``latbin`` jobs with Kaldi's answers, over whole archives (see ``docs/kaldi.md``).

Each function reads lattices (any format :func:`lattice_tools.io.read_lattices` reads; Kaldi
archives keep their stored state order), runs one job per lattice and writes Kaldi's text tables
(:mod:`lattice_tools.io.kaldi_tables`).  Every output is written atomically: a failure leaves no
half-written file.  The ``lattice-tools`` commands of the same names are thin wrappers.
"""
from __future__ import annotations

import contextlib
from typing import Iterable, Iterator

from .io import read_lattices
from .io import kaldi_tables as T
from .io.common import atomic_write
from .lattice import Lattice


def iter_lattices(specs: Iterable[str] | str, *, format: str | None = None, words: str | None = None,
                  frame_shift: float | None = None) -> Iterator[Lattice]:
    if isinstance(specs, str):
        specs = [specs]
    for spec in specs:
        for lat in read_lattices(spec, format=format, symbols=words, frame_shift=frame_shift):
            yield lat[0] if isinstance(lat, tuple) else lat


def _open_all(stack: contextlib.ExitStack, **paths):
    return {k: (stack.enter_context(atomic_write(p)) if p else None) for k, p in paths.items()}


def mbr_decode(lattices: Iterable[str] | str, *, tra: str | None = None, bayes_risk: str | None = None,
               sausage_stats: str | None = None, times: str | None = None, one_best_times: bool = False,
               ctm: str | None = None, confidence_digits: int = 2, format: str | None = None, words: str | None = None,
               frame_shift: float | None = None, acoustic_scale: float = 1.0, lm_scale: float = 1.0,
               word_penalty: float = 0.0) -> dict:
    """Kaldi's ``lattice-mbr-decode`` (``tra``, ``bayes_risk``, ``sausage_stats``, ``times``, with
    ``--one-best-times``) and ``lattice-to-ctm-conf`` (``ctm``: the MBR words with their
    confidences; times are seconds = frames x the lattices' frame shift).  Returns
    ``{"lattices", "words", "average_bayes_risk", "bayes_risk_per_word"}`` as Kaldi logs them."""
    from .alternatives.sausage import mbr_decode as decode_one

    n_done = n_words = 0
    total_risk = 0.0
    with contextlib.ExitStack() as stack:
        out = _open_all(stack, tra=tra, bayes_risk=bayes_risk, sausage_stats=sausage_stats, times=times, ctm=ctm)
        for lat in iter_lattices(lattices, format=format, words=words, frame_shift=frame_shift):
            r = decode_one(lat, acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
            key = lat.key
            if out["tra"]:
                out["tra"].write(T.int_vector_line(key, r.words))
            if out["bayes_risk"]:
                out["bayes_risk"].write(T.float_line(key, r.bayes_risk))
            if out["sausage_stats"]:
                out["sausage_stats"].write(T.posterior_line(key, r.bins))
            if out["times"]:
                out["times"].write(T.float_pairs_line(key, r.one_best_times if one_best_times else r.bin_times))
            if out["ctm"]:
                names = [lat.symbols.word(w) for w in r.words]
                out["ctm"].writelines(T.ctm_conf_lines(key, names, r.one_best_times, r.confidences,
                                                       lat.frame_shift, confidence_digits))
            n_done += 1
            n_words += len(r.words)
            total_risk += r.bayes_risk
    return {"lattices": n_done, "words": n_words,
            "average_bayes_risk": total_risk / n_done if n_done else 0.0,
            "bayes_risk_per_word": total_risk / n_words if n_words else 0.0}
