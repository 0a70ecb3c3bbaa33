"""The knobs of the STM/CTM scoring engines: they change speed and memory, never a result."""
from __future__ import annotations

from dataclasses import dataclass

ENGINES = ("auto", "general", "chain")


@dataclass(frozen=True)
class EngineTuning:
    """Which engine scores STM/CTM input, and how the chain engine and the columnar CTM reader cut
    their work.

    ``engine``: ``"auto"`` (the chain engine whenever it applies, :func:`~.sclite.chain_engine_applies`),
    ``"general"`` (always the general engine of :mod:`.align`), ``"chain"`` (the chain engine; an input
    it cannot score is refused with ValueError).
    ``max_cells``: DP cells per chunk of jobs of the chain engine (memory: about 10 bytes per cell);
    ``min_thread_cells``: the smallest chunk worth a thread of its own.
    ``ctm_chunk_bytes``: bytes per tokenization chunk of the columnar CTM reader;
    ``ctm_thread_min_lines``: smaller CTM files are parsed in one thread (no pool to start);
    ``ctm_sample_min``: token columns at least this long are interned through a sample of their values.
    """

    engine: str = "auto"
    max_cells: int = 1 << 22
    min_thread_cells: int = 1 << 19
    ctm_chunk_bytes: int = 1 << 22
    ctm_thread_min_lines: int = 1 << 16
    ctm_sample_min: int = 1 << 16

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {self.engine!r}")
        if min(self.max_cells, self.min_thread_cells, self.ctm_chunk_bytes) < 1:
            raise ValueError("max_cells, min_thread_cells and ctm_chunk_bytes must be positive")


DEFAULT_TUNING = EngineTuning()
