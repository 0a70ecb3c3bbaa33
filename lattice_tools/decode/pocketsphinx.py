"""Decode speech into SLF lattices and a 1-best CTM with pocketsphinx (offline, bundled en-us model).

For each audio file: read 16 kHz mono 16-bit samples (stdlib ``wave`` for such WAV files; any
other file or rate is converted with the ``sox`` binary), decode one utterance, call
``decoder.hyp()`` *before* ``decoder.get_lattice()`` (otherwise pocketsphinx leaves every link
posterior at 1, see ``docs/formats.md``), write the lattice with ``write_htk`` to
``out_dir/<key>.lat`` (atomically) and read it back as a hub :class:`Lattice` (pocketsphinx SLF
variant: words on nodes, node time = word start).  The 1-best CTM uses ``decoder.seg()``
(pocketsphinx's Viterbi 1-best, which is not the same as the MAP sequence under the lattice
posteriors) with the segment posterior as confidence; fillers (``<s>``, ``</s>``, ``<sil>``,
``[NOISE]``, ``++...++``) are dropped and pronunciation variants ``word(2)`` become ``word``.

Density knobs (pocketsphinx options, passed through): ``beam``, ``wbeam``, ``pbeam`` (wider =
smaller number, e.g. 1e-80), ``lw`` (language weight), ``fwdflat`` and ``bestpath`` (search
passes), ``maxhmmpf``; any other option via ``config``.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import wave
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.errors import FormatError, MismatchError, MissingDependencyError
from ..core.files import discard_temporary, make_temporary, output_mode, remove_stale_temporaries
from ..core.lattice import Lattice
from ..core.symbols import SymbolTable

SAMPLE_RATE = 16000
_VARIANT = re.compile(r"\(\d+\)$")


def bundled_corpus_dir(corpus: str = "librivox") -> str:
    """The folder of a bundled corpus (``librivox`` or ``cards``) in the package's ``data/``: its recordings
    and ``transcription.trn``."""
    base = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", corpus)
    if not os.path.isdir(base):
        raise FormatError(f"no bundled corpus {corpus!r} (expected 'librivox' or 'cards')", path=base)
    return base


def bundled_audio(corpus: str = "librivox") -> list[str]:
    """Paths of the bundled recordings (``librivox`` or ``cards``), sorted."""
    base = bundled_corpus_dir(corpus)
    return sorted(os.path.join(base, f) for f in os.listdir(base) if f.endswith(".wav"))


def is_filler(word: str) -> bool:
    """pocketsphinx non-words: ``<s>``, ``</s>``, ``<sil>``, ``[NOISE]``, ``++GARBAGE++``..."""
    return word.startswith(("<", "[", "++")) or word in ("!NULL", "!SENT_START", "!SENT_END")


def audio_paths(paths: Sequence[str] | str) -> list[str]:
    """The audio files of ``paths``: a list of files, one file, or a directory (its ``.wav``/``.flac``
    files, sorted by name; FormatError when it has none)."""
    if isinstance(paths, (str, os.PathLike)):
        p = os.fspath(paths)
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p) if f.lower().endswith((".wav", ".flac")))
            if not found:
                raise FormatError("directory has no .wav or .flac files", path=p)
            return found
        return [p]
    return [os.fspath(p) for p in paths]


def utterance_keys(paths: Sequence[str]) -> list[str]:
    """The utterance key of each audio file (its name without extension); MismatchError when two files
    give the same key."""
    keys = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    seen: dict[str, str] = {}
    for k, p in zip(keys, paths, strict=True):
        if k in seen:
            raise MismatchError(f"two inputs have the same utterance key ({seen[k]} and {p})", key=k)
        seen[k] = p
    return keys


def load_audio(path: str) -> bytes:
    """16 kHz mono signed 16-bit little-endian samples of ``path`` as raw bytes.

    16 kHz mono 16-bit WAV files are read with the stdlib; anything else (other rates, stereo,
    FLAC, ...) is converted by ``sox``.  FormatError when the file cannot be read or converted.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FormatError("audio file does not exist", path=path)
    if path.lower().endswith(".wav"):
        try:
            with wave.open(path, "rb") as w:
                if (w.getframerate(), w.getnchannels(), w.getsampwidth(), w.getcomptype()) == (SAMPLE_RATE, 1, 2, "NONE"):
                    return w.readframes(w.getnframes())
        except (wave.Error, EOFError) as exc:
            if not shutil.which("sox"):
                raise FormatError(f"cannot read WAV file ({exc})", path=path) from None
    sox = shutil.which("sox")
    if sox is None:
        raise MissingDependencyError(f"{path}: not a 16 kHz mono 16-bit WAV file and the 'sox' program is not "
                                     "installed to convert it (apt-get install sox libsox-fmt-all)")
    proc = subprocess.run([sox, "-V1", path, "-t", "raw", "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16",
                           "-e", "signed-integer", "-L", "-"], capture_output=True)
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise FormatError(f"sox cannot convert this file: {msg[-1] if msg else 'exit ' + str(proc.returncode)}",
                          path=path)
    return proc.stdout


