"""Reference word times by forced alignment with pocketsphinx (its word-level alignment mode).

For each audio file and its transcript: ``decoder.set_align_text(words)`` turns the decoder into a
one-sentence grammar (the words in order, optional silence before and after), the audio is decoded
once, and ``decoder.seg()`` gives the frames of every word.  The result is a reference CTM
(``key channel start dur word``) or an RTTM (LEXEME lines, one SPEAKER turn per utterance), the
reference occurrences F4DE KWSEval and ``lattice-tools kws score`` need, and an ECF covering each
file entirely.

Conventions:

* the utterance key of a file is its name without extension; the transcript is a NIST trn file
  (``words (key)``) or a Kaldi ``text`` file (``key words``), told apart by the first line;
* words are aligned as written, lowercased (the bundled en-us dictionary is lowercase);
  pronunciation variants (``was(2)``) are reported as the word (``was``);
* silence (``<sil>``) is optional between words, so pauses are not counted in the words' times.
  When that search ends before the last word (pocketsphinx then returns its best partial path, or
  none), the words are aligned once more without silences between them (``fsgusefiller`` off), then
  also with wider beams (``_ATTEMPTS``): pauses are then part of the words
  (``AlignedUtterance.with_silences`` is False);
* pocketsphinx's alignment always finds *some* path, even for the wrong text (it stretches a few
  words and calls the rest silence).  So each file is also decoded freely (the language model
  search, as ``lattice-tools decode`` does), and the alignment is refused when it puts silence over
  more than ``max_unaligned_speech`` seconds (0.5 by default) of consecutive words the free decoder
  heard: speech the transcript does not cover (``check=False`` skips this second decode).

Errors are named, never silent: a transcript word missing from the pronunciation dictionary
(:class:`~lattice_tools.core.errors.SymbolError`, all such words listed), an audio file without a
transcript or a transcript without audio (:class:`~lattice_tools.core.errors.MismatchError`), an empty
transcript, and audio that cannot be aligned to its text (pocketsphinx finds no path through the
grammar, e.g. the wrong transcript or truncated audio: :class:`~lattice_tools.core.errors.FormatError`
naming the file).
"""
from __future__ import annotations

import difflib
import os
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..core.errors import FormatError, MismatchError, SymbolError
from .pocketsphinx import SAMPLE_RATE, _decoder, audio_paths, is_filler, load_audio, utterance_keys

_VARIANT = re.compile(r"\(\d+\)$")
#: The alignment searches tried in turn until one reaches the last word: (optional silences between
#: the words?, beams).  Measured on the 47 espeak-ng sentences of egs/kws_synth: 22 align at the
#: first attempt, 25 need the grammar without silences (utt035 also the wider beams).
_ATTEMPTS: tuple[tuple[bool, dict[str, float]], ...] = ((True, {}), (False, {}), (False, {"beam": 1e-80, "wbeam": 1e-60, "pbeam": 1e-80}))


@dataclass(frozen=True)
class AlignedWord:
    """One reference word: utterance ``key``, start and duration in seconds, the word."""

    key: str
    start: float
    dur: float
    word: str


@dataclass(frozen=True)
class AlignedUtterance:
    key: str
    path: str
    duration: float  # seconds of audio
    words: tuple[AlignedWord, ...]
    #: False when the words were aligned without silences between them (the second attempt)
    with_silences: bool = True


def read_transcripts(path: str, encoding: str = "utf-8") -> dict[str, str]:
    """``key -> text`` from a NIST trn file (``words (key)``), a Kaldi ``text`` file (``key words``) or an STM
    (keyed by recording file), read as ``score`` reads a reference (:mod:`lattice_tools.scoring.inputs`: the one
    format detection, an empty file refused; a key given twice with different words is a MismatchError
    naming both lines)."""
    from ..scoring.inputs import read_reference, reference_transcripts

    return reference_transcripts(read_reference(path, encoding=encoding))


