"""Kaldi text tables that the lattice tools write: int vectors (``.tra``), floats (Bayes risk),
posteriors (sausage stats), float-pair vectors (times), and ``lattice-to-ctm-conf``'s CTM.

Numbers are printed as Kaldi's text streams print them (C++ ``operator<<`` with precision 7, i.e.
``%.7g``); every line is ``key`` + values + a trailing space, as Kaldi writes them.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence


def fmt_float(x: float) -> str:
    """A float as Kaldi's text output prints it (7 significant digits, ``%g`` style)."""
    return f"{float(x):.7g}"


def int_vector_line(key: str, values: Iterable[int]) -> str:
    return " ".join([key, *map(str, values)]) + " \n"


def float_line(key: str, value: float) -> str:
    return f"{key} {fmt_float(value)} \n"


def posterior_line(key: str, bins: Sequence[Sequence[tuple[int, float]]]) -> str:
    parts = [key]
    for b in bins:
        parts.append("[")
        for w, p in b:
            parts.append(f"{w} {fmt_float(p)}")
        parts.append("]")
    return " ".join(parts) + " \n"


def float_pairs_line(key: str, pairs: Sequence[tuple[float, float]]) -> str:
    body = " ; ".join(f"{fmt_float(a)} {fmt_float(b)}" for a, b in pairs)
    return f"{key} {body} \n" if body else f"{key} \n"


def ctm_conf_lines(key: str, words: Sequence[str], times: Sequence[tuple[float, float]], confidences: Sequence[float],
                   frame_shift: float = 0.01, digits: int = 2) -> list[str]:
    """``lattice-to-ctm-conf`` lines: ``key 1 start duration word confidence`` with start and
    duration in seconds (frames x frame shift, in float as Kaldi computes them) and every number
    fixed-point with ``digits`` decimals (``--confidence-digits``, default 2)."""
    import numpy as np

    f = np.float32
    fs = f(frame_shift)
    out = []
    for w, (b, e), c in zip(words, times, confidences, strict=False):
        start = f(fs * f(b))
        dur = f(fs * f(f(e) - f(b)))
        out.append(f"{key} 1 {float(start):.{digits}f} {float(dur):.{digits}f} {w} {float(c):.{digits}f}\n")
    return out


def nbest_ctm_lines(key: str, words: Sequence[str], starts: Sequence[int], lengths: Sequence[int],
                    frame_shift: float = 0.01, precision: int = 2) -> list[str]:
    """``nbest-to-ctm`` lines: ``key 1 start duration word`` in seconds (frames x frame shift in
    float), fixed-point with ``precision`` decimals -- raised to 3 when the (float) frame shift is
    below 0.01 and to 4 below 0.001, as Kaldi does (so 3 at the usual 10 ms)."""
    import numpy as np

    fs = np.float32(frame_shift)
    if float(fs) < 0.01 and precision <= 2:
        precision = 3
    if float(fs) < 0.001 and precision <= 3:
        precision = 4
    return [f"{key} 1 {float(np.float32(fs * np.float32(s))):.{precision}f} "
            f"{float(np.float32(fs * np.float32(n))):.{precision}f} {w}\n"
            for w, s, n in zip(words, starts, lengths, strict=False)]


def read_int_vectors(path: str) -> dict[str, list[int]]:
    """A Kaldi text table of int vectors (``utt id id ...``, e.g. a reference or a ``.tra``).
    Bad lines raise :class:`~lattice_tools.core.errors.FormatError` naming the file and line."""
    from ...core.errors import FormatError, MismatchError
    from ...core.files import read_text_lines

    out: dict[str, list[int]] = {}
    for lineno, line in read_text_lines(path):
        toks = line.split()
        if not toks:
            continue
        key = toks[0]
        try:
            ids = [int(t) for t in toks[1:]]
        except ValueError:
            raise FormatError(f"expected 'key int int ...' (word ids), got {line.strip()!r}", path=path,
                              line=lineno) from None
        if any(i < 0 for i in ids):
            raise FormatError("negative word id", path=path, line=lineno, key=key)
        if key in out:
            raise MismatchError(f"duplicate key {key!r}", path=path, key=key)
        out[key] = ids
    return out
