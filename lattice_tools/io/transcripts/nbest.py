"""N-best lists: what every N-best reader shares, and the generic TSV / JSON-lines format.

An N-best list is an :class:`~lattice_tools.core.alternatives_network.Alternatives` of kind ``"nbest"``
with one slot: its alternatives are the distinct word sequences, most probable first, each with
its posterior.  The format readers (``nbest_sherpa``, ``nbest_espnet``, ``nbest_nemo``,
``nbest_kaldi`` and the generic formats here) only parse; :func:`make_nbest` turns the parsed
hypotheses of one utterance into that object, so every format gets the same posteriors:

* a score is a log-probability (``logprob``: larger is better), a cost (``cost``: a negative
  log-probability, smaller is better) or missing (``none``);
* the posterior of entry *i* is ``exp(s * l_i) / sum_j exp(s * l_j)`` where ``l`` is the
  log-probability (``-cost`` for costs) and ``s`` is ``score_scale`` (the inverse of a softmax
  temperature; Kaldi users pass their acoustic scale here when the costs are unscaled).  Without
  scores every entry gets ``1/N``;
* entries with the same word sequence are one alternative whose posterior is their sum (the
  times and the score kept are those of the most probable one).

The raw scores stay in ``Alternatives.meta`` (``scores``, ``score_kind``, ``source``).

Generic TSV (``*.tsv``): one hypothesis per line, tab-separated::

    key <TAB> rank <TAB> score <TAB> words separated by spaces [<TAB> start:end start:end ...]

``score`` may be ``-`` (missing); the optional last field gives each word's start and end in
seconds.  Generic JSON lines (``*.jsonl``): one object per hypothesis with ``key``, ``rank``,
``score`` (number or null), ``words`` (list) or ``text`` (string), and optionally ``starts`` and
``ends`` (seconds, one per word).  Lines starting with ``#`` and blank lines are skipped in both.
Hypotheses of one key must be on consecutive lines; ranks are 1-based, distinct within a key.
"""
from __future__ import annotations

import json
import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat

from ...core._budget import check_memory
from ...core.alternatives_network import Alternative, Alternatives, Slot
from ...core.errors import FormatError, MismatchError
from ...core.files import atomic_write, read_text_lines

SCORE_KINDS = ("logprob", "cost", "none")

#: the most hypotheses one utterance may have (a reader refuses more, naming the key)
MAX_ENTRIES = 100_000

#: what the memory budget's error calls the readers (``--max-memory``: :mod:`lattice_tools.core._budget`)
READING = "reading the N-best lists"

__all__ = ["SCORE_KINDS", "MAX_ENTRIES", "READING", "NbestHypothesis", "make_nbest", "nbest_posteriors", "read_nbest_tsv",
           "read_nbest_jsonl", "write_nbest_tsv", "group_by_key"]


@dataclass(frozen=True)
class NbestHypothesis:
    """One parsed hypothesis: words, its score (None = missing), its rank in the file, per-word times
    in seconds (empty = unknown), and where it came from (for errors)."""

    words: tuple[str, ...]
    score: float | None
    rank: int
    starts: tuple[float, ...] = ()
    ends: tuple[float, ...] = ()
    path: str = ""
    line: int | None = None


def nbest_posteriors(scores: Sequence[float | None], score_kind: str, score_scale: float = 1.0) -> list[float]:
    """Normalized posteriors of N entries: ``softmax(score_scale * log-probability)``; uniform without scores."""
    if score_kind not in SCORE_KINDS:
        raise FormatError(f"unknown score kind {score_kind!r} (expected one of {', '.join(SCORE_KINDS)})")
    n = len(scores)
    if n == 0:
        return []
    if score_kind == "none":
        return [1.0 / n] * n
    if not math.isfinite(score_scale) or score_scale < 0:
        raise FormatError(f"--score-scale must be a finite number >= 0, got {score_scale!r}")
    sign = 1.0 if score_kind == "logprob" else -1.0
    logs = []
    for s in scores:
        if s is None:
            raise FormatError(f"an entry has no score but the list's scores are {score_kind!r} (every entry has "
                              "a score, or none has)")
        logs.append(sign * score_scale * float(s))
    top = max(logs)
    exps = [math.exp(v - top) for v in logs]
    total = math.fsum(exps)
    return [e / total for e in exps]


