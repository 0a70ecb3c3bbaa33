"""Spoken term detection (keyword search): index alternatives and lattices, search terms, score like F4DE.

The records every part of the keyword-search loop exchanges are the file formats' own:
:class:`lattice_tools.io.keyword_search.kwlist.KeywordTerm` and :class:`lattice_tools.io.keyword_search.kwslist.Detection`.
"""
