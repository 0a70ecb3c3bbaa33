"""The options of GLM filtering, in one place: csrfilt.sh's flags and the opt-in repairs."""
from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import LatticeToolsError

FORMATS = ("stm", "ctm", "trn", "txt")


@dataclass(frozen=True)
class GlmFilterOptions:
    """How :func:`~lattice_tools.scoring.glm.filter_text`, :func:`~lattice_tools.scoring.glm.apply_glm` and
    :func:`~lattice_tools.scoring.glm.filter_file` filter.  The defaults are plain ``csrfilt.sh -i FMT GLM``.

    csrfilt.sh: ``delete_hyphens`` is ``-dh``; ``upcase=False`` is ``-s``; ``extended_ascii`` is ``-e``;
    ``purpose`` is ``-t ref|hyp`` (selects INPUT_DEPENDENT_APPLICATION sections too).  ``encoding``: the
    text's encoding (csrfilt works on its bytes; any encoding filters the same).

    Repairs (with none the output is byte-identical to csrfilt.sh): ``flatten_alternations`` (ctm):
    expand nested alternations properly and flatten nested ALT blocks; ``repair_optional`` (stm/trn/txt):
    ``"parens"`` or ``"at"``, rewrite the optional alternations that crash sclite
    (:func:`~lattice_tools.scoring.glm.repair_optional_alternations`); ``optional_words`` (stm/trn/txt):
    make these words optional deletions, written as ``optional_style``
    (:func:`~lattice_tools.scoring.glm.optionalize_words`); ``exclude_words`` (ctm): drop these words from
    the hypothesis (:func:`~lattice_tools.scoring.glm.drop_ctm_words`); ``max_alternatives``: the budget
    of expanding alternations.
    """

    delete_hyphens: bool = False
    upcase: bool = True
    extended_ascii: bool = False
    purpose: str | None = None
    encoding: str = "utf-8"
    flatten_alternations: bool = False
    repair_optional: str | None = None
    optional_words: tuple[str, ...] = ()
    optional_style: str = "parens"
    exclude_words: tuple[str, ...] = ()
    max_alternatives: int = 10000

    def __post_init__(self):
        # lists given for the word sets are kept as tuples (the options are hashable and frozen)
        object.__setattr__(self, "optional_words", tuple(self.optional_words))
        object.__setattr__(self, "exclude_words", tuple(self.exclude_words))

    def check_repairs(self, fmt: str) -> None:
        """Refuse repairs that do not apply to input format ``fmt``."""
        if fmt == "ctm" and (self.repair_optional or self.optional_words):
            raise LatticeToolsError("repair_optional/optional_words apply to stm/trn references, not ctm")
        if fmt != "ctm" and (self.flatten_alternations or self.exclude_words):
            raise LatticeToolsError("flatten_alternations/exclude_words apply to ctm hypotheses only")
