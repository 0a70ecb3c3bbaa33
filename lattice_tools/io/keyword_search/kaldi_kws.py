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

import gzip
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from ...core.errors import FormatError, MismatchError
from ...core.files import atomic_write, read_text_lines
from ..lattices.kaldi_tables import fmt_float
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


# ----------------------------------------------------------------------------------------------
# Kaldi's binary keyword FSTs (transcripts-to-fsts) and KWS indexes (lattice-to-kws-index, kws-index-union)

_FST_MAGIC = 2125659606
#: arc type -> floats per weight: StdArc keyword acceptors, and the index's KwsLexicographic arcs
#: (score, start frame, end frame), three tropical weights
_ARC_WEIGHTS = {"standard": 1, "log": 1, "tropical_LT_tropical_LT_tropical": 3}


class _Fst(NamedTuple):
    start: int
    finals: list          # per state: weight tuple (inf = not final)
    arcs: list            # per state: [(ilabel, olabel, weight tuple, nextstate), ...]


#: Resident bytes the parsed FSTs take per byte of the archive (Python tuples: about 10 per 24-byte arc, measured
#: on Kaldi's index of the bundled lattices), for the memory budget's check before an archive is read.
_PARSED_BYTES_PER_BYTE = 12


def is_kaldi_fst_archive(path: str) -> bool:
    """True when ``path`` starts like a binary Kaldi archive of OpenFst FSTs (``key \\0B`` + the FST magic):
    Kaldi's keyword FSTs or KWS index, as opposed to a text keyword list or an SQLite term index."""
    import struct

    from ...core.files import open_binary_input

    try:
        with open_binary_input(path) as f:
            head = f.read(1100)
    except (OSError, FormatError, EOFError, gzip.BadGzipFile):
        return False
    sp = head.find(b" ")
    if sp <= 0:
        return False
    o = sp + 1 + (2 if head[sp + 1:sp + 3] == b"\0B" else 0)
    return len(head) >= o + 4 and struct.unpack_from("<i", head, o)[0] == _FST_MAGIC


def _fst_archive(path: str, max_bytes: int = 1 << 31) -> Iterator[tuple[str, _Fst]]:
    """The entries of a binary Kaldi archive of OpenFst ``VectorFst``s (``key fst key fst ...``).

    Bounded: at most ``max_bytes`` are read, and under a memory budget (:func:`~lattice_tools.core._budget.
    memory_budget`, the CLI's ``--max-memory``) an archive whose parsed FSTs would not fit is refused before
    it is read, and the parse stops (BudgetExceededError) if the budget is exceeded all the same."""
    import struct

    from ...core._budget import check_allocation, check_memory
    from ...core.files import open_binary_input

    size = os.path.getsize(path)
    if size > max_bytes:
        raise FormatError(f"{size} bytes: larger than the {max_bytes}-byte limit of a Kaldi FST archive", path=path)
    with open_binary_input(path) as f:     # gzip (Kaldi's make_index.sh writes index.JOB.gz) found by its magic
        zipped = isinstance(f, gzip.GzipFile)
        if not zipped:
            check_allocation(size * _PARSED_BYTES_PER_BYTE, f"reading the Kaldi FST archive {path}")
        try:
            data = f.read(max_bytes + 1)
        except (OSError, EOFError) as exc:
            raise FormatError(f"cannot read the gzip stream: {exc}", path=path) from None
    if len(data) > max_bytes:
        raise FormatError(f"more than {max_bytes} bytes uncompressed: larger than the limit of a Kaldi FST archive",
                          path=path)
    if zipped:
        check_allocation(len(data) * _PARSED_BYTES_PER_BYTE, f"reading the Kaldi FST archive {path}")
    o = 0

    def need(n: int, what: str) -> None:
        if o + n > len(data):
            raise FormatError(f"truncated Kaldi FST archive (in {what} at byte {o})", path=path)

    def unpack(fmt: str, what: str):
        nonlocal o
        n = struct.calcsize(fmt)
        need(n, what)
        vals = struct.unpack_from(fmt, data, o)
        o += n
        return vals

    def string(what: str) -> str:
        nonlocal o
        (n,) = unpack("<i", what)
        if not 0 <= n <= 256:
            raise FormatError(f"bad string length {n} in the FST header of {what}", path=path)
        need(n, what)
        s = data[o:o + n].decode("ascii", "replace")
        o += n
        return s

    while o < len(data):
        sp = data.find(b" ", o)
        if sp < 0 or sp - o > 1000:
            raise FormatError(f"no archive key at byte {o}", path=path)
        key = data[o:sp].decode("utf-8", "replace")
        o = sp + 1
        if data[o:o + 2] == b"\0B":
            o += 2
        (magic,) = unpack("<i", key)
        if magic != _FST_MAGIC:
            raise FormatError(f"entry {key!r} is not a binary OpenFst FST (magic {magic})", path=path)
        fst_type, arc_type = string(key), string(key)
        if fst_type != "vector" or arc_type not in _ARC_WEIGHTS:
            raise FormatError(f"entry {key!r}: a {fst_type} FST of {arc_type} arcs; expected a vector FST of "
                              f"{' or '.join(_ARC_WEIGHTS)} arcs", path=path)
        _version, flags = unpack("<ii", key)
        if flags & 0x3:
            raise FormatError(f"entry {key!r} carries symbol tables, which Kaldi's tools do not write", path=path)
        _props, start, num_states, num_arcs = unpack("<Qqqq", key)
        nw = _ARC_WEIGHTS[arc_type]
        if not (0 <= num_states <= len(data)) or not (-1 <= start < max(num_states, 1)):
            raise FormatError(f"entry {key!r}: bad header ({num_states} states, start {start})", path=path)
        wfmt, afmt = f"<{nw}f", f"<ii{nw}fi"
        finals, arcs = [], []
        for state in range(num_states):
            if state % 4096 == 4095:
                check_memory(f"reading the Kaldi FST archive {path}", key=key)
            finals.append(unpack(wfmt, key))
            (n,) = unpack("<q", key)
            if not 0 <= n <= len(data):
                raise FormatError(f"entry {key!r}: bad arc count {n}", path=path)
            state_arcs = []
            for _ in range(n):
                il, ol, *w, nxt = unpack(afmt, key)
                if not 0 <= nxt < num_states:
                    raise FormatError(f"entry {key!r}: an arc to state {nxt} of {num_states}", path=path)
                state_arcs.append((il, ol, tuple(w), nxt))
            arcs.append(state_arcs)
        yield key, _Fst(int(start), finals, arcs)