def make_nbest(key: str, hyps: Sequence[NbestHypothesis], score_kind: str, *, score_scale: float = 1.0,
               source: str = "") -> Alternatives:
    """The N-best list of one utterance from its parsed hypotheses (see the module docstring).

    Raises FormatError when some hypotheses have scores and others not, a score is not finite, or
    a hypothesis' times do not match its words.
    """
    if not hyps:
        raise FormatError("an N-best list needs at least one hypothesis", key=key)
    check_memory(READING, key)
    if len(hyps) > MAX_ENTRIES:
        raise FormatError(f"{len(hyps)} hypotheses in one N-best list (at most {MAX_ENTRIES})", key=key)
    ranks: set[int] = set()
    for h in hyps:
        if h.rank in ranks:
            raise FormatError(f"rank {h.rank} appears twice", path=h.path or None, line=h.line, key=key)
        ranks.add(h.rank)
        if (h.score is None) != (score_kind == "none"):
            what = "has no score" if h.score is None else "has a score"
            raise FormatError(f"hypothesis {h.rank} {what} but the list's scores are {score_kind!r} "
                              "(every hypothesis of a list has a score, or none has)",
                              path=h.path or None, line=h.line, key=key)
        if h.score is not None and not math.isfinite(h.score):
            raise FormatError(f"hypothesis {h.rank} has a non-finite score {h.score!r}",
                              path=h.path or None, line=h.line, key=key)
        for name, times in (("starts", h.starts), ("ends", h.ends)):
            if not times:
                continue
            if len(times) != len(h.words):
                raise FormatError(f"hypothesis {h.rank} has {len(times)} {name} for {len(h.words)} words",
                                  path=h.path or None, line=h.line, key=key)
            if not (all(map(math.isfinite, times)) and min(times) >= 0):
                raise FormatError(f"hypothesis {h.rank} has a negative or non-finite time", path=h.path or None,
                                  line=h.line, key=key)
        if bool(h.starts) != bool(h.ends):
            raise FormatError(f"hypothesis {h.rank} has word {'starts' if h.starts else 'ends'} without "
                              f"{'ends' if h.starts else 'starts'}", path=h.path or None, line=h.line, key=key)
        if h.starts and any(map(operator.lt, h.ends, h.starts)):
            raise FormatError(f"hypothesis {h.rank} has a word that ends before it starts",
                              path=h.path or None, line=h.line, key=key)
    ordered = sorted(hyps, key=lambda h: h.rank)
    post = nbest_posteriors([h.score for h in ordered], score_kind, score_scale)
    # duplicates: one alternative per word sequence, its posterior the sum, times of the most probable
    merged: dict[tuple[str, ...], list] = {}
    for h, p in zip(ordered, post, strict=True):
        slot = merged.get(h.words)
        if slot is None:
            merged[h.words] = [p, p, h]
        else:
            slot[0] += p
            if p > slot[1]:
                slot[1], slot[2] = p, h
    entries = sorted(merged.values(), key=lambda v: (-v[0], v[2].rank))
    alts = []
    starts_all, ends_all = [], []
    for total, _, h in entries:
        if h.starts:
            durs = tuple(map(operator.sub, h.ends, h.starts))
            alts.append(Alternative(h.words, h.starts, durs, posterior=total))
            starts_all.extend(h.starts)
            ends_all.extend(h.ends)
        else:
            alts.append(Alternative(h.words, posterior=total))
    start = min(starts_all) if starts_all else 0.0
    end = max(ends_all) if ends_all else 0.0
    meta = {"scores": tuple(h.score for h in ordered), "score_kind": score_kind, "source": source,
            "score_scale": score_scale}
    return Alternatives(key, (Slot(start, end, tuple(alts)),), kind="nbest", meta=meta)


