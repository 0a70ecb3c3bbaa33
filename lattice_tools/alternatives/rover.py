"""NIST ROVER (SCTK's ``rover``): several systems' CTMs voted into one, with rover's output.

"A post-processing system to yield reduced word error rates: Recognizer Output Voting Error
Reduction (ROVER)" by J. G. Fiscus.  This is a transcription of SCTK's ``rover.c``, ``mfa.c`` and
the network alignment of ``net_dp.c`` (``Network_dpalign_n_networks``), with their orders and
tie rules, so that the output CTM (words, times, confidences, order) is rover's:

* each CTM is read as rover reads it: every line lower-cased unless ``case_sensitive`` (file and
  channel too), a word's trailing ``*`` dropped, confidences in single precision, a missing
  confidence 0 when the file has any confidence and -1 when it has none;
* per conversation (file) of the first system, the words are cut into chunks at a silence longer
  than 1 s in the first system that the other systems also have (``find_common_silence``);
* in each chunk the systems are aligned one after the other into a word transition network: a
  linear network of slots, each a list of arcs (words or ``@``), by a dynamic programme over arcs
  in single-precision floats (rover's ``float`` cells) with its word-to-word distances
  (``wwd_WORD_rover``; with ``use_times``, ``wwd_time_WORD``: start and end time differences);
  on equal costs a substitution wins over a deletion, a deletion over an insertion, and the first
  arc of the previous slot (in its arc order) over the others;
* every slot votes (``print_linear``): ``meth1`` scores a word ``alpha * occurrences / arcs +
  (1 - alpha) * mean confidence``, ``maxconf`` uses its largest confidence, ``avgconf`` its
  confidence sum over the slot's; ``@`` arcs count with the confidence ``null_conf``; the first
  word (in arc order) with the highest score wins; a winning ``@`` writes nothing.  Times and
  confidence are the word's means over its arcs.  ``oracle`` writes every word of a slot in an
  ALT block.

rover's quirks are kept: after a chunk, when every system's next word is its file's last word,
rover stops, so that word is not written; a word is its text up to a ``;`` (sclite's tag
separator, ``\\;`` escapes it).  Inputs rover reads differently (ALT blocks, ``*`` times) are
refused with a FormatError.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import FormatError, LatticeToolsError, MismatchError
from ..core.files import atomic_write
from ..io.transcripts.ctm import CtmWord, read_ctm

__all__ = ["ROVER_METHODS", "RoverSummary", "rover_combine", "rover_lines", "NetworkWord", "align_into_network", "rover_distance",
           "rover_time_distance"]

ROVER_METHODS = ("meth1", "maxconf", "avgconf", "oracle")
_F32 = np.float32
_BIG = _F32(999999999.9)


@dataclass
class NetworkWord:
    """rover's WORD: its text, start T1, end T2, duration, confidence."""

    value: str
    t1: float
    t2: float
    conf: float

    @property
    def dur(self) -> float:
        return self.t2 - self.t1


@dataclass
class _Token:
    conv: str
    turn: str
    t1: float
    dur: float
    sp: str
    conf: float


def _read_tokens(path: str, case_sensitive: bool) -> list[_Token]:
    items = read_ctm(path)
    words = []
    for item in items:
        if not isinstance(item, CtmWord):
            raise FormatError("rover reads plain CTMs: ALT blocks are not supported", path=path)
        if item.start is None or item.duration is None:
            raise FormatError("rover needs times: '*' is not supported", path=path, line=item.lineno)
        words.append(item)
    has_conf = any(w.confidence is not None for w in words)
    out = []
    for w in words:
        conv, turn, sp = (w.file, w.channel, w.word) if case_sensitive else (w.file.lower(), w.channel.lower(),
                                                                              w.word.lower())
        # rover keeps a CTM confidence in a C float
        conf = float(_F32(w.confidence if w.confidence is not None else 0.0)) if has_conf else -1.0
        assert w.start is not None and w.duration is not None  # refused above
        out.append(_Token(conv, turn, float(w.start), float(w.duration), sp, conf))
    return out


def _word_text(sp: str) -> str:
    """``new_WORD_parseText`` + ``new_WORD``: a word up to its first unescaped ``;`` (what follows are
    tags) without its ``\\`` escapes (a word starting with ``{`` is kept whole), then without a
    trailing ``*``."""
    if not sp.startswith("{"):
        i = 0
        while True:
            i = sp.find(";", i)
            if i <= 0 or sp[i - 1] != "\\":
                break
            i += 1
        head = sp if i < 0 else sp[:i]
        sp = head.replace("\\", "")
    return sp[:-1] if len(sp) > 1 and sp.endswith("*") else sp


