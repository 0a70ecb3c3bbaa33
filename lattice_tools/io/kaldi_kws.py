"""Kaldi's keyword-search pipeline files: ``utter.map`` and ``kws-search``'s result lines.

* ``utter.map`` (``lattice-to-kws-index``'s first argument): ``utterance-id integer`` per line; Kaldi's
  index and results name utterances by the integer.
* Result lines (``kws-search``'s third argument, a text table of double vectors, what ``write_kwslist.pl``
  and ``compute-atwv`` read): ``kwid utt start end score`` + a trailing space, where ``utt`` is the
  utterance's integer, ``start``/``end`` are frames from the start of the utterance (``end`` = the frame
  after the last word's last frame, as Kaldi's index stores it) and ``score`` is ``-log(posterior)``,
  clamped at 0 as ``kws-search`` clamps it.  Numbers are printed as Kaldi prints doubles in text mode
  (7 significant digits).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

from ..errors import FormatError, MismatchError
from ..files import atomic_write, read_text_lines
from .kaldi_tables import fmt_float
from .kwslist import Detection


def read_utterance_map(path: str, encoding: str = "utf-8") -> dict[str, int]:
    """Kaldi ``utter.map`` -> ``{utterance: integer}``.  A malformed line, a non-integer or negative
    id, a repeated utterance or a repeated integer raises FormatError naming file:line."""
    out: dict[str, int] = {}
    seen: dict[int, str] = {}
    for lineno, line in read_text_lines(path, encoding):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise FormatError(f"expected 'utterance integer', got {len(fields)} fields", path=path, line=lineno)
        utt, raw = fields
        if not (raw.isascii() and raw.isdigit()):
            raise FormatError(f"utterance {utt!r}: id {raw[:80]!r} is not an integer >= 0", path=path, line=lineno)
        value = int(raw)
        if value >= 2 ** 31:
            raise FormatError(f"utterance {utt!r}: id {value} does not fit Kaldi's int32", path=path, line=lineno)
        if utt in out:
            raise FormatError(f"utterance {utt!r} listed twice", path=path, line=lineno)
        if value in seen:
            raise FormatError(f"id {value} is given to both {seen[value]!r} and {utt!r}", path=path, line=lineno)
        out[utt] = value
        seen[value] = utt
    return out


def kaldi_kws_score(posterior: float) -> float:
    """``kws-search``'s score of a hit: ``-log(posterior)``, never below 0."""
    if posterior <= 0:
        return math.inf
    return max(0.0, -math.log(posterior))


def kaldi_result_lines(detections: Iterable[Detection], utterance_ids: dict[str, int], *, frame_shift: float = 0.01,
                       offsets: dict[str, float] | None = None) -> list[str]:
    """The result lines of ``detections`` (made by a search, so each names its utterance).

    ``offsets`` maps an utterance to its start in the recording (seconds; a Kaldi ``segments`` file):
    the index stores recording times, Kaldi's lines count frames from the utterance's start.  Without
    it an utterance must be its own recording (offset 0)."""
    if not frame_shift > 0 or not math.isfinite(frame_shift):
        raise ValueError(f"frame_shift must be a finite number > 0, got {frame_shift}")
    offsets = offsets or {}
    lines = []
    for d in detections:
        utt = d.utterance
        if utt is None:
            raise MismatchError(f"detection of {d.kwid!r} in {d.file!r} does not name its utterance "
                                "(Kaldi's result lines need the search's detections)", key=d.kwid)
        if utt not in utterance_ids:
            raise MismatchError(f"utterance {utt!r} is not in the utterance map", key=utt)
        if utt in offsets:
            offset = offsets[utt]
        elif d.file == utt:
            offset = 0.0
        else:
            raise MismatchError(f"utterance {utt!r} lies in recording {d.file!r}: give the segments file the "
                                "index was built with (Kaldi counts frames from the utterance's start)", key=utt)
        start = round((d.tbeg - offset) / frame_shift)
        end = round((d.tbeg + d.dur - offset) / frame_shift)
        if start < 0:
            raise MismatchError(f"utterance {utt!r}: a hit of {d.kwid!r} starts {d.tbeg - offset:.3f} s before "
                                "the utterance (wrong segments file?)", key=utt)
        lines.append(f"{d.kwid} {utterance_ids[utt]} {start} {end} {fmt_float(kaldi_kws_score(d.score))} \n")
    return lines


def write_kaldi_results(path: str, detections: Iterable[Detection], utterance_ids: dict[str, int], *,
                        frame_shift: float = 0.01, offsets: dict[str, float] | None = None) -> int:
    """Write :func:`kaldi_result_lines` to ``path`` (atomically); returns the number of lines."""
    lines = kaldi_result_lines(detections, utterance_ids, frame_shift=frame_shift, offsets=offsets)
    with atomic_write(path, "w") as f:
        f.writelines(lines)
    return len(lines)


def read_kaldi_results(path: str) -> list[tuple[str, int, int, int, float]]:
    """Kaldi result lines -> ``[(kwid, utt_int, start_frame, end_frame, score), ...]`` in file order.
    Each line must hold a keyword id and four numbers, the first three integers."""
    out = []
    for lineno, line in read_text_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 5:
            raise FormatError(f"expected 'kwid utt start end score', got {len(fields)} fields", path=path,
                              line=lineno)
        try:
            nums = [float(x) for x in fields[1:]]
        except ValueError:
            raise FormatError(f"not a number in {line[:80]!r}", path=path, line=lineno) from None
        if any(not math.isfinite(x) or x != int(x) for x in nums[:3]) or math.isnan(nums[3]):
            raise FormatError(f"utterance, start and end must be integers: {line[:80]!r}", path=path, line=lineno)
        out.append((fields[0], int(nums[0]), int(nums[1]), int(nums[2]), nums[3]))
    return out
