"""The oracle study's rows are typed and frozen (``StudyRow``); what the study writes (``study.json``,
``study.csv``, ``study.md``) and prints is byte-identical to its output when the rows were plain dicts (goldens
in tests/data/study_results, see its PROVENANCE.md).  The clock the study reads is frozen, so the measured
``seconds`` of every cell are 0 in both.

Run ``python tests/test_study_results.py --write`` to rewrite the goldens (only when the output is meant to
change; say why in the commit)."""
from __future__ import annotations

import os
import shutil
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "data" / "study_results"
INPUTS = HERE / "data" / "inputs"
LATTICES = [f"cards={INPUTS / '003.lat'}", f"cards={INPUTS / '004.lat'}"]
OUTPUTS = ("study.json", "study.csv", "study.md")

# name: (CLI arguments after the lattice sets, reference file name)
CASES = {
    "study": (["-n", "1,2", "--representations", "nbest,sausage,phrase,lattice", "--prune", "0,0.5",
               "--bootstrap", "20", "--seed", "3", "--no-plots", "--no-view"], "ref.trn"),
    "both-ways": (["-n", "1,2", "--representations", "nbest,sausage,phrase,lattice", "--segment-free",
                   "--no-plots", "--no-view"], "ref.stm"),
}


def _freeze_clock(monkeypatch) -> None:
    from lattice_tools.oracle import study

    monkeypatch.setattr(study, "time", types.SimpleNamespace(time=lambda: 0.0))


def _run_cli(name: str, out: Path) -> str:
    from lattice_tools.cli import main

    args, ref = CASES[name]
    with _chdir(out.parent):
        r = CliRunner().invoke(main, ["study", *LATTICES, "-r", str(GOLDEN / ref), "-o", out.name, *args])
    assert r.exit_code == 0, r.output
    return r.output


def _run_skipped(out: Path):
    """N-best at N=inf past its search budget: a row that says so instead of numbers."""
    from lattice_tools.oracle.study import run_study

    return run_study({"cards": [str(INPUTS / "003.lat"), str(INPUTS / "004.lat")]}, str(GOLDEN / "ref.trn"),
                     ns=(1, 3), representations=("nbest", "lattice"), inf_max_pops=2, out_dir=str(out),
                     bootstrap=0, plots=False, progress=False)


class _chdir:
    def __init__(self, path):
        self.path, self.old = path, None

    def __enter__(self):
        self.old = os.getcwd()
        os.chdir(self.path)

    def __exit__(self, *exc):
        os.chdir(self.old)


def _golden(name: str, file: str) -> bytes:
    return (GOLDEN / name / file).read_bytes()


@pytest.mark.parametrize("name", sorted(CASES))
def test_study_outputs_are_byte_identical(name, tmp_path, monkeypatch):
    _freeze_clock(monkeypatch)
    printed = _run_cli(name, tmp_path / "out")
    assert printed.encode() == _golden(name, "printed.txt")
    for file in OUTPUTS:
        assert (tmp_path / "out" / file).read_bytes() == _golden(name, file), file
    if name == "study":
        # a rerun reloads every cell from its cached JSON (``StudyRow.from_dict``) and the notes the lattices
        # gave: it writes what the first run wrote
        printed = _run_cli(name, tmp_path / "out")
        assert printed.encode() == _golden(name, "printed.txt")
        for file in OUTPUTS:
            assert (tmp_path / "out" / file).read_bytes() == _golden(name, file), file


def test_a_cell_stopped_by_the_search_budget_is_byte_identical(tmp_path, monkeypatch):
    _freeze_clock(monkeypatch)
    _run_skipped(tmp_path / "out")
    assert b"N=inf exceeds the search budget" in _golden("skipped", "study.json")
    for file in OUTPUTS:
        assert (tmp_path / "out" / file).read_bytes() == _golden("skipped", file), file


def test_the_rows_are_frozen_and_typed(tmp_path, monkeypatch):
    import dataclasses
    import json

    from lattice_tools.oracle import StudyInvariant, StudyRow

    _freeze_clock(monkeypatch)
    res = _run_skipped(tmp_path / "out")
    assert all(isinstance(r, StudyRow) for r in res.rows)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.rows[0].wer = 0.0  # type: ignore[misc]
    written = json.loads((tmp_path / "out" / "study.json").read_text())["rows"]
    assert [r.to_dict() for r in res.rows] == written == res.to_dict()["rows"]
    assert [list(r.to_dict()) for r in res.rows][0][:6] == ["representation", "N", "density", "set", "prune",
                                                            "utterances"]
    assert [StudyRow.from_dict(d) for d in written] == list(res.rows)
    assert res.rows[0].cell == ("1best", "1") and res.rows[0].errors == 2 and res.rows[0].n_max == 1
    assert res.invariants and all(isinstance(i, StudyInvariant) for i in res.invariants)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.invariants[0].holds = False  # type: ignore[misc]
    assert [i.to_dict() for i in res.invariants] == json.loads((tmp_path / "out" / "study.json").read_text())[
        "invariants"] == res.to_dict()["invariants"]


