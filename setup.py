"""Builds lattice-tools' compiled kernels: every ``lattice_tools/_ext/<name>.c`` becomes the extension module
``lattice_tools._ext.<name>`` (plain C on the CPython API; arrays cross as buffers, so numpy's headers are not
needed to build).  The rest of the metadata is in pyproject.toml.

``-ffp-contract=off``: the kernels reproduce Kaldi's double-precision sums bit for bit, which a fused
multiply-add (GCC contracts by default where the target has FMA, e.g. aarch64) would change.
"""
from pathlib import Path

from setuptools import Extension, setup

_EXT = Path("lattice_tools/_ext")
_FLAGS = ["-O2", "-ffp-contract=off", "-fno-fast-math", "-std=c11"]

setup(ext_modules=[
    Extension(f"lattice_tools._ext.{source.stem}", [source.as_posix()], depends=sorted(p.as_posix() for p in _EXT.glob("*.h")),
              extra_compile_args=_FLAGS)
    for source in sorted(_EXT.glob("*.c"))
])
