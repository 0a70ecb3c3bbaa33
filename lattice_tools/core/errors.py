"""Exception types.

Every error raised on bad input is a :class:`LatticeToolsError` that names *where* (file, line or
archive key) and *what was expected*.  The CLI prints ``str(error)`` on one line and exits with
status 2; it never shows a traceback for these.
"""
from __future__ import annotations

_MAX_MESSAGE = 1000  # characters of a message printed; readers quote at most ~80 characters of bad input


class LatticeToolsError(Exception):
    """Base class of all errors this toolkit raises on bad input or impossible requests."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 key: str | None = None):
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.key = key
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path if self.line is None else f"{self.path}:{self.line}")
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.key is not None:
            # a key comes from the input: an error quotes at most 80 characters of it (a corrupt file
            # can make a 'key' of a megabyte)
            key = self.key if len(self.key) <= 80 else self.key[:80] + "..."
            where.append(f"[{key}]")
        prefix = " ".join(where)
        message = self.message
        if len(message) > _MAX_MESSAGE:  # a message quoting a huge bad value stays one readable line
            message = message[:_MAX_MESSAGE] + "... (cut)"
        return f"{prefix}: {message}" if prefix else message


class FormatError(LatticeToolsError):
    """A file does not follow its format (malformed line, truncated archive, bad number...)."""


class LatticeError(LatticeToolsError):
    """A lattice is structurally invalid (cycle, inconsistent arrays, NaN scores, empty...)."""


class SymbolError(LatticeToolsError):
    """A word or id is missing from a symbol table."""


class MismatchError(LatticeToolsError):
    """Inputs that must correspond do not (archive keys, file/channel ids, utterance ids)."""


class BudgetExceededError(LatticeToolsError):
    """An algorithm would exceed the state/arc/size budget the caller allowed."""


class MissingDependencyError(LatticeToolsError):
    """An optional dependency (torch, k2, lhotse, ...) is needed and not installed."""


def require(module: str, extra: str | None = None):
    """Import an optional dependency lazily, or raise MissingDependencyError saying how to get it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        hint = f"pip install 'lattice-tools[{extra}]'" if extra else f"pip install {module}"
        raise MissingDependencyError(f"this feature needs the optional package '{module}' ({hint}): {exc}") from None
