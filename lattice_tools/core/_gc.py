"""Pausing the cyclic garbage collector around allocation-heavy stages."""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """Run the block with the cyclic garbage collector paused, restoring its state afterwards.

    For stages that build tens of thousands of small acyclic objects (search records, result
    objects): the collections their allocation triggers keep re-traversing the growing set of
    live objects without finding garbage (measured: 10 % of the metrics' run time on 10,000
    utterances, 17 % of the phrase search on a 138k-link lattice).  Reference counting still
    frees everything that is dropped; a cycle created meanwhile is collected once the collector
    runs again after the block."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
