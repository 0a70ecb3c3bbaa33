"""Lattice inputs as every command takes them: several specs, one word table, one frame shift.

:func:`read_lattice_inputs` is what ``info``, ``convert``, ``nbest``, ``sausage``, ``phrases``,
``oracle`` and ``study`` read lattices with, so that they all accept the same things:

* several inputs (files, SLF directories, Kaldi rspecifiers such as ``ark:gunzip -c lat.1.gz|``,
  k2 ``.pt`` files), read in order, one lattice at a time;
* one word table (``--words words.txt``) for the ids of Kaldi/OpenFst/k2 lattices; SLF inputs share
  one growing table across *all* inputs, so a word has one id in every lattice (what a Kaldi
  archive or k2 file written from them needs, and what ``convert --write-words`` writes);
* one time base: ``frame_shift`` seconds per input frame times ``frame_subsampling_factor``
  (Kaldi's option name).  Defaults: 0.01 s for Kaldi/OpenFst/SLF (10 ms features), 0.04 s for k2
  files (icefall: 10 ms x subsampling 4).  Kaldi chain models write lattices at the subsampled
  rate: pass ``--frame-subsampling-factor 3`` (0.03 s per lattice frame) or their times -- and the
  STM segment each word is assigned to -- are three times too small;
* keys unique across all inputs (the same lattice given twice would be scored twice), each one field
  (no whitespace: it would split every CTM, STM and archive line);
* optionally, the keys from a file (``keys``, ``--keys FILE``: one key per line, in input order, as many
  as there are lattices), e.g. icefall cut ids for the lattices of a k2 ``.pt`` file, which are
  otherwise numbered ``0, 1, ...`` by position.
* Kaldi's idioms: a glob inside an rspecifier or its pipe (``"ark:gunzip -c exp/tri3/decode_dev/lat.*.gz|"``,
  which Kaldi's shell would expand; lattice-tools runs no shell and expands it itself, in job-number
  order: lat.2 before lat.10), a quoted glob of files, and a decode directory (``exp/tri3/decode_dev/``:
  its ``lat.*.gz``, all of ``lat.1.gz`` .. ``lat.N.gz`` when it has a ``num_jobs`` file saying N).
  See :func:`expand_lattice_specs`.

:func:`check_word_table` refuses lattices whose words are bare ids (no word table given) when they
are compared with text, naming ``--words``; :func:`check_times` refuses time-dependent outputs for
lattices without times unless the caller allows them.
"""
from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ...core._budget import check_memory
from ...core.errors import FormatError, MismatchError
from ...core.files import read_text_lines
from ...core.lattice import Lattice
from ...core.symbols import SymbolTable
from .lattice_files import _is_kaldi_specifier, guess_format, read_lattices

if TYPE_CHECKING:
    from .kaldi import CompiledReader

#: Seconds per input frame when neither ``frame_shift`` nor the format says otherwise.
DEFAULT_FRAME_SHIFT = 0.01
#: k2/icefall lattices are written at 10 ms x subsampling 4.
DEFAULT_K2_FRAME_SHIFT = 0.04


def effective_frame_shift(fmt: str, frame_shift: float | None = None,
                          frame_subsampling_factor: int | None = None) -> float:
    """Seconds per lattice frame: ``frame_shift`` (default 0.01 s; k2 files 0.04 s unless a factor
    is given, then 0.01 s) times ``frame_subsampling_factor`` (default 1)."""
    if frame_subsampling_factor is not None and (int(frame_subsampling_factor) != frame_subsampling_factor
                                                 or frame_subsampling_factor < 1):
        raise FormatError(f"--frame-subsampling-factor must be an integer >= 1, got {frame_subsampling_factor!r}")
    if frame_shift is not None and not (frame_shift > 0 and frame_shift < 10):
        raise FormatError(f"--frame-shift must be a positive number of seconds, got {frame_shift!r}")
    if frame_shift is None:
        frame_shift = DEFAULT_K2_FRAME_SHIFT if fmt == "k2" and frame_subsampling_factor is None \
            else DEFAULT_FRAME_SHIFT
    return frame_shift * (frame_subsampling_factor or 1)


def read_keys(path: str) -> list[str]:
    """The keys of a ``--keys`` file: one per line (surrounding whitespace stripped), none empty, none
    containing whitespace, none twice; :class:`FormatError` / :class:`MismatchError` name the line."""
    keys: list[str] = []
    first: dict[str, int] = {}
    for lineno, line in read_text_lines(path):
        key = line.strip()
        if not key or any(c.isspace() for c in key):
            raise FormatError(f"expected one utterance key on the line, got {line!r} (one key per line, no blanks)",
                              path=path, line=lineno)
        if key in first:
            raise MismatchError(f"key {key!r} is given twice (lines {first[key]} and {lineno})", path=path,
                                line=lineno, key=key)
        first[key] = lineno
        keys.append(key)
    return keys


_GLOB = re.compile(r"[*?\[]")
_JOB_LATTICE = re.compile(r"^lat\.(\d+)(?:\.gz)?$")


