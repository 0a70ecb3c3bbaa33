"""Columnar CTM reader for the chain engine: a CTM file straight to :class:`~.ctm_items.HypItems`.

Equivalent to ``items_from_objects(read_ctm(path))`` (tests/test_chain_scorer.py checks it) but
without one Python object per line: the file is tokenized with numpy on its bytes, word texts are
interned through a hash of their bytes (collisions are detected, not assumed away), and numbers of
the usual form ``[-]digits[.digits]`` are converted exactly (integer mantissa / power of ten: both
exact doubles, so the quotient is the correctly rounded value, as ``float()`` gives).

Anything unusual returns None and the caller uses :func:`lattice_tools.io.transcripts.ctm.read_ctm`, which
reads the file line by line and raises the precise error (file, line, what was expected):
malformed lines, nested blocks, comments inside blocks, stray tags, '@' misplaced, file/channel
changes inside a block, unusual white space or numbers, stdin.

Why two CTM readers ship: the object reader (:mod:`lattice_tools.io.transcripts.ctm`) is the CTM format -- every
line, every error, the objects GLM filtering and the general engine need; this one is a speed path
for the chain engine's common input (a canonical CTM of millions of lines would otherwise cost one
Python object per line, several times the scoring itself).  It never guesses: anything it does not
read exactly is handed to the object reader by :func:`lattice_tools.scoring.sclite.score_files`,
which is the only place that chooses.
"""
from __future__ import annotations

import gzip
import os
import re

import numpy as np

from .._ext import native
from ..core._budget import check_allocation
from ..core._threads import thread_call, thread_map
from .ctm_items import HypItems
from .ctm_numbers import MASK, parse_numbers
from .tuning import DEFAULT_TUNING, EngineTuning

_UNICODE_SPACE = re.compile("[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_T_WORD, _T_BEGIN, _T_SEP, _T_END, _T_AT = 0, 1, 2, 3, 4
_P1 = np.uint64(0x9E3779B97F4A7C15)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)




def _packed(u64, starts, lens, n_chunks):
    """Token bytes as little-endian uint64 chunks, zero-padded: ``uint64 [n_chunks, n]``.
    ``u64`` is an unaligned (byte-strided) uint64 view of the padded buffer, so one gather reads
    8 bytes."""
    out = np.empty((n_chunks, len(starts)), np.uint64)
    for c in range(n_chunks):
        rem = np.clip(lens - 8 * c, 0, 8)
        out[c] = u64[starts + 8 * c] & MASK[rem]
    return out


