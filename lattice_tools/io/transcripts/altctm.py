"""Alternatives <-> CTM with flat ``<ALT_BEGIN>``/``<ALT>``/``<ALT_END>`` blocks (Faria et al., section 3.5).

Writing (:func:`write_alternatives_ctm`, :func:`alternatives_to_ctm_items`):

* One CTM item per slot.  A slot with a single alternative (after cutting to depth ``n``) is
  written as plain word lines, so the 1-best CTM is simply the ``n=1`` case; a slot with several
  alternatives becomes one flat ALT block (tag lines ``<file> <chan> * * <ALT_BEGIN>`` ...), most
  probable alternative first, ``@`` for the empty alternative.  Blocks are never nested.
* Word times are the per-word times of the alternative (the best lattice path realizing it).
  When a word has no time (lattice without times), the words of the alternative are spread
  evenly over the slot's span; when the slot has no span either, writing fails with
  :class:`~lattice_tools.core.errors.FormatError` (CTM needs times).
* The confidence of each word is its ``Alternative.confidences`` entry, which the alternatives
  algorithms of this toolkit set to the **alternative's posterior** (its probability within the
  slot), clipped to ``[0, 1]``.
* Times are absolute: use :meth:`Alternatives.with_location` (or the ``segments`` mapping of the
  CLI) to place an utterance in its recording.  CTM lines are written in slot order; sclite needs
  them sorted by time within a recording side, so give utterances in time order.

Reading (:func:`read_alternatives_ctm`) inverts this: each plain word line becomes a one-word
slot, each ALT block one slot; an alternative's posterior is its first word's confidence, and
the empty alternative ``@`` (which has no confidence field) gets ``1 - sum(others)`` clipped at
0.  Alternatives are grouped per ``(file, channel)`` in file order.
"""
from __future__ import annotations

import contextlib
import math
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO

from ...core._budget import check_memory
from ...core.alternatives_network import Alternative, Alternatives, Slot, depth_statistics
from ...core.errors import FormatError
from ...core.files import atomic_write
from .ctm import ALT_BEGIN, ALT_END, ALT_SEP, EMPTY_WORD, CtmAltBlock, CtmWord, format_ctm_word, read_ctm


def _alternative_words(alt: Alternative, slot: Slot, file: str, channel: str, key: str) -> tuple[CtmWord, ...]:
    n = len(alt.words)
    starts, durs = list(alt.starts), list(alt.durations)
    if any(math.isnan(x) for x in starts + durs):
        if math.isnan(slot.start) or math.isnan(slot.end):
            raise FormatError("cannot write CTM: the words and the slot have no times", key=key or None)
        step = (slot.end - slot.start) / max(n, 1)
        starts = [slot.start + i * step for i in range(n)]
        durs = [step] * n
    return tuple(CtmWord(file, channel, s, max(d, 0.0), w, min(max(c, 0.0), 1.0))
                 for w, s, d, c in zip(alt.words, starts, durs, alt.confidences, strict=False))


def alternatives_to_ctm_items(alts: Alternatives, n: int | None = None) -> list:
    """CTM items (:class:`CtmWord` / flat :class:`CtmAltBlock`) of ``alts`` cut to depth ``n``."""
    items: list = []
    for slot in alts.truncated(n).slots:
        words = [_alternative_words(a, slot, alts.file, alts.channel, alts.key) for a in slot.alternatives]
        if len(words) == 1:
            items.extend(words[0])
        else:
            items.append(CtmAltBlock(alts.file, alts.channel, tuple(words)))
    return items


def _alternatives_ctm_lines(alts: Alternatives, time_format: str, conf_format: str) -> Iterator[str]:
    """The lines of ``format_ctm_item`` over :func:`alternatives_to_ctm_items` of ``alts``, made one
    alternative at a time: an N-best block of a long utterance holds N x words CtmWord objects
    (hundreds of MB at N = 100,000) when made as one item first."""
    for slot in alts.slots:
        if len(slot.alternatives) == 1:
            for w in _alternative_words(slot.alternatives[0], slot, alts.file, alts.channel, alts.key):
                yield format_ctm_word(w, time_format, conf_format)
            continue
        tag = f"{alts.file} {alts.channel} * *"
        yield f"{tag} {ALT_BEGIN}"
        for k, a in enumerate(slot.alternatives):
            if k:
                yield f"{tag} {ALT_SEP}"
            words = _alternative_words(a, slot, alts.file, alts.channel, alts.key)
            if not words:
                yield f"{tag} {EMPTY_WORD}"
            for w in words:
                yield format_ctm_word(w, time_format, conf_format)
        yield f"{tag} {ALT_END}"