def group_by_key(items: Iterable[tuple[str, NbestHypothesis]], path: str) -> Iterator[tuple[str, list[NbestHypothesis]]]:
    """Consecutive hypotheses of the same key, as ``(key, hypotheses)``; a key seen again later is an error."""
    done: set[str] = set()
    key: str | None = None
    group: list[NbestHypothesis] = []
    for k, h in items:
        if k != key:
            if key is not None:
                yield key, group
            if k in done:
                raise MismatchError(f"the hypotheses of key {k!r} are not on consecutive lines", path=path,
                                    line=h.line, key=k)
            done.add(k)
            key, group = k, []
        if len(group) >= MAX_ENTRIES:
            raise FormatError(f"more than {MAX_ENTRIES} hypotheses in one N-best list", path=path, line=h.line, key=k)
        if not len(group) & 1023:  # a long list is held until its last line: the budget counts it as it grows
            check_memory(READING, k)
        group.append(h)
    if key is not None:
        yield key, group


def _number(text: str, what: str, path: str, lineno: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise FormatError(f"{what} {text!r} is not a number", path=path, line=lineno) from None
    if not math.isfinite(value):
        raise FormatError(f"{what} {text!r} is not finite", path=path, line=lineno)
    return value


def _rank(text, path: str, lineno: int) -> int:
    """A rank: an integer 1 .. 2**31-1 (a JSON integer or its text; floats and booleans are refused)."""
    if isinstance(text, int) and not isinstance(text, bool):
        rank = text
    elif isinstance(text, str) and text.strip().lstrip("+").isascii() and text.strip().lstrip("+").isdigit():
        rank = int(text)
    else:
        raise FormatError(f"rank {text!r} is not an integer", path=path, line=lineno)
    if not 1 <= rank <= 2**31 - 1:
        raise FormatError(f"rank {rank} must be between 1 and {2**31 - 1}", path=path, line=lineno)
    return rank


def _list_kind(hyps: Sequence[NbestHypothesis], score_kind: str, key: str) -> str:
    """The score kind of one list: ``score_kind`` when scores are present, ``none`` when all are missing."""
    if all(h.score is None for h in hyps):
        return "none"
    return score_kind


def _tsv_items(path: str) -> Iterator[tuple[str, NbestHypothesis]]:
    for lineno, line in read_text_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) not in (4, 5):
            raise FormatError(f"expected 4 or 5 tab-separated fields (key, rank, score, words[, times]), "
                              f"got {len(fields)}", path=path, line=lineno)
        key = fields[0].strip()
        if not key:
            raise FormatError("empty key", path=path, line=lineno)
        rank = _rank(fields[1].strip(), path, lineno)
        score_text = fields[2].strip()
        score = None if score_text in ("-", "") else _number(score_text, "score", path, lineno)
        words = tuple(fields[3].split())
        starts: tuple[float, ...] = ()
        ends: tuple[float, ...] = ()
        if len(fields) == 5 and fields[4].strip():
            pairs = fields[4].split()
            if len(pairs) != len(words):
                raise FormatError(f"{len(pairs)} word times for {len(words)} words", path=path, line=lineno)
            starts, ends = _word_times(pairs, path, lineno)
        yield key, NbestHypothesis(words, score, rank, starts, ends, path, lineno)


