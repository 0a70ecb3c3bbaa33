"""Lattice format conversion over many inputs (what ``lattice-tools convert`` runs)."""
from __future__ import annotations

from collections.abc import Sequence

from ...core._budget import DEFAULT_MAX_MEMORY, memory_budget
from ...core.files import progress_bar
from ...core.symbols import SymbolTable
from .inputs import read_lattice_inputs
from .lattice_files import write_lattices


def convert_lattices(inputs: Sequence[str] | str, output: str, *, from_format: str | None = None,
                     to_format: str | None = None, words: str | None = None, frame_shift: float | None = None,
                     frame_subsampling_factor: int | None = None, write_words: str | None = None,
                     keys: str | None = None, max_memory: int | None = DEFAULT_MAX_MEMORY,
                     progress: bool | None = None, executor=None, **write_options) -> int:
    """Read lattices from ``inputs`` (any readable format) and write them to ``output``.

    Streams one lattice at a time for Kaldi archives and SLF directories.  ``words`` is a
    ``words.txt`` used to map ids to words when reading; ``write_words`` writes the symbol table
    of the output (for SLF inputs: all words seen in all inputs, with the ids used in the output --
    give it to Kaldi/k2 tools together with the archive).  ``keys``: a file naming the lattices in input
    order, one key per line, as many as there are lattices (e.g. the icefall cut ids of a k2 ``.pt``,
    whose lattices are otherwise numbered ``0, 1, ...``); a count that does not match is an error and
    nothing is written.  ``max_memory``: bytes of resident memory reading and writing may use (None: no
    bound; BudgetExceededError naming the lattice past it, and nothing is written).  Returns the number
    converted.

    ``executor``: Kaldi archives and SLF directories are formatted on its workers (the same bytes as a
    serial run; reading stays here: formatting is what costs, 3-7x the reading of a Kaldi archive).
    """
    last_symbols: list[SymbolTable] = []

    def stream():
        # SLF inputs share one growing word table (read_lattice_inputs), so ids agree across files
        for lat in read_lattice_inputs(inputs, format=from_format, words=words, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor, keys=keys):
            last_symbols[:] = [lat.symbols]
            yield lat

    with memory_budget(max_memory):
        bar = progress_bar(stream(), desc="convert", unit="lat", progress=progress)
        n = write_lattices(bar, output, format=to_format, executor=executor, **write_options)
    if write_words and last_symbols:
        # tables of later lattices extend earlier ones (see read_lattices), so the last is complete
        last_symbols[0].write(write_words)
    return n
