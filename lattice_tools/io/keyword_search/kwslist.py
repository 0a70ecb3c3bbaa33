"""NIST kwslist: a keyword-search system's output (its detections of each term).

::

    <kwslist kwlist_filename="dev.kwlist.xml" language="english" system_id="lattice-tools">
      <detected_kwlist kwid="KW-0001" search_time="0" oov_count="0">
        <kw file="FILE01" channel="1" tbeg="0.5" dur="0.33" score="0.912" decision="YES"/>
      </detected_kwlist>
    </kwslist>

Detections are :class:`Detection`.  ``<kwslist min_score= max_score=>`` (optional,
both or neither) bound the scores and are used by the scorer's matching kernel, as in F4DE.  A ``file``
attribute is reduced to its base name, and ``.sph`` is dropped (F4DE does the same).
"""
from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ...core.errors import FormatError
from ...core.files import atomic_write
from ._xml import check_channel, decimal_time, decode_xml, read_xml_bytes, run_parser_on_text, safe_parser, xml_escape

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Detection:
    """One putative occurrence of a term: where (file, channel, start and duration in seconds), how sure
    (``score``, higher is surer) and the system's YES/NO ``decision``."""

    kwid: str
    file: str
    channel: str
    tbeg: float
    dur: float
    score: float
    decision: bool
    #: The utterance the hit was found in, when the detection comes from a search (Kaldi's result
    #: lines name utterances, not recordings); a kwslist does not record it.
    utterance: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class DetectedList:
    """The header of one ``<detected_kwlist>``."""

    kwid: str
    search_time: str = "0"
    oov_count: str = "0"
    line: int = 0

    @property
    def is_oov(self) -> bool:
        try:
            return float(self.oov_count) > 0
        except ValueError:  # F4DE allows "NA"
            return False


class DetectionColumns:
    """The detections of a kwslist as parallel columns (what the scorer works on): per detection its
    keyword id, file id, channel, start, duration, score and decision, in file order."""

    __slots__ = ("kwid", "file", "channel", "tbeg", "dur", "score", "decision", "_arrays")

    def __init__(self, kwid: list[str], file: list[str], channel: list[str], tbeg: list[float], dur: list[float],
                 score: list[float], decision: list[bool]):
        self.kwid, self.file, self.channel = kwid, file, channel
        self.tbeg, self.dur, self.score, self.decision = tbeg, dur, score, decision
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def of(cls, detections: Iterable[Detection]) -> DetectionColumns:
        dets = list(detections)
        return cls([d.kwid for d in dets], [d.file for d in dets], [d.channel for d in dets],
                   [d.tbeg for d in dets], [d.dur for d in dets], [d.score for d in dets],
                   [d.decision for d in dets])

    def __len__(self) -> int:
        return len(self.kwid)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(tbeg, dur, score, decision)`` as numpy arrays (made once)."""
        if self._arrays is None:
            import numpy as np

            self._arrays = (np.asarray(self.tbeg, dtype=np.float64), np.asarray(self.dur, dtype=np.float64),
                            np.asarray(self.score, dtype=np.float64), np.asarray(self.decision, dtype=bool))
        return self._arrays


class _DetectionView(Sequence):
    """The :class:`Detection` objects of :class:`DetectionColumns`, made when asked for (a kwslist of a
    million hits is scored without ever building them)."""

    def __init__(self, columns: DetectionColumns):
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns)

    def __getitem__(self, i):
        c = self.columns
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(c))))
        return Detection(c.kwid[i], c.file[i], c.channel[i], c.tbeg[i], c.dur[i], c.score[i], c.decision[i])

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # equal to any equal sequence, so unhashable (as list)


class _RawView(Sequence):
    """The ``(tbeg, dur, score)`` strings of each detection, as written, from three columns."""

    def __init__(self, tbeg: list[str], dur: list[str], score: list[str]):
        self.columns = (tbeg, dur, score)

    def __len__(self) -> int:
        return len(self.columns[0])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        return (self.columns[0][i], self.columns[1][i], self.columns[2][i])


class _KwLines(Sequence):
    """Line numbers of the ``<kw>`` elements of a kwslist read by the plain-layout scanner, found again
    with the event parser when an error message needs one."""

    def __init__(self, path: str, encoding: str | None, count: int):
        # (not ``self.count``: that would hide Sequence.count)
        self.path, self.encoding, self._count = path, encoding, count
        self._lines: Sequence[int] | None = None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i):
        if self._lines is None:
            self._lines = _read_events(self.path, decode_xml(read_xml_bytes(self.path), self.path, self.encoding)).lines
        return self._lines[i]


@dataclass(frozen=True)
class KwsList:
    """A whole kwslist: detections in file order, per-term headers and the file header."""

    detections: Sequence[Detection]
    lists: tuple[DetectedList, ...]
    kwlist_filename: str = ""
    language: str = ""
    system_id: str = ""
    min_score: float | None = None
    max_score: float | None = None
    # The tbeg/dur/score attribute strings of each detection as written in the file (F4DE prints them
    # verbatim in its alignment CSV); empty when the list was built in memory.
    raw: Sequence[tuple[str, str, str]] = field(default=(), compare=False, repr=False)
    lines: Sequence[int] = field(default=(), compare=False, repr=False)
    path: str = field(default="", compare=False)

    @property
    def kwids(self) -> list[str]:
        return [d.kwid for d in self.lists]

    @property
    def oov_kwids(self) -> set[str]:
        return {d.kwid for d in self.lists if d.is_oov}

    @cached_property
    def columns(self) -> DetectionColumns:
        """The detections as :class:`DetectionColumns`."""
        if isinstance(self.detections, _DetectionView):
            return self.detections.columns
        return DetectionColumns.of(self.detections)


_LEADING_DOTS = re.compile(r"(\.+)(?=[^.])")
_FIRST_DOT = re.compile(r"([^.]+?)\.(.+)", re.S)


def kwslist_file_id(file: str, xml_correct: bool = False) -> str:
    """The recording id of a kwslist ``<kw file=...>``.

    As F4DE reads it (default; ``MMisc::split_dir_file_ext`` in KWSList.pm): the directory is dropped, the
    name is cut at its first dot (after leading dots) into name and extension, and only an extension of
    exactly ``sph`` is removed: ``dir/F01.sph`` -> ``F01`` but ``F01.a.sph`` stays ``F01.a.sph`` (its
    extension is ``a.sph``), and an extension starting with a dot loses that dot (``F..sph`` -> ``F.sph``).
    With ``xml_correct`` the name's last ``.sph`` is removed (``F01.a.sph`` -> ``F01.a``)."""
    base = file.rsplit("/", 1)[-1]
    if xml_correct:
        return base[:-4] if base.endswith(".sph") else base
    m = _LEADING_DOTS.match(base)
    lead = m.group(1) if m else ""
    rest = base[len(lead):]
    m = _FIRST_DOT.fullmatch(rest)
    if not m:
        return lead + rest
    name, ext = lead + m.group(1), m.group(2)
    if ext == "sph":
        return name
    ext = ext[1:] if ext.startswith(".") else ext
    return name + "." + ext if ext.strip() else name


