"""Shared file helpers of every layer: transparent gzip, ``-`` for stdin/stdout, atomic writes, JSON output."""
from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys
import tempfile
import zlib
from collections.abc import Iterator
from typing import IO, cast

from .errors import FormatError


def is_gzip_path(path: str) -> bool:
    return str(path).endswith(".gz")


def open_binary_input(path: str) -> IO[bytes]:
    """Open ``path`` for binary reading; ``-`` is stdin; gzip is detected by magic bytes."""
    if str(path) == "-":
        raw = sys.stdin.buffer
    else:
        try:
            raw = open(path, "rb")
        except OSError as exc:
            raise FormatError(f"cannot open for reading: {exc.strerror}", path=str(path)) from None
    peek = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    if peek == b"\x1f\x8b":
        # GzipFile has IO[bytes]'s methods; typeshed does not declare it one
        return cast(IO[bytes], _GzipReader(raw, owns=str(path) != "-"))
    return raw


class _GzipReader(gzip.GzipFile):
    """A gzip stream over an open binary file that it closes with itself (GzipFile given a
    ``fileobj`` leaves it open); stdin is never closed."""

    def __init__(self, raw: IO[bytes], owns: bool):
        self._raw, self._owns = raw, owns
        super().__init__(fileobj=raw, mode="rb")

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._owns:
                self._raw.close()


def open_text_input(path: str, encoding: str = "utf-8") -> IO[str]:
    """Open ``path`` for text reading (gzip detected by magic bytes, ``-`` = stdin)."""
    return io.TextIOWrapper(open_binary_input(path), encoding=encoding, errors="strict")


def decode_error(path: str, encoding: str, exc: UnicodeDecodeError, data: bytes | None = None,
                 line: int | None = None) -> FormatError:
    """The error for bytes that are not valid ``encoding`` text: names the file, the line (counted in
    ``data`` up to the bad byte when given) and the ``--encoding`` option."""
    if line is None and data is not None:
        line = data.count(b"\n", 0, exc.start) + 1
    return FormatError(f"not valid {encoding} text ({exc.reason}); give the file's encoding with --encoding "
                       "(e.g. latin-1, gb2312)", path=str(path), line=line)


#: The longest line a text reader accepts (bytes).  Lines of every text format the toolkit reads (CTM, STM,
#: trn, GLM, SLF, OpenFst/Kaldi text, XML) are far shorter; a longer one is an endless stream or a binary
#: file, refused before it fills memory.
MAX_LINE_BYTES = 16 << 20
_CHUNK = 1 << 20


def _ascii_compatible(encoding: str) -> bool:
    try:
        return "\n\r".encode(encoding) == b"\n\r" and "a".encode(encoding) == b"a"
    except (LookupError, UnicodeError):
        return False


def check_text_bytes(data: bytes, path: str, line: int | None = None) -> None:
    """Refuse ``data`` read from a text file when it holds a NUL byte (a binary file, ``/dev/zero``):
    no text format of the toolkit has one, and a NUL stream has no line ends to bound it."""
    i = data.find(b"\0")
    if i >= 0:
        raise FormatError("binary data (a NUL byte) in a text input; is this the right file?", path=str(path),
                          line=line if line is not None else data.count(b"\n", 0, i) + 1)


def read_text_bytes(path: str, encoding: str = "utf-8", what: str = "text") -> bytes:
    """The bytes of text file ``path`` (gzip detected, ``-`` = stdin), read in pieces that are checked
    before the next is read: a NUL byte (binary data, ``/dev/zero``) or a line longer than
    :data:`MAX_LINE_BYTES` (an endless stream) is refused with FormatError naming the file and line,
    within the first megabytes instead of after memory is full."""
    text_check = _ascii_compatible(encoding)
    pieces: list[bytes] = []
    lines = 0
    since_newline = 0
    try:
        with open_binary_input(path) as f:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                if not pieces and chunk[:2] in (b"\xff\xfe", b"\xfe\xff"):
                    text_check = False  # a UTF-16/32 byte-order mark: NUL bytes are part of its characters
                if text_check:
                    check_text_bytes(chunk, path, None if b"\0" not in chunk else
                                     lines + chunk.count(b"\n", 0, chunk.find(b"\0")) + 1)
                    last = chunk.rfind(b"\n")
                    since_newline = since_newline + len(chunk) if last < 0 else len(chunk) - last - 1
                    lines += chunk.count(b"\n")
                    if since_newline > MAX_LINE_BYTES:
                        raise FormatError(f"line longer than {MAX_LINE_BYTES >> 20} MB in a {what} input (an "
                                          "endless stream or not a text file?)", path=str(path), line=lines + 1)
                pieces.append(chunk)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FormatError(f"truncated or corrupt gzip data ({exc})", path=str(path)) from None
    return b"".join(pieces)


