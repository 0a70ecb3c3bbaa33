"""The on-disk term index: one SQLite file (Python's stdlib ``sqlite3``), readable with any SQLite tool.

Schema (``sqlite3 index.db .schema``)::

    meta(key TEXT PRIMARY KEY, value TEXT)           -- how the index was built (see META_KEYS, LATTICE_SEARCH_KEY)
    utterances(id INTEGER PRIMARY KEY, utterance TEXT UNIQUE, file TEXT, channel TEXT, pruned_mass REAL)
    vocabulary(word TEXT PRIMARY KEY)                -- words a term may use (out-of-vocabulary check)
    postings(term TEXT, utterance_id INTEGER, count INTEGER, tick INTEGER, data BLOB,
             PRIMARY KEY (term, utterance_id)) WITHOUT ROWID

One row per term and utterance: ``term`` is the words joined by one space, ``count`` its hits in the
utterance, ``tick`` and ``data`` their posting list (:mod:`lattice_tools.kws.postings`: starts delta-coded
and durations in ticks of ``tick`` microseconds, as varints, then the exact float64 scores).  A hit's start
and duration are whole microseconds in the recording ``file``/``channel`` of the utterance; its score is its
posterior (see :mod:`lattice_tools.kws.index`); ``pruned_mass`` is the posterior mass an index built with
``min_posterior`` > 0 left out of the utterance (0 = exact).  A query of one term is one search of the
primary key: no query scans the postings (``EXPLAIN QUERY PLAN`` in the tests).  For example::

    sqlite3 index.db "SELECT u.file, p.count FROM postings p JOIN utterances u ON u.id = p.utterance_id
                      WHERE p.term = 'of clubs'"

**Atomic writes.**  Every build, add and merge writes a temporary file next to the target
(named as every atomic write of the toolkit names its temporaries, :func:`lattice_tools.core.files.make_temporary`)
and renames it over the target when complete: an interrupted or failed build leaves the previous index (or
no file) untouched, SIGTERM removes the temporary, and the next write of the same index removes those a
killed process left.  Adding to an index copies it first, under a lock of the directory: concurrent
``--append`` runs add one after the other.

**Bounded memory.**  :class:`IndexWriter` takes one utterance's hits at a time (as columns,
:class:`~lattice_tools.kws.index.HitColumns`), encodes its posting lists with numpy and inserts them in
batches into a temporary staging table (SQLite's temporary database, on disk); the commit copies them into
``postings`` in key order (one sorted b-tree build instead of random inserts per utterance).  Memory is one
utterance's hits and one batch of rows, whatever the archive size.

**Shards and merge** (Kaldi's ``kws-index-union``): one index per job, then :func:`merge_indexes`.
Indexes merge only if built with the same settings (``META_KEYS``), and an utterance may be in only
one shard.  The merge numbers the utterances by name and writes every table in key order, so the merged
file is the same, byte for byte, for any order of the shards.

**What a term search needs.**  A lattice index also records, in ``meta``, how its lattices were read
(``lattice_search``: the acoustic and LM scales, the word penalty, the silence words) and the offset of
every utterance placed by a segments file (``offset <utterance>``, omitted when 0), so that a term longer
than ``max_length`` can be searched in the lattices themselves exactly as the index would have held it
(:mod:`lattice_tools.kws.search`).  Indexes written before these keys existed are still read; they answer
such terms with an error naming what is missing.

**Checked on read.**  An index comes from a file anyone can edit: opening one checks its tables, schema
version and settings (:func:`settings_problem`, the rule the writer applies too); every hit read is checked
(:func:`check_hit`); a merge checks each shard's rows inside SQLite as it copies them, the posting lists by the
decoder's own compiled check (:func:`~lattice_tools.kws.postings.posting_problem`), and names the first bad row.  Every SQLite, JSON or text fault is a one-line
:class:`~lattice_tools.core.errors.FormatError` naming the file and quoting at most 80 characters of the value.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass

from ..core._budget import check_memory
from ..core.errors import FormatError, LatticeToolsError, MismatchError
from ..core.files import discard_temporary, make_temporary, output_mode, remove_stale_temporaries
from .index import IndexHit
from .postings import decode_postings

#: 2: one row of posting lists per term and utterance (:mod:`lattice_tools.kws.postings`); 1: one row per hit.
SCHEMA_VERSION = "2"
#: Settings that must agree for two indexes to be merged or added to.
META_KEYS = ("max_length", "max_silence", "min_posterior", "representation")
#: Meta key of the lattice-reading settings a term search re-reads lattices with (optional; see the module
#: docstring) and the prefix of the per-utterance offset keys.
LATTICE_SEARCH_KEY = "lattice_search"
OFFSET_KEY_PREFIX = "offset "
LATTICE_SEARCH_FIELDS = ("acoustic_scale", "lm_scale", "word_penalty", "silence_words")
#: How ``max_silence`` bounds silence (:data:`lattice_tools.kws.index.SILENCE_RULES`); an index written before the
#: rule was stored has none in its meta and was built with the first rule, "gap".
SILENCE_RULE_DEFAULT = "gap"
#: Representations an index can be built from (stored in its ``meta``).
REPRESENTATIONS = ("lattice", "1best", "nbest", "sausage", "phrase")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE utterances (id INTEGER PRIMARY KEY, utterance TEXT NOT NULL UNIQUE, file TEXT NOT NULL,
                         channel TEXT NOT NULL, pruned_mass REAL NOT NULL DEFAULT 0);
CREATE TABLE vocabulary (word TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE postings (term TEXT NOT NULL, utterance_id INTEGER NOT NULL, count INTEGER NOT NULL,
                       tick INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (term, utterance_id)) WITHOUT ROWID;
"""
#: Where a build collects its rows before the commit writes them in key order (SQLite's temporary database).
_STAGING = """
CREATE TEMP TABLE staged_postings (term TEXT NOT NULL, utterance_id INTEGER NOT NULL, count INTEGER NOT NULL,
                                   tick INTEGER NOT NULL, data BLOB NOT NULL)
"""
#: The columns every table must have (an index of another version or another program lacks some).
_COLUMNS = {"meta": ("key", "value"), "utterances": ("id", "utterance", "file", "channel", "pruned_mass"),
            "vocabulary": ("word",), "postings": ("term", "utterance_id", "count", "tick", "data")}
