"""Lattice file formats: one entry point to read and write them all.

``read_lattices(spec)`` / ``write_lattices(lattices, spec)`` dispatch on ``format`` (``slf``,
``sphinx``, ``kaldi``, ``openfst``, ``k2``), guessed from the spec when not given:

==========================================  ========
spec                                        format
==========================================  ========
``ark:...``, ``ark,t:...``, ``scp:...``     kaldi
``*.slf``, ``*.lat``, ``*.htk`` (+ ``.gz``)  slf (a Sphinx DAG inside is recognised)
``*.dag`` (+ ``.gz``)                        sphinx (Sphinx DAG lattice, read only)
``*.fst``, ``*.txt`` (+ ``.gz``)            openfst
``*.pt``                                    k2
a directory                                 every SLF file in it (sorted by name)
==========================================  ========

Readers stream one utterance at a time.  Duplicate keys in one input raise MismatchError.
See ``docs/formats.md`` for the conventions of each format.
"""
from __future__ import annotations

from .lattices.convert import convert_lattices
from .lattices.inputs import read_lattice_inputs
from .lattices.lattice_files import FORMATS, guess_format, read_lattices, write_lattices

__all__ = ["read_lattices", "write_lattices", "guess_format", "FORMATS", "read_lattice_inputs", "convert_lattices"]
