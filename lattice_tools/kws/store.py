"""The on-disk term index: one SQLite file (Python's stdlib ``sqlite3``), readable with any SQLite tool.

Schema (``sqlite3 index.db .schema``)::

    meta(key TEXT PRIMARY KEY, value TEXT)           -- how the index was built (see META_KEYS)
    utterances(id INTEGER PRIMARY KEY, utterance TEXT UNIQUE, file TEXT, channel TEXT, pruned_mass REAL)
    vocabulary(word TEXT PRIMARY KEY)                -- words a term may use (out-of-vocabulary check)
    hits(term TEXT, utterance_id INTEGER, tbeg REAL, dur REAL, score REAL)
    INDEX hits_by_term ON hits(term)

``term`` is the hit's words joined by one space; ``tbeg``/``dur`` are seconds in the recording
``file``/``channel`` of the utterance; ``score`` is the hit's posterior (see
:mod:`lattice_tools.kws.index`); ``pruned_mass`` is the posterior mass an index built with
``min_posterior`` > 0 left out of the utterance (0 = exact).  A query of one term is one search of ``hits_by_term``: no query
scans the hits (``EXPLAIN QUERY PLAN`` in the tests).  For example::

    sqlite3 index.db "SELECT u.file, h.tbeg, h.dur, h.score FROM hits h JOIN utterances u
                      ON u.id = h.utterance_id WHERE h.term = 'of clubs' ORDER BY h.score DESC"

**Atomic writes.**  Every build, add and merge writes a temporary file next to the target
(``.index.db.tmp-XXXX``) and renames it over the target when complete: an interrupted or failed
build leaves the previous index (or no file) untouched.  Adding to an index copies it first.

**Bounded memory.**  :class:`IndexWriter` takes one utterance's hits at a time and inserts them in
one ``executemany``; the term index is built once at the end (``CREATE INDEX`` after the bulk insert
is faster than maintaining it).  Memory is one utterance's hits, whatever the archive size.

**Shards and merge** (Kaldi's ``kws-index-union``): one index per job, then :func:`merge_indexes`.
Indexes merge only if built with the same settings (``META_KEYS``), and an utterance may be in only
one shard.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Sequence
from contextlib import closing

from ..errors import FormatError, MismatchError
from ..files import output_mode
from .index import IndexHit

SCHEMA_VERSION = "1"
#: Settings that must agree for two indexes to be merged or added to.
META_KEYS = ("max_length", "max_silence", "min_posterior", "representation")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE utterances (id INTEGER PRIMARY KEY, utterance TEXT NOT NULL UNIQUE, file TEXT NOT NULL,
                         channel TEXT NOT NULL, pruned_mass REAL NOT NULL DEFAULT 0);
CREATE TABLE vocabulary (word TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE hits (term TEXT NOT NULL, utterance_id INTEGER NOT NULL, tbeg REAL NOT NULL, dur REAL NOT NULL,
                   score REAL NOT NULL);
"""
_TERM_INDEX = "CREATE INDEX IF NOT EXISTS hits_by_term ON hits(term)"
TERM_QUERY = ("SELECT u.utterance, u.file, u.channel, h.tbeg, h.dur, h.score FROM hits h "
              "JOIN utterances u ON u.id = h.utterance_id WHERE h.term = ?")


def term_key(words: Sequence[str]) -> str:
    """The ``hits.term`` spelling of a word sequence."""
    return " ".join(words)


