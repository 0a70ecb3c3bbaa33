"""Read and write lattice files of every format: the dispatch behind :mod:`lattice_tools.io` (see its docstring)."""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator

from ...core.errors import FormatError, MismatchError
from ...core.lattice import Lattice
from ...core.symbols import SymbolTable

FORMATS = ("slf", "sphinx", "kaldi", "openfst", "k2")
_SLF_EXT = (".slf", ".lat", ".htk")
_DAG_EXT = (".dag",)
_FST_EXT = (".fst", ".txt")
# What Kaldi recipes name their lattice archives: exp/*/decode*/lat.JOB.gz, and *.ark / *.scp.
_KALDI_NAME = re.compile(r"(?:lat\.\d+|\.ark)(?:\.gz)?$|\.scp$", re.IGNORECASE)


def _is_kaldi_specifier(spec: str) -> bool:
    s = str(spec)
    return ":" in s and bool(set(s.split(":", 1)[0].split(",")) & {"ark", "scp"})


def kaldi_specifier(spec: str) -> str:
    """``spec`` as a Kaldi r/wspecifier: a plain path becomes ``ark:PATH`` (``scp:PATH`` for ``.scp``).

    Kaldi's own tools need the prefix; lattice-tools accepts ``lat.1.gz`` as it is (gzip is
    detected by its magic bytes when reading and chosen by the ``.gz`` name when writing).
    """
    s = str(spec)
    if _is_kaldi_specifier(s):
        return s
    return ("scp:" if s.lower().endswith(".scp") else "ark:") + s


def guess_format(spec: str) -> str:
    """The format a spec most likely names (see the module table); FormatError if unknown."""
    s = str(spec)
    if _is_kaldi_specifier(s) or _KALDI_NAME.search(os.path.basename(s)):
        return "kaldi"
    if os.path.isdir(s):
        return "slf"
    base = s[:-3] if s.endswith(".gz") else s
    low = base.lower()
    if low.endswith(_SLF_EXT):
        return "slf"
    if low.endswith(_DAG_EXT):
        return "sphinx"
    if low.endswith(_FST_EXT):
        return "openfst"
    if low.endswith(".pt"):
        return "k2"
    raise FormatError(f"cannot tell the lattice format of {s!r} from its name; give it with --format "
                      f"(input) or --out-format (output), one of {', '.join(FORMATS)}")


def _slf_files(directory: str, ext: tuple = _SLF_EXT + _DAG_EXT) -> list[str]:
    files = []
    for name in sorted(os.listdir(directory)):
        base = name[:-3] if name.endswith(".gz") else name
        if base.lower().endswith(ext) and os.path.isfile(os.path.join(directory, name)):
            files.append(os.path.join(directory, name))
    if not files:
        pattern = ", ".join(f"*{e}" for e in ext)
        raise FormatError(f"directory has no lattice files ({pattern}, optionally .gz)", path=directory)
    return files


def read_lattices(spec: str, format: str | None = None, symbols: SymbolTable | str | None = None,
                  frame_shift: float | None = None, **options) -> Iterator[Lattice]:
    """Yield the lattices of ``spec`` one at a time.

    Args:
      spec: a file, a directory of SLF files, or a Kaldi rspecifier.
      format: ``slf``, ``sphinx``, ``kaldi``, ``openfst`` or ``k2``; default guessed (module table).
      symbols: a :class:`SymbolTable` or a ``words.txt`` path.  Kaldi/OpenFst/k2 ids are mapped
        through it; SLF words are mapped to its ids (new words appended).
      frame_shift: seconds per frame; default 0.01 (k2: 0.04).
      options: passed to the format's reader (e.g. ``variant=``/``scales=`` for SLF, ``logbase=``
        for Sphinx DAG, ``lattice_type=`` for Kaldi, ``acceptor=`` for OpenFst).
    Raises:
      MismatchError on duplicate keys; FormatError / LatticeError / SymbolError from the readers.
    """
    fmt = format or guess_format(spec)
    if fmt not in FORMATS:
        raise FormatError(f"unknown lattice format {fmt!r} (expected one of {', '.join(FORMATS)})")
    if isinstance(symbols, (str, os.PathLike)):
        symbols = SymbolTable.read(os.fspath(symbols))
    seen: set[str] = set()

    def check(lat: Lattice, where: str) -> Lattice:
        if lat.key in seen:
            raise MismatchError(f"duplicate lattice key {lat.key!r}", path=where, key=lat.key)
        seen.add(lat.key)
        return lat

    if fmt == "sphinx":
        from .sphinx_dag import read_sphinx_dag

        fs = 0.01 if frame_shift is None else frame_shift
        paths = _slf_files(spec) if os.path.isdir(str(spec)) else [spec]
        table = symbols if symbols is not None else SymbolTable()
        for p in paths:
            lat = read_sphinx_dag(p, table, fs, **options)
            table = lat.symbols
            yield check(lat, p)
    elif fmt == "slf":
        from .slf import iter_slf

        fs = 0.01 if frame_shift is None else frame_shift
        paths = _slf_files(spec) if os.path.isdir(str(spec)) else [spec]
        # One growing table for the whole input, so that a word has the same id in every lattice
        # (needed when the lattices go on into one Kaldi archive or k2 file).
        table = symbols if symbols is not None else SymbolTable()
        for p in paths:
            for lat in iter_slf(p, table, fs, **options):
                table = lat.symbols
                yield check(lat, p)
    elif fmt == "kaldi":
        from .kaldi import read_kaldi_lattices

        fs = 0.01 if frame_shift is None else frame_shift
        for item in read_kaldi_lattices(kaldi_specifier(spec), symbols, fs, **options):
            # (a CompiledRecord, keyed as a lattice, takes a lattice's place only for a caller that passed compact=)
            yield check(item, spec)  # type: ignore[arg-type]
    elif fmt == "openfst":
        from .openfst import read_openfst

        fs = 0.01 if frame_shift is None else frame_shift
        yield check(read_openfst(spec, symbols, frame_shift=fs, **options), spec)
    else:
        from .k2file import read_k2_lattices

        fs = 0.04 if frame_shift is None else frame_shift
        for lat in read_k2_lattices(spec, symbols=symbols, frame_shift=fs, **options):
            yield check(lat, spec)


