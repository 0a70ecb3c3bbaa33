"""CTM items as sclite places them in time, shared by both STM/CTM scoring engines.

Objects (``CtmWord``/``CtmAltBlock``): :func:`block_times`, :func:`item_mid`, :func:`item_t1`,
:func:`item_span`, :func:`sort_items`, :func:`sclite_drops_a_word`.  Columns: :class:`HypItems` (what
the chain engine scores), built from objects (:func:`items_from_objects`) or straight from a CTM
file (:func:`lattice_tools.scoring.ctm_columns.read_ctm_columns`), and :func:`sorted_item_order`.
"""
from __future__ import annotations

import numpy as np

from ..io.transcripts.ctm import CtmAltBlock


def block_times(block) -> list:
    """(start, duration) of every word line of an ALT block, the ``@`` lines included: the CTM
    reader turns ``@`` into an empty alternative, but sclite still uses its times to place the
    block, so they are recovered from the block's source lines when available."""
    times = [((w.start or 0.0), (w.duration or 0.0)) for alt in block.alternatives for w in alt]
    for line in block.raw or ():
        if "@" not in line:
            continue
        parts = line.split()
        if len(parts) >= 5 and parts[4] == "@":
            try:
                times.append((float(parts[2]), float(parts[3])))
            except ValueError:
                pass
    return times


def sclite_drops_a_word(block) -> bool:
    """True when a block's source has an empty alternative written as nothing (``<ALT>`` right after
    ``<ALT_BEGIN>`` or ``<ALT>``, not as ``@``) followed by another alternative: sclite's
    ``Network_create_from_WTOKE`` then silently skips the first word of that next alternative
    (checked with Debian sclite).  We score the block as written and warn."""
    tags = []
    for line in block.raw or ():
        parts = line.split()
        if len(parts) >= 5:
            tags.append(parts[4] if parts[4] in ("<ALT_BEGIN>", "<ALT>", "<ALT_END>") else "w")
    for prev, cur, nxt in zip(tags, tags[1:], tags[2:], strict=False):
        if prev in ("<ALT_BEGIN>", "<ALT>") and cur == "<ALT>" and nxt == "w":
            return True
    return False


def item_mid(item) -> float:
    """Midpoint sclite uses to place a CTM item: a word's ``t1 + dur/2``; for an ALT block the
    largest midpoint of its words (0 when it has none)."""
    if isinstance(item, CtmAltBlock):
        mid = 0.0
        for t1, dur in block_times(item):
            m = t1 + dur / 2.0
            if m > mid:
                mid = m
        return mid
    return (item.start or 0.0) + (item.duration or 0.0) / 2.0


def sort_items(items: list) -> list:
    """Stable sort by start time; an item without any time keeps its place (it takes the time of
    the item before it).

    A file/channel with ALT blocks keeps its file order, as sclite always does (checked with Debian
    sclite): a block's place cannot be told from its words' times -- in a sausage, an alternative
    often starts before the previous slot's words, and empty alternatives have no time."""
    if any(isinstance(it, CtmAltBlock) for it in items):
        return list(items)
    keys, last = [], float("-inf")
    for it in items:
        if isinstance(it, CtmAltBlock):
            times = block_times(it)
            t = min(t1 for t1, _ in times) if times else None
        else:
            t = it.start
        if t is None:
            t = last
        keys.append(t)
        last = t
    order = sorted(range(len(items)), key=keys.__getitem__)
    return [items[i] for i in order]


def item_t1(item) -> float:
    if isinstance(item, CtmAltBlock):
        times = block_times(item)
        return min(t1 for t1, _ in times) if times else 0.0
    return item.start or 0.0


def item_span(item):
    """(t1, t2) of an item's words (for ``-m``); for blocks the per-word spans."""
    if isinstance(item, CtmAltBlock):
        return [(t1, t1 + dur) for t1, dur in block_times(item)]
    t1 = item.start or 0.0
    return [(t1, t1 + (item.duration or 0.0))]


