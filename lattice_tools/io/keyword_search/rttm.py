"""NIST RTTM (Rich Transcription Time Marked) references for keyword search: SPEAKER and LEXEME lines.

Nine white-space separated fields per line (``;;`` starts a comment)::

    SPEAKER FILE01 1 0.000 5.000 <NA> <NA> Woman <NA>
    LEXEME  FILE01 1 0.000 1.000 yes  lex  Woman <NA>
    <type>  <file> <chan> <tbeg> <dur> <ortho> <subtype> <speaker> <conf>

The keyword scorer finds reference occurrences of a term in the LEXEME lines (see
:mod:`lattice_tools.kws.score`); other types (NON-LEX, NON-SPEECH, SU, ...) are kept but not used.
Reference word times can also come from a CTM (:func:`lexemes_from_ctm`: one speaker per file/channel).

Every problem raises :class:`~lattice_tools.core.errors.FormatError` naming the file and line: a wrong number
of fields, a non-numeric or negative time, text that is not in the given encoding.
:func:`check_overlaps` reports two words of one speaker that overlap in time.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ...core.errors import FormatError
from ...core.files import atomic_write, read_text_bytes
from ._xml import check_text_encoding


@dataclass(frozen=True)
class RttmRecord:
    type: str
    file: str
    channel: str
    tbeg: float
    dur: float
    ortho: str = "<NA>"
    subtype: str = "<NA>"
    speaker: str = "<NA>"
    conf: str = "<NA>"
    line: int = 0
    # tbeg/dur as written (F4DE prints them verbatim); empty when built in memory.
    raw_tbeg: str = field(default="", compare=False, repr=False)
    raw_dur: str = field(default="", compare=False, repr=False)

    @property
    def tend(self) -> float:
        return self.tbeg + self.dur


def _decode_lines(path: str, encoding: str):
    check_text_encoding(encoding, path)
    try:
        data = read_text_bytes(path, encoding, what="RTTM")
    except OSError as exc:
        raise FormatError(f"cannot read ({exc})", path=path) from None
    if data.startswith(b"\xef\xbb\xbf") and encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        data = data[3:]
    blines = data.split(b"\n")
    try:
        # One decoding for the whole file: the same lines as decoding each line (the encodings a
        # reference is written in keep b"\n" a line break).
        lines = data.decode(encoding).split("\n")
        if len(lines) != len(blines):
            raise UnicodeError
    except (UnicodeError, ValueError, TypeError):  # also codecs that fail otherwise (punycode, undefined)
        lines = None
    for lineno, bline in enumerate(blines, 1):
        if lines is not None:
            yield lineno, lines[lineno - 1].rstrip("\r")
            continue
        try:
            yield lineno, bline.decode(encoding).rstrip("\r")
        except UnicodeDecodeError as exc:
            raise FormatError(f"not valid {encoding} text: byte {bline[exc.start]:#04x} at column {exc.start + 1}"
                              f" (give the file's encoding with --encoding)", path=path, line=lineno) from None
        except (UnicodeError, ValueError, TypeError):
            raise FormatError(f"cannot decode the line as {encoding} (give the file's encoding with --encoding)",
                              path=path, line=lineno) from None


_new = object.__new__


def _record(typ, file, channel, tbeg, dur, ortho, subtype, speaker, conf, line, raw_tbeg, raw_dur) -> RttmRecord:
    # RttmRecord(...) without the frozen dataclass's __init__ (one object.__setattr__ per field, 4 us a
    # record): the same instance state, built in under half the time.
    r = _new(RttmRecord)
    r.__dict__.update(type=typ, file=file, channel=channel, tbeg=tbeg, dur=dur, ortho=ortho, subtype=subtype,
                      speaker=speaker, conf=conf, line=line, raw_tbeg=raw_tbeg, raw_dur=raw_dur)
    return r


class RttmTable(Sequence):
    """The records of an RTTM file as columns (one list per field, in file order), readable as a sequence of
    :class:`RttmRecord` (made when asked for): the keyword scorer works on the columns."""

    FIELDS = ("type", "file", "channel", "tbeg", "dur", "ortho", "subtype", "speaker", "conf", "line", "raw_tbeg",
              "raw_dur")
    # the columns (set from FIELDS in __init__), typed as RttmRecord's fields
    type: list[str]
    file: list[str]
    channel: list[str]
    tbeg: list[float]
    dur: list[float]
    ortho: list[str]
    subtype: list[str]
    speaker: list[str]
    conf: list[str]
    line: list[int]
    raw_tbeg: list[str]
    raw_dur: list[str]

    def __init__(self, rows: list[tuple]):
        # rows: (type, file, channel, tbeg, dur, ortho, subtype, speaker, conf, line, raw_tbeg, raw_dur)
        for k, name in enumerate(self.FIELDS):
            setattr(self, name, [r[k] for r in rows])

    def __len__(self) -> int:
        return len(self.line)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return _record(*(getattr(self, name)[i] for name in self.FIELDS))

    def __iter__(self):
        return map(_record, *(getattr(self, name) for name in self.FIELDS))


def read_rttm_table(path: str, *, encoding: str = "utf-8", types: Iterable[str] | None = None) -> RttmTable:
    """:func:`read_rttm` as an :class:`RttmTable` (the same records and errors, without building them)."""
    path = str(path)
    want = None if types is None else {t.upper() for t in types}
    rows: list[tuple] = []
    isfinite = math.isfinite
    for lineno, line in _decode_lines(path, encoding):
        fields = (line.split(";;", 1)[0] if ";;" in line else line).split()
        if not fields:
            continue
        if len(fields) != 9:
            raise FormatError(f"an RTTM line has 9 fields (type file channel tbeg dur ortho subtype speaker conf), "
                              f"this one has {len(fields)}", path=path, line=lineno)
        typ = fields[0].upper()
        if want is not None and typ not in want:
            continue
        try:
            tbeg, dur = float(fields[3]), float(fields[4])
            good = isfinite(tbeg) and isfinite(dur) and tbeg >= 0 and dur >= 0
        except ValueError:
            good = False
        if not good:
            for name, s in (("tbeg", fields[3]), ("dur", fields[4])):
                try:
                    v = float(s)
                except ValueError:
                    raise FormatError(f"expected a number for {name}, got {s!r}", path=path, line=lineno) from None
                if not math.isfinite(v) or v < 0:
                    raise FormatError(f"{name} must be a finite number >= 0, got {s!r}", path=path, line=lineno)
        rows.append((typ, fields[1], fields[2], tbeg, dur, fields[5], fields[6], fields[7], fields[8], lineno,
                     fields[3], fields[4]))
    return RttmTable(rows)


def read_rttm(path: str, *, encoding: str = "utf-8", types: Iterable[str] | None = None) -> list[RttmRecord]:
    """Read an RTTM file (only the record ``types`` given, upper case, e.g. ``("LEXEME",)``; default all)."""
    return list(read_rttm_table(path, encoding=encoding, types=types))


def check_overlaps(records: Iterable[RttmRecord], path: str = "") -> None:
    """FormatError when two LEXEMEs of one speaker (file, channel, speaker) overlap in time.

    A reference in which one speaker says two words at once cannot be scored meaningfully (which of the
    two does a multi-word term continue with?).  Touching words (end == next start) are fine; overlaps
    under 1 ms are tolerated as rounding of the times."""
    table = records if isinstance(records, RttmTable) else RttmTable(
        [tuple(getattr(r, name) for name in RttmTable.FIELDS) for r in records])
    tbeg, dur, line = table.tbeg, table.dur, table.line
    by: dict[tuple[str, str, str], list[int]] = {}
    for i, (typ, key) in enumerate(zip(table.type, zip(table.file, table.channel, table.speaker, strict=True),
                                       strict=True)):
        if typ == "LEXEME":
            ids = by.get(key)
            if ids is None:
                by[key] = [i]
            else:
                ids.append(i)
    for (file, chan, spk), ids in by.items():
        ids = sorted(ids, key=lambda i: (tbeg[i], line[i]))
        for a, b in zip(ids, ids[1:], strict=False):
            if tbeg[b] < tbeg[a] + dur[a] - 1e-3:
                ra, rb = table[a], table[b]
                raise FormatError(f"reference words overlap: {ra.ortho!r} ({ra.tbeg:g}+{ra.dur:g}, line {ra.line}) and "
                                  f"{rb.ortho!r} ({rb.tbeg:g}+{rb.dur:g}) of speaker {spk} in {file}/{chan}",
                                  path=path or None, line=rb.line or None)


def lexemes_from_ctm(path: str, *, encoding: str = "utf-8") -> list[RttmRecord]:
    """Reference word times from a CTM (``file channel tbeg dur word [conf]``) as LEXEME records, one
    speaker per file/channel.  ALT blocks are refused (a reference has one word sequence)."""
    from ..transcripts.ctm import CtmWord, read_ctm

    out = []
    for item in read_ctm(path, encoding):
        if not isinstance(item, CtmWord):
            raise FormatError("a reference CTM cannot have <ALT_BEGIN> blocks", path=str(path), line=item.lineno)
        if item.start is None or item.duration is None:
            raise FormatError("a reference CTM word needs a start time and a duration", path=str(path),
                              line=item.lineno)
        if item.start < 0 or item.duration < 0:
            raise FormatError("negative time in a reference CTM", path=str(path), line=item.lineno)
        out.append(RttmRecord("LEXEME", item.file, item.channel, item.start, item.duration, item.word, "lex",
                              f"{item.file}_{item.channel}", "<NA>", item.lineno))
    return out


def _t(x: float, raw: str) -> str:
    return raw if raw else f"{x:.3f}"


def write_rttm(path: str, records: Iterable[RttmRecord], *, encoding: str = "utf-8") -> None:
    """Write RTTM records (atomically), one per line, in the given order."""
    with atomic_write(path, encoding=encoding) as f:
        for r in records:
            fields = [r.type, r.file, r.channel, _t(r.tbeg, r.raw_tbeg), _t(r.dur, r.raw_dur), r.ortho, r.subtype,
                      r.speaker, r.conf]
            for v in fields:
                if not v or any(c.isspace() for c in v):
                    raise FormatError(f"RTTM field {v!r} is empty or has white space", path=str(path))
            f.write(" ".join(fields) + "\n")


__all__ = ["RttmRecord", "RttmTable", "read_rttm", "read_rttm_table", "write_rttm", "check_overlaps", "lexemes_from_ctm"]
