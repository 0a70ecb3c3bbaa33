"""A memory budget for the searches (N-best, phrase alternatives, log-determinization).

The searches' own budgets count search nodes and determinized states, which a user cannot relate
to the machine; this one is in bytes of resident memory (RSS) of the process, the figure ``top``
and job schedulers show.  :func:`memory_budget` sets it for a block (the CLI's ``--max-memory``);
the search loops call :func:`check_memory` every few thousand steps (reading ``/proc/self/statm``
costs a few microseconds), which raises :class:`~lattice_tools.core.errors.BudgetExceededError` naming
the option that sets the budget.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
from typing import NoReturn

from .errors import BudgetExceededError

#: The default of every ``--max-memory``/``max_memory`` (bytes of resident memory): what the demo's densest
#: N = inf search needs (3.9 GB measured) fits; a runaway job stops well before a laptop swaps.
DEFAULT_MAX_MEMORY = 4 << 30

_limit: int | None = None
_option: str = "max_memory"


#: (process id, descriptor of its /proc/self/statm, page size in bytes): kept open, read again with pread (2.5 us a
#: reading, 18 us opening it each time: checked once per lattice on a 1,000-lattice archive, that was 30 ms); the
#: page size asked once with it.  A forked worker opens its own: the descriptor it inherits reads its parent's
#: figures (/proc/self names the process that opened it).  The inherited one is left open, not closed: its
#: number may have been reused by the time the worker first asks.
_statm: tuple[int, int, int] | None = None


def resident_bytes() -> int:
    """Resident memory of this process in bytes (0 where /proc is not available)."""
    global _statm
    try:
        pid = os.getpid()
        if _statm is None or _statm[0] != pid:
            _statm = (pid, os.open("/proc/self/statm", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)),
                      os.sysconf("SC_PAGE_SIZE"))
        return int(os.pread(_statm[1], 256, 0).split()[1]) * _statm[2]
    except (OSError, ValueError, IndexError, AttributeError):  # pragma: no cover - not Linux
        try:
            import resource

            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        except Exception:
            return 0


def format_size(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n}B"


@contextlib.contextmanager
def memory_budget(limit: int | None, option: str = "max_memory"):
    """Within the block, searches stop with BudgetExceededError once the process's resident memory
    exceeds ``limit`` bytes (None: no budget).  ``option`` is how the error tells the user to raise it
    (the CLI passes ``"--max-memory"``, the Python API leaves the parameter name)."""
    global _limit, _option
    saved = _limit, _option
    _limit, _option = limit, option
    try:
        yield
    finally:
        _limit, _option = saved


def budgeted(fn):
    """``fn`` run under :func:`memory_budget` of its own ``max_memory`` argument: every step of a public function
    (reading its inputs, its computation, writing its outputs) under the one budget its caller gives."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        with memory_budget(bound.arguments["max_memory"]):
            return fn(*args, **kwargs)

    return run


def budget_limit() -> int | None:
    """The memory budget in force here (bytes; None: none): what a job hands its worker processes, which
    set it again (:func:`memory_budget`) around their share of the work."""
    return _limit


def check_memory(what: str, key: str | None = None, advice: str = ", lower N or prune the lattice") -> None:
    """Raise BudgetExceededError if a memory budget is set and exceeded (``advice``: what else the user can do,
    after naming the option)."""
    if _limit is None:
        return
    rss = resident_bytes()
    if rss > _limit:
        raise BudgetExceededError(f"{what} exceeded the memory budget: {format_size(rss)} resident > "
                                  f"{format_size(_limit)}; raise it with {_option}{advice}", key=key)


def check_allocation(nbytes: int, what: str, key: str | None = None, advice: str = "") -> None:
    """Refuse, before it is made, an allocation of about ``nbytes`` that the memory budget cannot hold
    (BudgetExceededError naming ``what``, the sizes and the option; ``advice``: what else the user can do).
    Nothing is checked when no budget is set."""
    if _limit is None:
        return
    rss = resident_bytes()
    if rss > _limit:  # already past it (the budget is below what the inputs and libraries take)
        raise BudgetExceededError(f"{what}: the process already holds {format_size(rss)} resident, more than the "
                                  f"memory budget of {format_size(_limit)}; raise it with {_option}", key=key)
    if rss + nbytes > _limit:
        raise BudgetExceededError(f"{what} needs about {format_size(nbytes)} on top of {format_size(rss)} resident, "
                                  f"more than the memory budget of {format_size(_limit)}; raise it with "
                                  f"{_option}{advice}", key=key)


def bytes_left() -> int | None:
    """What the memory budget leaves above the process's resident memory (None: no budget is set), for
    compiled loops that take a byte limit instead of calling :func:`check_memory`."""
    if _limit is None:
        return None
    return max(0, _limit - resident_bytes())


def refuse_growth(what: str, key: str | None = None) -> NoReturn:
    """Raise BudgetExceededError for a search that stopped because its next allocation would not fit in
    :func:`bytes_left` (the exceeded error of :func:`check_memory` if the budget is already exceeded)."""
    check_memory(what, key)
    raise BudgetExceededError(f"{what} would exceed the memory budget; raise it with {_option}, lower N or "
                              "prune the lattice", key=key)