def is_kaldi_text_fst_archive(path: str) -> bool:
    """True when ``path`` starts like a text Kaldi archive of FSTs (``ark,t:``, what Babel's
    ``kws_data_prep.sh`` writes as keywords.fsts): a key alone on its line, then an FST line of integers."""
    from ...core.files import read_text_lines

    lines = []
    try:
        for _n, line in read_text_lines(path):
            if line.strip():
                lines.append(line.split())
            if len(lines) == 2:
                break
    except (OSError, FormatError):
        return False
    if len(lines) != 2 or len(lines[0]) != 1 or not 1 <= len(lines[1]) <= 5:
        return False
    try:
        [float(x) for x in lines[1]]
    except ValueError:
        return False
    return all(x.isdigit() for x in lines[1][:4])


def _text_fst_archive(path: str) -> Iterator[tuple[str, _Fst]]:
    """The entries of a text Kaldi archive of OpenFst StdArc FSTs (``key`` alone on a line, the FST in
    OpenFst's text form -- ``src dst ilabel olabel [weight]`` arcs, ``state [weight]`` finals, the first
    arc's source the start -- and an empty line after each)."""
    from ...core.files import read_text_lines

    key: str | None = None
    start = -1
    finals: dict[int, float] = {}
    arcs: dict[int, list] = {}
    first_line = 0

    def entry():
        n = max([start, *finals, *arcs, *(a[3] for al in arcs.values() for a in al)], default=-1) + 1
        return key, _Fst(start, [(finals.get(q, math.inf),) for q in range(n)], [arcs.get(q, []) for q in range(n)])

    for lineno, line in read_text_lines(path):
        fields = line.split()
        if not fields:
            if key is not None:
                yield entry()
                key, start, finals, arcs = None, -1, {}, {}
            continue
        if key is None:
            if len(fields) != 1:
                raise FormatError(f"expected an archive key alone on its line, got {line[:80]!r}", path=path,
                                  line=lineno)
            key, first_line = fields[0], lineno
            continue
        try:
            if len(fields) in (4, 5):
                src, dst, il, ol = (int(x) for x in fields[:4])
                w = float(fields[4]) if len(fields) == 5 else 0.0
                if min(src, dst, il, ol) < 0:
                    raise ValueError
                if start < 0:
                    start = src
                arcs.setdefault(src, []).append((il, ol, (w,), dst))
            elif len(fields) in (1, 2):
                q = int(fields[0])
                if q < 0:
                    raise ValueError
                finals[q] = float(fields[1]) if len(fields) == 2 else 0.0
                if start < 0:
                    start = q
            else:
                raise ValueError
        except ValueError:
            raise FormatError(f"entry {key!r}: not an FST line ('src dst ilabel olabel [weight]' or 'state "
                              f"[weight]'): {line[:80]!r}", path=path, line=lineno) from None
        if lineno - first_line > 100000:
            raise FormatError(f"entry {key!r} has more than 100000 lines (a keyword FST is a short path)", path=path,
                              line=lineno)
    if key is not None:
        yield entry()