@dataclass(frozen=True, slots=True)
class AltCtmStatistics:
    """The statistics of an alt-CTM file (Faria et al., Tables 3-6) that :class:`AlternativesCtmWriter` collects:
    the depth ``n`` it was cut to (None: every alternative), its ``blocks`` (slots), the deepest block
    (``n_max``, the paper's N_max), the block depth at the 90th percentile and the median (``n_90``, ``n_50``:
    N_.9 and N_.5, nearest-rank over blocks), the ``alt_blocks`` (slots with several alternatives), the
    ``utterances``, the text's ``bytes``, its ``gzip_bytes`` (zlib level 9) and ``MB`` = gzip_bytes / 10^6, and
    every block's depth in output order (``depths``: per-job statistics merge exactly from them)."""

    n: int | None
    blocks: int
    n_max: int
    n_90: int
    n_50: int
    alt_blocks: int
    utterances: int
    bytes: int
    gzip_bytes: int
    MB: float
    depths: tuple[int, ...]

    def to_dict(self) -> dict:
        """The statistics as JSON values, under the paper's names (``N``: ``"inf"`` for every alternative,
        ``N_max``, ``N_.9``, ``N_.5``)."""
        return {"N": self.n if self.n is not None else "inf", "blocks": self.blocks, "N_max": self.n_max,
                "N_.9": self.n_90, "N_.5": self.n_50, "alt_blocks": self.alt_blocks, "utterances": self.utterances,
                "bytes": self.bytes, "gzip_bytes": self.gzip_bytes, "MB": self.MB, "depths": list(self.depths)}


def alternatives_ctm_text(alts: Alternatives, n: int | None, comment: str | None = None,
                          depths: list[int] | None = None, *, time_format: str = "%.2f",
                          conf_format: str = "%.4f") -> Iterator[str]:
    """The alt-CTM text of ``alts`` cut to depth ``n`` (after a ``;;`` line ``comment`` when given), in pieces of
    at most 65,536 lines (an utterance's text can be hundreds of MB; the memory budget is checked between
    pieces); the slot depths written are appended to ``depths``.  What :class:`AlternativesCtmWriter` writes."""
    cut = alts.truncated(n)
    if depths is not None:
        depths.extend(cut.depths)
    lines: list = [";; " + " ".join(comment.split())] if comment else []
    for line in _alternatives_ctm_lines(cut, time_format, conf_format):
        lines.append(line)
        if len(lines) >= 65536:
            yield "".join(line + "\n" for line in lines)
            lines = []
            check_memory("writing the alt-CTM", cut.key or None)
    yield "".join(line + "\n" for line in lines)


class AlternativesCtmWriter:
    """Streaming alt-CTM writer that also collects the statistics of Faria et al., Tables 3-6.

    Use as a context manager; :meth:`write` one :class:`Alternatives` at a time (memory stays
    bounded by one utterance plus the list of slot depths).  ``stats()`` gives N requested,
    N_max, N_.9, N_.5, the number of blocks (slots) and ALT blocks, and the gzip-compressed size
    of the CTM text in MB (10^6 bytes; zlib level 9, measured on the exact bytes written).
    """

    def __init__(self, path: str, n: int | None = None, *, time_format: str = "%.2f", conf_format: str = "%.4f"):
        self.path, self.n = path, n
        self.time_format, self.conf_format = time_format, conf_format
        self._depths: list[int] = []
        self._bytes = 0
        self._gz = zlib.compressobj(9, zlib.DEFLATED, 31)
        self._gz_bytes = 0
        self._utts = 0
        self._stack = contextlib.ExitStack()  # holds the atomic write between __enter__ and __exit__
        self._out: IO[str] | None = None

    def __enter__(self):
        self._out = self._stack.enter_context(atomic_write(self.path, "w"))
        return self

    def __exit__(self, *exc):
        self._gz_bytes += len(self._gz.flush())
        return self._stack.__exit__(*exc)

    def write(self, alts: Alternatives, comment: str | None = None) -> None:
        """Write ``alts`` (cut to depth ``n``), after a ``;;`` comment line ``comment`` when given (a note
        that sclite and :func:`read_alternatives_ctm` skip; one line: newlines become spaces)."""
        depths: list[int] = []
        for text in alternatives_ctm_text(alts, self.n, comment, depths, time_format=self.time_format,
                                          conf_format=self.conf_format):
            self._emit(text)
        self._depths.extend(depths)
        self._utts += 1

    def write_text(self, text: str, depths: Sequence[int], utterances: int) -> None:
        """Write the text :func:`alternatives_ctm_text` made of ``utterances`` utterances (elsewhere: a worker
        process) with its slot ``depths``: the file and the statistics are those :meth:`write` gives."""
        self._emit(text)
        self._depths.extend(depths)
        self._utts += utterances

    def _emit(self, text: str) -> None:
        assert self._out is not None, "written inside its with block"
        self._out.write(text)
        data = text.encode("utf-8")
        self._bytes += len(data)
        self._gz_bytes += len(self._gz.compress(data))

    def stats(self) -> AltCtmStatistics:
        """The statistics of what was written (complete once the writer is closed)."""
        st = depth_statistics(self._depths)
        return AltCtmStatistics(n=self.n, blocks=st.blocks, n_max=st.n_max, n_90=st.n_90, n_50=st.n_50,
                                alt_blocks=sum(1 for d in self._depths if d > 1), utterances=self._utts,
                                bytes=self._bytes, gzip_bytes=self._gz_bytes, MB=round(self._gz_bytes / 1e6, 6),
                                # per-slot depths, in output order: lets per-job statistics be merged exactly
                                # (N_.9 and N_.5 are percentiles, which cannot be combined from summaries)
                                depths=tuple(self._depths))


