"""numba's ``njit`` for the compiled loops of this package, or, when numba is not importable, a decorator
that leaves the function as it is (the same code then runs as plain Python: correct, much slower).

numba is imported by the first kernel module that is imported, not by this module, so that the command
line can call :func:`skip_blas_probe` before: importing numba costs ~0.2 s of CPU, and the first compiled
call (even from numba's on-disk cache) ~0.15 s more to build numba's target context -- during which
numba probes for a BLAS by importing ``scipy.linalg`` (~0.15 s more).  No kernel of this package uses a
BLAS (``np.dot``, ``np.linalg``), so a process that owns its numba skips the probe.
"""
from __future__ import annotations

import sys

_probe_blas = True
_njit = None

_BLAS_MODULE = "scipy.linalg.cython_blas"  # what numba.np.arraymath imports to decide whether BLAS exists


def skip_blas_probe() -> None:
    """Let numba record "no BLAS" instead of importing ``scipy.linalg`` to find one (saves ~0.15 s of CPU
    per process).  Nopython code compiled later in the process then cannot use ``np.dot`` / ``np.linalg``;
    scipy itself is unaffected.  For programs that own their process (the ``lattice-tools`` command
    line); takes effect only if called before the first kernel module is imported."""
    global _probe_blas
    _probe_blas = False


def _load_njit():
    global _njit
    if _njit is not None:
        return _njit
    try:  # numba is a declared dependency
        import numba
    except ImportError:  # pragma: no cover
        _njit = _interpreted
        return _njit
    if not _probe_blas and "numba.np.arraymath" not in sys.modules and _BLAS_MODULE not in sys.modules:
        # numba.np.arraymath runs the probe when it is first imported: import it now with the BLAS
        # module marked absent (numba catches the ImportError), then unmark it.
        sys.modules[_BLAS_MODULE] = None
        try:
            import numba.np.arraymath  # noqa: F401
        finally:
            if sys.modules.get(_BLAS_MODULE, 0) is None:
                del sys.modules[_BLAS_MODULE]
    _njit = numba.njit
    return _njit


def _interpreted(*args, **kwargs):  # pragma: no cover - only without numba
    if args and callable(args[0]):
        return args[0]
    return lambda f: f


def njit(*args, **kwargs):
    """``numba.njit`` (numba is imported on the first call)."""
    return _load_njit()(*args, **kwargs)


__all__ = ["njit", "skip_blas_probe"]
