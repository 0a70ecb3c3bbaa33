"""Shared I/O helpers: transparent gzip, ``-`` for stdin/stdout, atomic writes."""
from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys
import tempfile
import zlib
from typing import IO, Iterator

from ..errors import FormatError


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
        return gzip.GzipFile(fileobj=raw, mode="rb")
    return raw


def open_text_input(path: str, encoding: str = "utf-8") -> IO[str]:
    """Open ``path`` for text reading (gzip detected by magic bytes, ``-`` = stdin)."""
    return io.TextIOWrapper(open_binary_input(path), encoding=encoding, errors="strict")


def read_text_lines(path: str, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line_without_newline)``; decoding and gzip errors name the file."""
    try:
        with open_text_input(path, encoding) as f:
            for lineno, line in enumerate(f, 1):
                yield lineno, line.rstrip("\r\n")
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise FormatError(f"truncated or corrupt gzip data ({exc})", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise FormatError(f"not valid {encoding} text ({exc.reason} at byte {exc.start})", path=str(path)) from None


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "w", encoding: str = "utf-8", compress: bool | None = None):
    """Write to a temporary file beside ``path`` and rename it into place only on success.

    ``path == "-"`` writes to stdout.  ``compress`` defaults to ``path.endswith('.gz')``.
    On any exception the temporary file is removed and ``path`` is left untouched, so a
    killed or failed job never leaves a half-written output that a rerun would trust.
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
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", suffix="." + os.path.basename(path), dir=directory)
    try:
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
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
