"""NIST ECF (Experiment Control File): which excerpts of which recordings a keyword-search evaluation covers.

::

    <ecf source_signal_duration="100.000" language="english" version="01">
      <excerpt audio_filename="audio/FILE01.sph" channel="1" tbeg="0.000" dur="50.000" source_type="bnews"/>
    </ecf>

The scorer only counts hits and reference occurrences that lie inside an excerpt, and its trial count
``T`` is the total excerpt duration (:meth:`Ecf.total_duration`, computed exactly like F4DE's
``KWSecf::calcTotalDur``).  A recording is named by its audio file name without directory and extension
(``audio/FILE01.sph`` -> ``FILE01``), as in F4DE.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ...core.errors import FormatError
from ...core.files import atomic_write
from ._xml import check_channel, float_attr, parse_xml, require_attr, xml_escape

# The source type whose excerpts F4DE counts at half their duration (a conversation split in two channels).
SPLIT_CTS = "splitcts"
#: The source types F4DE's ECF schema (KWSEval-ecf.xsd) allows: broadcast news, conversational telephone
#: speech, one side of a split conversation, meetings.  Read speech and any other whole recording is ``bnews``.
SOURCE_TYPES = ("bnews", "cts", SPLIT_CTS, "confmtg")


def file_id_of(audio_filename: str) -> str:
    """F4DE's recording id of an ECF ``audio_filename``: the base name without its last extension."""
    m = re.match(r".*/(.*?[^/]*)\.([^.]+)$", audio_filename)
    if m:
        return m.group(1)
    m = re.match(r"(.*)\.([^.]+)$", audio_filename)
    if m:
        return m.group(1)
    return audio_filename


@dataclass(frozen=True)
class EcfExcerpt:
    audio_filename: str
    channel: str
    tbeg: float
    dur: float
    source_type: str = "bnews"  # a whole recording (F4DE's schema requires one of SOURCE_TYPES)
    language: str = ""
    line: int = 0

    @property
    def file(self) -> str:
        return file_id_of(self.audio_filename)

    @property
    def tend(self) -> float:
        # F4DE keeps the end rounded to 0.1 ms (sprintf "%.4f"); containment tests use that value.
        return float(f"{self.tbeg + self.dur:.4f}")


@dataclass(frozen=True)
class Ecf:
    excerpts: tuple[EcfExcerpt, ...]
    source_signal_duration: float = 0.0
    language: str = ""
    version: str = ""
    path: str = field(default="", compare=False)

    def channels(self) -> set[tuple[str, str]]:
        """The (file, channel) pairs the ECF names."""
        return {(e.file, e.channel) for e in self.excerpts}

    def by_channel(self) -> dict[tuple[str, str], list[EcfExcerpt]]:
        out: dict[tuple[str, str], list[EcfExcerpt]] = {}
        for e in self.excerpts:
            out.setdefault((e.file, e.channel), []).append(e)
        return out

    def total_duration(self, source_types: Sequence[str] | None = None) -> float:
        """Total excerpt duration in seconds, exactly as F4DE computes it.

        Excerpts of one recording are sorted by start; an excerpt's end is cut at the start of the next
        excerpt of the same recording (any channel) that starts before it ends, so overlaps count once;
        ``splitcts`` excerpts count half.  ``source_types``: only excerpts whose source type matches one
        of these (case-insensitive regular expressions, anchored) are counted."""
        groups: dict[str, list[EcfExcerpt]] = {}
        for e in self.excerpts:
            if source_types:
                if not any(re.fullmatch(st, e.source_type, flags=re.I) for st in source_types):
                    continue
            groups.setdefault(e.file, []).append(e)
        total = 0.0
        # F4DE sums in Perl hash order; the sum of a few durations is exact enough that the order does
        # not change the rounded trial count.
        for file in groups:
            exs = sorted(groups[file], key=lambda e: (e.tbeg, e.tend))
            for i, e in enumerate(exs):
                tend = e.tend
                for later in exs[i + 1:]:
                    if later.tbeg < tend:
                        tend = later.tbeg
                total += (tend - e.tbeg) * (0.5 if e.source_type == SPLIT_CTS else 1.0)
        return total

    def contains(self, file: str, channel: str, tbeg: float, tend: float) -> bool:
        """True when [tbeg, tend] lies inside one excerpt of (file, channel) (F4DE ``belongsInECF``)."""
        for e in self.by_channel().get((file, channel), ()):
            if tbeg >= e.tbeg and tend <= e.tend:
                return True
        return False