def read_kwslist(path: str, *, encoding: str | None = None, plain_layout: bool = True,
                 xml_correct: bool = False) -> KwsList:
    """Read a kwslist.  FormatError (file, line) on malformed XML, a missing or non-numeric attribute, a
    decision other than YES/NO, a score outside ``[min_score, max_score]``, a ``<kw>`` outside a
    ``<detected_kwlist>`` or a keyword id listed twice.

    Files in the plain layout every writer uses (``<kw file= channel= tbeg= dur= score= decision=/>``, no
    comments, entities or CDATA among the hits) are read by a scanner that checks the document with expat
    and takes the hits with one regular expression per keyword; every other file, and every file with an
    error, goes through expat's element events (``plain_layout=False`` forces that for all files).  Both give
    the same :class:`KwsList`.  A ``<kw file=...>`` becomes a recording id as F4DE makes it, or with
    ``xml_correct`` by removing a last ``.sph`` (:func:`kwslist_file_id`)."""
    path = str(path)
    raw = read_xml_bytes(path)
    text = decode_xml(raw, path, encoding)
    if plain_layout:
        run_parser_on_text(safe_parser(path), path, text, raw)      # well-formed, no DTD: else FormatError here
        kws = _read_plain(path, text, encoding, xml_correct)
        if kws is not None:
            return kws
    return _read_events(path, text, xml_correct)


# The plain layout (see read_kwslist): attribute values without entities, tabs or line breaks (which expat
# would decode or normalise), so that the scanned strings are the ones expat would report.
_WS = "[ \\t\\r\\n]"
_VALUE = '"([^"&<\\t\\r\\n]*)"'
_PLAIN_KW = re.compile(f"<kw{_WS}+file={_VALUE}{_WS}+channel={_VALUE}{_WS}+tbeg={_VALUE}{_WS}+dur={_VALUE}"
                       f'{_WS}+score={_VALUE}{_WS}+decision="(YES|NO)"{_WS}*/>')