def read_kaldi_keyword_fsts(path: str) -> dict[str, tuple[int, ...]]:
    """Kaldi's keyword FSTs (``transcripts-to-fsts``: one linear acceptor of word ids per keyword; a binary
    archive, or a text one as Babel's ``kws_data_prep.sh`` writes) -> ``{kwid: word ids}``.  A keyword FST
    that is not one linear path is a FormatError naming it."""
    out: dict[str, tuple[int, ...]] = {}
    entries = _fst_archive(path) if is_kaldi_fst_archive(path) else _text_fst_archive(path)
    for key, fst in entries:
        words: list[int] = []
        s = fst.start
        for _ in range(len(fst.finals) + 1):
            if s < 0:
                break
            arcs = fst.arcs[s]
            if not arcs:
                break
            if len(arcs) > 1:
                raise FormatError(f"keyword FST {key!r} is not linear (state {s} has {len(arcs)} arcs)", path=path)
            il, ol, _w, s = arcs[0]
            if il != ol:
                raise FormatError(f"keyword FST {key!r} is a transducer ({il}:{ol}); expected an acceptor", path=path)
            if il:
                words.append(il)
        if s < 0 or math.isinf(fst.finals[s][0]) or not words:
            raise FormatError(f"keyword FST {key!r} has no word sequence ending in a final state", path=path)
        if key in out:
            raise FormatError(f"keyword {key!r} appears twice", path=path)
        out[key] = tuple(words)
    return out


class KaldiKwsIndexFile:
    """A Kaldi KWS index (``lattice-to-kws-index`` / ``kws-index-union`` output: an archive of FSTs with
    KwsLexicographic arcs) read into memory once (:func:`_fst_archive`'s bounds and memory budget), searched
    term by term: :meth:`term_hits`.  ``vocabulary``: the word ids its arcs read."""

    def __init__(self, path: str):
        self.path = path
        self.fsts = list(_fst_archive(path))
        self.vocabulary: set[int] = set()
        for key, fst in self.fsts:
            for state_arcs in fst.arcs:
                for il, ol, aw, _nxt in state_arcs:
                    if len(aw) != 3:
                        raise FormatError(f"index {key!r} does not have KwsLexicographic arcs (is it a keyword FST "
                                          "archive?)", path=path)
                    if il and not ol:   # the arcs into final states read the disambiguation symbol
                        self.vocabulary.add(il)

    def term_hits(self, term: Sequence[int]) -> list[tuple[int, int, int, float]]:
        """``[(utt integer, start frame, end frame, -log posterior clamped at 0), ...]`` of one term (word ids),
        as :func:`read_kaldi_index_hits` defines them."""
        out: list[tuple[int, int, int, float]] = []
        term = tuple(term)
        for key, fst in self.fsts:
            if fst.start < 0:
                continue
            stack = [(fst.start, 0, (0.0, 0.0, 0.0), 0)]
            while stack:
                s, i, w, depth = stack.pop()
                if depth > len(fst.finals):
                    raise FormatError(f"index {key!r} has a cycle (a KWS index is acyclic)", path=self.path)
                for il, ol, aw, nxt in fst.arcs[s]:
                    nw = (w[0] + aw[0], w[1] + aw[1], w[2] + aw[2])
                    if ol:
                        fw = fst.finals[nxt]
                        if i == len(term) and not math.isinf(fw[0]):
                            out.append((ol, int(round(nw[1] + fw[1])), int(round(nw[2] + fw[2])),
                                        max(0.0, nw[0] + fw[0])))
                    elif not il:
                        stack.append((nxt, i, nw, depth + 1))
                    elif i < len(term) and il == term[i]:
                        stack.append((nxt, i + 1, nw, depth + 1))
        return out


def read_kaldi_index_hits(path: str, keywords: dict[str, Sequence[int]]
                          ) -> list[tuple[str, int, int, int, float]]:
    """The hits of ``keywords`` (``{kwid: word ids}``) in a Kaldi KWS index (``lattice-to-kws-index``
    / ``kws-index-union`` output, KwsLexicographic arcs): ``[(kwid, utt integer, start frame, end frame,
    score), ...]`` -- what ``kws-search`` (all hits: ``--nbest=-1``) writes, score clamped at 0.

    A hit is a path from the start that reads the keyword's words on input (other arcs have epsilon
    labels), then an arc whose output label is the utterance's integer into a final state (its input
    label is the index's disambiguation symbol); its weight is the sum of the three components along
    the path and the final weight: ``-log posterior``, start frame, end frame."""
    index = KaldiKwsIndexFile(path)
    return [(kwid, *hit) for kwid, words in keywords.items() for hit in index.term_hits(words)]
