"""Spoken term detection (keyword search): index alternatives and lattices, search terms, score like F4DE.

The types every part of the keyword-search loop exchanges live in :mod:`lattice_tools.kws.types`.
"""