def _word_of(tok: _Token) -> NetworkWord:
    return NetworkWord(_word_text(tok.sp), tok.t1, tok.t1 + tok.dur, tok.conf)


# ------------------------------------------------------------------------------------- distances
def rover_distance(w1: NetworkWord | None, w2: NetworkWord | None) -> np.float32:
    """``wwd_WORD_rover``: 0 correct, 0.001 insertion/deletion of ``@``, 1 substitution with ``@``,
    3 insertion/deletion, 4 substitution (and the ``%sync%time`` tags' special costs)."""
    if w1 is None or w2 is None:  # an insertion or deletion of the other word
        w = w2 if w1 is None else w1
        assert w is not None, "one side is a word"
        if w.value == "@":
            return _F32(0.001)
        if "%sync%time" in w.value:
            return _F32(0.00001)
        return _F32(3.0)
    s1, s2 = "%sync%time" in w1.value, "%sync%time" in w2.value
    if (s1 or s2) and w1.value == w2.value:
        return _F32(-3.0)
    if s1 or s2:
        return _F32(20.0)
    if w1.value == "@" and w2.value == "@":
        return _F32(1.0)
    if w1.value == w2.value:
        return _F32(0.0)
    if w1.value == "@" or w2.value == "@":
        return _F32(1.0)
    return _F32(4.0)


def rover_time_distance(w1: NetworkWord | None, w2: NetworkWord | None) -> np.float32:
    """``wwd_time_WORD``: the start and end time differences (+0.001 when the words differ)."""
    if w1 is None or w2 is None:  # an insertion or deletion of the other word
        w = w2 if w1 is None else w1
        assert w is not None, "one side is a word"
        return _F32(0.001) if w.value == "@" else _F32(w.dur)
    return _F32(abs(w1.t1 - w2.t1) + abs(w1.t2 - w2.t2) + (0.0 if w1.value == w2.value else 0.001))


# ------------------------------------------------------------------------------------- alignment
def align_into_network(slots: list[list], b_words: list[NetworkWord], wwd, null_alt: NetworkWord, iteration: int) -> None:
    """``Network_dpalign_n_networks``' step: align the linear network ``b_words`` to the slots
    (slot 0 = the null head) and insert its words (in place)."""
    arcs_a = [(k, w) for k, slot in enumerate(slots) for w in slot]  # arcset order: slot by slot
    first_of_slot = []
    n = 0
    for slot in slots:
        first_of_slot.append(n)
        n += len(slot)
    slot_of = [k for k, _ in arcs_a]
    na, nb = len(arcs_a), len(b_words) + 1
    cost = np.zeros((na, nb), dtype=np.float32)
    back_a = np.zeros((na, nb), dtype=np.int64)
    back_b = np.zeros((na, nb), dtype=np.int64)
    back_a[0, 0] = back_b[0, 0] = -1
    b_data = [None, *b_words]

    def prev_arcs(a: int) -> range:
        k = slot_of[a] - 1
        return range(first_of_slot[k], first_of_slot[k] + len(slots[k]))

    for b in range(1, nb):  # margin: insertions
        cost[0, b] = cost[0, b - 1] + wwd(None, b_data[b])
        back_a[0, b], back_b[0, b] = 0, b - 1
    for a in range(1, na):  # margin: deletions
        best, ind = _BIG, -1
        for p in prev_arcs(a):
            if cost[p, 0] < best:
                best, ind = cost[p, 0], p
        cost[a, 0] = best + wwd(arcs_a[a][1], None)
        back_a[a, 0], back_b[a, 0] = ind, 0
    for a in range(1, na):
        wa = arcs_a[a][1]
        prev = prev_arcs(a)
        del_w = wwd(wa, None)
        for b in range(1, nb):
            wb = b_data[b]
            ins_d = cost[a, b - 1]
            del_d, del_i = _BIG, -1
            sub_d, sub_i = _BIG, -1
            for p in prev:
                if cost[p, b] < del_d:
                    del_d, del_i = cost[p, b], p
                if cost[p, b - 1] < sub_d:
                    sub_d, sub_i = cost[p, b - 1], p
            sub_d = sub_d + wwd(wa, wb)
            del_d = del_d + del_w
            ins_d = ins_d + wwd(None, wb)
            if sub_d <= del_d and sub_d <= ins_d:
                cost[a, b], back_a[a, b], back_b[a, b] = sub_d, sub_i, b - 1
            elif del_d < ins_d:
                cost[a, b], back_a[a, b], back_b[a, b] = del_d, del_i, b
            else:
                cost[a, b], back_a[a, b], back_b[a, b] = ins_d, a, b - 1
    # the end: the first arc of the last slot (in order) with the least cost against B's last arc
    last = len(slots) - 1
    min_d, a = _F32(999999.9), -1
    for p in range(first_of_slot[last], first_of_slot[last] + len(slots[last])):
        if min_d > cost[p, nb - 1]:
            min_d, a = cost[p, nb - 1], p
    b = nb - 1
    if a < 0:  # every cost above rover's start value: rover would crash; never with real times
        raise LatticeToolsError("rover alignment found no end point (costs above 999999.9)")
    # back trace, editing the slots: a new slot goes right after its arc's slot; slots keep identity
    new_slots: dict[int, list] = {}  # original slot -> slots inserted after it (in order)
    while a > 0 or b > 0:
        ba, bb = int(back_a[a, b]), int(back_b[a, b])
        k = slot_of[a]
        if a == ba:  # insertion: a new slot after slot k with B's word and `iteration` @'s
            new_slots.setdefault(k, []).insert(0, [b_data[b], *([null_alt] * iteration)])
        elif b == bb:  # deletion: an @ in slot k
            slots[k].append(null_alt)
        else:  # substitution (or match): B's word in slot k
            slots[k].append(b_data[b])
        a, b = ba, bb
    if new_slots:
        merged = []
        for k, slot in enumerate(slots):
            merged.append(slot)
            merged.extend(new_slots.get(k, []))
        slots[:] = merged