def _connect(path: str, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        if not os.path.exists(path):
            raise FormatError("no such index file", path=path)
        from urllib.parse import quote
        conn = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
    else:
        conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise FormatError(f"not an SQLite term index ({exc})", path=path) from None
    return conn


def _read_meta(conn: sqlite3.Connection, path: str) -> dict:
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        raise FormatError(f"not a lattice-tools term index ({exc})", path=path) from None
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise FormatError(f"term index schema version {meta.get('schema_version')!r}, expected {SCHEMA_VERSION}",
                          path=path)
    return meta


def _check_compatible(ours: dict, theirs: dict, what: str) -> None:
    for k in META_KEYS:
        if ours.get(k) != theirs.get(k):
            raise MismatchError(f"{what} was built with {k}={theirs.get(k)}, this index with {k}={ours.get(k)}; "
                                "indexes merge only with the same settings")


class IndexWriter:
    """Writes a term index atomically (see the module docstring).

    ``settings`` are the build settings (``max_length``, ``max_silence``, ``min_posterior``,
    ``representation``; stored in ``meta``).  With ``append=True`` and an existing ``path``, the
    new utterances are added to a copy of it (the settings must agree).  Use as a context manager:
    the file appears at ``path`` only when the block ends without an exception.
    """

    def __init__(self, path: str, settings: dict, *, append: bool = False):
        self.path = os.fspath(path)
        self.settings = {k: json.dumps(settings.get(k)) for k in META_KEYS}
        directory = os.path.dirname(os.path.abspath(self.path))
        fd, self._tmp = tempfile.mkstemp(prefix=f".{os.path.basename(self.path)}.tmp-", dir=directory)
        os.fchmod(fd, output_mode(self.path))  # the mode of any new file (umask), not mkstemp's 0600
        os.close(fd)
        self._done = False
        try:
            fresh = not (append and os.path.exists(self.path))
            if not fresh:
                with closing(_connect(self.path, readonly=True)) as src:
                    _check_compatible(self.settings, _read_meta(src, self.path), self.path)
                shutil.copyfile(self.path, self._tmp)
            # autocommit mode: transactions are explicit (BEGIN/COMMIT), pragmas run outside them
            self.conn = sqlite3.connect(self._tmp, isolation_level=None)
            # The temporary file is thrown away on failure, so no rollback journal is needed.
            self.conn.execute("PRAGMA journal_mode=OFF")
            self.conn.execute("PRAGMA synchronous=OFF")
            self.conn.execute("BEGIN")
            if fresh:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
                meta = dict(self.settings, schema_version=SCHEMA_VERSION)
                self.conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        except BaseException:
            self._discard()
            raise
        self.num_utterances = 0
        self.num_hits = 0

    def add_vocabulary(self, words: Iterable[str]) -> None:
        # Sorted: the b-tree pages (and so the file's bytes) then do not depend on set iteration order,
        # which varies between processes with string hashing.
        self.conn.executemany("INSERT OR IGNORE INTO vocabulary VALUES (?)", ((w,) for w in sorted(set(words))))

    def add_utterance(self, utterance: str, file: str, channel: str, hits: Iterable[IndexHit],
                      pruned_mass: float = 0.0) -> None:
        """Add one utterance and its hits (an utterance already in the index is an error)."""
        try:
            cur = self.conn.execute("INSERT INTO utterances (utterance, file, channel, pruned_mass) VALUES (?, ?, ?, ?)",
                                    (utterance, file, channel, pruned_mass))
        except sqlite3.IntegrityError:
            raise MismatchError(f"utterance {utterance!r} is already in the index", path=self.path,
                                key=utterance) from None
        uid = cur.lastrowid
        rows = [(term_key(h.words), uid, h.tbeg, h.dur, h.score) for h in hits]
        self.conn.executemany("INSERT INTO hits VALUES (?, ?, ?, ?, ?)", rows)
        self.num_utterances += 1
        self.num_hits += len(rows)

    def commit(self) -> None:
        """Build the term index, close and rename the file into place."""
        self.conn.execute(_TERM_INDEX)
        self.conn.execute("COMMIT")
        self.conn.execute("ANALYZE")
        self.conn.close()
        with open(self._tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(self._tmp, self.path)
        self._done = True

    def _discard(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:  # pragma: no cover
                pass
        if os.path.exists(self._tmp):
            os.unlink(self._tmp)

    def __enter__(self) -> IndexWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        elif not self._done:
            self._discard()


class TermIndex:
    """A term index opened for search (read-only)."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.conn = _connect(self.path, readonly=True)
        self.meta = _read_meta(self.conn, self.path)
        self.settings = {k: json.loads(self.meta[k]) for k in META_KEYS if k in self.meta}

    @property
    def max_length(self) -> int:
        return int(self.settings["max_length"])

    def in_vocabulary(self, word: str) -> bool:
        return self.conn.execute("SELECT 1 FROM vocabulary WHERE word = ?", (word,)).fetchone() is not None

    def lookup(self, words: Sequence[str]) -> list[IndexHit]:
        """Every hit of the word sequence (an index search, never a scan)."""
        return [IndexHit(tuple(words), u, f, c, tb, d, s)
                for u, f, c, tb, d, s in self.conn.execute(TERM_QUERY, (term_key(words),))]

    def counts(self) -> dict:
        q = self.conn.execute
        return {"utterances": q("SELECT count(*) FROM utterances").fetchone()[0],
                "hits": q("SELECT count(*) FROM hits").fetchone()[0],
                "terms": q("SELECT count(DISTINCT term) FROM hits").fetchone()[0],
                "vocabulary": q("SELECT count(*) FROM vocabulary").fetchone()[0],
                "pruned_mass": q("SELECT coalesce(sum(pruned_mass), 0) FROM utterances").fetchone()[0]}

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> TermIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def merge_indexes(out: str, shards: Sequence[str]) -> dict:
    """Merge shard indexes into one (Kaldi's ``kws-index-union``), atomically.  ``out`` may be one
    of the shards.  Returns the merged counts."""
    if not shards:
        raise MismatchError("no index to merge")
    metas = []
    for s in shards:
        with closing(_connect(os.fspath(s), readonly=True)) as c:
            metas.append(_read_meta(c, os.fspath(s)))
    first = {k: metas[0].get(k) for k in META_KEYS}
    for s, m in zip(shards[1:], metas[1:], strict=False):
        _check_compatible(first, m, os.fspath(s))
    settings = {k: json.loads(first[k]) for k in META_KEYS}
    with IndexWriter(out, settings) as w:
        conn = w.conn
        conn.execute("COMMIT")  # ATTACH runs outside a transaction
        for s in shards:
            conn.execute("ATTACH DATABASE ? AS shard", (os.path.abspath(os.fspath(s)),))
            dup = conn.execute("SELECT s.utterance FROM shard.utterances s JOIN main.utterances m "
                               "ON m.utterance = s.utterance LIMIT 1").fetchone()
            if dup:
                conn.execute("DETACH DATABASE shard")
                raise MismatchError(f"utterance {dup[0]!r} is in more than one shard", path=os.fspath(s), key=dup[0])
            conn.execute("BEGIN")
            offset = conn.execute("SELECT coalesce(max(id), 0) FROM main.utterances").fetchone()[0]
            conn.execute("INSERT INTO main.utterances SELECT id + ?, utterance, file, channel, pruned_mass FROM shard.utterances",
                         (offset,))
            conn.execute("INSERT INTO main.hits SELECT term, utterance_id + ?, tbeg, dur, score FROM shard.hits",
                         (offset,))
            conn.execute("INSERT OR IGNORE INTO main.vocabulary SELECT word FROM shard.vocabulary")
            conn.execute("COMMIT")
            conn.execute("DETACH DATABASE shard")
        conn.execute("BEGIN")
    with TermIndex(out) as idx:
        return idx.counts()
