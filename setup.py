"""Builds lattice-tools' compiled kernels (plain C on the CPython API; arrays cross as buffers, so numpy's
headers are not needed to build).  The rest of the metadata is in pyproject.toml.

* ``lattice_tools/_ext/<name>.c`` becomes the extension module ``lattice_tools._ext.<name>``;
* a folder ``lattice_tools/_ext/<name>/`` with several ``*.c`` files (and its own ``*.h``) becomes one module
  ``lattice_tools._ext.<name>`` (for kernels too long for one file).

``-ffp-contract=off``: the kernels reproduce Kaldi's double-precision sums bit for bit, which a fused
multiply-add (GCC contracts by default where the target has FMA, e.g. aarch64) would change.
``-fvisibility=hidden``: a multi-file module's internal functions stay private to it (only PyInit_* is exported).
"""
from pathlib import Path

from setuptools import Extension, setup

_EXT = Path("lattice_tools/_ext")
_FLAGS = ["-O2", "-ffp-contract=off", "-fno-fast-math", "-std=c11", "-fvisibility=hidden"]


def _extension(name: str, sources: list[Path], headers: list[Path]) -> Extension:
    return Extension(f"lattice_tools._ext.{name}", [s.as_posix() for s in sources],
                     depends=[h.as_posix() for h in headers], extra_compile_args=_FLAGS)


_shared_headers = sorted(_EXT.glob("*.h"))
_modules = [_extension(source.stem, [source], _shared_headers) for source in sorted(_EXT.glob("*.c"))]
_modules += [_extension(folder.name, sorted(folder.glob("*.c")), _shared_headers + sorted(folder.glob("*.h")))
             for folder in sorted(p for p in _EXT.iterdir() if p.is_dir() and any(p.glob("*.c")))]

setup(ext_modules=_modules)
