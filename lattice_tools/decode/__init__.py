"""Speech decoding into lattices (pocketsphinx, offline)."""
from __future__ import annotations


def decode_audio(*args, **kwargs):
    """See :func:`lattice_tools.decode.pocketsphinx.decode_audio` (imported lazily)."""
    from .pocketsphinx import decode_audio as _decode_audio

    return _decode_audio(*args, **kwargs)


__all__ = ["decode_audio"]
