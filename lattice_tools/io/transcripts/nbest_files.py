"""One entry point for every N-best format: :func:`read_nbest` dispatches on ``format``.

==========================  =========  ==============================================
input                       format     module
==========================  =========  ==============================================
``*.tsv`` (+ ``.gz``)       tsv        :mod:`lattice_tools.io.transcripts.nbest` (generic)
``*.jsonl`` / ``*.json``    jsonl      :mod:`lattice_tools.io.transcripts.nbest` (generic)
  (lines of sherpa results) sherpa     :mod:`lattice_tools.io.transcripts.nbest_sherpa`
a directory                 espnet     :mod:`lattice_tools.io.transcripts.nbest_espnet`
``ark:``/``scp:``, ``*.ark``  kaldi    :mod:`lattice_tools.io.transcripts.nbest_kaldi`
``preds_out_width*.tsv``    nemo       :mod:`lattice_tools.io.transcripts.nbest_nemo` (with its manifest)
==========================  =========  ==============================================

A JSON-lines file is read as sherpa-onnx results when its first object has ``hypotheses``,
``tokens``, ``ys_log_probs`` or ``ys_probs``; give ``format`` to override any guess.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator

from ...core.alternatives_network import Alternatives
from ...core.errors import FormatError
from ...core.files import read_text_lines
from ...core.symbols import SymbolTable
from .nbest import SCORE_KINDS, read_nbest_jsonl, read_nbest_tsv

__all__ = ["NBEST_FORMATS", "guess_nbest_format", "read_nbest"]

NBEST_FORMATS = ("tsv", "jsonl", "sherpa", "espnet", "kaldi", "nemo")
_SHERPA_FIELDS = ("hypotheses", "tokens", "ys_log_probs", "ys_probs")


def _first_object(path: str) -> dict | None:
    for _, line in read_text_lines(path):
        if line.strip() and not line.startswith("#"):
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                return None
            return obj if isinstance(obj, dict) else None
    return None


def guess_nbest_format(spec: str) -> str:
    """The N-best format of ``spec`` (module table), or FormatError saying to pass ``format``."""
    s = str(spec)
    head = s.split(":", 1)[0].split(",")
    if ":" in s and {"ark", "scp"} & set(head):
        return "kaldi"
    if os.path.isdir(s):
        return "espnet"
    base = s[:-3] if s.endswith(".gz") else s
    if base.endswith((".ark", ".scp")):
        return "kaldi"
    if base.endswith(".tsv"):
        return "nemo" if os.path.basename(base).startswith("preds_out_width") else "tsv"
    if base.endswith((".jsonl", ".json")):
        obj = _first_object(s)
        return "sherpa" if obj is not None and any(f in obj for f in _SHERPA_FIELDS) else "jsonl"
    raise FormatError(f"cannot tell the N-best format from the name; give it (one of {', '.join(NBEST_FORMATS)})",
                      path=s)


def read_nbest(spec: str, format: str | None = None, *, score_kind: str = "logprob", score_scale: float = 1.0,
               symbols: SymbolTable | str | None = None, acoustic_scale: float = 1.0,
               frame_shift: float = 0.01, nemo_manifest: str | None = None) -> Iterator[Alternatives]:
    """Yield the N-best lists of ``spec`` one utterance at a time (``Alternatives`` of kind ``nbest``).

    Args:
      format: one of :data:`NBEST_FORMATS`; guessed when None.
      score_kind: what the generic formats' scores are (``logprob``, ``cost``); the other formats
        know theirs (sherpa, ESPnet: log-probabilities; Kaldi: costs).
      score_scale: posteriors are ``softmax(score_scale * log-probability)`` (see io/nbest.py).
      symbols: Kaldi's ``words.txt`` (kaldi only).
      acoustic_scale: weight of the acoustic cost in a Kaldi path's cost (kaldi only).
      frame_shift: seconds per frame (kaldi only).
      nemo_manifest: the NeMo manifest whose utterances the predictions are (nemo only).
    """
    fmt = format or guess_nbest_format(spec)
    if fmt not in NBEST_FORMATS:
        raise FormatError(f"unknown N-best format {fmt!r} (expected one of {', '.join(NBEST_FORMATS)})")
    if score_kind not in SCORE_KINDS:
        raise FormatError(f"unknown score kind {score_kind!r} (expected one of {', '.join(SCORE_KINDS)})")
    if fmt == "tsv":
        yield from read_nbest_tsv(spec, score_kind=score_kind, score_scale=score_scale)
    elif fmt == "jsonl":
        yield from read_nbest_jsonl(spec, score_kind=score_kind, score_scale=score_scale)
    elif fmt == "sherpa":
        from .nbest_sherpa import read_sherpa_nbest

        yield from read_sherpa_nbest(spec, score_scale=score_scale)
    elif fmt == "nemo":
        from .nbest_nemo import read_nemo_nbest

        if not nemo_manifest:
            raise FormatError("NeMo predictions have no utterance ids: give the manifest (--nemo-manifest)", path=spec)
        yield from read_nemo_nbest(spec, nemo_manifest, score_scale=score_scale)
    elif fmt == "espnet":
        from .nbest_espnet import read_espnet_nbest

        yield from read_espnet_nbest(spec, score_scale=score_scale)
    else:
        from .nbest_kaldi import read_kaldi_nbest

        yield from read_kaldi_nbest(spec, symbols, acoustic_scale=acoustic_scale, score_scale=score_scale,
                                    frame_shift=frame_shift)