class HypItems:
    """Columns of CTM items in input order.

    Per item: ``chan`` (index into ``chans``, the (file, channel) keys already case folded),
    ``t_sort`` (time the items are sorted by; NaN = none, takes the previous item's), ``mid``
    (midpoint sclite places the item with), ``lineno``, ``n_alts`` (1 for a plain word), ``alt0``
    (index of its first alternative), ``drops_word`` (sclite-divergent empty alternative),
    ``is_block`` (an ALT block, not a plain word).
    Per alternative (items' alternatives in order): ``alt_len`` (>= 1; an empty alternative is one
    null arc), ``alt_arc0`` (its first arc).  Per arc: ``arc_word`` (index into ``vocab``, the raw
    CTM word texts; -1 = the null arc of an empty alternative) and ``arc_conf`` (NaN = none)."""

    __slots__ = ("chans", "chan", "t_sort", "mid", "lineno", "n_alts", "alt0", "drops_word", "alt_len", "alt_arc0",
                 "arc_word", "arc_conf", "vocab", "is_block")

    def __init__(self, chans, chan, t_sort, mid, lineno, n_alts, alt0, drops_word, alt_len, alt_arc0, arc_word,
                 arc_conf, vocab, is_block):
        # (a plain class, not a dataclass: no code generation at import, which every CLI run pays)
        self.chans, self.chan, self.t_sort, self.mid, self.lineno = chans, chan, t_sort, mid, lineno
        self.n_alts, self.alt0, self.drops_word, self.alt_len, self.alt_arc0 = n_alts, alt0, drops_word, alt_len, alt_arc0
        self.arc_word, self.arc_conf, self.vocab, self.is_block = arc_word, arc_conf, vocab, is_block


def items_from_objects(ctm_items, fold) -> HypItems:
    """:class:`HypItems` of ``CtmWord``/``CtmAltBlock`` objects (the times of :func:`item_mid` and :func:`block_times`)."""
    chan_ids: dict = {}
    chan, t_sort, mid, lineno, n_alts, alt0, drops, is_block = [], [], [], [], [], [], [], []
    alt_len: list[int] = []
    alt_arc0: list[int] = []
    arc_word: list[int] = []
    arc_conf: list[float] = []
    vocab_ids: dict = {}
    nan = float("nan")
    for item in ctm_items:
        key = (fold(item.file), fold(item.channel))
        chan.append(chan_ids.setdefault(key, len(chan_ids)))
        lineno.append(item.lineno)
        alt0.append(len(alt_len))
        is_block.append(isinstance(item, CtmAltBlock))
        if is_block[-1]:
            times = block_times(item)
            t_sort.append(min(t1 for t1, _ in times) if times else nan)
            mid.append(item_mid(item))
            drops.append(sclite_drops_a_word(item))
            n_alts.append(len(item.alternatives))
            for alt in item.alternatives:
                alt_arc0.append(len(arc_word))
                if not alt:
                    alt_len.append(1)
                    arc_word.append(-1)
                    arc_conf.append(nan)
                    continue
                alt_len.append(len(alt))
                for w in alt:
                    arc_word.append(vocab_ids.setdefault(w.word, len(vocab_ids)))
                    arc_conf.append(nan if w.confidence is None else w.confidence)
        else:
            t_sort.append(nan if item.start is None else item.start)
            mid.append((item.start or 0.0) + (item.duration or 0.0) / 2.0)
            drops.append(False)
            n_alts.append(1)
            alt_arc0.append(len(arc_word))
            alt_len.append(1)
            arc_word.append(vocab_ids.setdefault(item.word, len(vocab_ids)))
            arc_conf.append(nan if item.confidence is None else item.confidence)
    return HypItems(list(chan_ids), np.asarray(chan, np.int64), np.asarray(t_sort, np.float64),
                    np.asarray(mid, np.float64), np.asarray(lineno, np.int64), np.asarray(n_alts, np.int64),
                    np.asarray(alt0, np.int64), np.asarray(drops, bool), np.asarray(alt_len, np.int64),
                    np.asarray(alt_arc0, np.int64), np.asarray(arc_word, np.int64),
                    np.asarray(arc_conf, np.float64), list(vocab_ids), np.asarray(is_block, bool))


def sorted_item_order(hyp: HypItems) -> list:
    """Per channel (in order of first appearance): its items, stably sorted by time, an item
    without time taking the time of the item before it; in file order when the channel has an
    ALT block (``sclite.sort_items``)."""
    n = len(hyp.chan)
    out = []
    if n == 0:
        return [np.zeros(0, np.int64) for _ in hyp.chans]
    by_chan = np.argsort(hyp.chan, kind="stable")
    bounds = np.searchsorted(hyp.chan[by_chan], np.arange(len(hyp.chans) + 1))
    for c in range(len(hyp.chans)):
        idx = by_chan[bounds[c]:bounds[c + 1]]
        if hyp.is_block[idx].any():
            out.append(idx)
            continue
        t = hyp.t_sort[idx]
        if np.isnan(t).any():
            t = t.copy()
            last = float("-inf")
            for k in range(len(t)):       # forward fill (rare: times written as '*')
                if np.isnan(t[k]):
                    t[k] = last
                last = t[k]
        out.append(idx[np.argsort(t, kind="stable")])
    return out