def bounded_lines(raw: IO[bytes], path: str) -> Iterator[bytes]:
    """The lines of a binary stream, each refused when longer than :data:`MAX_LINE_BYTES` or holding a NUL
    byte before the next is read."""
    lineno = 0
    while True:
        line = raw.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        lineno += 1
        if len(line) > MAX_LINE_BYTES:
            check_text_bytes(line, path, lineno)
            raise FormatError(f"line longer than {MAX_LINE_BYTES >> 20} MB (an endless stream or not a text "
                              "file?)", path=str(path), line=lineno)
        check_text_bytes(line, path, lineno)
        yield line


def read_text_lines(path: str, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line_without_newline)``; decoding and gzip errors name the file (and the
    line of a byte that is not valid ``encoding``).  Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (Python's
    universal newlines); a line longer than :data:`MAX_LINE_BYTES` or a NUL byte is refused (FormatError
    naming the line) before more is read, so ``/dev/zero`` or an endless line cannot fill memory."""
    if not _ascii_compatible(encoding):  # UTF-16/32: the text layer splits the lines; still bounded
        yield from _wide_text_lines(path, encoding)
        return
    lineno = 0
    try:
        with open_binary_input(path) as raw:
            for data in bounded_lines(raw, path):
                try:
                    text = data.decode(encoding)
                except UnicodeDecodeError as exc:
                    raise decode_error(path, encoding, exc, line=lineno + 1) from None
                except UnicodeError:  # codecs that fail otherwise (punycode, undefined)
                    raise FormatError(f"cannot decode as {encoding[:40]} text (give the file's encoding with "
                                      "--encoding)", path=str(path), line=lineno + 1) from None
                text = text[:-1] if text.endswith("\n") else text
                text = text[:-1] if text.endswith("\r") else text
                for piece in text.split("\r") if "\r" in text else (text,):
                    lineno += 1
                    yield lineno, piece
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FormatError(f"truncated or corrupt gzip data ({exc})", path=str(path)) from None


def _wide_text_lines(path: str, encoding: str) -> Iterator[tuple[int, str]]:
    lineno = 0
    try:
        with open_text_input(path, encoding) as f:
            while True:
                line = f.readline(MAX_LINE_BYTES + 1)
                if not line:
                    return
                lineno += 1
                if len(line) > MAX_LINE_BYTES:
                    raise FormatError(f"line longer than {MAX_LINE_BYTES >> 20} M characters", path=str(path),
                                      line=lineno)
                yield lineno, line.rstrip("\r\n")
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FormatError(f"truncated or corrupt gzip data ({exc})", path=str(path)) from None
    except LookupError:  # an unknown encoding, or a codec transform (rot13, hex, zlib) that decodes no text
        raise FormatError(f"{encoding[:40]!r} is not a text encoding Python knows", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise decode_error(path, encoding, exc, line=lineno + 1) from None
    except UnicodeError:  # codecs that fail otherwise (punycode, undefined)
        raise FormatError(f"cannot decode as {encoding[:40]} text (give the file's encoding with --encoding)",
                          path=str(path), line=lineno + 1) from None


# Temporary files of atomic writes are named ``.tmp.<host>.<pid>.<random>.<target name>``: a later write
# of the same target removes the ones whose process (on this host) is gone -- what a killed (SIGKILL,
# power loss) run leaves behind.  Temporaries of live processes and of other hosts are left alone.
_TMP_PREFIX = ".tmp."
_LIVE_TEMPS: set[str] = set()


def _host_tag() -> str:
    # dots separate the fields of the temporary name, so they are not allowed in the host tag
    return (os.uname().nodename.split(".")[0] or "host").replace(".", "_") if hasattr(os, "uname") else "host"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # exists (another user's process) or cannot tell: keep its file
    return True


def remove_stale_temporaries(path: str) -> list[str]:
    """Remove the temporaries left by killed writes of ``path`` (see above); returns the removed paths."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    base = os.path.basename(path)
    host = _host_tag()
    removed: list[str] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for entry in names:
        if not (entry.startswith(_TMP_PREFIX) and entry.endswith("." + base)):
            continue
        fields = entry[len(_TMP_PREFIX):-len(base) - 1].split(".")
        if len(fields) != 3 or fields[0] != host or not fields[1].isdigit():
            continue
        pid = int(fields[1])
        if pid == os.getpid() or _pid_alive(pid):
            continue
        full = os.path.join(directory, entry)
        with contextlib.suppress(OSError):
            if os.path.isdir(full):
                import shutil

                shutil.rmtree(full)
            else:
                os.unlink(full)
            removed.append(full)
    return removed