def _decoder(model: str | None, lm: str | None, dictionary: str | None, options: dict):
    from ..core._optional import pocketsphinx

    ps = pocketsphinx()
    kwargs = {"loglevel": "FATAL"}
    if model is not None:
        if not os.path.isdir(model):
            raise FormatError("acoustic model directory does not exist", path=model)
        kwargs["hmm"] = model
    if lm is not None:
        kwargs["lm"] = lm
    if dictionary is not None:
        kwargs["dict"] = dictionary
    kwargs.update({k: v for k, v in options.items() if v is not None})
    try:
        return ps.Decoder(**kwargs)
    except (RuntimeError, ValueError, KeyError) as exc:
        raise FormatError(f"pocketsphinx rejected the configuration {kwargs}: {exc}") from None


@dataclass(frozen=True)
class _DecodeJob:
    """What decoding one file depends on (sent to the workers with each file)."""

    model: str | None
    lm: str | None
    dictionary: str | None
    options: tuple                      # sorted (name, value) pairs
    out_dir: str
    independent: bool


_shared_decoder: dict = {}   # independent=False: the one decoder of this process, by job


def _decode_file(job: _DecodeJob, items) -> tuple:
    """Decode one audio file into ``out_dir/<key>.lat``; returns ``(frames per second, 1-best segments)``."""
    ((key, path),) = items
    audio = load_audio(path)
    if not audio:
        raise FormatError("audio file has no samples", path=path)
    if job.independent:
        decoder = _decoder(job.model, job.lm, job.dictionary, dict(job.options))
    else:
        decoder = _shared_decoder.get(job) or _shared_decoder.setdefault(
            job, _decoder(job.model, job.lm, job.dictionary, dict(job.options)))
    decoder.start_utt()
    decoder.process_raw(audio, full_utt=True)
    decoder.end_utt()
    hyp = decoder.hyp()  # must precede get_lattice(): it computes the link posteriors
    if hyp is None:
        raise FormatError("pocketsphinx found no hypothesis for this file", path=path, key=key)
    segs = [(s.word, s.start_frame, s.end_frame, s.prob) for s in decoder.seg()]
    lat_ps = decoder.get_lattice()
    out_path = os.path.join(job.out_dir, key + ".lat")
    remove_stale_temporaries(out_path)
    fd, tmp = make_temporary(out_path)
    try:
        os.fchmod(fd, output_mode(out_path))
        os.close(fd)
        lat_ps.write_htk(tmp)
        os.replace(tmp, out_path)
        discard_temporary(tmp, remove=False)
    finally:
        discard_temporary(tmp, remove=os.path.exists(tmp))
    return int(decoder.config["frate"]), segs


