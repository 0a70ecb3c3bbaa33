"""NeMo beam-search predictions as N-best lists.

NeMo's CTC beam-search evaluation script (``scripts/asr_language_modeling/ngram_lm/
eval_beamsearch_ngram_ctc.py``, ``preds_output_folder=...``) writes, per grid point, a file
``preds_out_width{W}_alpha{A}_beta{B}.tsv``: for each utterance of the input manifest, in manifest
order, its beams best first, one ``text<TAB>score`` line per beam (``score`` is the hypothesis'
log-probability score, a number).  The file has no utterance ids: they come from the manifest (JSON
lines with ``audio_filepath``; the key of an utterance is its audio file name without extension),
and every utterance has ``W`` lines (the beam width, read from the file name unless given).

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
from .nbest import MAX_ENTRIES, READING, NbestHypothesis, make_nbest, parse_json_line

__all__ = ["read_nemo_nbest", "nemo_manifest_keys"]

_WIDTH = re.compile(r"preds_out_width([0-9]+)_")


def nemo_manifest_keys(manifest: str) -> list[str]:
    """The utterance keys of a NeMo manifest: each line's ``audio_filepath`` file name without extension."""
    keys: list[str] = []
    seen: set[str] = set()
    for lineno, line in read_text_lines(manifest):
        if not line.strip():
            continue
        obj = parse_json_line(line, manifest, lineno)
        path = obj.get("audio_filepath")
        if not isinstance(path, str) or not path:
            raise FormatError("missing 'audio_filepath'", path=manifest, line=lineno)
        key = os.path.splitext(os.path.basename(path))[0]
        if key in seen:
            raise MismatchError(f"two utterances have the key {key!r}", path=manifest, line=lineno, key=key)
        seen.add(key)
        keys.append(key)
    return keys


def read_nemo_nbest(path: str, manifest: str, *, beam_width: int | None = None,
                    score_scale: float = 1.0) -> Iterator[Alternatives]:
    """N-best lists of a NeMo ``preds_out_width*.tsv`` file with its manifest (module docstring)."""
    if beam_width is None:
        m = _WIDTH.search(os.path.basename(str(path)))
        if m is None:
            raise FormatError("cannot read the beam width from the file name (preds_out_width<W>_...); give it",
                              path=path)
        beam_width = int(m.group(1))
    if not 1 <= beam_width <= MAX_ENTRIES:
        raise FormatError(f"beam width {beam_width} out of 1..{MAX_ENTRIES}", path=path)
    keys = nemo_manifest_keys(manifest)
    hyps: list[NbestHypothesis] = []
    utt = 0
    for lineno, line in read_text_lines(path):
        text, tab, score_text = line.rpartition("\t")
        if not tab:
            raise FormatError("expected 'text<TAB>score'", path=path, line=lineno)
        try:
            score = float(score_text.strip().removeprefix("tensor(").removesuffix(")"))
        except ValueError:
            raise FormatError(f"score {score_text!r} is not a number", path=path, line=lineno) from None
        if utt >= len(keys):
            raise MismatchError(f"more lines than {len(keys)} utterances x {beam_width} beams of the manifest",
                                path=path, line=lineno)
        if not len(hyps) & 1023:
            check_memory(READING, keys[utt])
        hyps.append(NbestHypothesis(tuple(text.split()), score, len(hyps) + 1, (), (), path, lineno))
        if len(hyps) == beam_width:
            yield make_nbest(keys[utt], hyps, "logprob", score_scale=score_scale, source="nemo")
            hyps, utt = [], utt + 1
    if hyps or utt != len(keys):
        raise MismatchError(f"{utt * beam_width + len(hyps)} lines for {len(keys)} utterances x {beam_width} beams "
                            "of the manifest", path=path)