def _intern(buf, u64, starts, lens, encoding, runs=True, sample_min=DEFAULT_TUNING.ctm_sample_min):
    """(id per token, list of distinct texts) or None (too long, collision, undecodable)."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, np.int64), []
    maxlen = int(lens.max())
    if maxlen > 128:
        return None
    if maxlen > 8 and not runs:
        # tokens of at most 8 bytes (most words) are keyed by their bytes -- exact, one uint64,
        # nothing to check -- and only the longer ones are hashed; the two vocabularies cannot
        # share a text (different byte lengths)
        short = lens <= 8
        n_short = int(np.count_nonzero(short))
        if n_short and n_short < n:
            long_ = ~short
            got_s = _intern(buf, u64, starts[short], lens[short], encoding, runs=False, sample_min=sample_min)
            got_l = _intern(buf, u64, starts[long_], lens[long_], encoding, runs=False, sample_min=sample_min)
            if got_s is None or got_l is None:
                return None
            ids = np.empty(n, np.int32)
            ids[short] = got_s[0]
            ids[long_] = got_l[0] + len(got_s[1])
            return ids, got_s[1] + got_l[1]
    rows = _packed(u64, starts, lens, (maxlen + 7) // 8)
    # runs of equal tokens (file and channel columns) are interned once
    change = np.ones(n, bool)
    if n > 1 and runs:
        np.any(rows[:, 1:] != rows[:, :-1], axis=0, out=change[1:])
    n_heads = int(np.count_nonzero(change))
    run_starts: np.ndarray | None                             # where runs start; None: no compression
    if n_heads > n // 4:                                      # few runs (word column): no compression
        run_starts = None
        heads = np.arange(n)
        hrows = rows
    else:
        run_starts = change
        heads = np.flatnonzero(change)
        hrows = rows[:, heads]
    if hrows.shape[0] == 1:
        h = hrows[0]                                          # the bytes themselves: no collision possible
    else:
        h = np.full(len(heads), 0x51ED270B27A4C3D1, np.uint64)
        with np.errstate(over="ignore"):
            for k in range(hrows.shape[0]):
                h = (h ^ hrows[k]) * _P1
                h ^= h >> np.uint64(29)
                h *= _P2
    uniq, inv = _unique_inverse(h, sample_min)
    if hrows.shape[0] == 1:                                   # the keys are the bytes: decode them
        try:
            texts = [int(u).to_bytes(8, "little").rstrip(b"\0").decode(encoding) for u in uniq.tolist()]
        except UnicodeDecodeError:
            return None
        inv = inv.astype(np.int32)
        return (inv if run_starts is None else inv[np.cumsum(run_starts) - 1]), texts
    first = np.empty(len(uniq), np.int64)
    first[inv] = np.arange(len(inv))                          # some occurrence of each distinct token
    if hrows.shape[0] > 1 and not np.array_equal(hrows[:, first[inv]], hrows):
        return None                                           # hash collision: let the exact reader do it
    texts = []
    try:
        for i in heads[first].tolist():
            s = int(starts[i])
            texts.append(bytes(buf[s:s + int(lens[i])]).decode(encoding))
    except UnicodeDecodeError:
        return None
    inv = inv.astype(np.int32)
    return (inv if run_starts is None else inv[np.cumsum(run_starts) - 1]), texts


def _unique_inverse(keys, sample_min: int = DEFAULT_TUNING.ctm_sample_min):
    """``np.unique(keys, return_inverse=True)`` for long arrays over a small vocabulary, without a
    sort of the whole array: the distinct values of a sample are sorted, and every key is found
    through a small hash table of them (:func:`_find_sorted`); keys the sample missed are added in
    a second round (arrays shorter than ``sample_min``: ``np.unique``).  Same result as ``np.unique``:
    ``uniq`` sorted, ``uniq[inv] == keys``."""
    n = len(keys)
    if n < sample_min:
        uniq, inv = np.unique(keys, return_inverse=True)
        return uniq, inv.reshape(-1)
    uniq = np.unique(keys[::max(n // 8192, 1)])
    pos = _find_sorted(uniq, keys)
    miss = pos < 0
    if miss.any():
        uniq = np.union1d(uniq, keys[miss])
        pos = _find_sorted(uniq, keys)
    return uniq, pos


_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


def _find_sorted(uniq, keys):
    """Index of every key in the sorted array ``uniq``, -1 when absent.

    Multiplicative hashing into a table of at least 8x ``len(uniq)`` slots, where the first of
    the distinct values claiming a slot keeps it: most keys are found with one multiply, one shift
    and two gathers; the few whose slot another value holds (or that are absent) fall back to a
    binary search.  (``np.searchsorted`` alone costs about forty nanoseconds per key.)"""
    v = len(uniq)
    if v == 0:
        return np.full(len(keys), -1, np.int64)
    bits = max(int(v - 1).bit_length() + 3, 8)
    shift = np.uint64(64 - bits)
    slot_u = (uniq * _HASH_MULT) >> shift                    # (uint64 products wrap: intended)
    slot_set, first = np.unique(slot_u, return_index=True)
    table_key = np.zeros(1 << bits, np.uint64)
    table_idx = np.full(1 << bits, -1, np.int64)
    table_key[slot_set] = uniq[first]
    table_idx[slot_set] = first
    slot = keys * _HASH_MULT
    slot >>= shift
    pos = table_idx[slot]
    rest = np.flatnonzero((table_key[slot] != keys) | (pos < 0))
    if len(rest):
        k = keys[rest]
        p = np.minimum(np.searchsorted(uniq, k), v - 1)
        pos[rest] = np.where(uniq[p] == k, p, -1)
    return pos


def _tokens(buf, n_bytes, chunk_bytes: int = DEFAULT_TUNING.ctm_chunk_bytes):
    """Tokenize chunk by chunk (so that no temporary spans the whole file: under some kernels each
    fresh page costs a fault of several microseconds); chunks are tokenized concurrently.

    Returns None for a token longer than 255 bytes or a line longer than 64 KB, else
    ``(start, length, n_ctrl, line_last)``: token starts (int32 when the file allows), lengths
    (uint8), the number of bytes below 32, and -- when the layout is canonical (every separator a
    single byte, no blank line, no leading white space) -- the index of the last token of every
    line, else None."""
    itype = np.int32 if n_bytes < (1 << 31) - 1 else np.int64
    bounds = [0]
    while bounds[-1] < n_bytes:                               # chunks end after a newline
        stop = min(bounds[-1] + chunk_bytes, n_bytes)
        if stop < n_bytes:
            nl = buf[stop:min(stop + 65536, n_bytes)].tobytes().find(b"\n")
            if nl < 0:
                return None
            stop += nl + 1
        bounds.append(stop)
    parts = thread_map(lambda k: _chunk_tokens(buf[bounds[k]:bounds[k + 1]], itype), range(len(bounds) - 1))
    if any(p is None for p in parts):
        return None
    if not parts:
        return np.zeros(0, itype), np.zeros(0, np.uint8), 0, None
    canonical = all(p[3] is not None for p in parts)
    starts, lasts = [], []
    n_tok = 0
    for (st, _ln, _nc, last), pos in zip(parts, bounds, strict=False):
        st += itype(pos)
        starts.append(st)
        if canonical:
            lasts.append(last + n_tok)
        n_tok += len(st)
    return (np.concatenate(starts), np.concatenate([p[1] for p in parts]), sum(p[2] for p in parts),
            np.concatenate(lasts) if canonical and n_tok else None)


def _chunk_tokens(chunk, itype):
    """(starts within the chunk, lengths, bytes below 32, last token of every line or None when
    the layout is not canonical) of one chunk ending with '\n'; None for a token over 255 bytes."""
    ws = chunk <= 32
    if not ws[0]:
        # canonical layout: tokens lie between single separator bytes (one pass for the
        # separators instead of two for the token boundaries)
        sep = np.flatnonzero(ws).astype(itype)               # ends with the chunk's final '\n'
        if len(sep) < 2 or bool(np.all(np.diff(sep) > 1)):
            sep_byte = chunk[sep]
            n_ctrl = len(sep) - int(np.count_nonzero(sep_byte == 32))   # bytes < 32 are separators
            st = np.empty(len(sep), itype)
            st[0] = 0
            np.add(sep[:-1], 1, out=st[1:])
            ln = sep - st
            if int(ln.max()) > 255:
                return None
            return st, ln.astype(np.uint8), n_ctrl, np.flatnonzero(sep_byte == 10)
    n_ctrl = int(np.count_nonzero(chunk < 32))
    t = np.flatnonzero(ws[1:] != ws[:-1]).astype(itype)
    t += 1
    if not ws[0]:
        t = np.r_[itype(0), t]
    # the chunk ends with '\n', so transitions pair up as (start, end)
    st, en = t[0::2], t[1::2]
    ln = en - st
    if len(ln) and int(ln.max()) > 255:
        return None
    canonical = (len(st) > 0 and int(st[0]) == 0 and int(en[-1]) == len(chunk) - 1
                 and bool(np.all(st[1:] == en[:-1] + 1)))
    return st, ln.astype(np.uint8), n_ctrl, (np.flatnonzero(chunk[en] == 10) if canonical else None)


class _EveryLine:
    """Every line of the file has ``width`` tokens: field k of line i is token ``width * i + k``."""

    def __init__(self, width):
        self.width = width


def _field(tok_start, tok_len, t0, k) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of field ``k`` of every line whose first token is ``t0`` (or of every line
    when ``t0`` is an :class:`_EveryLine`: strided views, no gather)."""
    if isinstance(t0, _EveryLine):
        return tok_start[k::t0.width], tok_len[k::t0.width].astype(np.int32)
    return tok_start[t0 + k], tok_len[t0 + k].astype(np.int32)


