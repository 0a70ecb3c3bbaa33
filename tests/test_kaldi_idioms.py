"""Kaldi's idioms as lattice inputs: a glob inside an rspecifier or its pipe, a quoted glob of files, a decode
directory (lat.JOB.gz + num_jobs) and several archives read as one set."""
from __future__ import annotations

from pathlib import Path

import pytest

from lattice_tools.core.errors import FormatError, MismatchError
from lattice_tools.io.lattices.inputs import expand_lattice_specs, read_lattice_inputs
from lattice_tools.io.lattices.lattice_files import write_lattices

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def lattices():
    return list(read_lattice_inputs([str(DATA / "kaldi/lats/bundled.ark.gz")]))


@pytest.fixture
def decode_dir(tmp_path, lattices):
    """Ten jobs: lat.k.gz holds the k-th lattice of the archive, and num_jobs says 10."""
    d = tmp_path / "exp" / "decode_dev"
    d.mkdir(parents=True)
    for k, lat in enumerate(lattices, 1):
        write_lattices([lat], str(d / f"lat.{k}.gz"))
    (d / "num_jobs").write_text(f"{len(lattices)}\n")
    return d


def keys(specs):
    return [lat.key for lat in read_lattice_inputs(specs)]


def test_glob_inside_a_pipe_reads_every_job_in_job_order(decode_dir, lattices):
    expected = [lat.key for lat in lattices]   # job k holds lattice k: lat.10 comes after lat.9, not after lat.1
    spec = f"ark:gunzip -c {decode_dir}/lat.*.gz|"
    assert expand_lattice_specs([spec]) == [f"ark:gunzip -c {decode_dir}/lat.{k}.gz|" for k in range(1, 11)]
    assert keys([spec]) == expected
    assert keys([f"ark:{decode_dir}/lat.*.gz"]) == expected
    assert keys([f"{decode_dir}/lat.*.gz"]) == expected            # a quoted glob of files


def test_decode_directory_is_its_jobs(decode_dir, lattices):
    assert keys([str(decode_dir)]) == [lat.key for lat in lattices]
    (decode_dir / "num_jobs").write_text("12\n")
    with pytest.raises(FormatError, match=r"num_jobs 12 but no lat\.11\.gz \(2 job\(s\) missing"):
        keys([str(decode_dir)])
    (decode_dir / "num_jobs").write_text("ten\n")
    with pytest.raises(FormatError, match="expected a number of jobs"):
        keys([str(decode_dir)])
    (decode_dir / "num_jobs").unlink()
    assert keys([str(decode_dir)]) == [lat.key for lat in lattices]


def test_glob_matching_nothing_names_the_pattern(tmp_path):
    with pytest.raises(FormatError, match=r"no file matches .*nope\.\*\.gz"):
        expand_lattice_specs([f"ark:gunzip -c {tmp_path}/nope.*.gz|"])


def test_several_archives_are_one_set(decode_dir, lattices):
    specs = [f"ark:gunzip -c {decode_dir}/lat.{k}.gz|" for k in (3, 1, 2)]
    assert keys(specs) == [lattices[2].key, lattices[0].key, lattices[1].key]
    with pytest.raises(MismatchError, match="given twice"):
        keys([str(decode_dir / "lat.1.gz"), f"ark:gunzip -c {decode_dir}/lat.*.gz|"])


def test_slf_directory_is_still_an_slf_directory():
    assert expand_lattice_specs([str(DATA / "slf")]) == [str(DATA / "slf")]