def align_audio(paths: Sequence[str] | str, transcripts: Mapping[str, str] | str, *, model: str | None = None,
                dictionary: str | None = None, encoding: str = "utf-8",
                config: dict | None = None, check: bool = True,
                max_unaligned_speech: float = 0.5) -> list[AlignedUtterance]:
    """Align every audio file of ``paths`` to its transcript; word times in seconds.

    Args:
      paths: audio files, one file, or a directory of ``.wav``/``.flac`` (16 kHz mono WAV read
        directly, anything else converted by sox); key = file name without extension.
      transcripts: ``key -> text``, or the path of a trn / Kaldi text file (:func:`read_transcripts`).
        Every audio key needs a transcript (other transcripts are ignored).
      model, dictionary: pocketsphinx acoustic model directory and pronunciation dictionary (default:
        the en-us model and CMUdict of the pocketsphinx wheel).
      config: other pocketsphinx options (name without the leading dash).
      check, max_unaligned_speech: refuse alignments that leave speech uncovered (module docstring).
    Returns:
      One :class:`AlignedUtterance` per file, in input order; every transcript word is aligned.
    Raises:
      SymbolError (words not in the dictionary), MismatchError (keys), FormatError (unreadable
      audio, empty transcript, audio that cannot be aligned to its transcript).
    """
    paths = audio_paths(paths)
    if isinstance(transcripts, (str, os.PathLike)):
        transcripts = read_transcripts(os.fspath(transcripts), encoding)
    keys = utterance_keys(paths)
    missing = [k for k in keys if k not in transcripts]
    if missing:
        raise MismatchError(f"{len(missing)} audio file(s) without a transcript: {' '.join(missing[:10])}",
                            key=missing[0])
    decoder = _decoder(model, None, dictionary, dict(config or {}))
    frate = int(decoder.config["frate"])
    texts = {k: [w.lower() for w in transcripts[k].split()] for k in keys}
    oov = sorted({w for k in keys for w in texts[k] if decoder.lookup_word(w) is None})
    if oov:
        raise SymbolError(f"{len(oov)} transcript word(s) not in the pronunciation dictionary: {' '.join(oov[:20])} "
                          "(add them with --dictionary)", key=next(k for k in keys if set(texts[k]) & set(oov)))
    out = []
    for key, path in zip(keys, paths, strict=True):
        words = texts[key]
        if not words:
            raise FormatError("the transcript is empty: nothing to align", key=key)
        audio = load_audio(path)
        if not audio:
            raise FormatError("audio file has no samples", path=path)
        aligned, segs = [], []
        # see _ATTEMPTS: pocketsphinx sometimes ends a search before the last word (it then returns
        # its best partial path, or none)
        for fillers, beams in _ATTEMPTS:
            segs = _align_once(model, dictionary, {**(config or {}), **beams}, audio, words, fillers, path, key)
            aligned = [AlignedWord(key, round(s.start_frame / frate, 2), round((s.end_frame - s.start_frame + 1) / frate, 2),
                                   _VARIANT.sub("", s.word)) for s in segs if not is_filler(s.word)]
            if [w.word for w in aligned] == words:
                break
        if [w.word for w in aligned] != words:
            raise FormatError(f"the audio cannot be aligned to its transcript ({len(words)} words; pocketsphinx "
                              "found no path through them: wrong transcript, or audio cut short?)", path=path, key=key)
        if check:
            _check_coverage(model, dictionary, config, audio, segs, frate, max_unaligned_speech, path, key)
        out.append(AlignedUtterance(key, path, len(audio) / 2 / SAMPLE_RATE, tuple(aligned), fillers))
    return out


