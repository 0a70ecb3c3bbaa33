"""Thread-level parallelism for numpy-heavy stages (the fast scorer and its CTM reader).

numpy releases the GIL inside its array loops, so independent pieces of work on large arrays
(chunks of DP columns, columns of a CTM file) run concurrently in threads without copying data
between processes.  The results never depend on the number of threads: every piece is computed
exactly as it would be serially and the pieces are combined in a fixed order.

The number of threads is ``LATTICE_TOOLS_NUM_THREADS`` when set (``1`` turns threading off, as one
would in a Kaldi ``--nj`` job that already fills the machine), else the number of CPUs this process
may run on, at most :data:`MAX_DEFAULT_THREADS`.
"""
from __future__ import annotations

import os

MAX_DEFAULT_THREADS = 4
ENV_VAR = "LATTICE_TOOLS_NUM_THREADS"


def num_threads() -> int:
    """Threads the fast paths may use (see the module docstring)."""
    value = os.environ.get(ENV_VAR, "").strip()
    if value:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n < 1:
            from .errors import LatticeToolsError

            raise LatticeToolsError(f"{ENV_VAR} must be a positive integer, not {value!r}")
        return n
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_DEFAULT_THREADS))


def thread_map(fn, items, workers: int | None = None) -> list:
    """``[fn(x) for x in items]``, evaluated by up to ``workers`` threads (default
    :func:`num_threads`); serially when there is one item or one thread.  An exception in any
    call is raised here, after the other calls have finished."""
    items = list(items)
    n = num_threads() if workers is None else workers
    n = min(n, len(items))
    if n <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="lattice-tools") as pool:
        return list(pool.map(fn, items))


def thread_call(*calls, workers: int | None = None):
    """Run zero-argument callables concurrently (as :func:`thread_map`); their results in order."""
    return thread_map(lambda f: f(), calls, workers)
