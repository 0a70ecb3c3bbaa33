"""Build an on-disk term index from a stream of lattices or alternatives (one utterance in memory
at a time; see :mod:`lattice_tools.kws.store` for the file and :mod:`lattice_tools.kws.index` for
what is indexed)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..alternatives._common import is_silence
from ..alternatives.network import Alternatives
from ..errors import LatticeToolsError, MismatchError
from ..lattice import Lattice
from .index import DEFAULT_MAX_LENGTH, DEFAULT_MAX_SILENCE, index_alternatives, index_lattice
from .store import IndexWriter, normalized_settings, settings_problem


def _settings(max_length, max_silence, min_posterior, representation):
    import math
    import numbers

    if isinstance(max_silence, numbers.Real) and math.isinf(max_silence) and max_silence > 0:
        max_silence = None  # an infinite limit is no limit
    settings = {"max_length": int(max_length) if isinstance(max_length, numbers.Integral) else max_length,
                "max_silence": max_silence, "representation": representation,
                "min_posterior": float(min_posterior) if isinstance(min_posterior, numbers.Real) else min_posterior}
    problem = settings_problem(settings)
    if problem is not None:
        key = problem.split()[0]
        raise LatticeToolsError(f"{problem}, got {settings[key]!r}")
    return normalized_settings(settings)


def build_lattice_index(lattices: Iterable[Lattice], path: str, *, max_length: int = DEFAULT_MAX_LENGTH,
                        max_silence: float | None = DEFAULT_MAX_SILENCE, min_posterior: float = 0.0,
                        acoustic_scale: float = 1.0, lm_scale: float = 1.0, word_penalty: float = 0.0,
                        silence_words: Iterable[str] | None = None,
                        segments: Mapping[str, tuple[str, str, float]] | None = None, channel: str = "1",
                        append: bool = False, progress=None, silence_rule: str = "gap") -> dict:
    """Index every lattice of ``lattices`` (streamed) into the SQLite index ``path``.

    ``segments`` maps a lattice key to ``(file, channel, offset seconds)`` (Kaldi ``segments``);
    without it a lattice is recording ``key``, channel ``channel``, offset 0.  The vocabulary (for the
    out-of-vocabulary check of the search) is every non-silence word of the lattices' symbol tables.
    ``silence_rule`` (``gap`` or ``kaldi``, see :mod:`lattice_tools.kws.index`) is stored in the index.
    Returns ``{"utterances", "hits"}``.
    """
    from .index import SILENCE_RULES

    if silence_rule not in SILENCE_RULES:
        raise LatticeToolsError(f"silence_rule must be one of {', '.join(SILENCE_RULES)}, got {silence_rule!r}")
    settings = {**_settings(max_length, max_silence, min_posterior, "lattice"), "silence_rule": silence_rule}
    silence = None if silence_words is None else frozenset(silence_words)
    seen_tables: set[int] = set()
    pruned = 0.0
    with IndexWriter(path, settings, append=append) as writer:
        for lat in lattices:
            if id(lat.symbols) not in seen_tables:
                seen_tables.add(id(lat.symbols))
                writer.add_vocabulary(w for w, _ in lat.symbols if not is_silence(w, silence))
            if segments is not None:
                if lat.key not in segments:
                    raise MismatchError(f"utterance {lat.key!r} is not in the segments", key=lat.key)
                file, chan, offset = segments[lat.key]
            else:
                file, chan, offset = lat.key, channel, 0.0
            stats: dict = {}
            hits = index_lattice(lat, max_length=max_length, max_silence=max_silence, min_posterior=min_posterior,
                                 acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                                 silence_words=silence_words, file=file, channel=chan, offset=offset, stats=stats,
                                 silence_rule=silence_rule)
            writer.add_utterance(lat.key, file, chan, hits, stats.get("pruned_mass", 0.0))
            pruned += stats.get("pruned_mass", 0.0)
            if progress is not None:
                progress(lat.key)
        return {"utterances": writer.num_utterances, "hits": writer.num_hits, "pruned_mass": pruned}


def build_alternatives_index(alternatives: Iterable[Alternatives], path: str, representation: str, *,
                             max_length: int = DEFAULT_MAX_LENGTH, max_silence: float | None = DEFAULT_MAX_SILENCE,
                             min_posterior: float = 0.0, silence_words: Iterable[str] | None = None,
                             vocabulary: Iterable[str] | None = None, append: bool = False) -> dict:
    """Index alternatives (``representation``: ``1best``, ``nbest``, ``sausage`` or ``phrase``) into
    the SQLite index ``path``; each :class:`Alternatives` is one utterance (its ``key``), already
    placed in its ``file``/``channel``.  The vocabulary is ``vocabulary`` if given (e.g. the
    recognizer's words.txt), else each Alternatives' ``meta["vocabulary"]`` (e.g. the words of the
    lattice it was computed from), else the words the alternatives contain."""
    settings = _settings(max_length, max_silence, min_posterior, representation)
    silence = None if silence_words is None else frozenset(silence_words)
    pruned = 0.0
    with IndexWriter(path, settings, append=append) as writer:
        if vocabulary is not None:
            writer.add_vocabulary(w for w in vocabulary if not is_silence(w, silence))
        for alts in alternatives:
            if vocabulary is None:
                # the words of the lattice the alternatives came from (meta["vocabulary"]), else their own
                own = alts.meta.get("vocabulary") or {w for slot in alts.slots for a in slot.alternatives
                                                      for w in a.words}
                writer.add_vocabulary({w for w in own if not is_silence(w, silence)})
            stats: dict = {}
            hits = index_alternatives(alts, max_length=max_length, max_silence=max_silence,
                                      min_posterior=min_posterior, silence_words=silence_words, stats=stats)
            writer.add_utterance(alts.key, alts.file, alts.channel, hits, stats.get("pruned_mass", 0.0))
            pruned += stats.get("pruned_mass", 0.0)
        return {"utterances": writer.num_utterances, "hits": writer.num_hits, "pruned_mass": pruned}