def _audio_fingerprint(path: str, job: _DecodeJob) -> str:
    h = hashlib.sha256(repr(job).encode())
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def decode_audio(paths: Sequence[str] | str | None = None, *, out_dir: str, ctm: str | None = None,
                 model: str | None = None, lm: str | None = None, dictionary: str | None = None,
                 beam: float | None = None, wbeam: float | None = None, pbeam: float | None = None,
                 lw: float | None = None, fwdflat: bool | None = None, bestpath: bool | None = None,
                 maxhmmpf: int | None = None, config: dict | None = None, channel: str = "1",
                 progress: bool | None = None, independent: bool = True, executor=None,
                 shard_dir: str | None = None) -> list[Lattice]:
    """Decode audio files into SLF lattices (``out_dir/<key>.lat``) and an optional 1-best CTM.

    Args:
      paths: audio files (or one path, or a directory of ``.wav``/``.flac``); ``None`` = the
        bundled LibriVox clips.  The key of each utterance is its file name without extension.
      out_dir: directory for the SLF files (created if needed).
      ctm: path of a CTM file for the 1-best words (``key channel start dur word confidence``).
      model, lm, dictionary: pocketsphinx acoustic model directory, language model, dictionary
        (default: the en-us model bundled with the pocketsphinx wheel).
      beam, wbeam, pbeam, lw, fwdflat, bestpath, maxhmmpf: pocketsphinx search options; wider
        beams (smaller values) give denser lattices.
      config: any other pocketsphinx options (name without the leading dash).
      progress: show a progress bar (default: when stderr is a terminal).
      independent: decode every file with a freshly loaded decoder (default).  pocketsphinx adapts
        state such as its live cepstral mean from one utterance to the next, so the same file gives
        a different lattice after other files; fresh decoders make each output depend on its own
        audio only (and parallel jobs byte-identical to one job), at ~0.5 s of model loading per
        file.  ``False`` reuses one decoder (faster, order-dependent; not with ``executor``).
      executor: None decodes here; a :class:`concurrent.futures.Executor` or a ``dask.distributed.Client``
        decodes one file per task on its workers (:mod:`lattice_tools.core.parallel`; ``out_dir`` must be on a
        file system they share): the same files, byte for byte.
      shard_dir: decoded files are noted there, so that a killed run started again decodes only the rest.
    Returns:
      The lattices (pocketsphinx SLF variant read back with :func:`read_slf`), in input order,
      sharing one word table (the last lattice's ``symbols`` holds every word).
    Raises:
      FormatError for unreadable audio, MismatchError for two inputs with the same key.
    """
    from tqdm import tqdm

    from ..core.parallel import Shard, ShardStore, run_shards
    from ..io.lattices.slf import read_slf
    from ..io.transcripts.ctm import CtmWord, write_ctm

    paths = audio_paths(bundled_audio("librivox") if paths is None else paths)
    keys = utterance_keys(paths)
    if executor is not None and not independent:
        raise MismatchError("decoding on several workers needs a fresh decoder per file (independent=True, "
                            "the command line's --independent): a shared decoder's output depends on file order")
    options = {"beam": beam, "wbeam": wbeam, "pbeam": pbeam, "lw": lw, "fwdflat": fwdflat, "bestpath": bestpath,
               "maxhmmpf": maxhmmpf, **(config or {})}
    _decoder(model, lm, dictionary, options)  # the model and options are checked here, before any work
    job = _DecodeJob(model, lm, dictionary, tuple(sorted(options.items())), out_dir, independent)
    os.makedirs(out_dir, exist_ok=True)
    store = ShardStore(shard_dir) if shard_dir else None
    shards = (Shard(i, ((key, path),), (key,), _audio_fingerprint(path, job) if store else "")
              for i, (key, path) in enumerate(zip(keys, paths, strict=True)))
    lattices: list[Lattice] = []
    ctm_words: list = []
    symbols = SymbolTable()
    with tqdm(total=len(keys), desc="decode", unit="utt", disable=None if progress is None else not progress) as bar:
        for shard, (frate, segs) in run_shards(_decode_file, shards, executor=executor, args=(job,), store=store,
                                               progress=lambda s: bar.update(1)):
            key = shard.keys[0]
            # one growing word table for all files, so a word has the same id in every lattice
            lat = read_slf(os.path.join(out_dir, key + ".lat"), symbols=symbols, frame_shift=1.0 / frate, key=key)
            symbols = lat.symbols
            lattices.append(lat)
            for word, sf, ef, prob in segs:
                if is_filler(word):
                    continue
                ctm_words.append(CtmWord(key, channel, round(sf / frate, 2), round((ef - sf + 1) / frate, 2),
                                         _VARIANT.sub("", word), round(float(prob), 4)))
    _shared_decoder.clear()
    if store:
        store.remove()
    if ctm is not None:
        write_ctm(ctm, ctm_words)
    return lattices