def _align_once(model, dictionary, config, audio: bytes, words: list[str], fillers: bool, path: str, key: str) -> list:
    # a fresh decoder per file: pocketsphinx carries its cepstral mean from one utterance to the
    # next, so the times of a file would otherwise depend on the files aligned before it
    decoder = _decoder(model, None, dictionary, {**(config or {}), "fsgusefiller": fillers})
    try:
        decoder.set_align_text(" ".join(words))
    except RuntimeError as exc:
        raise FormatError(f"pocketsphinx cannot build the alignment grammar ({exc})", path=path, key=key) from None
    decoder.start_utt()
    decoder.process_raw(audio, full_utt=True)
    decoder.end_utt()
    return [] if decoder.hyp() is None else list(decoder.seg())


def _check_coverage(model, dictionary, config, audio: bytes, segs, frate: int, max_unaligned_speech: float,
                    path: str, key: str) -> None:
    """FormatError if the alignment ``segs`` calls silence over more than ``max_unaligned_speech``
    seconds of consecutive words that a free decode of ``audio`` finds."""
    import numpy as np

    n = len(audio) // 2 * frate // SAMPLE_RATE + 2
    covered = np.zeros(n, dtype=bool)
    for s in segs:
        if not is_filler(s.word):
            covered[s.start_frame:s.end_frame + 1] = True
    free = _decoder(model, None, dictionary, dict(config or {}))
    free.start_utt()
    free.process_raw(audio, full_utt=True)
    free.end_utt()
    if free.hyp() is None:
        return
    heard = [(_VARIANT.sub("", s.word), s.start_frame, s.end_frame) for s in free.seg() if not is_filler(s.word)]
    speech = np.zeros(n, dtype=bool)
    for _, a, b in heard:
        speech[a:b + 1] = True
    gap = speech & ~covered
    # longest run of heard-but-unaligned frames
    edges = np.flatnonzero(np.diff(np.r_[0, gap.astype(np.int8), 0]))
    if not len(edges):
        return
    runs = edges.reshape(-1, 2)
    lengths = runs[:, 1] - runs[:, 0]
    i = int(lengths.argmax())
    if lengths[i] / frate > max_unaligned_speech:
        a, b = int(runs[i, 0]), int(runs[i, 1])
        words = " ".join(w for w, s, e in heard if s < b and e >= a)
        raise FormatError(f"the audio cannot be aligned to its transcript: from {a / frate:.2f} s to {b / frate:.2f} s "
                          f"the decoder hears {words!r} where the alignment has only silence (wrong or incomplete "
                          f"transcript?)", path=path, key=key)


def write_alignment(utterances: Iterable[AlignedUtterance], *, ctm: str | None = None, rttm: str | None = None,
                    ecf: str | None = None, channel: str = "1", language: str = "english",
                    source_type: str = "bnews") -> None:
    """Write aligned references: a CTM (``key channel start dur word``), an RTTM (one SPEAKER turn
    from the first word's start to the last word's end, then a LEXEME line per word; speaker =
    ``key``), and an ECF with one excerpt per file covering all of its audio.  Each file is written
    atomically."""
    from ..io.keyword_search.ecf import Ecf, EcfExcerpt, write_ecf
    from ..io.keyword_search.rttm import RttmRecord, write_rttm
    from ..io.transcripts.ctm import CtmWord, write_ctm

    utts = list(utterances)
    if ctm is not None:
        write_ctm(ctm, [CtmWord(w.key, channel, w.start, w.dur, w.word, None) for u in utts for w in u.words])
    if rttm is not None:
        recs = []
        for u in utts:
            if u.words:
                t0, t1 = u.words[0].start, u.words[-1].start + u.words[-1].dur
                recs.append(RttmRecord("SPEAKER", u.key, channel, t0, round(t1 - t0, 2), speaker=u.key))
            recs.extend(RttmRecord("LEXEME", u.key, channel, w.start, w.dur, w.word, "lex", u.key) for w in u.words)
        write_rttm(rttm, recs)
    if ecf is not None:
        excerpts = tuple(EcfExcerpt(os.path.basename(u.path), channel, 0.0, round(u.duration, 3), source_type)
                         for u in utts)
        write_ecf(ecf, Ecf(excerpts, round(sum(e.dur for e in excerpts), 3), language))


