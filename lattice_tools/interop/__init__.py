"""Conversions to and from other toolkits' in-memory objects (k2: :mod:`lattice_tools.interop.k2`)."""