def _vote(slot: list, method: str, alpha: float, null_conf: float) -> list[tuple]:
    """``print_linear`` for one slot: the words to write, as (t1, dur, value, conf) tuples."""
    n_arc = len(slot)
    wlist: list[str] = []
    occ: list[int] = []
    t1s: list[float] = []
    t2s: list[float] = []
    conf_sum: list[float] = []
    conf_max: list[float] = []
    total_conf = 0.0
    for w in slot:
        try:
            i = wlist.index(w.value)
        except ValueError:
            i = len(wlist)
            wlist.append(w.value)
            occ.append(0)
            t1s.append(0.0)
            t2s.append(0.0)
            conf_sum.append(0.0)
            conf_max.append(0.0)
        occ[i] += 1
        t1s[i] += w.t1
        t2s[i] += w.t2
        conf_sum[i] += w.conf
        conf_max[i] = max(conf_max[i], w.conf)
        total_conf += w.conf
    best, best_score = -1, -1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(len(wlist)):
            if method in ("meth1", "oracle"):
                score = alpha * (occ[i] / n_arc) + (1.0 - alpha) * (conf_sum[i] / occ[i])
            elif method == "maxconf":
                score = alpha * (occ[i] / n_arc) + (1.0 - alpha) * conf_max[i]
            else:  # avgconf: a division by a zero confidence sum gives C's inf or nan
                ratio = float(np.float64(conf_sum[i]) / np.float64(total_conf))
                score = alpha * (occ[i] / n_arc) + (1.0 - alpha) * ratio
            if score > best_score:
                best, best_score = i, score
    if best < 0:
        raise LatticeToolsError("rover found no best word in a slot (its scores are NaN)")
    rows = [(t1s[i] / occ[i], (t2s[i] - t1s[i]) / occ[i], wlist[i], conf_sum[i] / occ[i]) for i in range(len(wlist))]
    if method == "oracle":
        return rows
    return [] if wlist[best] == "@" else [rows[best]]


def _locate_boundary(words: list[_Token], start: int, n: int) -> int:
    """``locate_boundary`` (1-based ``words[1..n]``): the last index of the conversation and turn at ``start``."""
    if start == n:
        return start
    limit = 0
    w = start
    while w <= n and limit == 0:
        if not (words[start].conv == words[w].conv and words[start].turn == words[w].turn):
            limit = w - 1
        w += 1
    return limit if limit != 0 else n


def _overlap(b1: float, e1: float, b2: float, e2: float) -> float:
    return min(e1, e2) - max(b1, b2)


def _gap_at_times(words: list[_Token], s: int, end: int, gap: list[float]) -> tuple[bool, int]:
    if s > end:
        return True, s
    for i in range(s, end + 1):
        beg = words[i].t1 + words[i].dur
        stop = words[i + 1].t1 if i < end else 9999999.9
        if _overlap(gap[0], gap[1], beg, stop) > 0.0:
            gap[0], gap[1] = max(gap[0], beg), min(gap[1], stop)
            return True, i
    return False, 0


def _common_silence(ctms, starts, ends, sil_end, silence: float = 1.0) -> bool:
    w0 = ctms[0]
    sil_end[0] = starts[0]
    while sil_end[0] <= ends[0]:
        i = sil_end[0]
        gap = [w0[i].t1 + w0[i].dur, w0[i + 1].t1 if i < ends[0] else 9999999.9]
        if gap[1] > gap[0] + silence:
            failed = False
            for nc in range(1, len(ctms)):
                ok, at = _gap_at_times(ctms[nc], starts[nc], ends[nc], gap)
                if ok:
                    sil_end[nc] = at
                else:
                    failed = True
                    break
            if not failed:
                return True
        sil_end[0] += 1
    more = False
    for nc in range(len(ctms)):
        sil_end[nc] = ends[nc]
        if starts[nc] <= ends[nc]:
            more = True
    return more


