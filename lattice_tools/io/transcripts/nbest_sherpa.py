"""sherpa-onnx recognition results as N-best lists.

sherpa-onnx (checked against v1.13.4) prints one result per utterance as a JSON object.  An offline
recognizer's result is ``OfflineRecognitionResult::AsJsonString`` (``sherpa-onnx/csrc/offline-stream.cc``)::

    {"lang": "", "emotion": "", "event": "", "text": "the tribal chieftain called",
     "timestamps": [0.90, 1.26, 1.56, 1.80], "durations": [], "tokens":[" the", " tri", "bal", " chief", ...],
     "ys_log_probs": [-0.012000, ...], "words": []}

and a streaming recognizer's is ``OnlineRecognizerResult::AsJsonString`` (``sherpa-onnx/csrc/online-recognizer.cc``)::

    { "text": "...", "tokens": [...], "timestamps": [...], "ys_probs": [...], "lm_probs": [...],
      "context_scores": [...], "segment": 1, "words": [], "start_time": 5.12, "is_final": true, "is_eof": false}

``timestamps[i]`` is when ``tokens[i]`` was decoded, in seconds (of a streaming result: from its
segment's ``start_time``); ``durations`` (TDT models only) each token's duration; ``ys_log_probs``
(offline) and ``ys_probs`` (streaming) each token's log-probability under the ASR model, ``lm_probs``
under the language model.  BPE tokens start with a space at a word start (sherpa-onnx's symbol table
replaces ``▁`` by a space); a single byte of a byte-fallback model is written ``<0xE4>``.

sherpa-onnx's recognizers return **one** result per utterance (its beam searches keep
``max_active_paths`` hypotheses internally but return only the best; v1.13.4 has no option that
returns several).  So this reader takes a JSON-lines file with one line per utterance: either one
result with a ``key`` (or ``wav`` / ``filename``) field added -- a 1-best list -- or lattice-tools'
own wrapper ``{"key": ..., "hypotheses": [result, result, ...]}`` holding several results of the
utterance, best first (e.g. from several decoding configurations, or a decoder patched to return its
beam).  A hypothesis' score is its ``score`` field when present, else the sum of its
``ys_log_probs`` (offline), else the sum of its ``ys_probs`` (streaming; ``lm_probs`` are not
added), else missing; scores are log-probabilities.

Word times come from the tokens: a token that starts with a space or ``▁`` (U+2581) starts a word
(so does the first token).  A word starts at its first token's timestamp and ends where the next
word starts; the last word ends at its last token's timestamp plus that token's duration (the
``durations`` list), else plus the median gap between consecutive token timestamps of the
utterance.  A streaming result's times are shifted by its ``start_time``.  When the tokens do not
group into the words of ``text`` (e.g. CJK text without spaces, where every token is a word), a
word per token is used if their counts agree; otherwise the hypothesis has no times.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterator

from ...core._budget import check_memory
from ...core.alternatives_network import Alternatives
from ...core.errors import FormatError, MismatchError
from ...core.files import read_text_lines
from .nbest import MAX_ENTRIES, READING, NbestHypothesis, make_nbest, optional_score, parse_json_line

__all__ = ["read_sherpa_nbest"]

_KEY_FIELDS = ("key", "wav", "filename")
_WORD_START = (" ", "\u2581")


def _word_times(words: tuple[str, ...], tokens: list, stamps: list, durations: list, offset: float = 0.0):
    """Per-word (starts, ends) from token timestamps, or ((), ()) when they cannot be grouped."""
    if not words or not stamps or len(stamps) != len(tokens):
        return (), ()
    groups: list[int] = []  # index of each word's first token
    for i, tok in enumerate(tokens):
        if i == 0 or tok.startswith(_WORD_START):
            if tok.strip(" \u2581"):
                groups.append(i)
            elif i == 0:
                groups.append(i)
    if len(groups) != len(words):
        if len(tokens) != len(words):
            return (), ()
        groups = list(range(len(tokens)))
    if durations and len(durations) == len(tokens):
        last_end = stamps[-1] + durations[-1]
    else:
        gaps = [b - a for a, b in zip(stamps[:-1], stamps[1:], strict=True) if b > a]
        last_end = stamps[-1] + (statistics.median(gaps) if gaps else 0.0)
    starts = tuple(offset + float(stamps[g]) for g in groups)
    ends = tuple(list(starts[1:]) + [offset + float(last_end)])
    return starts, ends


def _hypothesis(obj: dict, rank: int, path: str, lineno: int) -> NbestHypothesis:
    text = obj.get("text")
    if not isinstance(text, str):
        raise FormatError(f"hypothesis {rank} has no 'text' string", path=path, line=lineno)
    words = tuple(text.split())
    tokens = obj.get("tokens") or []
    stamps = obj.get("timestamps") or []
    durations = obj.get("durations") or []
    # offline results have ys_log_probs, streaming ones ys_probs (both: token log-probabilities)
    prob_field = "ys_log_probs" if obj.get("ys_log_probs") else "ys_probs"
    logprobs = obj.get(prob_field) or []
    for name, value in (("tokens", tokens), ("timestamps", stamps), ("durations", durations),
                        (prob_field, logprobs)):
        if not isinstance(value, list):
            raise FormatError(f"hypothesis {rank}: {name!r} must be a list", path=path, line=lineno)
    if not all(isinstance(t, str) for t in tokens):
        raise FormatError(f"hypothesis {rank}: 'tokens' must be strings", path=path, line=lineno)
    for name, value in (("timestamps", stamps), ("durations", durations), (prob_field, logprobs)):
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
            raise FormatError(f"hypothesis {rank}: {name!r} must be finite numbers", path=path, line=lineno)
    score = optional_score(obj, "score", path, lineno)
    if score is None and logprobs:
        score = math.fsum(logprobs)
    offset = optional_score(obj, "start_time", path, lineno) or 0.0
    starts, ends = _word_times(words, tokens, stamps, durations, offset)
    return NbestHypothesis(words, score, rank, starts, ends, path, lineno)


def read_sherpa_nbest(path: str, *, score_scale: float = 1.0) -> Iterator[Alternatives]:
    """N-best lists of a JSON-lines file of sherpa-onnx results (module docstring), one per line."""
    seen: set[str] = set()
    for lineno, line in read_text_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        check_memory(READING)
        obj = parse_json_line(line, path, lineno)
        key = next((obj[f] for f in _KEY_FIELDS if isinstance(obj.get(f), str) and obj[f]), None)
        if key is None:
            raise FormatError("each line needs the utterance's 'key' (or 'wav' / 'filename')", path=path, line=lineno)
        if key in seen:
            raise MismatchError(f"key {key!r} appears twice", path=path, line=lineno, key=key)
        seen.add(key)
        if "hypotheses" in obj:
            results = obj["hypotheses"]
            if not isinstance(results, list) or not results or not all(isinstance(r, dict) for r in results):
                raise FormatError("'hypotheses' must be a non-empty list of result objects", path=path,
                                  line=lineno, key=key)
            if len(results) > MAX_ENTRIES:
                raise FormatError(f"{len(results)} hypotheses (at most {MAX_ENTRIES})", path=path, line=lineno,
                                  key=key)
        else:
            results = [obj]
        hyps = [_hypothesis(r, i, path, lineno) for i, r in enumerate(results, 1)]
        kind = "none" if all(h.score is None for h in hyps) else "logprob"
        yield make_nbest(key, hyps, kind, score_scale=score_scale, source="sherpa")
