"""ESPnet N-best directories as N-best lists.

ESPnet's inference scripts (``espnet2/bin/asr_inference.py`` and siblings) write, for ``--nbest N``,
the directories ``1best_recog``, ``2best_recog``, ... ``Nbest_recog`` under the output directory
(``decode_*/<set>/logdir/output.<job>/``; the recipe also concatenates the jobs into
``decode_*/<set>/``).  In each, ``text``, ``token``, ``token_int`` and ``score`` are Kaldi-style
text tables, one ``utt-id value`` line per utterance (``DatadirWriter``); ``score`` holds
``str(hyp.score)``, the beam search's total log-probability as printed by torch
(``tensor(-12.3456)``, sometimes ``tensor(-12.3, device='cuda:0')``) or a plain number.

:func:`read_espnet_nbest` takes such an output directory, or a directory whose ``output.*``
sub-directories are (they are read in job order).  The hypotheses of an utterance are ranked by
their directory number; an utterance may be missing from the deeper directories (shorter lists).
Scores are log-probabilities; no times.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator

from ...core._budget import check_memory
from ...core.alternatives_network import Alternatives
from ...core.errors import FormatError, MismatchError
from ...core.files import read_text_lines
from .nbest import READING, NbestHypothesis, make_nbest

__all__ = ["read_espnet_nbest", "espnet_output_dirs"]

_RANK_DIR = re.compile(r"^([1-9][0-9]*)best_recog$")
_SCORE = re.compile(r"^\s*(?:tensor\(\s*)?([-+0-9.eEinfa]+)\s*(?:,[^)]*)?\)?\s*$")
_OUTPUT_DIR = re.compile(r"^output\.([0-9]+)$")


def _rank_dirs(directory: str) -> list[tuple[int, str]]:
    found = []
    for name in os.listdir(directory):
        m = _RANK_DIR.match(name)
        if m and os.path.isdir(os.path.join(directory, name)):
            found.append((int(m.group(1)), os.path.join(directory, name)))
    return sorted(found)


def espnet_output_dirs(directory: str) -> list[str]:
    """The output directories (with ``*best_recog`` inside) of ``directory``, in job order."""
    if not os.path.isdir(directory):
        raise FormatError("not a directory (expected an ESPnet decoding output directory)", path=directory)
    if _rank_dirs(directory):
        return [directory]
    jobs = sorted((int(m.group(1)), os.path.join(directory, name)) for name in os.listdir(directory)
                  if (m := _OUTPUT_DIR.match(name)) and os.path.isdir(os.path.join(directory, name)))
    dirs = [d for _, d in jobs if _rank_dirs(d)]
    if not dirs:
        raise FormatError("no 1best_recog/ directory here nor in output.*/ sub-directories", path=directory)
    return dirs


def _table(path: str, parse) -> dict[str, tuple]:
    """``utt-id value`` lines of a text table as {key: (parsed value, line)}."""
    table: dict[str, tuple] = {}
    for lineno, line in read_text_lines(path):
        if not lineno & 4095:  # the tables are held whole: the memory budget counts them as they grow
            check_memory(READING)
        if not line.strip():
            continue
        key, _, value = line.strip().partition(" ")
        if key in table:
            raise MismatchError(f"key {key!r} appears twice", path=path, line=lineno, key=key)
        table[key] = (parse(value.strip(), path, lineno), lineno)
    return table


def _parse_score(text: str, path: str, lineno: int) -> float:
    m = _SCORE.match(text)
    try:
        if m is None:
            raise ValueError
        value = float(m.group(1))
    except ValueError:
        raise FormatError(f"score {text!r} is neither a number nor tensor(number)", path=path, line=lineno) from None
    return value


def _one_output_dir(directory: str, score_scale: float) -> Iterator[Alternatives]:
    ranked = []
    for rank, sub in _rank_dirs(directory):
        text_path = os.path.join(sub, "text")
        score_path = os.path.join(sub, "score")
        if not os.path.isfile(text_path):
            raise FormatError("missing 'text' (the hypotheses' words)", path=sub)
        texts = _table(text_path, lambda v, p, n: tuple(v.split()))
        scores = _table(score_path, _parse_score) if os.path.isfile(score_path) else None
        if scores is not None and set(scores) != set(texts):
            extra = sorted(set(scores) ^ set(texts))[0]
            raise MismatchError(f"'text' and 'score' have different utterances (e.g. {extra!r})", path=sub, key=extra)
        ranked.append((rank, text_path, texts, scores))
    if ranked[0][0] != 1:
        raise FormatError("no 1best_recog/ directory", path=directory)
    first = ranked[0][2]
    for rank, text_path, texts, _ in ranked[1:]:
        missing = [k for k in texts if k not in first]
        if missing:
            raise MismatchError(f"utterance {missing[0]!r} is in {rank}best_recog but not in 1best_recog",
                                path=text_path, key=missing[0])
    for key in first:
        hyps = []
        for rank, text_path, texts, scores in ranked:
            if key not in texts:
                continue
            words, lineno = texts[key]
            score = None if scores is None else scores[key][0]
            hyps.append(NbestHypothesis(words, score, rank, (), (), text_path, lineno))
        kind = "none" if all(h.score is None for h in hyps) else "logprob"
        yield make_nbest(key, hyps, kind, score_scale=score_scale, source="espnet")


def read_espnet_nbest(directory: str, *, score_scale: float = 1.0) -> Iterator[Alternatives]:
    """N-best lists of an ESPnet decoding output directory (module docstring), one per utterance,
    in the order of ``1best_recog/text``."""
    seen: set[str] = set()
    for d in espnet_output_dirs(directory):
        for alts in _one_output_dir(d, score_scale):
            if alts.key in seen:
                raise MismatchError(f"utterance {alts.key!r} is in two output directories", path=d, key=alts.key)
            seen.add(alts.key)
            yield alts
