"""A damaged, hand-edited or foreign SQLite term index, concurrent appends and killed writers: every fault is
a one-line error naming the file (exit 2 on the command line), never a traceback, a wrong detection, lost
utterances or a leftover temporary."""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.core.errors import FormatError, LatticeToolsError
from lattice_tools.io import read_lattices
from lattice_tools.io.keyword_search.kwlist import KeywordTerm
from lattice_tools.kws.build import build_lattice_index
from lattice_tools.kws.index import IndexHit
from lattice_tools.kws.search import search
from lattice_tools.kws.store import IndexWriter, TermIndex, merge_indexes

REPO = Path(__file__).resolve().parent.parent
LATS = REPO / "tests" / "data" / "kaldi" / "lats"
ARK = LATS / "bundled.ark.gz"
WORDS = str(LATS / "bundled.words.txt")
KW = str(REPO / "tests" / "data" / "kaldi_kws" / "keywords.words.txt")
SETTINGS = {"max_length": 1, "max_silence": 0.5, "min_posterior": 0.0, "representation": "lattice"}
MAX_ERROR = 400  # characters of one error line: a bad value is quoted, never echoed whole


def _env():
    return dict(os.environ, PYTHONPATH=str(REPO))


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "lattice_tools", *map(str, args)], capture_output=True, text=True,
                          env=_env(), **kw)


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    """An index of two utterances, single words (a few hundred hits)."""
    lats = list(read_lattices(f"ark,t:{ARK}", format="kaldi", symbols=WORDS))
    path = tmp_path_factory.mktemp("small") / "small.db"
    build_lattice_index([lats[0], lats[1]], str(path), max_length=1)
    return path


def small_index_path(tmp_path: Path) -> Path:
    """A fresh index of one utterance (for tests that need a file of their own)."""
    lats = read_lattices(f"ark,t:{ARK}", format="kaldi", symbols=WORDS)
    path = tmp_path / "one.db"
    build_lattice_index([next(iter(lats))], str(path), max_length=1)
    return path


def _terms(path) -> list[str]:
    with sqlite3.connect(path) as c:
        return [t for (t,) in c.execute("SELECT DISTINCT term FROM postings ORDER BY term")]


def _use(path: Path, other: Path, tmp: Path) -> None:
    """Open, search every term and merge ``path``: what a user does with an index."""
    with TermIndex(str(path)) as idx:
        for term in _terms(other):
            idx.in_vocabulary(term)
            idx.lookup(term.split())
        idx.counts()
    merge_indexes(str(tmp / "merged.db"), [str(path)])


def _assert_one_line(exc: BaseException, path: Path) -> None:
    text = str(exc)
    assert "\n" not in text and len(text) <= MAX_ERROR, text[:1000]
    assert path.name in text, text