_SKELETON = re.compile(f"<(/?)(kwslist|detected_kwlist)((?:{_WS}+[^ \t\r\n=/>\"']+{_WS}*={_WS}*"
                       f"(?:\"[^\"<]*\"|'[^'<]*'))*){_WS}*(/?)>")
_PROLOG = re.compile(f"(?:<\\?xml[^>]*\\?>)?{_WS}*")


def _tag_attrs(tag: str) -> dict[str, str]:
    """The attributes of one start tag, decoded by expat itself (entities, white space)."""
    import xml.parsers.expat

    got: dict[str, str] = {}
    p = xml.parsers.expat.ParserCreate("UTF-8")
    p.StartElementHandler = lambda _name, attrs: got.update(attrs)
    p.Parse(tag if tag.endswith("/>") else tag[:-1] + "/>", True)
    return got


def _line_breaks(text: str, start: int, end: int) -> int:
    n = text.count("\n", start, end)
    cr = text.count("\r", start, end)
    return n + cr - text.count("\r\n", start, end) if cr else n


def _read_plain(path: str, text: str, encoding: str | None, xml_correct: bool = False) -> KwsList | None:
    """The kwslist of a well-formed document in the plain layout; None when it is not in that layout or
    holds an error (the event parser then reads it, and names the line of the error)."""
    prolog = _PROLOG.match(text)
    assert prolog is not None, "the prolog pattern matches the empty string"
    pos = prolog.end()
    root = _SKELETON.match(text, pos)
    if root is None or root.group(1) or root.group(2) != "kwslist":
        return None
    header = _tag_attrs(root.group(0))
    bounds = None
    if ("min_score" in header) != ("max_score" in header):
        return None
    if "min_score" in header:
        try:
            bounds = (float(header["min_score"]), float(header["max_score"]))
        except ValueError:
            return None
        if not (math.isfinite(bounds[0]) and math.isfinite(bounds[1])):
            return None
    lists: list[DetectedList] = []
    seen: set[str] = set()
    rows: list[tuple] = []
    kwid_col: list[str] = []
    line, line_pos = 1, 0
    pos = root.end()
    closed = bool(root.group(4))
    while not closed:
        m = _SKELETON.search(text, pos)
        if m is None or text.count("<", pos, m.start()):
            return None
        if m.group(1):                              # </kwslist>
            if m.group(2) != "kwslist":
                return None
            pos = m.end()
            break
        if m.group(2) != "detected_kwlist":
            return None
        attrs = _tag_attrs(m.group(0))
        kwid = attrs.get("kwid")
        if kwid is None or kwid in seen:
            return None
        seen.add(kwid)
        line += _line_breaks(text, line_pos, m.start())
        line_pos = m.start()
        lists.append(DetectedList(kwid, attrs.get("search_time", "0"), attrs.get("oov_count", "0"), line))
        pos = m.end()
        if m.group(4):                              # <detected_kwlist .../>
            continue
        end = _SKELETON.search(text, pos)
        if end is None or not end.group(1) or end.group(2) != "detected_kwlist":
            return None
        hits = _PLAIN_KW.findall(text, pos, end.start())
        if len(hits) != text.count("<", pos, end.start()):
            return None
        rows += hits
        kwid_col += [kwid] * len(hits)
        pos = end.end()
    if text.count("<", pos):
        return None
    if not header and not lists:
        return None
    return _plain_kwslist(path, encoding, header, bounds, lists, rows, kwid_col, xml_correct)


def _plain_kwslist(path, encoding, header, bounds, lists, rows, kwid_col, xml_correct=False) -> KwsList | None:
    files, chans, tb_s, du_s, sc_s, dec_s = ([r[i] for r in rows] for i in range(6))
    try:
        tbeg = list(map(float, tb_s))
        dur = list(map(float, du_s))
        score = list(map(float, sc_s))
    except ValueError:
        return None
    isfinite = math.isfinite
    if not all(map(isfinite, tbeg)) or not all(map(isfinite, dur)) or not all(map(isfinite, score)):
        return None
    if dur and min(dur) < 0:
        return None
    if bounds is not None and score and (min(score) < bounds[0] or max(score) > bounds[1]):
        return None
    ids = {f: kwslist_file_id(f, xml_correct) for f in set(files) if "/" in f or "." in f}
    if ids:
        files = [ids.get(f, f) for f in files]
    cols = DetectionColumns(kwid_col, files, chans, tbeg, dur, score, [d == "YES" for d in dec_s])
    return KwsList(_DetectionView(cols), tuple(lists), header.get("kwlist_filename", ""), header.get("language", ""),
                   header.get("system_id", ""), bounds[0] if bounds else None, bounds[1] if bounds else None,
                   _RawView(tb_s, du_s, sc_s), _KwLines(path, encoding, len(rows)), path)