def _columns(buf, u64, tok_start, tok_len, t0, encoding, workers, sample_min):
    """[(file/channel id per line, distinct (file, channel) pairs), (word id per line, vocabulary),
    start times, durations] -- each None when the exact reader must decide.  The columns are
    independent and parsed concurrently (numpy releases the GIL); file + channel are interned
    together, one key per distinct pair."""
    def file_channel():
        f_start = _field(tok_start, tok_len, t0, 0)[0]
        c_start, c_len = _field(tok_start, tok_len, t0, 1)
        # "file<space>channel" spans
        fc = _intern(buf, u64, f_start, c_start + c_len - f_start, encoding, sample_min=sample_min)
        if fc is None:
            return None
        span_id, fc_spans = fc
        pair_ids: dict = {}                                   # the same pair may have several spans
        pair_of_span = np.fromiter((pair_ids.setdefault(tuple(x.split()), len(pair_ids)) for x in fc_spans),
                                   np.int64, count=len(fc_spans))
        return pair_of_span[span_id], list(pair_ids)

    return thread_call(file_channel,
                       lambda: _intern(buf, u64, *_field(tok_start, tok_len, t0, 4), encoding, runs=False,
                                       sample_min=sample_min),
                       lambda: parse_numbers(u64, *_field(tok_start, tok_len, t0, 2)),
                       lambda: parse_numbers(u64, *_field(tok_start, tok_len, t0, 3)),
                       workers=workers)