TERM_QUERY = ("SELECT u.utterance, u.file, u.channel, p.count, p.tick, p.data FROM postings p "
              "JOIN utterances u ON u.id = p.utterance_id WHERE p.term = ? ORDER BY p.utterance_id")
#: Rows of posting lists inserted per ``executemany`` (bounds the memory of one utterance's rows).
_BATCH = 50_000
#: Hits encoded at once (the encoder's temporaries take tens of bytes a hit).
_SLICE_HITS = 250_000
_QUOTE = 80  # characters of a bad value an error message quotes


def term_key(words: Sequence[str]) -> str:
    """The ``hits.term`` spelling of a word sequence."""
    return " ".join(words)


def _quote(value) -> str:
    """``repr(value)``, at most about 80 characters (an error never echoes a whole corrupt file)."""
    text = repr(value)
    return text if len(text) <= _QUOTE else text[:_QUOTE] + "..."


def _sqlite_error(exc: sqlite3.Error, path: str, output: str | None = None) -> LatticeToolsError:
    """The one-line error of an SQLite failure on ``path`` (a failed write names ``output`` if given)."""
    text = str(exc)
    if "disk is full" in text or "disk I/O error" in text:
        return LatticeToolsError(f"cannot write the term index: {text}", path=output or path)
    if "readonly" in text or "unable to open" in text:
        return LatticeToolsError(f"cannot open the term index: {text}", path=path)
    return FormatError(f"not a usable SQLite term index: {_quote(text)[1:-1]}", path=path)


@contextlib.contextmanager
def _sqlite_errors(path: str, output: str | None = None) -> Iterator[None]:
    """SQLite errors (a corrupt page, a missing table, a full disk...) as one-line errors naming ``path``
    (a failed write: ``output``, when the statement reads ``path`` and writes ``output``)."""
    try:
        yield
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        raise _read_failure(exc, path, output) from None


def _read_failure(exc: sqlite3.Error | UnicodeDecodeError, path: str, output: str | None = None) -> LatticeToolsError:
    """The one-line error of :func:`_sqlite_errors` for ``exc``."""
    if isinstance(exc, UnicodeDecodeError):  # a TEXT value that is not UTF-8 (a damaged page, another program)
        return FormatError(f"holds text that is not UTF-8 (byte {exc.object[exc.start]:#04x}): a damaged index",
                           path=path)
    return _sqlite_error(exc, path, output)


def _file_uri(path: str, readonly: bool = False) -> str:
    from urllib.parse import quote

    return f"file:{quote(os.path.abspath(path))}" + ("?mode=ro" if readonly else "")