def _job_order(path: str) -> list:
    """Sort key that orders numbers by value (lat.2 before lat.10), as Kaldi's JOB numbers go."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def _glob(pattern: str, spec: str) -> list[str]:
    paths = sorted(glob.glob(pattern), key=_job_order)
    if not paths:
        raise FormatError(f"no file matches {pattern!r} (in the lattice input {spec!r})")
    return paths


def _decode_directory(directory: str) -> list[str] | None:
    """The lattice archives of a Kaldi decode directory (``lat.JOB.gz`` / ``lat.JOB``, in job order), or
    None when ``directory`` has none.  With a ``num_jobs`` file every job 1..N must be there."""
    matches = [m for n in sorted(os.listdir(directory)) if (m := _JOB_LATTICE.match(n)) is not None]
    if not matches:
        return None
    jobs = {int(m.group(1)): os.path.join(directory, m.string) for m in matches}
    num_jobs_file = os.path.join(directory, "num_jobs")
    if os.path.isfile(num_jobs_file):
        with open(num_jobs_file, encoding="utf-8", errors="replace") as f:
            text = f.read(64).strip()
        if not text.isdigit() or int(text) < 1:
            raise FormatError(f"expected a number of jobs, got {text[:20]!r}", path=num_jobs_file)
        missing = [j for j in range(1, int(text) + 1) if j not in jobs]
        if missing:
            raise FormatError(f"the decode directory has num_jobs {text} but no lat.{missing[0]}.gz "
                              f"({len(missing)} job(s) missing: an unfinished decode?)", path=directory)
        return [jobs[j] for j in range(1, int(text) + 1)]
    return [jobs[j] for j in sorted(jobs)]


def expand_lattice_specs(specs: Iterable[str]) -> list[str]:
    """``specs`` with Kaldi's idioms expanded (see the module docstring): a glob in a plain path or in the
    path of an rspecifier (also inside ``gunzip -c ...|``) becomes one spec per file in job order, a
    decode directory its ``lat.JOB.gz`` archives; other specs are kept as they are.  A glob that matches
    nothing raises FormatError."""
    out: list[str] = []
    for spec in specs:
        spec = os.fspath(spec)
        if _is_kaldi_specifier(spec):
            head, _, rest = spec.partition(":")
            tokens = rest.split(" ")
            globbed = [i for i, t in enumerate(tokens) if _GLOB.search(t.rstrip("|"))]
            if len(globbed) == 1:
                i = globbed[0]
                token = tokens[i]
                pattern = token.rstrip("|")
                for path in _glob(pattern, spec):
                    out.append(f"{head}:" + " ".join(tokens[:i] + [path + token[len(pattern):]] + tokens[i + 1:]))
                continue
        elif _GLOB.search(spec) and not os.path.exists(spec):
            out.extend(_glob(spec, spec))
            continue
        elif os.path.isdir(spec):
            archives = _decode_directory(spec)
            if archives is not None:
                out.extend(archives)
                continue
        out.append(spec)
    return out


def read_lattice_inputs(specs: Iterable[str] | str, *, format: str | None = None,
                        words: SymbolTable | str | None = None, frame_shift: float | None = None,
                        frame_subsampling_factor: int | None = None, keys: str | None = None,
                        kaldi_compact: CompiledReader | None = None, **options) -> Iterator[Lattice]:
    """Yield the lattices of every spec in ``specs``, in order (see the module docstring).

    ``kaldi_compact``: for the Kaldi inputs, a compiled reader of binary CompactLattices (``compact`` of
    :func:`lattice_tools.io.lattices.kaldi.read_kaldi_lattices`), whose results come as
    :class:`~lattice_tools.io.lattices.kaldi.CompiledRecord` objects in place of the lattices, keyed, checked
    and budgeted as the lattices are.

    ``keys``: a file of keys (:func:`read_keys`) that name the lattices in order instead of their own keys;
    it must hold exactly one key per lattice (:class:`MismatchError` naming the file and both counts).

    Under a memory budget (:func:`lattice_tools.core._budget.memory_budget`, the commands' ``--max-memory``) every
    lattice is built only if it fits (:meth:`Lattice.from_arcs`) and reading stops with BudgetExceededError naming
    the lattice once the process is past the budget.

    Raises:
      MismatchError when a key appears twice (within one input or across inputs), naming both;
      FormatError when a key contains whitespace (it would split every CTM, STM or archive line).
    """
    if isinstance(specs, (str, os.PathLike)):
        specs = [specs]
    specs = expand_lattice_specs(specs)
    if isinstance(words, (str, os.PathLike)):
        words = SymbolTable.read(os.fspath(words))
    seen: dict[str, str] = {}
    slf_table = words
    names = read_keys(os.fspath(keys)) if keys is not None else None
    count = 0
    for spec in specs:
        spec = os.fspath(spec) if isinstance(spec, os.PathLike) else spec
        fmt = format or guess_format(spec)
        fs = effective_frame_shift(fmt, frame_shift, frame_subsampling_factor)
        table = slf_table if fmt == "slf" else words
        extra = {"compact": kaldi_compact} if kaldi_compact is not None and fmt == "kaldi" else {}
        for lat in read_lattices(spec, format=fmt, symbols=table, frame_shift=fs, **options, **extra):
            if isinstance(lat, tuple):          # readers that return (lattice, header)
                lat = lat[0]
            if names is not None:
                if count == len(names):
                    raise MismatchError(f"{keys} has {len(names)} keys but the inputs hold more lattices (one key "
                                        "per lattice, in input order)", path=str(keys))
                lat = lat.with_key(names[count])
            count += 1
            if any(c.isspace() for c in lat.key):  # (e.g. from a file name): it would split CTM/STM/ark lines
                raise FormatError(f"lattice key {lat.key!r} of {spec} contains whitespace, but an utterance key is one "
                                  "field of CTM, STM and Kaldi archive lines: rename the input", path=spec,
                                  key=lat.key)
            if lat.key in seen:
                raise MismatchError(f"lattice key {lat.key!r} is given twice (in {seen[lat.key]} and in {spec}); "
                                    "each utterance must be given once", key=lat.key)
            seen[lat.key] = spec
            if fmt == "slf":
                slf_table = lat.symbols        # later SLF inputs extend this table
            check_memory("reading the lattices", lat.key, advice="")  # (the memory budget in force, if any)
            yield lat
    if names is not None and count != len(names):
        raise MismatchError(f"{keys} has {len(names)} keys but the inputs hold {count} lattices (one key per "
                            "lattice, in input order)", path=str(keys))


def has_bare_word_ids(symbols: SymbolTable) -> bool:
    """True when the table is what readers make without a word table: every word is its own id."""
    return len(symbols) > 1 and all(w == str(i) for w, i in symbols if i != 0)


def is_text(transcripts: Iterable[str]) -> bool:
    """True unless every word of ``transcripts`` is an integer id (Kaldi's ``text`` after
    ``sym2int.pl``, which can be compared with lattices that have no word table)."""
    return not all(w.isdigit() for t in transcripts for w in t.split())


def is_word_ids(transcripts: Iterable[str]) -> bool:
    """True when ``transcripts`` hold at least 5 words and every one is an integer: word ids
    (Kaldi's ``text`` after ``sym2int.pl``), judged as ``score`` judges a reference in ids."""
    words = [w for t in transcripts for w in t.split()]
    return len(words) >= 5 and all(w.isdigit() for w in words)


def check_word_table(lat: Lattice, text: bool = True, *, what: str = "reference", ids: bool = False) -> None:
    """Refuse a lattice whose words are bare ids (read without a word table) when what it is
    compared with is ``text`` (see :func:`is_text`), naming ``--words``; and, the other way round,
    a lattice whose words are text (mapped by a word table) when what it is compared with is word
    ``ids`` (see :func:`is_word_ids`): either would score as a WER near 100 %."""
    if text and has_bare_word_ids(lat.symbols):
        raise MismatchError(f"the lattice's words are bare integer ids (no word table was given) but the {what} "
                            "is text: pass the words.txt of the lattices with --words", key=lat.key)
    if ids and not has_bare_word_ids(lat.symbols):
        named = [w for w, i in lat.symbols if i != 0]
        if named and sum(not w.isdigit() for w in named) > len(named) / 2:
            raise MismatchError(f"the {what}'s words are integer ids but the lattice's words are text (from its word "
                                f"table): map the {what} to words first (Kaldi: utils/int2sym.pl -f 2- words.txt), "
                                "or drop --words to compare ids", key=lat.key)


def check_times(lat: Lattice, *, allow_untimed: bool = False, what: str = "this output",
                option: str = "--allow-untimed") -> None:
    """Refuse a lattice without word times for an output that needs them (CTM times, phrase
    boundaries, assignment of words to STM segments) unless ``allow_untimed``.

    A lattice has no times when its arcs carry unknown times (-1, OpenFst text without times) or
    when no arc spans a frame although some carry words (a Kaldi lattice without alignments:
    ``lattice-copy --write-compact=false``/``lattice-rmali`` output, transition-id strings empty).
    """
    if allow_untimed or lat.num_arcs == 0:
        return
    import numpy as np

    untimed = not lat.has_times or (lat.num_frames == 0 and bool(np.any(lat.word != 0)))
    if untimed:
        raise FormatError(f"the lattice has no word times (a Kaldi lattice without alignment, or a file without "
                          f"times) and {what} depends on them (every time would be 0.00, every utterance one "
                          f"phrase); pass {option} to accept that", key=lat.key)


__all__ = ["read_lattice_inputs", "expand_lattice_specs", "effective_frame_shift", "check_word_table", "check_times",
           "has_bare_word_ids", "is_text", "is_word_ids", "DEFAULT_FRAME_SHIFT", "DEFAULT_K2_FRAME_SHIFT"]
