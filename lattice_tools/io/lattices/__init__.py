"""Lattice formats: HTK/SRILM SLF, Sphinx DAG, Kaldi archives and tables, OpenFst text, k2 ``.pt`` files;
the format dispatch (``lattice_files``), conversion (``convert``) and the command-line input specs
(``inputs``: rspecifiers, globs, decode directories).
"""