@pytest.mark.parametrize("edit, key", [
    (lambda d: d.update(colour="red"), "colour"),
    (lambda d: d.pop("wer"), "wer"),
    (lambda d: d.pop("per_utterance"), "per_utterance"),
    (lambda d: d["per_utterance"][0].pop("deletions"), "deletions"),
    (lambda d: d.update(C="4"), "C"),
])
def test_a_damaged_cached_cell_is_refused_naming_file_and_key(tmp_path, edit, key):
    """A cached cell another version wrote (or an edited one) is a FormatError naming the file and the key; the
    CLI prints it on one line and exits 2."""
    import json

    from lattice_tools.cli import main
    from lattice_tools.core.errors import FormatError
    from lattice_tools.oracle.study import run_study

    args = ["-n", "1,3", "--representations", "nbest,lattice", "--bootstrap", "0", "--no-plots", "--no-view",
            "--no-infinity"]
    r = CliRunner().invoke(main, ["study", *LATTICES, "-r", str(GOLDEN / "ref.trn"), "-o", str(tmp_path), *args])
    assert r.exit_code == 0, r.output
    cell = tmp_path / "cells" / "cards" / "nbest-1.json"
    d = json.loads(cell.read_text())
    edit(d)
    cell.write_text(json.dumps(d))
    with pytest.raises(FormatError) as err:  # the same settings as the command's: its cached cells are read
        run_study({"cards": [str(INPUTS / "003.lat"), str(INPUTS / "004.lat")]}, str(GOLDEN / "ref.trn"), ns=(1, 3),
                  representations=("nbest", "lattice"), include_infinity=False, out_dir=str(tmp_path), bootstrap=0,
                  plots=False, progress=False)
    assert err.value.path == str(cell) and err.value.key == key
    r = CliRunner().invoke(main, ["study", *LATTICES, "-r", str(GOLDEN / "ref.trn"), "-o", str(tmp_path), *args])
    assert r.exit_code == 2 and str(cell) in r.output and len(r.output.strip().splitlines()) == 1, r.output


@pytest.mark.parametrize("text", ["{not json", '{"settings": null, "notes": "x"}'])
def test_a_damaged_notes_file_is_refused_or_recomputed(tmp_path, text):
    """The notes a density's lattices gave are cached beside its cells: damaged JSON is refused naming the file
    (exit 2, one line); notes of other settings are not used."""
    from lattice_tools.cli import main

    args = ["-n", "1,3", "--representations", "nbest", "--bootstrap", "0", "--no-plots", "--no-view", "--no-infinity"]
    r = CliRunner().invoke(main, ["study", *LATTICES, "-r", str(GOLDEN / "ref.trn"), "-o", str(tmp_path), *args])
    assert r.exit_code == 0, r.output
    notes = tmp_path / "cells" / "cards" / "notes.json"
    assert notes.is_file()
    notes.write_text(text)
    r = CliRunner().invoke(main, ["study", *LATTICES, "-r", str(GOLDEN / "ref.trn"), "-o", str(tmp_path), *args])
    if text.startswith("{not"):
        assert r.exit_code == 2 and str(notes) in r.output and len(r.output.strip().splitlines()) == 1, r.output
    else:
        assert r.exit_code == 0, r.output


def _keep(out: Path, printed: str, golden: Path) -> None:
    golden.mkdir(exist_ok=True)
    (golden / "printed.txt").write_text(printed)
    for file in OUTPUTS:
        shutil.copyfile(out / file, golden / file)


def _write_goldens() -> None:
    with pytest.MonkeyPatch.context() as mp:
        _freeze_clock(mp)
        for name in CASES:
            work = GOLDEN / f".work-{name}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            printed = _run_cli(name, work / "out")
            _keep(work / "out", printed, GOLDEN / name)
            shutil.rmtree(work)
        work = GOLDEN / ".work-skipped"
        shutil.rmtree(work, ignore_errors=True)
        _run_skipped(work)
        (GOLDEN / "skipped").mkdir(exist_ok=True)
        for file in OUTPUTS:
            shutil.copyfile(work / file, GOLDEN / "skipped" / file)
        shutil.rmtree(work)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        _write_goldens()