def output_mode(path: str) -> int:
    """Permission bits for a new output at ``path``: those of the file it replaces, else ``0o666``
    less the user's umask (what ``open(path, 'w')`` or a shell redirection would give)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def make_temporary(path: str) -> tuple[int, str]:
    """A temporary file (``fd``, name) beside ``path``, named so that :func:`remove_stale_temporaries`
    recognises it, registered for removal on SIGTERM/SIGINT."""
    parent = os.path.dirname(os.path.abspath(path))
    prefix = f"{_TMP_PREFIX}{_host_tag()}.{os.getpid()}."
    suffix = "." + os.path.basename(path)
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=parent)
    _LIVE_TEMPS.add(tmp)
    return fd, tmp


def discard_temporary(tmp: str, remove: bool = True) -> None:
    _LIVE_TEMPS.discard(tmp)
    if remove:
        with contextlib.suppress(OSError):
            if os.path.isdir(tmp):
                import shutil

                shutil.rmtree(tmp)
            else:
                os.unlink(tmp)


def remove_live_temporaries() -> None:
    """Remove every temporary this process still has open (the CLI calls it when a signal ends it)."""
    for tmp in list(_LIVE_TEMPS):
        discard_temporary(tmp)


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "w", encoding: str = "utf-8", compress: bool | None = None):
    """Write to a temporary file beside ``path`` and rename it into place only on success.

    ``path == "-"`` writes to stdout.  ``compress`` defaults to ``path.endswith('.gz')``.
    On any exception the temporary file is removed and ``path`` is left untouched, so a
    killed or failed job never leaves a half-written output that a rerun would trust.
    The output gets the permission bits of the file it replaces, else those the user's umask
    gives a new file (not ``mkstemp``'s 0600).  Temporaries of earlier writes of ``path`` whose
    process was killed are removed first.
    """
    binary = "b" in mode
    if str(path) == "-":
        stream = sys.stdout.buffer if binary else sys.stdout
        yield stream
        stream.flush()
        return
    path = str(path)
    if compress is None:
        compress = is_gzip_path(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp = make_temporary(path)
    try:
        os.fchmod(fd, output_mode(path))
        with os.fdopen(fd, "wb") as raw:
            if compress:
                # mtime=0 keeps gzip output byte-identical across runs (reproducible recipes).
                with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
                    if binary:
                        yield gz
                    else:
                        with io.TextIOWrapper(gz, encoding=encoding, newline="\n") as txt:
                            yield txt
            elif binary:
                yield raw
            else:
                with io.TextIOWrapper(raw, encoding=encoding, newline="\n") as txt:
                    yield txt
        os.replace(tmp, path)
        discard_temporary(tmp, remove=False)
    except BaseException:
        discard_temporary(tmp)
        raise


def json_safe(obj):
    """``obj`` with every non-finite float (NaN, +-inf) replaced by None and numpy scalars/arrays made
    plain, so that it serialises as strict JSON (RFC 8259 has no NaN/Infinity; ``jq``, JavaScript and
    most JSON libraries reject them).  Undefined numbers are written as ``null``."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    tolist = getattr(obj, "tolist", None)  # numpy scalar or array
    if tolist is not None:
        return json_safe(tolist())
    try:
        return json_safe(float(obj))
    except (TypeError, ValueError):
        return str(obj)


def json_text(obj, *, indent: int | None = 2, sort_keys: bool = True, ensure_ascii: bool = True) -> str:
    """Strict JSON text of ``obj`` (see :func:`json_safe`), ending with a newline."""
    import json

    return json.dumps(json_safe(obj), indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii,
                      allow_nan=False) + "\n"


def write_json(path: str, obj, **kw) -> None:
    """Write ``obj`` as strict JSON to ``path`` atomically (``-`` = stdout)."""
    text = json_text(obj, **kw)
    with atomic_write(path) as f:
        f.write(text)


def progress_bar(iterable, *, desc: str, unit: str, progress: bool | None = None):
    """``iterable`` with a tqdm progress bar on stderr when ``progress`` is true, or when it is None and
    stderr is a terminal (tqdm's own rule); otherwise ``iterable`` itself, without importing tqdm (~15 ms
    of start-up that a batch run or a pipe never shows)."""
    if not (sys.stderr.isatty() if progress is None else progress):
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, unit=unit, file=sys.stderr)
