"""Readers bound what they read before they allocate: a file of NUL bytes, ``/dev/zero`` and an endless line
are refused with a FormatError naming the file (and line) after reading at most a few megabytes, for every
input format; commands given ``/dev/zero`` end with one error line, in little memory."""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest
from _memory_cap import BASE_MARGIN, assert_clean_refusal, run_capped

from lattice_tools.core.errors import FormatError
from lattice_tools.core.files import MAX_LINE_BYTES, read_text_bytes, read_text_lines

DATA = Path(__file__).resolve().parent / "data"


def _readers():
    from lattice_tools.core.symbols import SymbolTable
    from lattice_tools.io.keyword_search.ecf import read_ecf
    from lattice_tools.io.keyword_search.kwlist import read_kwlist
    from lattice_tools.io.keyword_search.kwslist import read_kwslist
    from lattice_tools.io.keyword_search.rttm import read_rttm
    from lattice_tools.io.lattices.kaldi_tables import read_int_vectors
    from lattice_tools.io.lattices.lattice_files import read_lattices
    from lattice_tools.io.transcripts.ctm import read_ctm
    from lattice_tools.io.transcripts.glm import read_glm
    from lattice_tools.io.transcripts.kaldi_data import read_kaldi_text, read_segments
    from lattice_tools.io.transcripts.stm import read_stm
    from lattice_tools.io.transcripts.trn import read_trn

    def lattices(fmt):
        return lambda p: list(read_lattices(p, format=fmt))

    return {"ctm": read_ctm, "stm": read_stm, "trn": read_trn, "glm": read_glm, "kwlist": read_kwlist,
            "ecf": read_ecf, "kwslist": read_kwslist, "rttm": read_rttm, "kaldi text": read_kaldi_text,
            "segments": read_segments, "int vectors": read_int_vectors, "words.txt": SymbolTable.read,
            **{f"{fmt} lattices": lattices(fmt) for fmt in ("slf", "sphinx", "kaldi", "openfst", "k2")}}


READERS = sorted(_readers())


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    nuls = d / "nuls"
    nuls.write_bytes(bytes(3 << 20))
    nul_line = d / "nul_line"
    nul_line.write_bytes(b"ok line\n" * 3 + b"a\0b\n")
    long = d / "long"
    with open(long, "wb") as f:
        for _ in range(MAX_LINE_BYTES // (1 << 20) + 2):
            f.write(b"x" * (1 << 20))
    gz = d / "nuls.gz"
    gz.write_bytes(gzip.compress(bytes(64 << 20), 1))  # 64 MB of NULs in 64 KB
    return {"nuls": nuls, "nul_line": nul_line, "long": long, "nuls.gz": gz}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("kind", ["nuls", "nuls.gz", "nul_line", "long"])
def test_reader_refuses_binary_and_endless_input(reader, kind, bad_files):
    path = str(bad_files[kind])
    with pytest.raises(FormatError) as err:
        _readers()[reader](path)
    assert path in str(err.value)


def test_text_helpers_name_the_line(bad_files):
    with pytest.raises(FormatError, match=r"nul_line:4: binary data"):
        list(read_text_lines(str(bad_files["nul_line"])))
    with pytest.raises(FormatError, match=r"nul_line:4: binary data"):
        read_text_bytes(str(bad_files["nul_line"]))
    with pytest.raises(FormatError, match=r"long:1: line longer than"):
        read_text_bytes(str(bad_files["long"]))


def test_line_ends_are_python_universal_newlines(tmp_path):
    p = tmp_path / "x.txt"
    p.write_bytes(b"a\r\nb\rc\n\nd")
    with open(p, encoding="utf-8") as f:
        expected = [line.rstrip("\r\n") for line in f]
    assert [t for _, t in read_text_lines(str(p))] == expected
    assert [n for n, _ in read_text_lines(str(p))] == list(range(1, len(expected) + 1))


def test_utf16_text_is_still_read(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("eins zwei\ndrei\n", encoding="utf-16")
    assert [t for _, t in read_text_lines(str(p), "utf-16")] == ["eins zwei", "drei"]


ZERO_COMMANDS = {
    "info ark": (["info", "ark:/dev/zero"], "/dev/zero"),
    "info kaldi": (["info", "--format", "kaldi", "/dev/zero"], "/dev/zero"),
    "info slf": (["info", "--format", "slf", "/dev/zero"], "/dev/zero"),
    "nbest openfst": (["nbest", "--format", "openfst", "/dev/zero", "-o", "-"], "/dev/zero"),
    "score ref": (["score", "-r", "/dev/zero", "-h", str(DATA / "inputs/003.lat")], "/dev/zero"),
    "score hyp": (["score", "-r", str(DATA / "kaldi/lats/bundled.ref.txt"), "-h", "/dev/zero", "--hyp-format", "text"],
                  "/dev/zero"),
    "words table": (["info", "--words", "/dev/zero", str(DATA / "kaldi/lats/insertion.ark")], "/dev/zero"),
    "segments": (["nbest", "--segments", "/dev/zero", str(DATA / "kaldi/lats/insertion.ark"), "-o", "-"], "/dev/zero"),
}


@pytest.mark.skipif(not Path("/dev/zero").exists() or sys.platform != "linux", reason="needs Linux /dev/zero")
@pytest.mark.parametrize("name", sorted(ZERO_COMMANDS))
def test_commands_refuse_dev_zero_in_little_memory(name):
    args, where = ZERO_COMMANDS[name]
    result = run_capped(args, cap=BASE_MARGIN + (100 << 20), timeout=60)
    assert_clean_refusal(result, where)
    assert result.peak_rss < 100 << 20
