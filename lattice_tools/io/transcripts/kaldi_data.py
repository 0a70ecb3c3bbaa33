"""Kaldi data-directory files that map utterances to recordings: ``segments`` and
``reco2file_and_channel``."""
from __future__ import annotations

from ...core.errors import FormatError
from ...core.files import read_text_lines


def read_segments(path: str) -> dict[str, tuple[str, float, float]]:
    """Kaldi ``segments`` (``utterance recording start end``, seconds) -> ``{utt: (recording, start, end)}``.

    ``end`` may be ``-1`` (Kaldi: to the end of the recording).  Malformed lines, an end before the
    start and a repeated utterance raise FormatError naming file:line.
    """
    out: dict[str, tuple[str, float, float]] = {}
    for lineno, line in read_text_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise FormatError(f"expected 'utterance recording start end', got {len(fields)} fields", path=path,
                              line=lineno)
        try:
            start, end = float(fields[2]), float(fields[3])
        except ValueError:
            raise FormatError(f"start/end must be numbers, got {fields[2]!r} {fields[3]!r}", path=path,
                              line=lineno) from None
        if end < start and end != -1:
            raise FormatError(f"segment ends ({end}) before it starts ({start})", path=path, line=lineno)
        if fields[0] in out:
            raise FormatError(f"utterance {fields[0]!r} listed twice", path=path, line=lineno)
        out[fields[0]] = (fields[1], start, end)
    return out


def read_reco2file_and_channel(path: str) -> dict[str, tuple[str, str]]:
    """Kaldi ``reco2file_and_channel`` (``recording file channel``) -> ``{recording: (file, channel)}``."""
    out: dict[str, tuple[str, str]] = {}
    for lineno, line in read_text_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 3:
            raise FormatError(f"expected 'recording file channel', got {len(fields)} fields", path=path, line=lineno)
        if fields[0] in out:
            raise FormatError(f"recording {fields[0]!r} listed twice", path=path, line=lineno)
        out[fields[0]] = (fields[1], fields[2])
    return out


def read_kaldi_text(path: str, encoding: str = "utf-8"):
    """Kaldi ``text`` (``utterance word word ...`` per line) as trn utterances (same id and text), so
    that every scorer that reads trn reads it too.  Blank lines are skipped; an utterance listed
    twice is left to the scorer to judge (it names both lines)."""
    from .trn import TrnUtterance, TrnUtterances

    utts = TrnUtterances(path=str(path))
    for lineno, line in read_text_lines(str(path), encoding):
        parts = line.split(None, 1)
        if not parts:
            continue
        utts.append(TrnUtterance(parts[0], parts[1].strip() if len(parts) > 1 else "", lineno))
    return utts