def _read_events(path: str, text: str, xml_correct: bool = False) -> KwsList:
    """The general reader: expat's element events, every check naming its line."""
    parser = safe_parser(path)
    header: dict[str, str] = {}
    lists: list[DetectedList] = []
    seen: dict[str, int] = {}
    dets: list[Detection] = []
    raw: list[tuple[str, str, str]] = []
    lines: list[int] = []
    state: dict[str, Any] = {"kwid": None, "depth": 0, "bounds": None}
    isfinite = math.isfinite

    def bad(msg):
        raise FormatError(msg, path=path, line=parser.CurrentLineNumber)

    def num(attrs, name, tag):
        try:
            s = attrs[name]
        except KeyError:
            bad(f"<{tag}> lacks the attribute {name!r}")
        try:
            v = float(s)
        except ValueError:
            bad(f"<{tag} {name}=...> must be a number, got {s!r}")
        if not math.isfinite(v):
            bad(f"<{tag} {name}=...> must be finite, got {s!r}")
        return s, v

    def start(tag, attrs):
        depth = state["depth"]
        state["depth"] = depth + 1
        if depth == 0:
            if tag != "kwslist":
                bad(f"expected a <kwslist> root element, got <{tag}>")
            header.update(attrs)
            if ("min_score" in attrs) != ("max_score" in attrs):
                bad("<kwslist> must give both min_score and max_score, or neither")
            if "min_score" in attrs:
                state["bounds"] = (num(attrs, "min_score", tag)[1], num(attrs, "max_score", tag)[1])
            return
        if tag == "detected_kwlist":
            if depth != 1:
                bad("<detected_kwlist> must be directly inside <kwslist>")
            try:
                kwid = attrs["kwid"]
            except KeyError:
                bad("<detected_kwlist> lacks the attribute 'kwid'")
            if kwid in seen:
                bad(f"keyword id {kwid!r} has two <detected_kwlist> (first on line {seen[kwid]})")
            seen[kwid] = parser.CurrentLineNumber
            lists.append(DetectedList(kwid, attrs.get("search_time", "0"), attrs.get("oov_count", "0"),
                                      parser.CurrentLineNumber))
            state["kwid"] = kwid
            return
        if tag == "kw":
            kwid = state["kwid"]
            if kwid is None or depth != 2:
                bad("<kw> outside a <detected_kwlist>")
            try:
                file, chan = attrs["file"], attrs["channel"]
                tb_s, du_s, sc_s = attrs["tbeg"], attrs["dur"], attrs["score"]
                tbeg, dur, score = float(tb_s), float(du_s), float(sc_s)
            except (KeyError, ValueError):
                # The slow path says which attribute is missing or wrong.
                for a in ("file", "channel"):
                    if a not in attrs:
                        bad(f"<kw> lacks the attribute {a!r}")
                tb_s, tbeg = num(attrs, "tbeg", tag)
                du_s, dur = num(attrs, "dur", tag)
                sc_s, score = num(attrs, "score", tag)
            if not (isfinite(tbeg) and isfinite(dur) and isfinite(score)):
                for a in ("tbeg", "dur", "score"):
                    num(attrs, a, tag)
            if dur < 0:
                bad(f"<kw dur=...> must not be negative, got {du_s!r}")
            decision = attrs.get("decision")
            if decision == "YES":
                yes = True
            elif decision == "NO":
                yes = False
            else:
                bad(f"<kw decision=...> must be YES or NO, got {decision!r}")
            bounds = state["bounds"]
            if bounds is not None and not (bounds[0] <= score <= bounds[1]):
                bad(f"score {sc_s} outside the file's [min_score, max_score] = [{bounds[0]}, {bounds[1]}]")
            if "/" in file or "." in file:
                file = kwslist_file_id(file, xml_correct)
            dets.append(Detection(kwid, file, chan, tbeg, dur, score, yes))
            raw.append((tb_s, du_s, sc_s))
            lines.append(parser.CurrentLineNumber)
            return
        bad(f"unexpected <{tag}> in a kwslist")

    def end(tag):
        state["depth"] -= 1
        if tag == "detected_kwlist":
            state["kwid"] = None

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    run_parser_on_text(parser, path, text)
    if not header and not lists:
        raise FormatError("no <kwslist> element found", path=path)
    bounds = state["bounds"]
    return KwsList(tuple(dets), tuple(lists), header.get("kwlist_filename", ""), header.get("language", ""),
                   header.get("system_id", ""), bounds[0] if bounds else None, bounds[1] if bounds else None,
                   tuple(raw), tuple(lines), path)