def write_lattices(lattices: Iterable[Lattice] | Lattice, spec: str, format: str | None = None, **options) -> int:
    """Write lattices to ``spec``; returns how many were written.

    * ``kaldi``: one archive (``ark:``/``ark,t:``/``ark,scp:``); options ``lattice_type``,
      ``placeholder_tid``.
    * ``slf``: ``spec`` is a directory (one ``<key>.lat`` per lattice, ``.lat.gz`` with
      ``compress=True``) or, for a single lattice, a file path.
    * ``openfst``: a single lattice to one file (options ``acceptor``, ``weights``, ``words``).
    * ``k2``: all lattices into one ``.pt`` file.
    Keys must be unique (MismatchError).

    ``executor`` (``concurrent.futures`` executor or ``dask.distributed`` client; default None: here): Kaldi
    archives and SLF directories are formatted on its workers in shards of whole utterances, with the same
    bytes as a serial run; the other outputs (one file) are written here.
    """
    if isinstance(lattices, Lattice):
        lattices = [lattices]
    fmt = format or guess_format(spec)
    if fmt not in FORMATS:
        raise FormatError(f"unknown lattice format {fmt!r} (expected one of {', '.join(FORMATS)})")
    seen: set[str] = set()

    def checked(lats):
        for lat in lats:
            if lat.key in seen:
                raise MismatchError(f"duplicate lattice key {lat.key!r}", key=lat.key)
            seen.add(lat.key)
            yield lat

    executor = options.pop("executor", None)
    if fmt == "kaldi":
        from .kaldi import write_kaldi_lattices

        return write_kaldi_lattices(checked(lattices), kaldi_specifier(spec), executor=executor, **options)
    if fmt == "k2":  # one file each: written here (executor or not)
        from .k2file import write_k2_lattice

        lats = list(checked(lattices))
        write_k2_lattice(lats, spec, **options)
        return len(lats)
    if fmt == "sphinx":
        raise FormatError("writing Sphinx DAG lattices is not supported; write SLF (--to slf) instead", path=spec)
    if fmt == "openfst":
        from .openfst import write_openfst

        lats = list(checked(lattices))
        if len(lats) != 1:
            raise FormatError(f"OpenFst text holds one lattice, got {len(lats)}; write them one file each", path=spec)
        write_openfst(lats[0], spec, **options)
        return 1
    from .slf import write_slf

    compress = bool(options.pop("compress", False))
    s = str(spec)
    base = s[:-3] if s.endswith(".gz") else s
    if base.lower().endswith(_SLF_EXT) and not os.path.isdir(s):
        lats = list(checked(lattices))
        if len(lats) != 1:
            raise FormatError(f"{len(lats)} lattices cannot go to one SLF file; give a directory", path=s)
        write_slf(lats[0], s, **options)
        return 1
    os.makedirs(s, exist_ok=True)

    def named():
        for lat in checked(lattices):
            if not lat.key or "/" in lat.key or lat.key.startswith("."):
                raise FormatError(f"lattice key {lat.key!r} cannot be used as a file name", path=s,
                                  key=lat.key or None)
            yield lat

    if executor is None:
        return _write_slf_files(s, compress, options, named())
    from ...core.parallel import run_shards, shard_lattices

    return sum(n for _, n in run_shards(_write_slf_files, shard_lattices(named()), executor=executor,
                                        args=(s, compress, options)))


def _write_slf_files(directory: str, compress: bool, options: dict, lattices) -> int:
    # one <key>.lat per lattice, each written atomically (module level: a worker runs it on a shard)
    from .slf import write_slf

    n = 0
    for lat in lattices:
        write_slf(lat, os.path.join(directory, lat.key + (".lat.gz" if compress else ".lat")), **options)
        n += 1
    return n

