"""Keyword-search formats: NIST ECF, KWlist, kwslist and RTTM (XML read with a bounded, encoding-checked
reader), and Kaldi's KWS formats (result lines, binary indexes, keyword FSTs).
"""
