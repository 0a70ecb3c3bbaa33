"""The trials of a keyword-search evaluation as F4DE ``KWSEval`` counts them: one :class:`Block` per keyword
(targets, non-targets, YES/NO decisions) and the :class:`Trials` of one condition (its ``T``)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Block:
    """The trials of one keyword (F4DE's block)."""

    kwid: str
    text: str
    targ: list[float] = field(default_factory=list)
    nontarg: list[float] = field(default_factory=list)
    yes_targ: int = 0
    no_targ: int = 0
    omitted: int = 0
    yes_nontarg: int = 0
    no_nontarg: int = 0
    min_yes: float | None = None
    max_no: float | None = None

    def add(self, score: float | None, decision: bool | None, is_targ: bool) -> None:
        if decision is None:                       # an occurrence no hit was matched to
            self.omitted += 1
            return
        assert score is not None, "a matched hit has a score"
        (self.targ if is_targ else self.nontarg).append(score)
        if decision:
            if is_targ:
                self.yes_targ += 1
            else:
                self.yes_nontarg += 1
            if self.min_yes is None or score < self.min_yes:
                self.min_yes = score
        else:
            if is_targ:
                self.no_targ += 1
            else:
                self.no_nontarg += 1
            if self.max_no is None or score > self.max_no:
                self.max_no = score

    @property
    def n_true(self) -> int:
        return self.yes_targ + self.no_targ + self.omitted

    @property
    def n_corr(self) -> int:
        return self.yes_targ

    @property
    def n_fa(self) -> int:
        return self.yes_nontarg

    @property
    def n_miss(self) -> int:
        return self.no_targ + self.omitted

    @property
    def n_nontarg(self) -> int:
        return self.yes_nontarg + self.no_nontarg

    @property
    def n_sys(self) -> int:
        return len(self.targ) + len(self.nontarg)


class Trials:
    """The keyword blocks of one set of trials (all keywords, or one condition) and its T."""

    def __init__(self, title: str, tot_dur: float, trials_per_second: float, include_no_targets: bool,
                 tot_trials: int | None = None):
        self.title = title
        self.tot_dur = tot_dur
        self.trials_per_second = trials_per_second
        self.include = include_no_targets
        # F4DE: sprintf("%.0f", TotDur / TrialsPerSecond) -- round half to even.
        self.tot_trials = int(f"{tot_dur / trials_per_second:.0f}") if tot_trials is None else tot_trials
        self.blocks: dict[str, Block] = {}

    def block(self, kwid: str, text: str) -> Block:
        b = self.blocks.get(kwid)
        if b is None:
            b = self.blocks[kwid] = Block(kwid, text)
        return b


__all__ = ["Block", "Trials"]
