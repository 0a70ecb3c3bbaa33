"""Pipelines above the layers: Kaldi latbin-style jobs (``latbin``), the recipe stages the shell recipes call
(``recipe``) and the end-to-end demo (``demo``).  They compose io, algorithms, alternatives, scoring, oracle
and kws; no layer below imports from here.
"""