def _connect(path: str, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        if not os.path.exists(path):
            raise FormatError("no such index file", path=path)
        conn = sqlite3.connect(_file_uri(path, readonly=True), uri=True)
    else:
        conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.Error as exc:
        conn.close()
        raise FormatError(f"not an SQLite term index ({_quote(str(exc))[1:-1]})", path=path) from None
    return conn


def _check_tables(conn: sqlite3.Connection, path: str, schema: str = "main") -> None:
    """Every table of the schema with its columns, else a FormatError naming what is missing."""
    for table, columns in _COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA {schema}.table_info({table})")}
        if not have:
            raise FormatError(f"no {table!r} table: not a lattice-tools term index (or one of another version)",
                              path=path)
        missing = [c for c in columns if c not in have]
        if missing:
            raise FormatError(f"table {table!r} has no column {missing[0]!r}: a term index of another version; "
                              "rebuild it with this version", path=path)


def _not_json_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _check_version(version, path: str) -> None:
    if version != SCHEMA_VERSION:
        if version is None:
            raise FormatError("no schema_version in the meta table: not a lattice-tools term index", path=path)
        raise FormatError(f"term index schema version {_quote(version)}, expected {SCHEMA_VERSION!r} "
                          "(an index of another version of lattice-tools: rebuild it)", path=path)


def _settings_of(meta: dict, path: str) -> dict:
    """The build settings of a ``meta`` table, each checked (type and range), else a FormatError
    naming the key and quoting the bad value."""
    _check_version(meta.get("schema_version"), path)
    settings = {}
    for k in META_KEYS:
        if k not in meta:
            raise FormatError(f"meta key {k!r} is missing: the index cannot say how it was built", path=path)
        raw = meta[k]
        try:
            if not isinstance(raw, str):
                raise ValueError
            value = json.loads(raw, parse_constant=_not_json_constant)
        except ValueError:
            raise FormatError(f"meta {k} is not a JSON value: {_quote(raw)}", path=path) from None
        settings[k] = value
    if "silence_rule" in meta:
        raw = meta["silence_rule"]
        try:
            settings["silence_rule"] = json.loads(raw, parse_constant=_not_json_constant) if isinstance(raw, str) else raw
        except ValueError:
            raise FormatError(f"meta silence_rule is not a JSON value: {_quote(raw)}", path=path) from None
        if settings["silence_rule"] not in ("gap", "kaldi"):
            raise FormatError(f"meta silence_rule must be gap or kaldi, got {_quote(raw)}", path=path)
    problem = settings_problem(settings)
    if problem is not None:
        key = problem.split()[0]
        raise FormatError(f"meta {problem}, got {_quote(meta[key])}", path=path)
    return normalized_settings(settings)


def settings_problem(settings: dict) -> str | None:
    """What is wrong with build settings (None when nothing): ``max_length`` an integer >= 1,
    ``max_silence`` None or a finite number >= 0, ``min_posterior`` a number in [0, 1],
    ``representation`` one of :data:`REPRESENTATIONS`.  The message starts with the key."""
    ml, ms, mp, rep = (settings.get(k) for k in META_KEYS)
    if type(ml) is not int or ml < 1:
        return "max_length must be an integer >= 1"
    if ms is not None and (type(ms) not in (int, float) or not math.isfinite(ms) or ms < 0):
        return "max_silence must be None (no limit) or a finite number >= 0"
    if type(mp) not in (int, float) or not isinstance(mp, (int, float)) or not 0 <= mp <= 1:
        return "min_posterior must be a number in [0, 1]"
    if rep not in REPRESENTATIONS:
        return f"representation must be one of {', '.join(REPRESENTATIONS)}"
    return None


def normalized_settings(settings: dict) -> dict:
    ms = settings["max_silence"]
    return {"max_length": settings["max_length"], "max_silence": None if ms is None else float(ms),
            "min_posterior": float(settings["min_posterior"]), "representation": settings["representation"],
            "silence_rule": settings.get("silence_rule", SILENCE_RULE_DEFAULT)}


def _read_settings(conn: sqlite3.Connection, path: str, schema: str = "main") -> dict:
    """Check the schema version, the tables and the meta of an open index; its build settings.  The version
    is checked first, so an index of another version is refused as such, whatever its tables."""
    with _sqlite_errors(path):
        have = {row[1] for row in conn.execute(f"PRAGMA {schema}.table_info(meta)")}
        if {"key", "value"} <= have:
            row = conn.execute(f"SELECT value FROM {schema}.meta WHERE key = 'schema_version'").fetchone()
            if row is not None:
                _check_version(row[0], path)
        _check_tables(conn, path, schema)
        rows = conn.execute(f"SELECT key, value FROM {schema}.meta").fetchall()
    return _settings_of(dict(rows), path)


def _lattice_search_value(value, path: str) -> dict:
    """Checked lattice settings (``LATTICE_SEARCH_FIELDS``): finite scales, silence words a sorted list
    of words or None."""
    ok = isinstance(value, dict) and set(value) == set(LATTICE_SEARCH_FIELDS)
    if ok:
        for k in ("acoustic_scale", "lm_scale", "word_penalty"):
            v = value[k]
            ok = ok and type(v) in (int, float) and math.isfinite(v)
        sw = value["silence_words"]
        ok = ok and (sw is None or (isinstance(sw, (list, tuple, set, frozenset)) and all(type(w) is str for w in sw)))
    if not ok:
        raise FormatError(f"meta {LATTICE_SEARCH_KEY} must hold finite {', '.join(LATTICE_SEARCH_FIELDS[:3])} and a "
                          f"list of silence words (or null), got {_quote(value)}", path=path)
    sw = value["silence_words"]
    return {"acoustic_scale": float(value["acoustic_scale"]), "lm_scale": float(value["lm_scale"]),
            "word_penalty": float(value["word_penalty"]), "silence_words": None if sw is None else sorted(set(sw))}


def _read_lattice_search(conn: sqlite3.Connection, path: str, schema: str = "main") -> dict | None:
    with _sqlite_errors(path):
        row = conn.execute(f"SELECT value FROM {schema}.meta WHERE key = ?", (LATTICE_SEARCH_KEY,)).fetchone()
    if row is None:
        return None
    try:
        value = json.loads(row[0], parse_constant=_not_json_constant)
    except (ValueError, TypeError):
        raise FormatError(f"meta {LATTICE_SEARCH_KEY} is not a JSON value: {_quote(row[0])}", path=path) from None
    return _lattice_search_value(value, path)


def _finite_at_least_zero(x) -> bool:
    return type(x) in (int, float) and math.isfinite(x) and x >= 0


def check_hit(tbeg, dur, score) -> str | None:
    """What is wrong with a hit's time and score (None when nothing): times and the score are
    finite numbers >= 0 (a score is an expected count, so it may exceed 1)."""
    for name, value in (("start time", tbeg), ("duration", dur), ("score", score)):
        if not _finite_at_least_zero(value):
            return f"{name} {_quote(value)} is not a finite number >= 0"
    return None


_NUMBER = "typeof({c}) IN ('real', 'integer') AND {c} >= 0 AND {c} <= 1.7976931348623157e308"
#: What each kind of column of a shard must hold (an SQL condition) and how a bad value is described.
_KINDS = {"text": ("typeof({c}) = 'text'", "is not text"), "id": ("typeof({c}) = 'integer'", "is not an integer"),
          "number": (_NUMBER, "is not a finite number >= 0"),
          "count": ("typeof({c}) = 'integer' AND {c} >= 1", "is not an integer >= 1"),
          "tick": ("typeof({c}) = 'integer' AND {c} >= 1 AND {c} <= 9007199254740992",
                   "is not an integer in [1, 2^53]"),
          # at least one byte per start and per duration and 8 per score (posting_problem checks the rest)
          "data": ("typeof({c}) = 'blob' AND length({c}) >= 10 * count", "is not a blob of 10 bytes or more per hit")}
#: The tables of a shard a merge checks: (table, the column an error names the row by, {column: kind}).
_ROW_CHECKS = (("utterances", "utterance", {"utterance": "text", "file": "text", "channel": "text",
                                            "pruned_mass": "number"}),
               ("postings", "term", {"term": "text", "utterance_id": "id", "count": "count", "tick": "tick",
                                     "data": "data"}),
               ("vocabulary", "word", {"word": "text"}))


def _good_row(table: str) -> dict[str, str]:
    """{column: the SQL condition its values must meet} of a shard's ``table``."""
    columns = next(c for t, _, c in _ROW_CHECKS if t == table)
    return {c: _KINDS[kind][0].format(c=c) for c, kind in columns.items()}


#: The condition every good posting row of a shard meets, all the checks of :func:`_check_shard` but the
#: utterance's presence (the merge's join to the shard's utterances drops those rows): what the merge copies.
#: The types and ranges of ``count``, ``tick`` and ``data`` are in ``posting_problem`` (in SQL they would double
#: the cost of the pass).
_GOOD_POSTING = " AND ".join(f"({g})" for c, g in _good_row("postings").items() if c in ("term", "utterance_id")) + \
    " AND posting_problem(count, tick, data) IS NULL"


def _check_shard(conn: sqlite3.Connection, path: str, postings: bool = True) -> None:
    """The rows of an attached shard: texts where texts belong, finite numbers >= 0 for times, scores
    and pruned masses, every posting list good (:func:`~lattice_tools.kws.postings.posting_problem`), every
    hit's utterance present (one pass over each table); a FormatError names the first bad row.  Without
    ``postings``, the other tables only (the merge checks the posting rows as it copies them, and calls this
    to name the bad row when it finds one)."""
    for table, name, columns in _ROW_CHECKS:
        if table == "postings" and not postings:
            continue
        good = _good_row(table)
        first_bad = "CASE " + " ".join(f"WHEN NOT ({g}) THEN '{c}'" for c, g in good.items()) + " END"
        where = " OR ".join(f"NOT ({g})" for g in good.values())
        row = conn.execute(f"SELECT {first_bad}, {name} FROM shard.{table} WHERE {where} LIMIT 1").fetchone()
        if row is not None:
            column = row[0]
            value = conn.execute(f"SELECT {column} FROM shard.{table} WHERE NOT ({good[column]}) LIMIT 1").fetchone()
            shown = value[0] if value else None
            if isinstance(shown, bytes):
                shown = f"<{len(shown)} bytes>"
            raise FormatError(f"table {table!r}, row of {name} {_quote(row[1])}: {column} "
                              f"{_quote(shown)} {_KINDS[columns[column]][1]}", path=path)
    if not postings:
        return
    # every posting list by the compiled check of the decoder, run by SQLite on each row: no row is fetched into
    # Python (the connection has the function: :func:`_with_posting_check`)
    row = conn.execute("SELECT term, posting_problem(count, tick, data) FROM shard.postings "
                       "WHERE posting_problem(count, tick, data) IS NOT NULL LIMIT 1").fetchone()
    if row is not None:
        raise FormatError(f"table 'postings', row of term {_quote(row[0])}: {row[1]}", path=path)
    row = conn.execute("SELECT h.term, h.utterance_id FROM shard.postings h LEFT JOIN shard.utterances u "
                       "ON u.id = h.utterance_id WHERE u.id IS NULL LIMIT 1").fetchone()
    if row is not None:
        raise FormatError(f"hit of term {_quote(row[0])} names utterance id {_quote(row[1])}, which the index does "
                          "not hold", path=path)


def _with_posting_check(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the SQL function ``posting_problem(count, tick, data)``: :func:`~lattice_tools.kws.postings.
    posting_problem`, the decoder's check (NULL when the posting list is good, else what is wrong)."""
    from .postings import posting_problem

    conn.create_function("posting_problem", 3, posting_problem, deterministic=True)


def _check_compatible(ours: dict, theirs: dict, what: str) -> None:
    for k in (*META_KEYS, "silence_rule"):
        if ours.get(k, SILENCE_RULE_DEFAULT if k == "silence_rule" else None) != theirs.get(
                k, SILENCE_RULE_DEFAULT if k == "silence_rule" else None):
            raise MismatchError(f"{what} was built with {k}={theirs.get(k)}, this index with {k}={ours.get(k)}; "
                                "indexes merge only with the same settings")


class _DirectoryLock:
    """An exclusive ``flock`` on a directory: ``--append`` runs on the indexes of one directory take it
    from before they read the index until after they rename the new one into place, so concurrent
    appends run one after the other (the second adds to what the first wrote) and none is lost."""

    def __init__(self, directory: str):
        self.fd: int | None = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            return
        self.fd = os.open(directory, os.O_RDONLY)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            self.fd = None
            raise

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the only descriptor releases the lock
            self.fd = None


class IndexWriter:
    """Writes a term index atomically (see the module docstring).

    ``settings`` are the build settings (``max_length``, ``max_silence``, ``min_posterior``,
    ``representation``; stored in ``meta``).  With ``append=True`` and an existing ``path``, the
    new utterances are added to a copy of it (the settings must agree), under a lock of the
    directory (:class:`_DirectoryLock`).  Use as a context manager: the file appears at ``path``
    only when the block ends without an exception.
    """

    def __init__(self, path: str, settings: dict, *, append: bool = False, lattice_search: dict | None = None):
        self.path = os.fspath(path)
        self.settings = {k: settings.get(k) for k in META_KEYS}
        self.lattice_search = None if lattice_search is None else _lattice_search_value(lattice_search, self.path)
        self.settings["silence_rule"] = settings.get("silence_rule", SILENCE_RULE_DEFAULT)
        directory = os.path.dirname(os.path.abspath(self.path))
        self._lock = _DirectoryLock(directory) if append else None
        self._tmp: str | None = None
        self._done = False
        try:
            remove_stale_temporaries(self.path)
            fd, self._tmp = make_temporary(self.path)
            assert fd is not None
            os.fchmod(fd, output_mode(self.path))  # the mode of any new file (umask), not mkstemp's 0600
            os.close(fd)
            fresh = not (append and os.path.exists(self.path))
            if not fresh:
                with closing(_connect(self.path, readonly=True)) as src:
                    _check_compatible(self.settings, _read_settings(src, self.path), self.path)
                    theirs = _read_lattice_search(src, self.path)
                if theirs is not None and theirs != self.lattice_search:
                    raise MismatchError(f"the index was built with other lattice settings ({_quote(theirs)}), "
                                        f"these are {_quote(self.lattice_search)}: indexes add only with the same "
                                        "settings", path=self.path)
                # an older index without them stays without them: its offsets of earlier utterances are unknown
                self.lattice_search = theirs
                shutil.copyfile(self.path, self._tmp)
            with _sqlite_errors(self.path):
                # autocommit mode: transactions are explicit (BEGIN/COMMIT), pragmas run outside them
                # a URI, so that a merge can ATTACH its shards read-only (``mode=ro``)
                self.conn = sqlite3.connect(_file_uri(self._tmp), uri=True, isolation_level=None)
                # The temporary file is thrown away on failure, so no rollback journal is needed.
                self.conn.execute("PRAGMA journal_mode=OFF")
                self.conn.execute("PRAGMA synchronous=OFF")
                self.conn.execute("BEGIN")
                if fresh:
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            self.conn.execute(statement)
                    meta = {k: json.dumps(v, allow_nan=False) for k, v in self.settings.items()}
                    meta["schema_version"] = SCHEMA_VERSION
                    if self.lattice_search is not None:
                        meta[LATTICE_SEARCH_KEY] = json.dumps(self.lattice_search, sort_keys=True, allow_nan=False)
                    self.conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
                self.conn.execute(_STAGING)
        except BaseException:
            self._discard()
            raise
        self.num_utterances = 0
        self.num_hits = 0

    def add_vocabulary(self, words: Iterable[str]) -> None:
        # Sorted: the b-tree pages (and so the file's bytes) then do not depend on set iteration order,
        # which varies between processes with string hashing.
        with _sqlite_errors(self.path):
            self.conn.executemany("INSERT OR IGNORE INTO vocabulary VALUES (?)", ((w,) for w in sorted(set(words))))

    def add_utterance(self, utterance: str, file: str, channel: str, hits: Iterable[IndexHit],
                      pruned_mass: float = 0.0, offset: float = 0.0) -> None:
        """Add one utterance and its hits (IndexHit objects: their times are rounded to whole microseconds);
        see :meth:`add_hit_columns`."""
        import numpy as np

        from .index import HitColumns

        hits = list(hits)
        names = sorted({w for h in hits for w in h.words})
        code = {w: i for i, w in enumerate(names)}
        levels = []
        for n in sorted({len(h.words) for h in hits}):
            hs = [h for h in hits if len(h.words) == n]
            with np.errstate(invalid="ignore", over="ignore"):
                tb = np.rint(np.array([float(h.tbeg) if isinstance(h.tbeg, (int, float)) else math.nan for h in hs]) * 1e6)
                du = np.rint(np.array([float(h.dur) if isinstance(h.dur, (int, float)) else math.nan for h in hs]) * 1e6)
            sc = np.array([float(h.score) if isinstance(h.score, (int, float)) else math.nan for h in hs])
            levels.append((np.array([[code[w] for w in h.words] for h in hs], dtype=np.int64).reshape(len(hs), n),
                           tb, du, sc))
        self.add_hit_columns(utterance, file, channel, HitColumns(tuple(names), levels), pruned_mass, offset)

    def add_hit_columns(self, utterance: str, file: str, channel: str, columns, pruned_mass: float = 0.0,
                        offset: float = 0.0) -> None:
        """Add one utterance and its hits (:class:`~lattice_tools.kws.index.HitColumns`); an utterance already
        in the index, a negative or non-finite time or score is an error.  ``offset`` (seconds of the
        utterance in its recording) is recorded when the index records its lattice settings.  The posting
        lists are encoded with numpy and inserted in batches of rows."""
        import numpy as np

        from .postings import MAX_MICROSECONDS, encode_postings

        if not (isinstance(offset, (int, float)) and math.isfinite(offset)):
            raise FormatError(f"offset {_quote(offset)} is not a finite number", key=utterance)
        if not _finite_at_least_zero(pruned_mass):
            raise FormatError(f"pruned posterior mass {_quote(pruned_mass)} is not a finite number >= 0",
                              key=utterance)
        names = columns.words
        bad_word = next((w for w in names if not w or w != w.strip() or len(w.split()) != 1), None)
        if bad_word is not None:
            raise FormatError(f"word {_quote(bad_word)} is empty or holds white space: a term of it could not be "
                              "told from other words", key=utterance)
        with _sqlite_errors(self.path):
            try:
                cur = self.conn.execute("INSERT INTO utterances (utterance, file, channel, pruned_mass) "
                                        "VALUES (?, ?, ?, ?)", (utterance, file, channel, pruned_mass))
            except sqlite3.IntegrityError:
                raise MismatchError(f"utterance {_quote(utterance)} is already in the index", path=self.path,
                                    key=utterance) from None
            uid = cur.lastrowid
            if self.lattice_search is not None and offset != 0:
                self.conn.execute("INSERT INTO meta VALUES (?, ?)", (OFFSET_KEY_PREFIX + utterance,
                                                                     json.dumps(float(offset))))
        n_hits = 0
        for seq, tb, du, sc in columns.levels:
            if not len(tb):
                continue
            with np.errstate(invalid="ignore"):
                ok = (np.isfinite(tb) & (tb >= 0) & (tb <= MAX_MICROSECONDS) & np.isfinite(du) & (du >= 0)
                      & (du <= MAX_MICROSECONDS) & np.isfinite(sc) & (sc >= 0))
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                problem = check_hit(float(tb[i] / 1e6), float(du[i] / 1e6), float(sc[i])) or (
                    "a time beyond 2^53 microseconds")
                raise FormatError(f"hit {_quote(' '.join(names[w] for w in seq[i]))}: {problem} (check the input's "
                                  "times and the segments' offsets)", key=utterance)
            del ok
            order = np.lexsort((sc, du, tb, *(seq[:, k] for k in range(seq.shape[1] - 1, -1, -1))))
            seq, tbi, dui, sc = seq[order], tb[order].astype(np.int64), du[order].astype(np.int64), sc[order]
            del order
            starts = np.flatnonzero(np.r_[True, np.any(seq[1:] != seq[:-1], axis=1)])
            ends = np.r_[starts[1:], len(seq)]
            # encoded and inserted in slices of about _BATCH posting lists and at most _SLICE_HITS hits: the
            # encoder's temporaries (tens of bytes a hit) stay small whatever the utterance
            lo = 0
            while lo < len(starts):
                hi = min(lo + _BATCH, int(np.searchsorted(ends, ends[lo] - 1 + _SLICE_HITS, side="right")))
                hi = max(hi, lo + 1)
                a, b = int(starts[lo]), int(ends[hi - 1])
                count, tick, data, offs = encode_postings(starts[lo:hi] - a, tbi[a:b], dui[a:b], sc[a:b])
                view, offs = memoryview(data), offs.tolist()
                words = [" ".join([names[w] for w in t]) for t in seq[starts[lo:hi]].tolist()]
                with _sqlite_errors(self.path):
                    self.conn.executemany("INSERT INTO temp.staged_postings VALUES (?, ?, ?, ?, ?)",
                                          zip(words, [uid] * (hi - lo), count.tolist(), tick.tolist(),
                                              [view[offs[i]:offs[i + 1]] for i in range(hi - lo)], strict=True))
                n_hits += b - a
                lo = hi
                check_memory("the term index", key=utterance)
        self.num_utterances += 1
        self.num_hits += n_hits

    def commit(self) -> None:
        """Build the term index, close and rename the file into place."""
        assert self._tmp is not None
        with _sqlite_errors(self.path):
            # in key order: the b-tree is written once, sorted, and its bytes depend only on the rows
            self.conn.execute("INSERT INTO main.postings SELECT term, utterance_id, count, tick, data "
                              "FROM temp.staged_postings ORDER BY term, utterance_id")
            self.conn.execute("DROP TABLE temp.staged_postings")
            self.conn.execute("COMMIT")
            self.conn.execute("ANALYZE")
            self.conn.close()
        with open(self._tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(self._tmp, self.path)
        discard_temporary(self._tmp, remove=False)
        self._done = True
        self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _discard(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        if self._tmp is not None:
            discard_temporary(self._tmp)
        self._unlock()

    def __enter__(self) -> IndexWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self.commit()
            except BaseException:
                self._discard()
                raise
        elif not self._done:
            self._discard()


@dataclass(frozen=True, slots=True)
class IndexCounts:
    """What an index file holds (:meth:`TermIndex.counts`, :func:`merge_indexes`): its ``utterances``, ``hits``
    (word-sequence occurrences), distinct ``terms``, ``vocabulary`` words and the posterior mass its builds left
    out (``pruned_mass``)."""

    utterances: int
    hits: int
    terms: int
    vocabulary: int
    pruned_mass: float

    def to_dict(self) -> dict:
        """The counts as JSON values (what ``lattice-tools kws merge`` prints)."""
        return {"utterances": self.utterances, "hits": self.hits, "terms": self.terms, "vocabulary": self.vocabulary,
                "pruned_mass": self.pruned_mass}


class TermIndex:
    """A term index opened for search (read-only).  Opening checks its tables and build settings;
    every hit read is checked (finite times and score >= 0), so a damaged or hand-edited index gives
    an error naming the file, never a wrong detection."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.conn = _connect(self.path, readonly=True)
        try:
            self.settings = _read_settings(self.conn, self.path)
        except BaseException:
            self.conn.close()
            raise

    @property
    def lattice_search(self) -> dict | None:
        """How the index's lattices were read (``LATTICE_SEARCH_FIELDS``), None when the index does not
        record it (built before the key existed, or not from lattices)."""
        if not hasattr(self, "_lattice_search"):
            self._lattice_search = _read_lattice_search(self.conn, self.path)
        return self._lattice_search

    def utterance_place(self, utterance: str) -> tuple[str, str, float] | None:
        """``(file, channel, offset)`` of an utterance of the index (None when it has none)."""
        with _sqlite_errors(self.path):
            row = self.conn.execute("SELECT file, channel FROM utterances WHERE utterance = ?", (utterance,)).fetchone()
            if row is None:
                return None
            off = self.conn.execute("SELECT value FROM meta WHERE key = ?", (OFFSET_KEY_PREFIX + utterance,)).fetchone()
        offset = 0.0
        if off is not None:
            try:
                value = json.loads(off[0], parse_constant=_not_json_constant)
            except (ValueError, TypeError):
                value = None
            if not (type(value) in (int, float) and math.isfinite(value)):
                raise FormatError(f"meta {OFFSET_KEY_PREFIX}{_quote(utterance)} is not a finite number: {_quote(off[0])}",
                                  path=self.path)
            offset = float(value)
        if not (type(row[0]) is str and type(row[1]) is str):
            raise FormatError(f"utterance {_quote(utterance)}: file or channel is not text", path=self.path)
        return row[0], row[1], offset

    @property
    def max_length(self) -> int:
        return int(self.settings["max_length"])

    def in_vocabulary(self, word: str) -> bool:
        with _sqlite_errors(self.path):
            return self.conn.execute("SELECT 1 FROM vocabulary WHERE word = ?", (word,)).fetchone() is not None

    def lookup(self, words: Sequence[str]) -> list[IndexHit]:
        """Every hit of the word sequence (an index search, never a scan)."""
        try:  # _sqlite_errors without a context manager's cost: a search looks up every term
            rows = self.conn.execute(TERM_QUERY, (term_key(words),)).fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise _read_failure(exc, self.path) from None
        hits: list[IndexHit] = []
        words = tuple(words)
        for u, f, c, count, tick, data in rows:
            problem = None
            if not (type(u) is str and type(f) is str and type(c) is str):
                problem = f"utterance, file or channel is not text: {_quote((u, f, c))}"
            else:
                try:
                    tb, d, s = decode_postings(count, tick, data)
                except ValueError as exc:
                    problem = str(exc)
            if problem is not None:
                raise FormatError(f"hits of term {_quote(term_key(words))} in utterance {_quote(u)}: {problem}",
                                  path=self.path)
            hits.extend(IndexHit(words, u, f, c, b / 1e6, du / 1e6, x) for b, du, x in zip(tb, d, s, strict=True))
        return hits

    def terms(self) -> list[str]:
        """Every term the index holds (sorted)."""
        with _sqlite_errors(self.path):
            return [t for (t,) in self.conn.execute("SELECT DISTINCT term FROM postings ORDER BY term")]

    def counts(self) -> IndexCounts:
        """What the index holds (:class:`IndexCounts`)."""
        q = self.conn.execute
        with _sqlite_errors(self.path):
            return IndexCounts(utterances=q("SELECT count(*) FROM utterances").fetchone()[0],
                               hits=q("SELECT coalesce(sum(count), 0) FROM postings").fetchone()[0],
                               terms=q("SELECT count(DISTINCT term) FROM postings").fetchone()[0],
                               vocabulary=q("SELECT count(*) FROM vocabulary").fetchone()[0],
                               pruned_mass=q("SELECT coalesce(sum(pruned_mass), 0) FROM utterances").fetchone()[0])

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> TermIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextlib.contextmanager
def _attached(conn: sqlite3.Connection, path: str) -> Iterator[None]:
    """The index ``path`` attached to ``conn`` as ``shard``, read-only (a merge never changes a shard, nor leaves
    a journal beside it), for the block; detached after it, any transaction it left rolled back."""
    if not os.path.exists(path):  # ATTACH would create an empty database
        raise FormatError("no such index file", path=path)
    with _sqlite_errors(path):
        conn.execute("ATTACH DATABASE ? AS shard", (_file_uri(path, readonly=True),))
    try:
        yield
    finally:
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.execute("DETACH DATABASE shard")


def merge_indexes(out: str, shards: Sequence[str]) -> IndexCounts:
    """Merge shard indexes into one (Kaldi's ``kws-index-union``), atomically.  ``out`` may be one
    of the shards.  Every shard is checked first (schema version, tables, build settings: their
    types and ranges, and that all shards agree); its rows while it is merged (types, finite times
    and scores >= 0, hits of utterances it holds).  Returns what the merged index holds (:class:`IndexCounts`)."""
    if not shards:
        raise MismatchError("no index to merge")
    paths = [os.fspath(s) for s in shards]
    settings, searches = [], []
    for s in paths:
        with closing(_connect(s, readonly=True)) as c:
            settings.append(_read_settings(c, s))
            searches.append(_read_lattice_search(c, s))
    for s, m in zip(paths[1:], settings[1:], strict=False):
        _check_compatible(settings[0], m, s)
    # the lattice settings (and the utterances' offsets) carry over only when every shard has the same
    search = searches[0] if all(x == searches[0] for x in searches) else None
    output = os.fspath(out)
    with IndexWriter(out, settings[0], lattice_search=search) as w:
        conn = w.conn
        _with_posting_check(conn)
        with _sqlite_errors(out):
            # the shards' rows are collected in temporary tables, then written in key order with the utterances
            # numbered by name: the merged file does not depend on the order of the shards
            conn.execute("CREATE TEMP TABLE merge_utterances (utterance TEXT PRIMARY KEY, file, channel, pruned_mass)")
            conn.execute("CREATE TEMP TABLE merge_numbered (id INTEGER PRIMARY KEY, utterance TEXT NOT NULL UNIQUE, file,"
                         " channel, pruned_mass)")
            conn.execute("CREATE TEMP TABLE merge_postings (term, utterance_id, count, tick, data)")
            # a shard's utterance ids -> the merged index's (refilled for each shard)
            conn.execute("CREATE TEMP TABLE merge_ids (shard_id INTEGER PRIMARY KEY, id INTEGER NOT NULL)")
            conn.execute("CREATE TEMP TABLE merge_vocabulary (word TEXT PRIMARY KEY) WITHOUT ROWID")
            conn.execute("CREATE TEMP TABLE merge_meta (key TEXT PRIMARY KEY, value)")
            conn.execute("COMMIT")  # ATTACH runs outside a transaction
        # first every shard's tables but its postings: checked, and the utterances numbered by name
        # (an utterance in two shards is reported after the second shard's postings are checked: a damaged copy
        # of a shard is named as damaged)
        duplicate: tuple[int, str] | None = None
        for number, s in enumerate(paths):
            with _attached(conn, s):
                with _sqlite_errors(s):
                    _check_tables(conn, s, "shard")
                    _check_shard(conn, s, postings=False)
                    if duplicate is None:
                        dup = conn.execute("SELECT s.utterance FROM shard.utterances s JOIN temp.merge_utterances m "
                                           "ON m.utterance = s.utterance LIMIT 1").fetchone()
                        duplicate = None if dup is None else (number, dup[0])
                with _sqlite_errors(s, output=output):
                    conn.execute("BEGIN")
                    conn.execute("INSERT OR IGNORE INTO temp.merge_utterances SELECT utterance, file, channel, "
                                 "pruned_mass FROM shard.utterances")
                    conn.execute("INSERT OR IGNORE INTO temp.merge_vocabulary SELECT word FROM shard.vocabulary")
                    if search is not None:
                        conn.execute("INSERT INTO temp.merge_meta SELECT key, value FROM shard.meta "
                                     "WHERE substr(key, 1, ?) = ?", (len(OFFSET_KEY_PREFIX), OFFSET_KEY_PREFIX))
                    conn.execute("COMMIT")
        with _sqlite_errors(out):
            # numbered here as the merged table will number them (the main file is written in one transaction)
            conn.execute("BEGIN")
            conn.execute("INSERT INTO temp.merge_numbered (utterance, file, channel, pruned_mass) "
                         "SELECT utterance, file, channel, pruned_mass FROM temp.merge_utterances ORDER BY utterance")
            conn.execute("COMMIT")
        # then their postings, checked as they are copied (one pass over each shard, in SQLite): a row that
        # fails a check is not copied, and a shard whose rows are not all copied is checked again, row by row,
        # to name the first bad one
        for number, s in enumerate(paths):
            with _attached(conn, s):
                with _sqlite_errors(s, output=output):
                    conn.execute("BEGIN")
                    conn.execute("DELETE FROM temp.merge_ids")
                    conn.execute("INSERT INTO temp.merge_ids SELECT s.id, m.id FROM shard.utterances s "
                                 "JOIN temp.merge_numbered m ON m.utterance = s.utterance")
                    (rows,) = conn.execute("SELECT count(*) FROM shard.postings").fetchone()
                    # CROSS JOIN: the shard's postings are the outer loop (one look-up of the id per row)
                    copied = conn.execute(f"INSERT INTO temp.merge_postings SELECT p.term, m.id, p.count, p.tick, "
                                          f"p.data FROM shard.postings p CROSS JOIN temp.merge_ids m "
                                          f"ON m.shard_id = p.utterance_id WHERE {_GOOD_POSTING}").rowcount
                    if copied == rows:
                        conn.execute("COMMIT")
                    else:
                        conn.execute("ROLLBACK")
                if copied == rows:
                    if duplicate is not None and duplicate[0] == number:
                        raise MismatchError(f"utterance {_quote(duplicate[1])} is in more than one shard", path=s,
                                            key=duplicate[1])
                    continue
                with _sqlite_errors(s):
                    _check_shard(conn, s)  # names the first bad row
                raise FormatError(f"{rows - copied} of its {rows} posting rows are damaged",  # pragma: no cover
                                  path=s)  # (the row-by-row check refuses every row the copy leaves out)
        with _sqlite_errors(out):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO main.utterances SELECT id, utterance, file, channel, pruned_mass "
                         "FROM temp.merge_numbered ORDER BY id")
            conn.execute("INSERT INTO main.postings SELECT term, utterance_id, count, tick, data "
                         "FROM temp.merge_postings ORDER BY term, utterance_id")
            conn.execute("INSERT INTO main.vocabulary SELECT word FROM temp.merge_vocabulary ORDER BY word")
            conn.execute("INSERT INTO main.meta SELECT key, value FROM temp.merge_meta ORDER BY key")
            # the temporary tables are not dropped (freeing their pages took half a second): SQLite's temporary
            # database goes when the connection closes, and ANALYZE skips it
    with TermIndex(out) as idx:
        return idx.counts()
