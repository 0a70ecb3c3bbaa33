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
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import FormatError
from ..files import atomic_write
from ._xml import read_xml_bytes, run_parser, safe_parser, xml_escape


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


@dataclass(frozen=True)
class KwsList:
    """A whole kwslist: detections in file order, per-term headers and the file header."""

    detections: tuple[Detection, ...]
    lists: tuple[DetectedList, ...]
    kwlist_filename: str = ""
    language: str = ""
    system_id: str = ""
    min_score: float | None = None
    max_score: float | None = None
    # The tbeg/dur/score attribute strings of each detection as written in the file (F4DE prints them
    # verbatim in its alignment CSV); empty when the list was built in memory.
    raw: tuple[tuple[str, str, str], ...] = field(default=(), compare=False, repr=False)
    lines: tuple[int, ...] = field(default=(), compare=False, repr=False)
    path: str = field(default="", compare=False)

    @property
    def kwids(self) -> list[str]:
        return [d.kwid for d in self.lists]

    @property
    def oov_kwids(self) -> set[str]:
        return {d.kwid for d in self.lists if d.is_oov}


def _file_id(file: str) -> str:
    base = file.rsplit("/", 1)[-1]
    return base[:-4] if base.endswith(".sph") else base


def read_kwslist(path: str, *, encoding: str | None = None) -> KwsList:
    """Read a kwslist.  FormatError (file, line) on malformed XML, a missing or non-numeric attribute, a
    decision other than YES/NO, a score outside ``[min_score, max_score]``, a ``<kw>`` outside a
    ``<detected_kwlist>`` or a keyword id listed twice."""
    path = str(path)
    data = read_xml_bytes(path)
    parser = safe_parser(path)
    header: dict[str, str] = {}
    lists: list[DetectedList] = []
    seen: dict[str, int] = {}
    dets: list[Detection] = []
    raw: list[tuple[str, str, str]] = []
    lines: list[int] = []
    state = {"kwid": None, "depth": 0, "bounds": None}
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
            if "/" in file or file.endswith(".sph"):
                file = _file_id(file)
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
    run_parser(parser, path, data, encoding)
    if not header and not lists:
        raise FormatError("no <kwslist> element found", path=path)
    bounds = state["bounds"]
    return KwsList(tuple(dets), tuple(lists), header.get("kwlist_filename", ""), header.get("language", ""),
                   header.get("system_id", ""), bounds[0] if bounds else None, bounds[1] if bounds else None,
                   tuple(raw), tuple(lines), path)


def _num(x: float) -> str:
    # Shortest text that reads back as the same double (so a write/read round trip is exact).
    return repr(float(x))


def write_kwslist(path: str, detections: Iterable[Detection], *, kwlist_filename: str, language: str = "",
                  system_id: str = "lattice-tools", kwids: Iterable[str] = (), oov_kwids: Iterable[str] = ()) -> None:
    """Write a kwslist (atomically: nothing is left behind on error).

    Every id of ``kwids`` gets a ``<detected_kwlist>``, even without detections (so that a scorer sees the
    term was searched); terms of ``oov_kwids`` get ``oov_count="1"``.  Detections of other ids follow in
    order of first appearance."""
    groups: OrderedDict[str, list[Detection]] = OrderedDict((k, []) for k in kwids)
    for d in detections:
        if not (math.isfinite(d.tbeg) and math.isfinite(d.dur) and math.isfinite(d.score)):
            raise FormatError(f"detection of {d.kwid!r} in {d.file}/{d.channel} has a non-finite time or score",
                              path=str(path))
        if d.dur < 0:  # what read_kwslist (and F4DE) refuse is never written
            raise FormatError(f"detection of {d.kwid!r} in {d.file}/{d.channel} at {d.tbeg} has a negative duration "
                              f"({d.dur})", path=str(path))
        groups.setdefault(d.kwid, []).append(d)
    oov = set(oov_kwids)
    with atomic_write(path) as f:
        f.write(f'<kwslist kwlist_filename="{xml_escape(kwlist_filename)}" language="{xml_escape(language)}" '
                f'system_id="{xml_escape(system_id)}">\n')
        for kwid, dets in groups.items():
            f.write(f'  <detected_kwlist kwid="{xml_escape(kwid)}" search_time="0" '
                    f'oov_count="{1 if kwid in oov else 0}">\n')
            for d in dets:
                f.write(f'    <kw file="{xml_escape(d.file)}" channel="{xml_escape(d.channel)}" tbeg="{_num(d.tbeg)}" '
                        f'dur="{_num(d.dur)}" score="{_num(d.score)}" decision="{"YES" if d.decision else "NO"}"/>\n')
            f.write("  </detected_kwlist>\n")
        f.write("</kwslist>\n")


__all__ = ["KwsList", "DetectedList", "read_kwslist", "write_kwslist"]
