"""numba's ``njit`` for the compiled loops of this package, or, when numba is not importable, a decorator
that leaves the function as it is (the same code then runs as plain Python: correct, much slower)."""
from __future__ import annotations

try:  # numba is a declared dependency
    from numba import njit
except ImportError:  # pragma: no cover
    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

__all__ = ["njit"]