def rover_lines(systems: Sequence[str], *, rover_method: str = "meth1", alpha: float = 1.0, null_conf: float = 0.0,
                use_times: bool = False, case_sensitive: bool = False) -> list[str]:
    """The lines rover writes for the CTMs ``systems`` (module docstring)."""
    if rover_method not in ROVER_METHODS:
        raise LatticeToolsError(f"unknown rover method {rover_method!r} (expected one of {', '.join(ROVER_METHODS)})")
    if len(systems) < 2:
        raise LatticeToolsError("rover needs at least two systems")
    # 1-based, as rover's WTOKE (index 0 holds None)
    ctms: list[list[Any]] = [[None, *_read_tokens(p, case_sensitive)] for p in systems]
    ns = [len(c) - 1 for c in ctms]
    starts = [1] * len(ctms)
    wwd = rover_time_distance if use_times else rover_distance
    null_alt = NetworkWord("@", 0.0, 0.0, null_conf)
    out: list[str] = []
    if ns[0] == 0:
        return out
    done = False
    while not done:
        ends = [0] * len(ctms)
        for k, words in enumerate(ctms):
            if starts[k] > ns[k]:
                ends[k] = ns[k]  # rover's locate_boundary past the end: the last word
                continue
            ends[k] = _locate_boundary(words, starts[k], ns[k])
            if k >= 1 and words[starts[k]].conv != ctms[0][starts[0]].conv:
                raise MismatchError(f"conversation {words[starts[k]].conv!r} where {systems[0]} has "
                                    f"{ctms[0][starts[0]].conv!r} (rover stops with an error)", path=systems[k])
        if starts[0] > ns[0]:
            raise MismatchError(f"{systems[0]} has no more words but other systems do (rover's first system must "
                                "have every conversation)", path=systems[0])
        file, chan = ctms[0][starts[0]].conv, ctms[0][starts[0]].turn
        sil_end = [0] * len(ctms)
        chunks = 0
        while _common_silence(ctms, starts, ends, sil_end):
            chunks += 1
            nets = []
            for k, words in enumerate(ctms):
                nets.append([_word_of(words[i]) for i in range(starts[k], min(ns[k], sil_end[k]) + 1)])
            slots: list[list] = [[None], *[[w] for w in nets[0]]]
            for it in range(1, len(nets)):
                align_into_network(slots, nets[it], wwd, null_alt, it)
            for slot in slots[1:]:
                rows = _vote(slot, rover_method, alpha, null_conf)
                if rover_method == "oracle" and len(rows) > 1:
                    out.append(f"{file} {chan} * * <ALT_BEGIN>")
                    for j, (t1, dur, value, conf) in enumerate(rows):
                        out.append(f"{file} {chan} {t1:.3f} {dur:.3f} {value} {conf:.6f}")
                        out.append(f"{file} {chan} * * {'<ALT>' if j < len(rows) - 1 else '<ALT_END>'}")
                else:
                    out.extend(f"{file} {chan} {t1:.3f} {dur:.3f} {value} {conf:.6f}" for t1, dur, value, conf in rows)
            done = True
            for k in range(len(ctms)):
                starts[k] = sil_end[k] + (1 if sil_end[k] <= ends[k] else 0)
                if starts[k] < ns[k]:
                    done = False
        if chunks == 0:  # rover would loop for ever here; nothing is left to write
            break
    return out


@dataclass(frozen=True, slots=True)
class RoverSummary:
    """What :func:`rover_combine` wrote: the number of ``systems`` combined and the CTM ``lines`` written."""

    systems: int
    lines: int

    def to_dict(self) -> dict:
        return {"systems": self.systems, "lines": self.lines}


def rover_combine(systems: Sequence[str], out: str, *, rover_method: str = "meth1", alpha: float = 1.0,
                  null_conf: float = 0.0, use_times: bool = False, case_sensitive: bool = False) -> RoverSummary:
    """Write rover's combination of the CTMs ``systems`` to ``out`` (module docstring); returns the
    :class:`RoverSummary` (systems, lines written)."""
    lines = rover_lines(systems, rover_method=rover_method, alpha=alpha, null_conf=null_conf, use_times=use_times,
                        case_sensitive=case_sensitive)
    with atomic_write(out) as f:
        f.write("".join(line + "\n" for line in lines))
    return RoverSummary(len(systems), len(lines))