# sets the last score of every posting list (its last 8 bytes, float64 little-endian) to the given bytes
_LAST_SCORE = "UPDATE postings SET data = CAST(substr(data, 1, length(data) - 8) || x'{}' AS BLOB)"
# one SQL edit per fault the reader must name; the expected words of the message
FAULTS = {
    "meta value not JSON": ("UPDATE meta SET value = '{oops' WHERE key = 'max_length'", "not a JSON value"),
    "meta key missing": ("DELETE FROM meta WHERE key = 'min_posterior'", "'min_posterior' is missing"),
    "meta number overflows": ("UPDATE meta SET value = '1e400' WHERE key = 'max_silence'", "max_silence"),
    "meta NaN": ("UPDATE meta SET value = 'NaN' WHERE key = 'min_posterior'", "min_posterior"),
    "meta wrong type": ("UPDATE meta SET value = '\"3\"' WHERE key = 'max_length'", "max_length"),
    "meta value a blob": ("UPDATE meta SET value = x'00ff' WHERE key = 'representation'", "representation"),
    "unknown representation": ("UPDATE meta SET value = '\"words\"' WHERE key = 'representation'", "representation"),
    "older schema version": ("UPDATE meta SET value = '0' WHERE key = 'schema_version'", "schema version '0'"),
    # an index of the previous layout (one row per hit) is refused by its version, before its tables
    "schema version 1": ("ALTER TABLE postings RENAME TO hits; UPDATE meta SET value = '1' "
                         "WHERE key = 'schema_version'", "schema version '1', expected '2'"),
    "newer schema version": ("UPDATE meta SET value = '3' WHERE key = 'schema_version'", "schema version '3'"),
    "no schema version": ("DELETE FROM meta WHERE key = 'schema_version'", "schema_version"),
    "no postings table": ("DROP TABLE postings", "no 'postings' table"),
    "no meta table": ("DROP TABLE meta", "no 'meta' table"),
    "column of an older version": ("ALTER TABLE utterances DROP COLUMN pruned_mass", "no column 'pruned_mass'"),
    "posting data stored as text": ("UPDATE postings SET data = 'high'", "blob"),
    # the last 8 bytes of a posting list are its last score: +inf (little-endian 0x7ff0000000000000)
    "score +inf": (_LAST_SCORE.format("000000000000f07f"), "score"),
    "score negative": (_LAST_SCORE.format("000000000000f0bf"), "score"),
    "time tick zero": ("UPDATE postings SET tick = 0", "tick"),
    "time beyond 2^53 microseconds": ("UPDATE postings SET tick = 9007199254740992", "2^53"),
    "hit count too large": ("UPDATE postings SET count = count + 1", "hits"),
    "truncated posting data": ("UPDATE postings SET data = substr(data, 2)", "hits"),
    "hit of a missing utterance": ("UPDATE postings SET utterance_id = utterance_id + 998", "utterance"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_is_a_one_line_error_naming_the_file(fault, small_index, tmp_path):
    sql, words = FAULTS[fault]
    bad = tmp_path / "bad.db"
    shutil.copyfile(small_index, bad)
    with sqlite3.connect(bad) as c:
        c.executescript(sql)
    with pytest.raises(LatticeToolsError) as info:
        _use(bad, small_index, tmp_path)
    _assert_one_line(info.value, bad)
    assert words in str(info.value) or fault == "hit of a missing utterance" and "utterance" in str(info.value)
    assert not (tmp_path / "merged.db").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.db"]  # no temporary left


# one term's posting rows damaged, the others good: a merge checks every row as it copies it, and names the row
_ONE_TERM = "UPDATE postings SET {} WHERE term = (SELECT term FROM postings ORDER BY term LIMIT 1 " \
    "OFFSET (SELECT count(*) / 2 FROM postings))"
ROW_FAULTS = {
    "score +inf": ("data = CAST(substr(data, 1, length(data) - 8) || x'000000000000f07f' AS BLOB)", "score inf"),
    "score NaN": ("data = CAST(substr(data, 1, length(data) - 8) || x'000000000000f87f' AS BLOB)", "score nan"),
    "hit count too large": ("count = count + 1", "hit"),
    "hit count a real": ("count = count + 0.5", "count"),
    "time tick zero": ("tick = 0", "tick"),
    "time beyond 2^53": ("tick = 9007199254740992", "2^53"),
    "data stored as text": ("data = 'high'", "blob"),
    "truncated data": ("data = substr(data, 2)", "hit"),
    "term not text": ("term = CAST(term AS BLOB)", "term"),
    "utterance id a real": ("utterance_id = utterance_id + 0.5", "utterance_id"),
    "missing utterance": ("utterance_id = utterance_id + 99999", "which the index does not hold"),
}


@pytest.mark.parametrize("fault", sorted(ROW_FAULTS))
def test_merge_names_the_one_damaged_row(fault, small_index, tmp_path):
    sql, words = ROW_FAULTS[fault]
    bad = tmp_path / "bad.db"
    shutil.copyfile(small_index, bad)
    with sqlite3.connect(bad) as c:
        c.execute(_ONE_TERM.format(sql))
        assert c.total_changes >= 1
    with pytest.raises(LatticeToolsError) as info:
        merge_indexes(str(tmp_path / "merged.db"), [str(bad)])
    _assert_one_line(info.value, bad)
    text = str(info.value)
    assert words in text and ("row of term" in text or "hit of term" in text), text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.db"]


def test_cli_faults_exit_2_on_one_line(small_index, tmp_path):
    bad = tmp_path / "bad.db"
    shutil.copyfile(small_index, bad)
    with sqlite3.connect(bad) as c:
        # a score of +inf: unchecked, a YES
        c.execute(_LAST_SCORE.format("000000000000f07f"))
    r = _cli("kws", "search", bad, "--kwlist", KW, "-o", tmp_path / "o.tsv")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "bad.db" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "o.tsv").exists()
    r = _cli("kws", "merge", bad, small_index, "-o", tmp_path / "m.db")
    assert r.returncode == 2 and "bad.db" in r.stderr and "score" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.db"]


def test_corrupt_page_and_foreign_files(small_index, tmp_path):
    data = bytearray(small_index.read_bytes())
    page = 4096
    for first in range(1, len(data) // page):  # every page but the header: a merge reads all of them
        data[first * page:(first + 1) * page] = b"\xff" * page
    bad = tmp_path / "bad.db"
    bad.write_bytes(bytes(data))
    with pytest.raises(LatticeToolsError) as info:
        _use(bad, small_index, tmp_path)
    _assert_one_line(info.value, bad)
    nul = tmp_path / "nul.db"
    nul.write_bytes(b"\0" * 200_000)
    with pytest.raises(FormatError) as info:
        _use(nul, small_index, tmp_path)
    _assert_one_line(info.value, nul)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE t (x)")
    with pytest.raises(FormatError, match="no 'meta' table"):
        _use(other, small_index, tmp_path)
    with pytest.raises(FormatError, match="no such index"):
        merge_indexes(str(tmp_path / "m.db"), [str(small_index), str(tmp_path / "absent.db")])
    assert not (tmp_path / "absent.db").exists()  # ATTACH did not create it


def test_written_hits_are_checked(tmp_path):
    out = tmp_path / "x.db"
    for hit, words in ((IndexHit(("a",), "u", "f", "1", -0.5, 0.2, 0.9), "start time"),
                       (IndexHit(("a",), "u", "f", "1", 0.5, -0.2, 0.9), "duration"),
                       (IndexHit(("a",), "u", "f", "1", 0.5, 0.2, float("inf")), "score"),
                       (IndexHit(("a",), "u", "f", "1", 0.5, 0.2, float("nan")), "score")):
        with pytest.raises(FormatError, match=words), IndexWriter(str(out), SETTINGS) as w:
            w.add_utterance("u", "f", "1", [hit])
        assert sorted(p.name for p in tmp_path.iterdir()) == []


def _mutated(tmp: Path, source: Path, edits: list[tuple[int, int]]) -> Path:
    data = bytearray(source.read_bytes())
    for offset, value in edits:
        data[offset % len(data)] = value
    path = tmp / "fuzz.db"
    path.write_bytes(bytes(data))
    return path


NASTY = [None, -1, -1e-9, 9e999, -9e999, "x" * 300, b"\0\1", "0.5", 2**63 - 1, "", 1e308]
TABLE_COLUMNS = [("postings", c) for c in ("term", "utterance_id", "count", "tick", "data")] + \
                [("utterances", c) for c in ("utterance", "file", "channel", "pruned_mass", "id")] + \
                [("meta", "value"), ("meta", "key"), ("vocabulary", "word")]


def _fuzz_bytes(small_index, tmp_path, edits):
    for p in tmp_path.iterdir():
        p.unlink()
    path = _mutated(tmp_path, small_index, edits)
    try:
        _use(path, small_index, tmp_path)
    except LatticeToolsError as exc:
        _assert_one_line(exc, path)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def _fuzz_values(small_index, tmp_path, edits):
    for p in tmp_path.iterdir():
        p.unlink()
    path = tmp_path / "fuzz.db"
    shutil.copyfile(small_index, path)
    with sqlite3.connect(path) as c:
        for (table, column), value, row in edits:
            # a NOT NULL or UNIQUE column refuses some values: the edit is then not made
            try:
                key = {"meta": "key", "vocabulary": "word", "postings": "term"}.get(table, "rowid")
                c.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = (SELECT {key} FROM {table} "
                          f"LIMIT 1 OFFSET ?)", (value, row))
            except sqlite3.IntegrityError:
                pass
    try:
        _use(path, small_index, tmp_path)
    except LatticeToolsError as exc:
        _assert_one_line(exc, path)
    else:  # accepted: then every hit it answers holds finite times and scores >= 0
        with TermIndex(str(path)) as idx:
            for term in _terms(path):
                for h in idx.lookup(term.split()):
                    assert h.tbeg >= 0 and h.dur >= 0 and 0 <= h.score < float("inf")


_BYTE_EDITS = st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=12)
_VALUE_EDITS = st.lists(st.tuples(st.sampled_from(TABLE_COLUMNS), st.sampled_from(NASTY), st.integers(0, 5)),
                        min_size=1, max_size=4)
_FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_SLOW = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FAST
@given(edits=_BYTE_EDITS)
def test_fuzz_mutated_index_bytes(small_index, tmp_path, edits):
    _fuzz_bytes(small_index, tmp_path, edits)


@_FAST
@given(edits=_VALUE_EDITS)
def test_fuzz_mutated_index_values(small_index, tmp_path, edits):
    _fuzz_values(small_index, tmp_path, edits)


@pytest.mark.slow
@_SLOW
@given(edits=_BYTE_EDITS)
def test_fuzz_mutated_index_bytes_many(small_index, tmp_path, edits):
    _fuzz_bytes(small_index, tmp_path, edits)


@pytest.mark.slow
@_SLOW
@given(edits=_VALUE_EDITS)
def test_fuzz_mutated_index_values_many(small_index, tmp_path, edits):
    _fuzz_values(small_index, tmp_path, edits)


def _split_ark(tmp_path: Path) -> list[Path]:
    """The bundled archive as two text archives of 5 utterances each."""
    import gzip

    text = gzip.decompress(ARK.read_bytes()).decode()
    lattices = [p for p in text.split("\n\n") if p.strip()]
    halves = []
    for name, part in (("a.ark", lattices[:5]), ("b.ark", lattices[5:])):
        (tmp_path / name).write_text("\n\n".join(part) + "\n\n")
        halves.append(tmp_path / name)
    return halves


def test_concurrent_appends_lose_nothing(tmp_path):
    arks = _split_ark(tmp_path)
    for trial in range(2):
        out = tmp_path / f"c{trial}.db"
        procs = [subprocess.Popen([sys.executable, "-m", "lattice_tools", "kws", "index", f"ark,t:{a}", "--words",
                                   WORDS, "-o", str(out), "--append", "--max-length", "1"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
                 for a in arks]
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
        with TermIndex(str(out)) as idx:
            assert idx.counts().utterances == 10
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def _temporaries(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_index_leaves_nothing_and_a_rerun_cleans(sig, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    first = gzip_text().split("\n\n")[0] + "\n\n"
    proc = subprocess.Popen([sys.executable, "-m", "lattice_tools", "kws", "index", "ark,t:-", "--words", WORDS,
                             "-o", str(out / "idx.db")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())
    proc.stdin.write(first)
    proc.stdin.flush()
    deadline = time.time() + 60
    while not _temporaries(out):
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() < deadline, "no temporary appeared"
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(sig)
    rc = proc.wait(30)
    proc.stdin.close()
    assert rc == -sig
    if sig == signal.SIGKILL:
        assert _temporaries(out) and not (out / "idx.db").exists()  # nothing cleans up after SIGKILL ...
        r = _cli("kws", "index", f"ark,t:{ARK}", "--words", WORDS, "-o", out / "idx.db", "--max-length", "1")
        assert r.returncode == 0, r.stderr
    assert _temporaries(out) == []  # ... but the next write of the index does
    assert sorted(p.name for p in out.iterdir()) == (["idx.db"] if sig == signal.SIGKILL else [])


def gzip_text() -> str:
    import gzip

    return gzip.decompress(ARK.read_bytes()).decode()


def test_sigterm_at_any_moment_of_merge_leaves_a_usable_index_or_none(tmp_path):
    a, b = _split_ark(tmp_path)
    shards = []
    for ark in (a, b):
        r = _cli("kws", "index", f"ark,t:{ark}", "--words", WORDS, "-o", ark.with_suffix(".db"))
        assert r.returncode == 0, r.stderr
        shards.append(ark.with_suffix(".db"))
    out = tmp_path / "out"
    out.mkdir()
    start = time.time()
    r = _cli("kws", "merge", *shards, "-o", out / "m.db", "--json", "-")
    whole = json.loads(r.stdout)
    run_time = time.time() - start
    (out / "m.db").unlink()
    for k in range(6):  # from early (reading the shards) to late (building the term index, renaming)
        proc = subprocess.Popen([sys.executable, "-m", "lattice_tools", "kws", "merge", *map(str, shards), "-o",
                                 str(out / "m.db")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
        time.sleep(run_time * (0.3 + 0.15 * k))
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        names = sorted(p.name for p in out.iterdir())
        assert names in ([], ["m.db"]), names
        if names:
            with TermIndex(str(out / "m.db")) as idx:
                assert idx.counts().to_dict() == whole
            (out / "m.db").unlink()


# Pauses the merge at a moment given on the command line: in the commit (after the rows are in, before
# the term index is built and the file renamed) or right after the rename, and says so on stdout.
_PAUSE_IN_MERGE = r"""
import os, sys, time
import lattice_tools.kws.store as store
moment = sys.argv.pop(1)
commit, real_replace = store.IndexWriter.commit, os.replace
def slow_commit(self):
    if moment == "commit":
        print("PAUSED", flush=True)
        time.sleep(60)
    commit(self)
def replace(a, b):
    real_replace(a, b)
    if moment == "renamed":
        print("PAUSED", flush=True)
        time.sleep(60)
store.IndexWriter.commit = slow_commit
os.replace = replace
sys.argv = ["lattice-tools"] + sys.argv[1:]
from lattice_tools.cli import main
main()
"""


@pytest.mark.parametrize("moment", ["commit", "renamed"])
def test_sigterm_late_in_merge(moment, small_index, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", _PAUSE_IN_MERGE, moment, "kws", "merge", str(small_index), "-o",
                             str(out / "m.db")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    line = proc.stdout.readline()
    assert line.startswith("PAUSED"), proc.stderr.read()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM
    names = sorted(p.name for p in out.iterdir())
    if moment == "commit":
        assert names == []  # the temporary removed, no index
    else:
        assert names == ["m.db"]  # renamed: complete and usable
        with TermIndex(str(out / "m.db")) as merged, TermIndex(str(small_index)) as whole:
            assert merged.counts() == whole.counts()


def test_search_results_hold_valid_times(small_index):
    terms = [KeywordTerm(f"KW-{i}", t) for i, t in enumerate(_terms(small_index)[:50])]
    res = search(str(small_index), terms)
    assert res.detections
    assert all(d.tbeg >= 0 and d.dur >= 0 and 0 <= d.score <= 1 for d in res.detections)


def test_an_error_quotes_a_long_key_briefly():
    text = str(FormatError("bad", path="x.ark", key="\0" * 200_000))
    assert len(text) < 120 and text.startswith("x.ark [")
    assert len(str(FormatError("bad key " + "\0" * 200_000, path="x.ark"))) < 1100


def test_a_file_of_nul_bytes_is_a_short_error(tmp_path):
    nul = tmp_path / "nul.ark"
    nul.write_bytes(b"\0" * 200_000)
    for args in (["kws", "index", f"ark,t:{nul}", "-o", tmp_path / "x.db"],
                 ["kws", "search", nul, "--kwlist", KW, "-o", tmp_path / "o.tsv"],
                 ["kws", "merge", nul, "-o", tmp_path / "m.db"],
                 ["kws", "search", small_index_path(tmp_path), "--kwlist", nul, "-o", tmp_path / "o.tsv"]):
        r = _cli(*args)
        assert r.returncode == 2 and len(r.stderr) < 1200 and len(r.stderr.splitlines()) == 1, r.stderr[:300]


def _file_size_limit():
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails (EFBIG) as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))


def test_a_failed_write_names_the_output_and_leaves_nothing(small_index, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    shard = tmp_path / "shard.db"
    r = _cli("kws", "index", f"ark,t:{ARK}", "--words", WORDS, "-o", shard)
    assert r.returncode == 0 and shard.stat().st_size > 200_000
    for args in (["index", f"ark,t:{ARK}", "--words", WORDS], ["merge", shard]):
        r = _cli("kws", *args, "-o", out / "full.db", preexec_fn=_file_size_limit)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert "full.db: cannot write" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert list(out.iterdir()) == []


@pytest.mark.parametrize("option", [["--max-length", "0"], ["--min-posterior", "nan"], ["--min-posterior", "2"]])
def test_bad_build_settings_are_one_line_errors(option, tmp_path):
    r = _cli("kws", "index", f"ark,t:{ARK}", "--words", WORDS, "-o", tmp_path / "x.db", *option)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert option[0] in r.stderr and list(tmp_path.iterdir()) == []   # the command line names its option