def read_ecf(path: str, *, encoding: str | None = None) -> Ecf:
    """Read an ECF file.  Raises FormatError (file and line) on malformed XML, a missing or non-numeric
    attribute, a negative duration or an excerpt given twice."""
    path = str(path)
    root = parse_xml(path, encoding=encoding)
    if root.tag != "ecf":
        raise FormatError(f"expected an <ecf> root element, got <{root.tag}>", path=path, line=root.line)
    ssd = root.attrs.get("source_signal_duration", "0") or "0"
    try:
        source_signal_duration = float(ssd)
    except ValueError:
        raise FormatError(f"<ecf source_signal_duration=...> must be a number, got {ssd!r}", path=path,
                          line=root.line) from None
    excerpts = []
    seen: dict[tuple, int] = {}
    for el in root.children:
        if el.tag != "excerpt":
            raise FormatError(f"unexpected <{el.tag}> in an ECF (expected <excerpt>)", path=path, line=el.line)
        ex = EcfExcerpt(audio_filename=require_attr(el, "audio_filename", path),
                        channel=require_attr(el, "channel", path),
                        tbeg=float_attr(el, "tbeg", path), dur=float_attr(el, "dur", path),
                        source_type=el.attrs.get("source_type", ""), language=el.attrs.get("language", ""),
                        line=el.line)
        if ex.dur < 0 or ex.tbeg < 0:
            raise FormatError(f"excerpt with negative time (tbeg={ex.tbeg}, dur={ex.dur})", path=path, line=el.line)
        key = (ex.file, ex.channel, ex.tbeg, ex.dur)
        if key in seen:
            raise FormatError(f"excerpt {ex.file}/{ex.channel} {ex.tbeg}+{ex.dur} given twice (first on line "
                              f"{seen[key]})", path=path, line=el.line)
        seen[key] = el.line
        excerpts.append(ex)
    return Ecf(tuple(excerpts), source_signal_duration, root.attrs.get("language", ""),
               root.attrs.get("version", ""), path)


def write_ecf(path: str, ecf: Ecf | Iterable[EcfExcerpt], *, language: str | None = None,
              version: str | None = None, source_signal_duration: float | None = None) -> None:
    """Write an ECF (atomically: a temporary file renamed into place) that F4DE's schema accepts: an
    excerpt's source type must be one of :data:`SOURCE_TYPES`, its channel an integer and its times
    finite and >= 0 (FormatError before anything is written)."""
    import math

    if not isinstance(ecf, Ecf):
        ecf = Ecf(tuple(ecf))
    lang = ecf.language if language is None else language
    ver = ecf.version if version is None else version
    ssd = ecf.source_signal_duration if source_signal_duration is None else source_signal_duration
    if not ssd:
        ssd = sum(e.dur for e in ecf.excerpts)
    for e in ecf.excerpts:
        what = f"excerpt {e.audio_filename[:80]!r}"
        if e.source_type not in SOURCE_TYPES:
            raise FormatError(f"{what} has source_type {e.source_type[:40]!r}: F4DE's schema allows only "
                              f"{', '.join(SOURCE_TYPES)} (use bnews for read speech)", path=str(path))
        check_channel(e.channel, what, str(path))
        if not (math.isfinite(e.tbeg) and math.isfinite(e.dur) and e.tbeg >= 0 and e.dur >= 0):
            raise FormatError(f"{what} has a negative or non-finite time (tbeg={e.tbeg}, dur={e.dur})",
                              path=str(path))
    if not (math.isfinite(ssd) and ssd >= 0):
        raise FormatError(f"source_signal_duration {ssd} is not a finite number >= 0", path=str(path))
    with atomic_write(path) as f:
        f.write(f'<ecf source_signal_duration="{ssd:.3f}" language="{xml_escape(lang)}" '
                f'version="{xml_escape(ver or "1")}">\n')
        for e in ecf.excerpts:
            f.write(f'  <excerpt audio_filename="{xml_escape(e.audio_filename)}" channel="{xml_escape(e.channel)}" '
                    f'tbeg="{e.tbeg:.3f}" dur="{e.dur:.3f}" source_type="{xml_escape(e.source_type)}"/>\n')
        f.write("</ecf>\n")


__all__ = ["Ecf", "EcfExcerpt", "read_ecf", "write_ecf", "file_id_of", "SPLIT_CTS", "SOURCE_TYPES"]
