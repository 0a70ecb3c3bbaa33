"""What ``kws merge`` and ``kws study`` report is typed and frozen (``IndexCounts``, ``KwsStudyResult`` with its
``KwsStudyRow``/``KwsInvariant``); their JSON and printed tables are byte-identical to what the commands wrote when
the results were plain dicts (goldens in tests/data/kws_results, see its PROVENANCE.md).  The study's CPU
seconds are masked on both sides (they are measured, never equal twice)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "kws_results"
LATS = DATA / "kaldi" / "lats"
REPRESENTATIONS = ("1best", "nbest:10", "sausage:3", "phrase:10:0.1", "lattice")
TIMES = ("derive_seconds", "index_seconds", "search_seconds", "ms_per_query")


def _run(*args, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA.parent.parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "lattice_tools", *map(str, args)], cwd=cwd, capture_output=True,
                          env=env, timeout=300)


def masked_json(text: str, indent: int) -> str:
    """The study's JSON with its CPU times replaced by null (the rest as it was written)."""
    doc = json.loads(text)
    for row in doc["rows"]:
        for k in TIMES:
            if k in row:
                row[k] = None
    return json.dumps(doc, indent=indent, sort_keys=True) + "\n"


def masked_markdown(text: str) -> str:
    """The study's table with its three time columns (derive s, index s, search ms/query) replaced by '*'."""
    return re.sub(r"^(\|(?:[^|\n]*\|){8}) [\d.,]+ \| [\d.,]+ \| [\d.,]+ \|$", r"\1 * | * | * |", text, flags=re.M)


def study_outputs(cwd: Path) -> dict[str, bytes]:
    """``kws study`` on the bundled lattices, five representations: stdout (the tables), --json and
    kws_study.json, times masked."""
    proc = _run("kws", "study", f"ark,t:{LATS / 'bundled.ark.gz'}", "--words", LATS / "bundled.words.txt",
                "--ctm", GOLDEN / "ref.ctm", "--num-terms", "20",
                *[a for r in REPRESENTATIONS for a in ("--representation", r)],
                "-o", "study", "--no-plots", "--json", "study.json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr.decode()
    return {"study.md": masked_markdown(proc.stdout.decode()).encode(),
            "study.json": masked_json((cwd / "study.json").read_text(), 2).encode(),
            "kws_study.json": masked_json((cwd / "study" / "kws_study.json").read_text(), 1).encode()}


def merge_outputs(cwd: Path) -> dict[str, bytes]:
    """``kws merge`` of two shard indexes (the pocketsphinx lattices 003 and 004, posterior floor 0.01):
    its --json and the line on stderr."""
    for key, shard in (("003", "a.db"), ("004", "b.db")):
        proc = _run("kws", "index", DATA / "inputs" / f"{key}.lat", "-o", shard, "--min-posterior", "0.01", cwd=cwd)
        assert proc.returncode == 0, proc.stderr.decode()
    proc = _run("kws", "merge", "a.db", "b.db", "-o", "m.db", "--json", "-", cwd=cwd)
    assert proc.returncode == 0, proc.stderr.decode()
    return {"merge.json": proc.stdout, "merge.stderr": proc.stderr}


def test_kws_study_outputs_are_byte_identical(tmp_path):
    for name, got in study_outputs(tmp_path).items():
        assert got == (GOLDEN / name).read_bytes(), name


def test_kws_merge_outputs_are_byte_identical(tmp_path):
    for name, got in merge_outputs(tmp_path).items():
        assert got == (GOLDEN / name).read_bytes(), name


def test_merge_returns_frozen_index_counts(tmp_path):
    import dataclasses

    import pytest

    from lattice_tools.kws.store import IndexCounts, TermIndex, merge_indexes

    merge_outputs(tmp_path)
    shards = [str(tmp_path / "a.db"), str(tmp_path / "b.db")]
    counts = merge_indexes(str(tmp_path / "again.db"), shards)
    assert isinstance(counts, IndexCounts)
    with TermIndex(shards[0]) as a, TermIndex(shards[1]) as b, TermIndex(str(tmp_path / "m.db")) as m:
        assert m.counts() == counts
        assert counts.utterances == a.counts().utterances + b.counts().utterances == 2
        assert counts.hits == a.counts().hits + b.counts().hits
        assert counts.pruned_mass == pytest.approx(a.counts().pruned_mass + b.counts().pruned_mass)
    assert json.loads((GOLDEN / "merge.json").read_text()) == counts.to_dict()
    with pytest.raises(dataclasses.FrozenInstanceError):
        counts.hits = 0  # type: ignore[misc]


if __name__ == "__main__":  # writes the goldens (see tests/data/kws_results/PROVENANCE.md)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name, data in {**study_outputs(Path(tmp)), **merge_outputs(Path(tmp))}.items():
            (GOLDEN / name).write_bytes(data)
