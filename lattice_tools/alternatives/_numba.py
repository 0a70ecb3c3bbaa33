"""numba's ``njit`` for the compiled loops of this package, or, when numba is not importable, a decorator
that leaves the function as it is (the same code then runs as plain Python: correct, much slower).

numba is imported by the first kernel module that is imported, not by this module, so that the command
line can call :func:`skip_numba_probes` before: importing numba costs ~0.2 s of CPU, and the first
compiled call (even from numba's on-disk cache) ~0.15 s more to build numba's target context -- during
which numba probes for a BLAS by importing ``scipy.linalg`` (~0.15 s more) and scans the metadata of
every installed distribution for numba extensions to load (~0.03 s).  The kernels of this package use
neither a BLAS (``np.dot``, ``np.linalg``) nor an extension's types, so a process that runs only them
skips both.
"""
from __future__ import annotations

import sys

_skip_probes = False
_njit = None

_BLAS_MODULE = "scipy.linalg.cython_blas"  # what numba.np.arraymath imports to decide whether BLAS exists


def skip_numba_probes() -> None:
    """Let numba record "no BLAS" instead of importing ``scipy.linalg`` to find one, and load no
    third-party numba extension (``numba_extensions`` entry points): ~0.18 s of CPU per process.
    Nopython code compiled later in the process then cannot use ``np.dot`` / ``np.linalg`` or an
    extension's types; scipy itself is unaffected.  For programs that own their process (the
    ``lattice-tools`` command line); takes effect only if called before the first kernel module is
    imported."""
    global _skip_probes
    _skip_probes = True


def _load_njit():
    global _njit
    if _njit is not None:
        return _njit
    try:  # numba is a declared dependency
        import numba
    except ImportError:  # pragma: no cover
        _njit = _interpreted
        return _njit
    if _skip_probes and "numba.np.arraymath" not in sys.modules and _BLAS_MODULE not in sys.modules:
        # numba.np.arraymath runs the probe when it is first imported: import it now with the BLAS
        # module marked absent (numba catches the ImportError), then unmark it.
        sys.modules[_BLAS_MODULE] = None
        try:
            import numba.np.arraymath  # noqa: F401
        finally:
            if sys.modules.get(_BLAS_MODULE, 0) is None:
                del sys.modules[_BLAS_MODULE]
    if _skip_probes:
        from numba.core import entrypoints

        if hasattr(entrypoints, "_already_initialized"):  # numba's own guard against a second scan
            entrypoints._already_initialized = True
    _njit = numba.njit
    return _njit


def _interpreted(*args, **kwargs):  # pragma: no cover - only without numba
    if args and callable(args[0]):
        return args[0]
    return lambda f: f


def njit(*args, **kwargs):
    """``numba.njit`` (numba is imported on the first call)."""
    return _load_njit()(*args, **kwargs)


__all__ = ["njit", "skip_numba_probes"]
