"""`lattice-tools info` / `convert` / `decode`: thin wrappers, JSON output, exit status 2 on bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from _io_helpers import DATA, canonical_arcs, decoded_pocketsphinx, small_word_lattice
from click.testing import CliRunner

from lattice_tools.algorithms.statistics import lattice_info
from lattice_tools.cli import main
from lattice_tools.core.errors import FormatError, MismatchError
from lattice_tools.io import guess_format, read_lattices, write_lattices
from lattice_tools.io.lattices.convert import convert_lattices


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    return decoded_pocketsphinx(tmp_path_factory)


def _run(*args):
    code = "import sys; from lattice_tools.cli import main; sys.argv[0] = 'lattice-tools'; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def test_info_json_matches_the_function(decoded):
    result = CliRunner().invoke(main, ["info", decoded["dir"], "--json", "-"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    direct = lattice_info([decoded["dir"]])
    assert [r["key"] for r in data["lattices"]] == sorted(lat.key for lat in decoded["lattices"])
    assert data["total"]["arcs"] == sum(lat.num_arcs for lat in decoded["lattices"]) == direct["total"]["arcs"]
    for row in data["lattices"]:
        assert row["posterior_sanity"] < 1e-4
        assert row["depth"] > 1 and row["arcs_per_second"] > 0 and row["best_path"]
    assert data["total"]["posterior_sanity"] == max(r["posterior_sanity"] for r in data["lattices"])


def test_info_table(decoded):
    result = CliRunner().invoke(main, ["info", decoded["dir"]])
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("key\tstates\tarcs") and lines[-1].startswith("TOTAL")
    assert len(lines) == len(decoded["lattices"]) + 2


def test_convert_slf_kaldi_text_binary_and_back(decoded, tmp_path):
    runner = CliRunner()
    words = str(tmp_path / "words.txt")
    r = runner.invoke(main, ["convert", decoded["dir"], f"ark,t:{tmp_path}/l.txt", "--write-words", words])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["convert", f"ark,t:{tmp_path}/l.txt", f"ark:{tmp_path}/l.ark", "--words", words])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["convert", f"ark:{tmp_path}/l.ark", "-o", str(tmp_path / "slf"), "--out-format", "slf",
                             "--words", words])
    assert r.exit_code == 0, r.output
    original = {lat.key: lat for lat in read_lattices(decoded["dir"])}
    back = list(read_lattices(str(tmp_path / "slf")))
    assert sorted(original) == sorted(lat.key for lat in back)
    # the binary archive stores float32 costs, the text archive a decimal form of them
    f32 = lambda x: float(np.format_float_positional(np.float32(x), precision=5, unique=False, fractional=False))  # noqa: E731
    for lat in back:
        a = sorted((w, t0, t1, f32(g), f32(ac)) for w, t0, t1, g, ac in canonical_arcs(original[lat.key], 9))
        b = sorted((w, t0, t1, f32(g), f32(ac)) for w, t0, t1, g, ac in canonical_arcs(lat, 9))
        assert a == b
    info_a = lattice_info([decoded["dir"]])["total"]
    info_b = lattice_info([f"ark:{tmp_path}/l.ark"], words=words)["total"]
    assert info_a["log_likelihood"] == pytest.approx(info_b["log_likelihood"], abs=1e-2)  # float32 in binary


def test_convert_function_to_openfst_and_k2_guessing(tmp_path):
    lat = small_word_lattice()
    write_lattices([lat], str(tmp_path / "one.lat"))
    n = convert_lattices(str(tmp_path / "one.lat"), str(tmp_path / "one.fst"))
    assert n == 1 and os.path.exists(tmp_path / "one.fst")
    assert guess_format("ark,t:-") == "kaldi" and guess_format("x.slf.gz") == "slf"
    assert guess_format("x.txt") == "openfst" and guess_format("x.pt") == "k2"
    with pytest.raises(FormatError, match="cannot tell"):
        guess_format("x.weird")


def test_kaldi_archive_paths_need_no_rspecifier(tmp_path):
    """A Kaldi recipe's lat.JOB.gz, *.ark(.gz) and *.scp are read and written as they are named,
    as 'ark:PATH' / 'scp:PATH' (Kaldi's own tools need the prefix; users type the path)."""
    for name in ("lat.1.gz", "lat.12", "kgraph_lat.1", "x.ark", "x.ARK.gz", "x.scp", "ark:x", "scp,p:x"):
        assert guess_format(name) == "kaldi", name
    assert guess_format("x.lat") == "slf" and guess_format("x.lat.gz") == "slf"
    lats = os.path.join(os.path.dirname(__file__), "data", "kaldi", "lats")
    src, words = os.path.join(lats, "bundled.ark.gz"), os.path.join(lats, "bundled.words.txt")
    want = [(lat.key, lat.num_arcs) for lat in read_lattices("ark:" + src, "kaldi", words)]
    assert len(want) == 10
    gz = str(tmp_path / "lat.1.gz")
    assert write_lattices(read_lattices(src, "kaldi", words), gz) == 10
    with open(gz, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"          # the .gz name chose gzip
    assert [(lat.key, lat.num_arcs) for lat in read_lattices(gz, symbols=words)] == want
    r = _run("info", gz, "--words", words)
    assert r.returncode == 0 and "(10 lattices)" in r.stdout


def test_duplicate_keys_across_inputs(tmp_path):
    lat = small_word_lattice("dup")
    d = tmp_path / "d"
    d.mkdir()
    write_lattices([lat], str(d / "a.lat"))
    write_lattices([lat], str(d / "b.lat"))
    with pytest.raises(MismatchError, match="duplicate lattice key 'dup'"):
        list(read_lattices(str(d)))


@pytest.mark.parametrize("args, fragment", [
    (["info", "/nonexistent/x.slf"], "cannot open"),
    (["info", "BAD"], "BAD"),
    (["convert", "BAD", "out.weird"], "out.weird"),
    (["convert", "BAD", "OUT/o.fst"], "BAD"),
    (["info", "ark:/nonexistent.ark"], "cannot open"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, args, fragment):
    bad = tmp_path / "bad.slf"
    bad.write_text("VERSION=1.0\nN=2 L=1\nI=0 t=0.0\nI=1 t=0.5\nJ=0 S=0 E=9 W=a a=-1\n")
    args = [str(bad) if a == "BAD" else a.replace("OUT", str(tmp_path)) for a in args]
    fragment = str(bad) if fragment == "BAD" else fragment
    proc = _run(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lattice-tools: error:") and fragment in lines[0]
    assert "Traceback" not in proc.stderr


def test_decode_cli_on_one_file(tmp_path):
    out = tmp_path / "lat"
    r = CliRunner().invoke(main, ["decode", str(DATA / "cards" / "004.wav"), "-o", str(out),
                                  "--ctm", str(tmp_path / "h.ctm"), "--beam", "1e-60"])
    assert r.exit_code == 0, r.output
    assert os.listdir(out) == ["004.lat"]
    assert open(tmp_path / "h.ctm").read().split()[0] == "004"
    proc = _run("decode", str(tmp_path / "missing.wav"), "-o", str(out))
    assert proc.returncode == 2 and "does not exist" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
