"""Package attributes imported from their modules on first use (PEP 562), for the packages whose
``__init__`` should not import what a command does not need (numpy, kaldifst, torch...)."""
from __future__ import annotations

from collections.abc import Callable
from importlib import import_module


def lazy_exports(package: str, source: dict[str, str],
                 namespace: dict) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``source`` maps each exported name to the module
    defining it, relative to the package (``"api"``, ``".api"`` or ``"..io.transcripts.altctm"``).  A name is
    imported on first access and kept in ``namespace`` (the package's ``globals()``), so later
    look-ups do not come back here; ``__dir__`` lists it with ``namespace["__all__"]``."""

    def __getattr__(name: str):
        module = source.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module if module.startswith(".") else f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