def read_ctm_columns(path, fold, encoding: str = "utf-8", tuning: EngineTuning = DEFAULT_TUNING):
    """:class:`HypItems` of a CTM file, or None when the file needs the exact reader.

    ``fold(text)`` case-folds file and channel names as the scorer does."""
    path = str(path)
    if path == "-":
        return None
    if encoding.replace("-", "").lower() not in ("utf8", "ascii"):
        return None
    got = _file_bytes(path)
    if got is None:
        return None
    data, n_bytes = got
    columns = _data_lines(data, n_bytes, encoding, tuning)
    del data, got                                             # the file's bytes are no longer needed
    if columns is None:
        return None
    return _items_of_lines(fold, *columns)


#: What reading a CTM into columns holds at its peak per byte of the file (measured: 7.3 on a CTM of 30-byte
#: lines; shorter lines need more), checked against the memory budget before the file is read.
_PEAK_BYTES_PER_BYTE = 10


def _file_bytes(path: str):
    """(the file's bytes, ending with a newline, padded for unaligned 8-byte reads; their number),
    or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(2)
            f.seek(0)
            if head == b"\x1f\x8b":
                data = bytearray(gzip.decompress(f.read()))
                n_bytes = len(data)
                check_allocation(n_bytes * _PEAK_BYTES_PER_BYTE, f"reading the CTM {path}")
                data.extend(b"\n" + bytes(136))
            else:
                size = os.fstat(f.fileno()).st_size
                check_allocation(size * _PEAK_BYTES_PER_BYTE, f"reading the CTM {path}")
                data = bytearray(size + 137)                  # room for '\n' and unaligned 8-byte reads
                n_bytes = f.readinto(memoryview(data)[:size])
                if n_bytes != size:
                    return None
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if n_bytes and data[n_bytes - 1] != 10:
        data[n_bytes] = 10
        n_bytes += 1
    return data, n_bytes


def _data_lines(data: bytearray, n_bytes: int, encoding: str, tuning: EngineTuning):
    """The data lines of a CTM file's bytes, as columns: (data line numbers (0-based), comment line
    numbers, file/channel id per line, distinct (file, channel) pairs, word id per line, vocabulary,
    start times, durations, confidences (NaN: none)); None when the exact reader must decide.

    An ASCII file is read in one pass by the compiled scanner (``lattice_tools/_ext/ctm_scan.c``); what it
    does not read exactly (non-ASCII text, unusual white space or numbers) goes through the numpy
    tokenizer (:func:`_data_lines_numpy`), which hands what it does not read exactly to the line reader."""
    got = native("ctm_scan").scan(data, n_bytes)
    if got is None:
        return _data_lines_numpy(data, n_bytes, encoding, tuning)
    lines, comments, fc_id, fc_pairs, word_id, vocab, start, dur, conf = got
    return (np.frombuffer(lines, np.int64), np.frombuffer(comments, np.int64), np.frombuffer(fc_id, np.int32),
            fc_pairs, np.frombuffer(word_id, np.int32), vocab, np.frombuffer(start, np.float64),
            np.frombuffer(dur, np.float64), np.frombuffer(conf, np.float64))


def _data_lines_numpy(data: bytearray, n_bytes: int, encoding: str, tuning: EngineTuning):
    """:func:`_data_lines` of any file (numpy on its bytes), or None when the exact reader must decide."""
    body = memoryview(data)[:n_bytes]
    buf = np.frombuffer(data, np.uint8)
    # white space exactly as str.split() sees it and lines exactly as the text reader splits them:
    # no control character but tab, newline and CR (CR only in CRLF), no Unicode space
    tok = _tokens(buf, n_bytes, tuning.ctm_chunk_bytes)
    if tok is None:
        return None
    tok_start, tok_len, n_ctrl, line_last = tok
    # (canonical layout: every '\n' follows the last token of its line)
    n_nl = len(line_last) if line_last is not None else data.count(b"\n", 0, n_bytes)
    n_tab = data.count(b"\t", 0, n_bytes) if data.find(b"\t", 0, n_bytes) >= 0 else 0
    n_cr = data.count(b"\r", 0, n_bytes) if data.find(b"\r", 0, n_bytes) >= 0 else 0
    if n_ctrl != n_nl + n_tab + n_cr or (n_cr and n_cr != data.count(b"\r\n", 0, n_bytes)):
        return None
    if not data.isascii():                                    # (the zero padding is ASCII)
        try:
            if _UNICODE_SPACE.search(bytes(body).decode(encoding)):
                return None
        except UnicodeDecodeError:
            return None
    del body
    u64 = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    n_tok = len(tok_start)
    t0 = None
    if line_last is not None and n_tok:
        # the usual file: canonical and every line five (or six) tokens.  Field k of every line is
        # then a strided view of the token arrays (no gather); only comment lines remain to be found.
        width = int(line_last[0]) + 1
        if (width in (5, 6) and n_tok % width == 0
                and np.array_equal(line_last, np.arange(width - 1, n_tok, width, dtype=line_last.dtype))):
            first = tok_start[0::width]
            semi = buf[first] == 59
            if not semi.any() or not (semi & (tok_len[0::width] >= 2) & (buf[first + 1] == 59)).any():
                lines = np.arange(n_tok // width)
                comment_lines = lines[:0]
                t0 = _EveryLine(width)
                ntok = None
            del first, semi
    if t0 is None:
        if line_last is not None:
            # canonical layout (single separators, no blank line): a token ends its line when '\n' follows
            line_tok0 = np.r_[0, line_last[:-1] + 1]
            line_ntok = line_last + 1 - line_tok0
        else:
            nl = np.flatnonzero(buf[:n_bytes] == 10)
            line_tok0 = np.searchsorted(tok_start, np.r_[0, nl[:-1] + 1])
            line_ntok = np.diff(np.r_[line_tok0, len(tok_start)])
        has = line_ntok > 0
        first_tok = line_tok0[has]
        comment = (tok_len[first_tok] >= 2) & (buf[tok_start[first_tok]] == 59) & (buf[tok_start[first_tok] + 1] == 59)
        lines = np.flatnonzero(has)[~comment]                 # data lines (0-based)
        comment_lines = np.flatnonzero(has)[comment]
        ntok = line_ntok[lines]
        if not np.all((ntok == 5) | (ntok == 6)):
            return None
        t0 = line_tok0[lines]
        del line_tok0, line_ntok, has, first_tok, comment

    got = _columns(buf, u64, tok_start, tok_len, t0, encoding,
                   workers=None if len(lines) >= tuning.ctm_thread_min_lines else 1,
                   sample_min=tuning.ctm_sample_min)
    if any(x is None for x in got):
        return None
    (fc_id, fc_texts), (word_id, vocab), start, dur = got
    del got
    # times and confidences of every data line
    six = np.zeros(0, np.int64)  # the lines with a sixth (confidence) column, when not every line has one
    if isinstance(t0, _EveryLine):
        if t0.width == 6:
            conf = parse_numbers(u64, *_field(tok_start, tok_len, t0, 5))
            if conf is None or np.isnan(conf).any():
                return None
        else:
            conf = np.full(len(lines), np.nan)
    else:
        conf = np.full(len(lines), np.nan)
        six = np.flatnonzero(ntok == 6)
    if len(six):
        assert not isinstance(t0, _EveryLine)
        c6 = parse_numbers(u64, tok_start[t0[six] + 5], tok_len[t0[six] + 5].astype(np.int32))
        if c6 is None or np.isnan(c6).any():
            return None
        conf[six] = c6
    return lines, comment_lines, fc_id, fc_texts, word_id, vocab, start, dur, conf


def _items_of_lines(fold, lines, comment_lines, fc_id, fc_texts, word_id, vocab, start, dur, conf):
    """:class:`HypItems` of the data lines of a CTM file (:func:`_data_lines`), or None when the ALT
    block structure needs the exact reader (nesting, stray tags, a file/channel change or a
    comment inside a block, '@' not alone in its alternative)."""
    word_id = word_id.astype(np.int32)
    fc_id = fc_id.astype(np.int32)
    tag_of_vocab = np.full(len(vocab), _T_WORD, np.int8)
    for i, w in enumerate(vocab):
        tag_of_vocab[i] = {"<ALT_BEGIN>": _T_BEGIN, "<ALT>": _T_SEP, "<ALT_END>": _T_END, "@": _T_AT}.get(w, _T_WORD)
    typ = tag_of_vocab[word_id]
    # block structure: no nesting, no stray tags, same file/channel inside, no comment inside
    is_begin, is_end = typ == _T_BEGIN, typ == _T_END
    depth_after = np.cumsum(is_begin.astype(np.int8) - is_end.astype(np.int8), dtype=np.int32)
    if (depth_after.size and (depth_after.min() < 0 or depth_after.max() > 1 or depth_after[-1] != 0)):
        return None
    inside = (depth_after - is_begin + is_end) == 1           # tag lines and words after <ALT_BEGIN>
    del depth_after
    if np.any((typ == _T_SEP) & ~inside) or np.any((typ == _T_AT) & ~inside):
        return None
    begin_rows = np.flatnonzero(is_begin)
    in_block = inside | is_begin
    if len(begin_rows):
        block_of = np.cumsum(is_begin, dtype=np.int32) - 1    # block of every line inside one
        if np.any(in_block & (fc_id != fc_id[begin_rows[np.maximum(block_of, 0)]])):
            return None
        del block_of
    if len(comment_lines) and len(begin_rows):
        end_rows = np.flatnonzero(is_end)
        bl = lines[begin_rows]
        el = lines[end_rows]
        k = np.searchsorted(bl, comment_lines, side="right") - 1
        if np.any((k >= 0) & (comment_lines < el[np.maximum(k, 0)])):
            return None
    # alternatives start at plain words, <ALT_BEGIN> and <ALT>; items at plain words and <ALT_BEGIN>
    plain = (typ == _T_WORD) & ~inside
    alt_mask = plain | is_begin | (typ == _T_SEP)
    item_mask = plain | is_begin
    alt_start = np.flatnonzero(alt_mask)
    item_start = np.flatnonzero(item_mask)
    # alternative / item of every row: a running count of starts (what searchsorted(starts, row,
    # 'right') - 1 gives, in one linear pass)
    alt_of_row = np.cumsum(alt_mask, dtype=np.int32)
    alt_of_row -= 1
    item_of_row = np.cumsum(item_mask, dtype=np.int32)
    item_of_row -= 1
    del alt_mask, item_mask
    n_items = len(item_start)
    block_word = (typ == _T_WORD) & inside
    at_line = (typ == _T_AT) & inside
    member = plain | block_word | at_line
    rows_m = np.flatnonzero(member)
    alt_of = alt_of_row[rows_m]
    n_words_alt = np.bincount(alt_of[~at_line[rows_m]], minlength=len(alt_start))
    n_at_alt = np.bincount(alt_of[at_line[rows_m]], minlength=len(alt_start))
    if np.any((n_at_alt > 0) & ((n_at_alt + n_words_alt) != 1)):
        return None                                           # '@' must be alone in its alternative
    del rows_m, alt_of, member
    alt_len = np.maximum(n_words_alt, 1)
    alt_item = item_of_row[alt_start].astype(np.int64)
    n_alts = np.bincount(alt_item, minlength=n_items)
    alt0 = np.zeros(n_items, np.int64)
    np.cumsum(n_alts[:-1], out=alt0[1:])
    # arcs: words of alternatives in order, one null arc per empty alternative
    word_rows = np.flatnonzero(plain | block_word)
    w_alt = alt_of_row[word_rows].astype(np.int64)
    empty_alts = np.flatnonzero(n_words_alt == 0)
    if len(empty_alts):
        order = np.argsort(np.concatenate([w_alt, empty_alts]), kind="stable")
        arc_word = np.concatenate([word_id[word_rows], np.full(len(empty_alts), -1, np.int64)])[order]
        arc_conf = np.concatenate([conf[word_rows], np.full(len(empty_alts), np.nan)])[order]
    else:                                                     # words are already in alternative order
        arc_word = word_id[word_rows]
        arc_conf = conf[word_rows]
    del word_rows, w_alt, conf, word_id
    alt_arc0 = np.zeros(len(alt_start), np.int64)
    np.cumsum(alt_len[:-1], out=alt_arc0[1:])
    # item times (ctm_items.item_mid/sort_items/block_times)
    item_is_block = is_begin[item_start]
    t_sort = np.full(n_items, np.nan)
    mid = np.zeros(n_items)
    pw = item_start[~item_is_block]
    pi = np.flatnonzero(~item_is_block)
    t_sort[pi] = start[pw]
    mid[pi] = _nan_to_zero(start[pw]) + _nan_to_zero(dur[pw]) / 2.0
    # block time lines: its words (None -> 0.0) and its '@' lines whose times are both numbers
    bw = np.flatnonzero(block_word | (at_line & ~np.isnan(start) & ~np.isnan(dur)))
    if len(bw):
        b_item = item_of_row[bw]                                 # non-decreasing
        t1 = _nan_to_zero(start[bw])
        m = t1 + _nan_to_zero(dur[bw]) / 2.0
        seg = np.flatnonzero(np.r_[True, b_item[1:] != b_item[:-1]])
        owners = b_item[seg]
        t_sort[owners] = np.minimum.reduceat(t1, seg)
        mid[owners] = np.maximum(np.maximum.reduceat(m, seg), 0.0)
    # sclite drops a word after an empty alternative written as nothing (ctm_items.sclite_drops_a_word)
    drops = np.zeros(n_items, bool)
    tags = typ[in_block]
    if len(tags) >= 3:
        hit = np.flatnonzero(((tags[:-2] == _T_BEGIN) | (tags[:-2] == _T_SEP)) & (tags[1:-1] == _T_SEP)
                             & ((tags[2:] == _T_WORD) | (tags[2:] == _T_AT))) + 1
        if len(hit):
            rows_b = np.flatnonzero(in_block)
            drops[np.searchsorted(item_start, rows_b[hit], side="right") - 1] = True
    chans, item_chan = _channels(fold, fc_texts, fc_id[item_start] if n_items else np.zeros(0, np.int64))
    return HypItems(chans, item_chan, t_sort, mid, lines[item_start] + 1, n_alts, alt0, drops, alt_len,
                    alt_arc0, arc_word, arc_conf, vocab, item_is_block)


def _nan_to_zero(x):
    """``x`` with NaN ('*') as 0.0: ``np.nan_to_num(x, nan=0.0)`` for the scanners' numbers, which are never
    infinite (digits only), at a quarter of its cost."""
    return np.where(np.isnan(x), 0.0, x)


def _channels(fold, fc_texts: list, item_fc):
    """(folded (file, channel) keys in order of first appearance, channel index of every item) from the
    file/channel pair id ``item_fc`` of every item."""
    # channel keys, folded, numbered in order of first appearance
    folded = [(fold(f), fold(c)) for f, c in fc_texts]
    key_ids: dict = {}
    fc_key = np.fromiter((key_ids.setdefault(k, len(key_ids)) for k in folded), np.int64, count=len(folded))
    item_key = fc_key[item_fc]
    if len(item_fc):
        uk, first = np.unique(item_key, return_index=True)
        rank = np.empty(len(key_ids), np.int64)
        by_first = uk[np.argsort(first)]
        rank[by_first] = np.arange(len(by_first))
        inv_keys = list(key_ids)
        chans = [inv_keys[k] for k in by_first.tolist()]
        item_chan = rank[item_key]
    else:
        chans, item_chan = [], np.zeros(0, np.int64)
    return chans, item_chan