def write_alternatives_ctm(path: str, alternatives: Iterable[Alternatives], n: int | None = None, *,
                           time_format: str = "%.2f", conf_format: str = "%.4f") -> AltCtmStatistics:
    """Write alternatives (one :class:`Alternatives` per utterance) as an alt-CTM cut to depth
    ``n`` (``None`` = all; ``1`` = plain 1-best CTM).  ``.gz`` paths are gzip-compressed, ``-`` is
    stdout.  Returns the :class:`AltCtmStatistics` of :class:`AlternativesCtmWriter`."""
    with AlternativesCtmWriter(path, n, time_format=time_format, conf_format=conf_format) as writer:
        for alts in alternatives:
            writer.write(alts)
    return writer.stats()


def _alternative_from_words(words: tuple, posterior: float | None) -> Alternative:
    conf = [w.confidence for w in words]
    post = posterior if posterior is not None else (conf[0] if conf and conf[0] is not None else math.nan)
    return Alternative(tuple(w.word for w in words),
                       tuple(math.nan if w.start is None else w.start for w in words),
                       tuple(math.nan if w.duration is None else w.duration for w in words),
                       post, tuple(post if c is None else c for c in conf))


def _slot_span(alternatives: Iterable[Alternative]) -> tuple[float, float]:
    """(first start, last end) of the words with a start time; a word whose duration is ``*``
    ends where it starts.  (nan, nan) when no word has a start time."""
    starts, ends = [], []
    for a in alternatives:
        for s, d in zip(a.starts, a.durations, strict=False):
            if not math.isnan(s):
                starts.append(s)
                ends.append(s if math.isnan(d) else s + d)
    return (min(starts), max(ends)) if starts else (math.nan, math.nan)


def read_alternatives_ctm(path: str, kind: str = "ctm", encoding: str = "utf-8") -> list[Alternatives]:
    """Read an (alt-)CTM back into one :class:`Alternatives` per ``(file, channel)`` (file order)."""
    return alternatives_from_ctm_items(read_ctm(path, encoding), kind)


def alternatives_from_ctm_items(items: Iterable, kind: str = "ctm") -> list[Alternatives]:
    """CTM items (:class:`CtmWord` / flat :class:`CtmAltBlock`) as one :class:`Alternatives` per
    ``(file, channel)`` (file order): a word is a one-alternative slot, an ALT block a slot."""
    groups: dict[tuple[str, str], list[Slot]] = {}
    for item in items:
        if isinstance(item, CtmWord):
            alt = _alternative_from_words((item,), None)
            slot = Slot(*_slot_span([alt]), (alt,))
        else:
            alts = [_alternative_from_words(tuple(a), None) for a in item.alternatives if a]
            known = sum(a.posterior for a in alts if not math.isnan(a.posterior))
            out, j = [], 0
            for a in item.alternatives:
                if a:
                    out.append(alts[j])
                    j += 1
                else:
                    out.append(Alternative((), posterior=max(0.0, 1.0 - known)))
            slot = Slot(*_slot_span(out), tuple(out))
        groups.setdefault((item.file, item.channel), []).append(slot)
    return [Alternatives(key=f, slots=tuple(slots), kind=kind, file=f, channel=c) for (f, c), slots in groups.items()]


def iter_ctm_lines(alts: Alternatives, n: int | None = None, time_format: str = "%.2f",
                   conf_format: str = "%.4f") -> Iterator[str]:
    """The alt-CTM lines of one :class:`Alternatives` (without newlines)."""
    yield from _alternatives_ctm_lines(alts.truncated(n), time_format, conf_format)