def audio_duration(path: str) -> float:
    """Seconds of audio in ``path`` (WAV header; other formats are converted by sox and counted)."""
    import wave

    if path.lower().endswith(".wav"):
        try:
            with wave.open(path, "rb") as w:
                return w.getnframes() / w.getframerate()
        except (wave.Error, EOFError, OSError):
            pass
    return len(load_audio(path)) / 2 / SAMPLE_RATE


def ecf_for_audio(paths: Sequence[str] | str, *, channel: str = "1", language: str = "english",
                  source_type: str = "bnews"):
    """An ECF (:class:`~lattice_tools.io.keyword_search.ecf.Ecf`) with one excerpt per audio file covering all of it."""
    from ..io.keyword_search.ecf import Ecf, EcfExcerpt

    paths = audio_paths(paths)
    excerpts = tuple(EcfExcerpt(os.path.basename(p), channel, 0.0, round(audio_duration(p), 3), source_type)
                     for p in paths)
    return Ecf(excerpts, round(sum(e.dur for e in excerpts), 3), language)


def ctm_word_times(path: str, encoding: str = "utf-8") -> list[tuple[str, float, float, str]]:
    """``(file, start, duration, word)`` of the CTM's words that have both times (a ``*`` start or duration
    leaves a word out): the timings :func:`word_time_agreement` compares."""
    from ..io.transcripts.ctm import CtmWord, read_ctm

    return [(w.file, w.start, w.duration, w.word) for w in read_ctm(path, encoding)
            if isinstance(w, CtmWord) and w.start is not None and w.duration is not None]


def word_time_agreement(reference: Iterable[tuple[str, float, float, str]],
                        hypothesis: Iterable[tuple[str, float, float, str]]) -> dict:
    """How well two word timings agree where their words agree (e.g. the forced alignment against
    the decoder's 1-best): per utterance key, the longest matching word blocks of the two sequences
    (difflib) pair words; for each pair, the difference of start times and of end times.

    Both inputs are ``(key, start, dur, word)`` tuples.  Returns ``{"pairs", "reference_words", "start_abs_median",
    "start_abs_p90", "start_abs_max", "end_abs_median", "end_abs_max"}`` (seconds)."""
    by_ref: dict[str, list] = {}
    by_hyp: dict[str, list] = {}
    for key, s, d, w in reference:
        by_ref.setdefault(key, []).append((s, d, w))
    for key, s, d, w in hypothesis:
        by_hyp.setdefault(key, []).append((s, d, w))
    dstart, dend = [], []
    for key, ref in by_ref.items():
        hyp = sorted(by_hyp.get(key, []))
        ref = sorted(ref)
        sm = difflib.SequenceMatcher(a=[w for _, _, w in ref], b=[w for _, _, w in hyp], autojunk=False)
        for blk in sm.get_matching_blocks():
            for i in range(blk.size):
                (rs, rd, _), (hs, hd, _) = ref[blk.a + i], hyp[blk.b + i]
                dstart.append(abs(rs - hs))
                dend.append(abs((rs + rd) - (hs + hd)))
    n_ref = sum(map(len, by_ref.values()))
    if not dstart:
        return {"pairs": 0, "reference_words": n_ref}
    q = sorted(dstart)
    return {"pairs": len(dstart), "reference_words": n_ref, "start_abs_median": statistics.median(dstart),
            "start_abs_p90": round(q[min(len(q) - 1, int(0.9 * len(q)))], 6), "start_abs_max": max(dstart),
            "end_abs_median": statistics.median(dend), "end_abs_max": max(dend)}


__all__ = ["AlignedWord", "AlignedUtterance", "align_audio", "write_alignment", "read_transcripts",
           "ctm_word_times", "word_time_agreement", "audio_duration", "ecf_for_audio"]
