"""lattice-tools' compiled kernels (C on the CPython API, built by pip from ``lattice_tools/_ext/*.c``;
setup.py).  Python code reaches a kernel module through :func:`native`, which turns a missing build into
an error that says how to build it instead of a bare ImportError.

Arrays cross the boundary as buffers (numpy arrays allocated by the caller, filled in place; or bytes
returned by the kernel and viewed with ``numpy.frombuffer``), so no numpy header is needed to build.
"""
from __future__ import annotations

from importlib import import_module
from types import ModuleType


def native(name: str) -> ModuleType:
    """The compiled module ``lattice_tools._ext.<name>``.

    Raises ImportError naming the module and the command that builds it when the package was used from a
    source tree without building its extensions (``pip install -e .`` builds them in place)."""
    try:
        return import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise ImportError(
            f"lattice-tools' compiled module {__name__}.{name} is not built: run `python -m pip install -e .` "
            "(or `python setup.py build_ext --inplace`) in the source tree; it needs a C compiler and the "
            "Python headers") from None


__all__ = ["native"]