def _num(x: float) -> str:
    # Shortest text that reads back as the same double (a score is no decimal quantity: every digit of it
    # may decide a threshold); an exponent is valid in the schema's xsd:float (the score), not in its
    # xsd:decimal (times: decimal_time).
    return repr(float(x))


def write_kwslist(path: str, detections: Iterable[Detection], *, kwlist_filename: str, language: str = "",
                  system_id: str = "lattice-tools", kwids: Iterable[str] = (), oov_kwids: Iterable[str] = ()) -> None:
    """Write a kwslist (atomically: nothing is left behind on error).

    Every id of ``kwids`` gets a ``<detected_kwlist>``, even without detections (so that a scorer sees the
    term was searched); terms of ``oov_kwids`` get ``oov_count="1"``.  Detections of other ids follow in
    order of first appearance."""
    groups: OrderedDict[str, list[Detection]] = OrderedDict((k, []) for k in kwids)
    for d in detections:
        groups.setdefault(d.kwid, []).append(d)
    oov = set(oov_kwids)
    with KwslistWriter(path, kwlist_filename=kwlist_filename, language=language, system_id=system_id) as writer:
        for kwid, dets in groups.items():
            writer.write_term(kwid, dets, oov=kwid in oov)


def _check_detection(d: Detection, path: str) -> None:
    if not (math.isfinite(d.tbeg) and math.isfinite(d.dur) and math.isfinite(d.score)):
        raise FormatError(f"detection of {d.kwid!r} in {d.file}/{d.channel} has a non-finite time or score",
                          path=str(path))
    check_channel(d.channel, f"detection of {d.kwid[:40]!r} in {d.file[:40]!r}", str(path))
    if d.dur < 0:  # what read_kwslist (and F4DE) refuse is never written
        raise FormatError(f"detection of {d.kwid!r} in {d.file}/{d.channel} at {d.tbeg} has a negative duration "
                          f"({d.dur})", path=str(path))


class KwslistWriter:
    """A kwslist written one term at a time (what :func:`write_kwslist` writes, without holding every detection):
    use as a context manager; the file appears only when the block ends without an exception."""

    def __init__(self, path: str, *, kwlist_filename: str, language: str = "", system_id: str = "lattice-tools"):
        self.path = path
        self._head = (f'<kwslist kwlist_filename="{xml_escape(kwlist_filename)}" language="{xml_escape(language)}" '
                      f'system_id="{xml_escape(system_id)}">\n')
        self._ctx: Any = None
        self._out: Any = None

    def __enter__(self) -> KwslistWriter:
        self._ctx = atomic_write(self.path)
        self._out = self._ctx.__enter__()
        self._out.write(self._head)
        return self

    def __exit__(self, *exc):
        assert self._ctx is not None and self._out is not None
        if exc[0] is None:
            self._out.write("</kwslist>\n")
        return self._ctx.__exit__(*exc)

    def write_term(self, kwid: str, detections: Sequence[Detection], *, oov: bool = False) -> None:
        """The ``<detected_kwlist>`` of ``kwid`` with ``detections`` (its own, in the order given)."""
        assert self._out is not None, "written inside its with block"
        for d in detections:
            _check_detection(d, self.path)
        lines = [f'  <detected_kwlist kwid="{xml_escape(kwid)}" search_time="0" oov_count="{1 if oov else 0}">\n']
        lines.extend(f'    <kw file="{xml_escape(d.file)}" channel="{xml_escape(d.channel)}" '
                     f'tbeg="{decimal_time(d.tbeg)}" dur="{decimal_time(d.dur)}" score="{_num(d.score)}" '
                     f'decision="{"YES" if d.decision else "NO"}"/>\n' for d in detections)
        lines.append("  </detected_kwlist>\n")
        self._out.write("".join(lines))


__all__ = ["KwsList", "DetectedList", "DetectionColumns", "KwslistWriter", "read_kwslist", "write_kwslist",
           "kwslist_file_id"]
