"""The records the keyword-search loop exchanges: a term to search, and one detection of it.

They are the in-memory form of NIST's KWlist (``<kw kwid=..><kwtext>..</kwtext></kw>``) and kwslist
(``<kw file= channel= tbeg= dur= score= decision=/>``) entries, so that the index, the search, the XML
readers/writers (``lattice_tools.io.kwlist`` / ``lattice_tools.io.kwslist``) and the scorer share one spelling.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KeywordTerm:
    """One term of a keyword list: its id (``KW-0001``) and its text as written in the KWlist."""

    kwid: str
    text: str

    @property
    def words(self) -> tuple[str, ...]:
        """The term's words (white-space separated text)."""
        return tuple(self.text.split())


@dataclass(frozen=True)
class Detection:
    """One putative occurrence of a term: where (file, channel, start and duration in seconds), how sure
    (``score``, higher is surer) and the system's YES/NO ``decision``."""

    kwid: str
    file: str
    channel: str
    tbeg: float
    dur: float
    score: float
    decision: bool
