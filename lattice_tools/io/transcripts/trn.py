"""sclite ``trn`` transcripts: ``text words ... (utterance-id)`` per line.

sclite takes the speaker of an utterance from its id: the part before the first ``-`` (``spk-xxx``
-> ``spk``; an id without ``-`` is its own speaker).  ``;;`` lines are comments.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...core.errors import FormatError
from ...core.files import atomic_write, read_text_lines
from .stm import check_alternation_depth


@dataclass(frozen=True)
class TrnUtterance:
    utt_id: str
    text: str
    lineno: int = 0
    raw: str | None = field(default=None, compare=False, repr=False)

    @property
    def speaker(self) -> str:
        """sclite's speaker of a trn utterance: the id up to its first ``-`` (whole id if none)."""
        return self.utt_id.split("-", 1)[0]


def parse_trn_line(line: str, path: str = "<string>", lineno: int = 0) -> TrnUtterance | None:
    """Parse one trn line; None for blank and ``;;`` lines.  The id is the text inside the
    last ``(...)`` that ends the line; FormatError if there is none."""
    line = line.rstrip("\r\n")
    stripped = line.rstrip()
    if not stripped.strip() or stripped.lstrip().startswith(";;"):
        return None
    if not stripped.endswith(")"):
        raise FormatError("expected the line to end with '(utterance-id)'", path=path, line=lineno)
    open_at = stripped.rfind("(")
    if open_at < 0:
        raise FormatError("expected '(' opening the utterance id at the end of the line", path=path, line=lineno)
    utt_id = stripped[open_at + 1:-1]
    if not utt_id.strip():
        raise FormatError("expected a non-empty utterance id inside '( )'", path=path, line=lineno)
    text = stripped[:open_at].strip()
    check_alternation_depth(text, path, lineno)
    return TrnUtterance(utt_id, text, lineno, raw=line)


class TrnUtterances(list):
    """``list`` of :class:`TrnUtterance` that remembers comment and blank lines as
    ``comments = [(index of the utterance they preceded, line), ...]`` for exact rewriting."""

    def __init__(self, utts: Iterable[TrnUtterance] = (), comments: Iterable[tuple[int, str]] = (),
                 path: str = ""):
        super().__init__(utts)
        self.comments = list(comments)
        self.path = path


def read_trn(path, encoding: str = "utf-8") -> TrnUtterances:
    """Read a trn file (gzip detected, ``-`` = stdin) into utterances in file order."""
    utts = TrnUtterances(path=str(path))
    for lineno, line in read_text_lines(str(path), encoding):
        utt = parse_trn_line(line, str(path), lineno)
        if utt is None:
            utts.comments.append((len(utts), line))
        else:
            utts.append(utt)
    return utts


def format_trn_utterance(utt: TrnUtterance) -> str:
    if utt.raw is not None:
        try:
            if parse_trn_line(utt.raw, "<raw>", utt.lineno) == utt:
                return utt.raw
        except FormatError:
            pass
    return f"{utt.text} ({utt.utt_id})" if utt.text else f"({utt.utt_id})"


def write_trn(path, utts: Iterable[TrnUtterance], encoding: str = "utf-8") -> None:
    """Write utterances atomically, one ``text (id)`` line each (source lines kept if unchanged)."""
    comments = getattr(utts, "comments", [])
    utts = list(utts)
    by_index: dict[int, list[str]] = {}
    for index, line in comments:
        by_index.setdefault(min(index, len(utts)), []).append(line)
    with atomic_write(str(path), "w", encoding=encoding) as out:
        for i, utt in enumerate(utts):
            for line in by_index.get(i, ()):
                out.write(line + "\n")
            out.write(format_trn_utterance(utt) + "\n")
        for line in by_index.get(len(utts), ()):
            out.write(line + "\n")