def _word_times(pairs: list[str], path: str, lineno: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The starts and ends of ``start:end`` pairs (one ``:`` each, finite numbers), else FormatError naming the
    first bad pair.  All pairs are converted at once (the numbers of a line in one ``map``); when that fails,
    the pairs are checked one by one for the message."""
    if set(map(str.count, pairs, repeat(":"))) == {1}:
        numbers = ":".join(pairs).split(":")
        try:
            values = tuple(map(float, numbers))
        except ValueError:
            values = ()
        if values and all(map(math.isfinite, values)):
            return values[0::2], values[1::2]
    for pair in pairs:  # the first bad pair, for the message
        a, sep, b = pair.partition(":")
        if not sep:
            raise FormatError(f"word time {pair!r} is not start:end", path=path, line=lineno)
        _number(a, "start time", path, lineno)
        _number(b, "end time", path, lineno)
    raise AssertionError("unreachable: a pair of the line is bad")  # pragma: no cover


def _float_list(value, what: str, path: str, lineno: int) -> tuple[float, ...]:
    if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise FormatError(f"{what} must be a list of numbers", path=path, line=lineno)
    if any(not math.isfinite(v) for v in value):
        raise FormatError(f"{what} has a non-finite number", path=path, line=lineno)
    return tuple(float(v) for v in value)


def parse_json_line(line: str, path: str, lineno: int) -> dict:
    """One JSON object of a JSON-lines file, or a FormatError naming the line."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise FormatError(f"not valid JSON ({exc})", path=path, line=lineno) from None
    except RecursionError:
        raise FormatError("JSON nested too deeply", path=path, line=lineno) from None
    if not isinstance(obj, dict):
        raise FormatError("expected a JSON object", path=path, line=lineno)
    return obj


def optional_score(obj: dict, field: str, path: str, lineno: int) -> float | None:
    """``obj[field]`` as a finite float, None when absent or null."""
    value = obj.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FormatError(f"{field!r} must be a finite number or null, got {value!r}", path=path, line=lineno)
    return float(value)


def _jsonl_items(path: str) -> Iterator[tuple[str, NbestHypothesis]]:
    for lineno, line in read_text_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        obj = parse_json_line(line, path, lineno)
        key = obj.get("key")
        if not isinstance(key, str) or not key:
            raise FormatError("missing or empty 'key'", path=path, line=lineno)
        rank = _rank(obj.get("rank"), path, lineno)
        score = optional_score(obj, "score", path, lineno)
        if "words" in obj:
            words = obj["words"]
            if not isinstance(words, list) or not all(isinstance(w, str) and w and not any(c.isspace() for c in w)
                                                      for w in words):
                raise FormatError("'words' must be a list of words without spaces", path=path, line=lineno)
            words = tuple(words)
        elif isinstance(obj.get("text"), str):
            words = tuple(obj["text"].split())
        else:
            raise FormatError("each hypothesis needs 'words' (a list) or 'text' (a string)", path=path, line=lineno)
        starts = _float_list(obj["starts"], "'starts'", path, lineno) if "starts" in obj else ()
        ends = _float_list(obj["ends"], "'ends'", path, lineno) if "ends" in obj else ()
        if bool(starts) != bool(ends) and words:
            raise FormatError("'starts' and 'ends' go together", path=path, line=lineno)
        yield key, NbestHypothesis(words, score, rank, starts, ends, path, lineno)


def read_nbest_tsv(path: str, *, score_kind: str = "logprob", score_scale: float = 1.0) -> Iterator[Alternatives]:
    """N-best lists of a generic TSV file (module docstring), one utterance at a time.

    ``score_kind`` says what the score column holds (``logprob`` or ``cost``); lists whose scores
    are all ``-`` are read as ``none``.
    """
    for key, hyps in group_by_key(_tsv_items(path), path):
        yield make_nbest(key, hyps, _list_kind(hyps, score_kind, key), score_scale=score_scale, source="tsv")


def read_nbest_jsonl(path: str, *, score_kind: str = "logprob", score_scale: float = 1.0) -> Iterator[Alternatives]:
    """N-best lists of a generic JSON-lines file (module docstring), one utterance at a time."""
    for key, hyps in group_by_key(_jsonl_items(path), path):
        yield make_nbest(key, hyps, _list_kind(hyps, score_kind, key), score_scale=score_scale, source="jsonl")


def write_nbest_tsv(path: str, nbests: Iterable[Alternatives], *, time_format: str = "%.3f") -> int:
    """Write N-best lists in the generic TSV format with their posteriors' natural logs as scores
    (so reading back with ``score_kind='logprob'`` gives the same posteriors).  Returns the count."""
    n = 0
    with atomic_write(path) as out:
        for alts in nbests:
            rank = 0
            for slot in alts.slots:
                for alt in slot.alternatives:
                    rank += 1
                    score = f"{math.log(alt.posterior):.17g}" if alt.posterior > 0 else "-1e300"
                    line = f"{alts.key}\t{rank}\t{score}\t{' '.join(alt.words)}"
                    if alt.words and not any(math.isnan(s) for s in alt.starts):
                        line += "\t" + " ".join(f"{time_format % s}:{time_format % (s + d)}"
                                                for s, d in zip(alt.starts, alt.durations, strict=True))
                    out.write(line + "\n")
            n += 1
    return n
