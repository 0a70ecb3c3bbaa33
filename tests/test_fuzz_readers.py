"""Bad input never crashes a reader.

* A byte-mutation fuzzer (tests/_fuzz_helpers.py, fixed seeds) runs every reader -- SLF, Kaldi text
  and binary archives, scp, OpenFst text, k2 .pt, CTM, alt-CTM, STM, trn, GLM, Kaldi ``text`` -- on
  mutated real files in a subprocess with an address-space limit and a per-input time limit.  Every
  input must be accepted or refused with a :class:`LatticeToolsError` (one non-empty line): no other
  exception, no MemoryError (sizes are bounded before allocating), no numpy overflow warning, no
  hang.  A few hundred inputs per reader by default, 10,000 in the slow suite.
* The crash inputs the issue lists, as regression tests of the readers and of the CLI (one line on
  stderr, exit 2, never a traceback).
"""
from __future__ import annotations

import collections
import gzip
import io
import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from _data import TEST_DATA
from _fuzz_helpers import READERS, REPO, make_input

from lattice_tools.core.errors import FormatError, LatticeToolsError

HELPER = Path(__file__).resolve().parent / "_fuzz_helpers.py"
K2_CTC = TEST_DATA / "k2-fixtures" / "ctc_lattice.pt"
K2_WORD = TEST_DATA / "k2-fixtures" / "word_lattice.pt"


def _fuzz(readers: list[str], count: int, seed: int, tmp_path: Path, timeout: float = 5.0, mem_mb: int = 1024,
          extra: list[str] = ()) -> dict[str, dict]:
    """Run the worker (one process for all ``readers``: one interpreter start-up); return, per
    reader, its outcome counts, crashes and timings, plus the process's peak RSS."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               OPENBLAS_NUM_THREADS="1")
    work = tmp_path / "work"
    crashes = tmp_path / "crashes"
    work.mkdir(exist_ok=True)
    cmd = [sys.executable, str(HELPER), ",".join(readers), str(count), str(seed), "--workdir", str(work),
           "--crash-dir", str(crashes), "--timeout", str(timeout), "--mem-mb", str(mem_mb), *extra]
    # a generous overall limit: the per-input limit is the real one (a C loop it cannot interrupt
    # would show up here)
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                          timeout=120 + len(readers) * count * 0.5)
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    inputs = [r for r in records if "i" in r]
    done = [r for r in records if r.get("done")]
    if proc.returncode != 0 or not done:
        last = inputs[-1] if inputs else None
        pytest.fail(f"fuzz worker died (rc {proc.returncode}) after input {last} (seed {seed}; regenerate the next "
                    f"input with make_input(reader, {seed}, i)):\n{proc.stderr[-3000:]}")
    out = {}
    for reader in readers:
        mine = [r for r in inputs if r["r"] == reader]
        rejected = collections.Counter(r["error"] for r in mine if r["outcome"] == "rejected")
        out[reader] = {"reader": reader, "inputs": len(mine),
                       "accepted": sum(r["outcome"] == "accepted" for r in mine),
                       "rejected": sum(rejected.values()), "rejected_by": dict(rejected),
                       "crashes": [r for r in mine if r["outcome"] == "crash"],
                       "max_seconds": max((r["seconds"] for r in mine), default=0.0),
                       "max_cpu_seconds": max((r["cpu_seconds"] for r in mine), default=0.0),
                       "maxrss_mb": done[0]["maxrss_mb"], "baseline_mb": done[0]["baseline_mb"]}
    return out


def _assert_no_crash(result: dict, seed: int) -> None:
    crashes = result["crashes"]
    if crashes:
        kinds = collections.Counter(c["error"].split(":")[0] for c in crashes)
        first = crashes[0]
        pytest.fail(f"{result['reader']}: {len(crashes)} of {result['inputs']} inputs crashed {dict(kinds)}; first: "
                    f"input {first['i']} -> {first['error']} (regenerate with "
                    f"make_input({result['reader']!r}, {seed}, {first['i']}))")
    assert result["accepted"] + result["rejected"] == result["inputs"]


@pytest.fixture(scope="module")
def default_fuzz(tmp_path_factory):
    """250 inputs per reader, seed 13, in one worker process."""
    return _fuzz(list(READERS), 250, 13, tmp_path_factory.mktemp("fuzz"))


@pytest.mark.parametrize("reader", READERS)
def test_fuzz_reader(reader, default_fuzz, tmp_path):
    result = default_fuzz[reader]
    assert result["inputs"] == 250
    _assert_no_crash(result, 13)
    # the mutations must exercise both paths, else the harness tests nothing
    assert result["accepted"] > 0 and result["rejected"] > 0, result


@pytest.mark.slow
@pytest.mark.parametrize("reader", READERS)
def test_fuzz_reader_long(reader, tmp_path):
    result = _fuzz([reader], 10000, 2026, tmp_path, timeout=10.0)[reader]
    summary = {k: v for k, v in result.items() if k != "crashes"}
    print("FUZZ", json.dumps(summary, sort_keys=True))
    _assert_no_crash(result, 2026)


def test_inputs_are_reproducible():
    a = make_input("kaldi_text_ark", 13, 7)
    assert a == make_input("kaldi_text_ark", 13, 7)
    assert a != make_input("kaldi_text_ark", 13, 8)


def test_harness_reports_crashes(tmp_path):
    """The harness can fail: a reader that raises ValueError, loops, or allocates beyond the limit
    is reported as a crash, with the input saved for reproduction."""
    result = _fuzz(["trn"], 3, 1, tmp_path, timeout=0.5, mem_mb=256, extra=["--inject"])["trn"]
    assert [c["error"].split(":")[0] for c in result["crashes"]] == ["ValueError", "hang", "MemoryError"]
    assert sorted(os.listdir(tmp_path / "crashes")) == ["trn-1-0", "trn-1-1", "trn-1-2"]


# ---------------------------------------------------------------------------------------------
# the crash inputs of the issue, minimal forms
# ---------------------------------------------------------------------------------------------
def _lattices(spec, **kw):
    from lattice_tools.io import read_lattices

    return list(read_lattices(spec, **kw))


@pytest.mark.parametrize("line, what", [
    ("0 1 5 0,0,4294967296", "transition id 4294967296 is outside"),
    ("0 1 99999999999999999999 0,0,1", "label 99999999999999999999 is outside"),
    ("0 1 7 99999999999999999999 0,0", "output label 99999999999999999999 is outside"),
    ("0 4294967296 7 0,0,1", "state id 4294967296 is outside"),
    ("0 1 \u0663 0,0,1", "label '\u0663' is not an integer"),
    ("0 1 1_0 0,0,1", "label '1_0' is not an integer"),
])
def test_kaldi_text_numbers_out_of_int32(tmp_path, line, what):
    ark = tmp_path / "a.ark"
    ark.write_text(f"u1 \n{line}\n1\n\n", encoding="utf-8")
    with pytest.raises(FormatError, match=what) as err:
        _lattices(f"ark,t:{ark}")
    assert err.value.line == 2 and err.value.key == "u1"


@pytest.mark.parametrize("offset", [2 ** 63, 2 ** 63 - 1, 10 ** 30, 3580])
def test_scp_offset_past_the_end(tmp_path, offset):
    ark = tmp_path / "a.ark"
    ark.write_bytes((TEST_DATA / "fuzz" / "kaldi_scp" / "lats.ark").read_bytes())
    scp = tmp_path / "a.scp"
    scp.write_text(f"u2 {ark}:3\nu3 {ark}:{offset}\n")
    with pytest.raises(FormatError, match=f"offset {offset} is past the end of .* \\(3580 bytes\\)") as err:
        _lattices(f"scp:{scp}")
    assert err.value.path == str(scp) and err.value.line == 2 and err.value.key == "u3"


def test_scp_offset_in_gzip_archive(tmp_path):
    ark = tmp_path / "a.ark.gz"
    ark.write_bytes(gzip.compress((TEST_DATA / "fuzz" / "kaldi_scp" / "lats.ark").read_bytes()))
    scp = tmp_path / "a.scp"
    scp.write_text(f"u2 {ark}:3\nu3 {ark}:{2 ** 63}\n")
    with pytest.raises(FormatError, match="past the end") as err:
        _lattices(f"scp:{scp}")
    assert err.value.line == 2


@pytest.mark.parametrize("label, error", [
    ("99999999999999999999", "outside 0..2147483647"), ("4294967296", "outside 0..2147483647"),
    ("--1", "'--1' is not in the symbol table"), ("\u00b2", "'\u00b2' is not in the symbol table"),
    ("-3", "outside 0..2147483647"),
])
def test_openfst_labels_int_rejects(tmp_path, label, error):
    from lattice_tools.core.symbols import SymbolTable
    from lattice_tools.io.lattices.openfst import read_openfst

    f = tmp_path / "a.fst.txt"
    f.write_text(f"0 1 1 0.5\n1 2 {label} 0.5\n2\n")
    with pytest.raises(LatticeToolsError, match=error) as err:
        read_openfst(str(f), SymbolTable({"a": 1}), acceptor=True)
    assert err.value.line == 2


def test_openfst_state_id_out_of_int32(tmp_path):
    f = tmp_path / "a.fst.txt"
    f.write_text("0 99999999999999999999 1 0.5\n1\n")
    with pytest.raises(FormatError, match="destination state 99999999999999999999 is outside") as err:
        _lattices(str(f))
    assert err.value.line == 1


def _k2_zip(pickled: bytes, records: dict[str, bytes] | None = None, *, compress_type=zipfile.ZIP_STORED,
            version: int | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compress_type) as zf:
        zf.writestr("archive/data.pkl", pickled)
        for name, data in (records or {}).items():
            zf.writestr(f"archive/data/{name}", data)
    data = out.getvalue()
    if version is not None:  # patch "version needed to extract" of every central directory entry
        b = bytearray(data)
        i = b.find(b"PK\x01\x02")
        while i >= 0:
            b[i + 6:i + 8] = struct.pack("<H", version)
            i = b.find(b"PK\x01\x02", i + 4)
        data = bytes(b)
    return data


def _k2_arcs_pickle(arcs: np.ndarray) -> bytes:
    """A pickle of {'arcs': tensor} in torch.save's layout (built without torch)."""

    class Storage:
        pass

    # protocol-2 opcodes by hand: {'arcs': _rebuild_tensor_v2(persistent('storage', IntStorage, '0',
    # 'cpu', numel), 0, shape, stride)}
    def s(text):
        b = text.encode()
        return b"X" + struct.pack("<I", len(b)) + b

    def tup(items):
        return b"(" + b"".join(items) + b"t"

    def i(n):
        return b"J" + struct.pack("<i", n)

    stride = (arcs.shape[1], 1) if arcs.ndim == 2 else (1,)
    pid = tup([s("storage"), b"ctorch\nIntStorage\n", s("0"), s("cpu"), i(arcs.size)])
    tensor = (b"ctorch._utils\n_rebuild_tensor_v2\n" + tup([pid + b"Q", i(0), tup([i(n) for n in arcs.shape]),
                                                          tup([i(n) for n in stride]), b"\x89"]) + b"R")
    return b"\x80\x02}" + s("arcs") + tensor + b"s."


def test_k2_pickle_builder_matches_a_real_file(tmp_path):
    """The hand-made pickles below are what the reader reads from k2 (sanity of the builder)."""
    arcs = np.array([[0, 1, 5, 0], [1, 2, -1, 0]], np.int32)
    f = tmp_path / "ok.pt"
    f.write_bytes(_k2_zip(_k2_arcs_pickle(arcs), {"0": arcs.tobytes()}))
    (lat,) = _lattices(str(f))
    assert lat.num_states == 3 and lat.num_arcs == 2


def test_k2_huge_state_id(tmp_path):
    arcs = np.array([[0, 2139081119, -1, 0]], np.int32)
    f = tmp_path / "big.pt"
    f.write_bytes(_k2_zip(_k2_arcs_pickle(arcs), {"0": arcs.tobytes()}))
    with pytest.raises(FormatError, match="2139081120 states for 1 arcs: implausibly many"):
        _lattices(str(f))


def test_k2_signalling_nan_score(tmp_path):
    """A float32 signalling-NaN bit pattern warned ("invalid value encountered in cast") while
    being widened, before the NaN check could refuse it."""
    arcs = np.array([[0, 1, 5, 0x7F800001], [1, 2, -1, 0]], np.int32)
    f = tmp_path / "nan.pt"
    f.write_bytes(_k2_zip(_k2_arcs_pickle(arcs), {"0": arcs.tobytes()}))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(FormatError, match="arc 0 has a NaN score"):
            _lattices(str(f))


@pytest.mark.parametrize("kw, what", [({"version": 128}, "zip file version"),
                                      ({"compress_type": zipfile.ZIP_LZMA}, None)])
def test_k2_unsupported_zip_entries(tmp_path, kw, what):
    arcs = np.array([[0, 1, -1, 0]], np.int32)
    data = _k2_zip(_k2_arcs_pickle(arcs), {"0": arcs.tobytes()}, **kw)
    if "compress_type" in kw:  # an LZMA entry readable here: make its method id unknown (99 = AES)
        b = bytearray(data)
        for sig, off in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
            i = b.find(sig)
            while i >= 0:
                b[i + off:i + off + 2] = struct.pack("<H", 97)
                i = b.find(sig, i + 4)
        data = bytes(b)
    f = tmp_path / "z.pt"
    f.write_bytes(data)
    with pytest.raises(FormatError, match="unsupported zip archive|corrupt") as err:
        _lattices(str(f))
    if what:
        assert what in str(err.value)


def test_k2_pickle_memo_index(tmp_path):
    """A 127-byte-class pickle whose LONG_BINPUT index is 2**31: refused before the unpickler
    grows its memo table (it reached 3.7 GB)."""
    pickled = b"\x80\x02}q\x00X\x04\x00\x00\x00arcsr\x00\x00\x00\x80N" + b"s."
    f = tmp_path / "memo.pt"
    f.write_bytes(_k2_zip(pickled))
    with pytest.raises(FormatError, match="memo index 2147483648"):
        _lattices(str(f))


def test_k2_tensor_larger_than_its_storage(tmp_path):
    arcs = np.array([[0, 1, -1, 0]], np.int32)
    pickled = _k2_arcs_pickle(arcs).replace(b"(J\x01\x00\x00\x00J\x04\x00\x00\x00t",
                                             b"(J\x00\x00\x00\x40J\x04\x00\x00\x00t", 1)
    pickled = pickled.replace(b"(J\x04\x00\x00\x00J\x01\x00\x00\x00t", b"(J\x00\x00\x00\x00J\x00\x00\x00\x00t", 1)
    f = tmp_path / "t.pt"
    f.write_bytes(_k2_zip(pickled, {"0": arcs.tobytes()}))
    with pytest.raises(FormatError, match="more than its storage"):
        _lattices(str(f))


def test_k2_persistent_id_error_is_one_line(tmp_path):
    pickled = b"\x80\x02}X\x04\x00\x00\x00arcs" + b"]" + b"(" + b"J\x01\x00\x00\x00" * 200 + b"eQs."
    f = tmp_path / "p.pt"
    f.write_bytes(_k2_zip(pickled))
    with pytest.raises(FormatError, match="unsupported persistent id") as err:
        _lattices(str(f))
    assert "\n" not in str(err.value) and len(str(err.value)) < 400


def test_k2_frame_index_out_of_range(tmp_path):
    from lattice_tools.io.lattices.k2file import MAX_FRAMES

    arcs = np.array([[0, 1, -1, 0]], np.int32)
    frame = np.array([MAX_FRAMES + 1], np.int32)
    pk = _k2_arcs_pickle(arcs)[:-2]  # reopen the dict: add 'frame' (storage '1')
    t = _k2_arcs_pickle(frame.reshape(1, 1))
    t = t[t.index(b"ctorch._utils"):-2].replace(b"X\x01\x00\x00\x000", b"X\x01\x00\x00\x001")
    t = t.replace(b"(J\x01\x00\x00\x00J\x01\x00\x00\x00t", b"(J\x01\x00\x00\x00t", 1)
    t = t.replace(b"(J\x01\x00\x00\x00J\x01\x00\x00\x00t", b"(J\x01\x00\x00\x00t", 1)
    pickled = pk + b"s" + b"X\x05\x00\x00\x00frame" + t + b"s."
    f = tmp_path / "f.pt"
    f.write_bytes(_k2_zip(pickled, {"0": arcs.tobytes(), "1": frame.tobytes()}))
    with pytest.raises(FormatError, match=f"frame index {MAX_FRAMES + 1} is outside"):
        _lattices(str(f))


def test_altctm_star_duration(tmp_path):
    from lattice_tools.io.transcripts.altctm import read_alternatives_ctm

    f = tmp_path / "h.ctm"
    f.write_text("f 1 0.5 * oracle\nf 1 * * <ALT_BEGIN>\nf 1 1.0 * a 0.6\nf 1 * * <ALT>\nf 1 1.0 0.2 b 0.4\n"
                 "f 1 * * <ALT_END>\n")
    (alts,) = read_alternatives_ctm(str(f))
    assert (alts.slots[0].start, alts.slots[0].end) == (0.5, 0.5)
    assert (alts.slots[1].start, alts.slots[1].end) == (1.0, 1.2)


def _nested(depth: int) -> str:
    return "{ " * depth + "a" + " }" * depth


@pytest.mark.parametrize("fmt", ["stm", "trn"])
def test_deeply_nested_alternations(tmp_path, fmt):
    from lattice_tools.io.transcripts.stm import MAX_ALTERNATION_DEPTH, read_stm
    from lattice_tools.io.transcripts.trn import read_trn
    from lattice_tools.scoring.network import parse_transcript

    ok, deep = _nested(MAX_ALTERNATION_DEPTH), _nested(1000)
    f = tmp_path / f"r.{fmt}"
    if fmt == "stm":
        f.write_text(f"f 1 s 0 1 {ok}\nf 1 s 1 2 {deep}\n")
        reader = read_stm
    else:
        f.write_text(f"{ok} (s-1)\n{deep} (s-2)\n")
        reader = read_trn
    with pytest.raises(FormatError, match="nested 1000 deep") as err:
        reader(str(f))
    assert err.value.line == 2
    parse_transcript(ok)  # the deepest nesting allowed still parses
    with pytest.raises(FormatError, match="nested 1000 deep"):  # any transcript source (Kaldi text...)
        parse_transcript(deep)


def test_unmatched_braces_are_not_nesting():
    """Buckwalter transliteration uses '{' as a letter: a line of such words is not 'nested'."""
    from lattice_tools.io.transcripts.stm import alternation_depth, check_alternation_depth

    text = " ".join(["{lY"] * 500)
    assert alternation_depth(text) == 0
    check_alternation_depth(text)
    assert alternation_depth("{ { a } / b } { c }") == 2
    assert alternation_depth("{ { { a }") == 1


def test_ctm_nested_alt_blocks(tmp_path):
    from lattice_tools.io.transcripts.ctm import read_ctm

    tag = "f 1 * * "
    f = tmp_path / "h.ctm"
    f.write_text((tag + "<ALT_BEGIN>\n") * 1000 + "f 1 0 1 a\n" + (tag + "<ALT_END>\n") * 1000)
    with pytest.raises(FormatError, match="nested more than 50 deep") as err:
        read_ctm(str(f), nested="flatten")
    assert err.value.line == 51


@pytest.mark.parametrize("fmt, line", [("stm", "f 1 s 0 1e300 a\n"), ("ctm", "f 1 1e300 0.1 a\n"),
                                       ("ctm", "f 1 0 0.1 a 4e38\n")])
def test_times_beyond_a_c_float(tmp_path, fmt, line):
    """sclite reads times into a C float; 1e300 overflowed the scorer's float32 rounding."""
    from lattice_tools.io.transcripts.ctm import read_ctm
    from lattice_tools.io.transcripts.stm import read_stm

    f = tmp_path / f"x.{fmt}"
    f.write_text(line)
    with pytest.raises(FormatError, match="within a C float's range") as err:
        (read_stm if fmt == "stm" else read_ctm)(str(f))
    assert err.value.line == 1


def test_truncated_gzip_glm(tmp_path):
    from lattice_tools.io.transcripts.glm import read_glm

    data = gzip.compress((TEST_DATA / "sctk" / "csrfilt-testdata" / "example.glm").read_bytes())
    f = tmp_path / "x.glm.gz"
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match="truncated or corrupt gzip") as err:
        read_glm(str(f))
    assert err.value.path == str(f)


# ---------------------------------------------------------------------------------------------
# k2 CTC lattice -> Kaldi text archive -> back
# ---------------------------------------------------------------------------------------------
def test_ctc_lattice_to_kaldi_text_reads_back(tmp_path):
    from lattice_tools.algorithms import total_log_prob
    from lattice_tools.io import write_lattices

    (lat,) = _lattices(str(K2_CTC))
    assert np.any((lat.ilabel == 0) & (lat.t1 > lat.t0))  # blank (token 0) arcs take a frame
    ark = tmp_path / "ctc.ark"
    write_lattices([lat], f"ark,t:{ark}")
    (back,) = _lattices(f"ark,t:{ark}", frame_shift=lat.frame_shift)
    assert back.num_frames == lat.num_frames == 26
    assert abs(total_log_prob(back) - total_log_prob(lat)) < 1e-5  # costs are float32 text
    # times of the words along the best paths agree
    assert sorted(zip(back.t0.tolist(), back.t1.tolist(), back.word.tolist(), strict=False)) == \
        sorted(zip(lat.t0.tolist(), lat.t1.tolist(), lat.word.tolist(), strict=False))
    with pytest.raises(FormatError, match="spans 1 frame.*write a CompactLattice"):
        write_lattices([lat], f"ark,t:{tmp_path / 'x.ark'}", lattice_type="lattice")
    assert not (tmp_path / "x.ark").exists()


# ---------------------------------------------------------------------------------------------
# the CLI: one line, exit 2, never a traceback
# ---------------------------------------------------------------------------------------------
def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "lattice_tools", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=120)


def _crash_files(d: Path) -> dict[str, Path]:
    files = {}
    files["ark"] = d / "big.ark"
    files["ark"].write_text("u1 \n0 1 99999999999999999999 0,0,4294967296\n1\n\n")
    (d / "lats.ark").write_bytes((TEST_DATA / "fuzz" / "kaldi_scp" / "lats.ark").read_bytes())
    files["scp"] = d / "o.scp"
    files["scp"].write_text(f"u2 lats.ark:{2 ** 63 - 1}\n")
    files["fst"] = d / "l.fst.txt"
    files["fst"].write_text("0 1 99999999999999999999 0.5\n1\n")
    arcs = np.array([[0, 2139081119, -1, 0]], np.int32)
    files["pt"] = d / "big.pt"
    files["pt"].write_bytes(_k2_zip(_k2_arcs_pickle(arcs), {"0": arcs.tobytes()}))
    files["stm"] = d / "ref.stm"
    files["stm"].write_text(f"f 1 s 0 9 {_nested(1000)}\n")
    files["trn"] = d / "ref.trn"
    files["trn"].write_text(f"{_nested(1000)} (s-1)\n")
    files["ctm"] = d / "hyp.ctm"
    files["ctm"].write_text("f 1 0.5 * oracle\n")
    files["ok_stm"] = d / "ok.stm"
    files["ok_stm"].write_text("f 1 s 0 9 oracle\n")
    data = gzip.compress((TEST_DATA / "sctk" / "csrfilt-testdata" / "example.glm").read_bytes())
    files["glm"] = d / "x.glm.gz"
    files["glm"].write_bytes(data[: len(data) // 2])
    return files


def test_cli_crash_inputs_exit_2_with_one_line(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from lattice_tools.cli import main

    f = _crash_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    runs = [
        ("info", f"ark,t:{f['ark']}"), ("info", f"scp:{f['scp']}"), ("info", str(f["fst"])), ("info", str(f["pt"])),
        ("convert", str(f["pt"]), f"ark,t:{tmp_path / 'o.ark'}"), ("convert", f"scp:{f['scp']}", str(tmp_path / "o.pt")),
        ("score", "-r", str(f["stm"]), "-h", str(f["ctm"])), ("score", "-r", str(f["trn"]), "-h", str(f["trn"])),
        ("score", "--glm", str(f["glm"]), "-r", str(f["ok_stm"]), "-h", str(f["ctm"])),
        ("oracle", "-r", str(f["stm"]), str(f["ctm"])),
    ]
    for args in runs:
        r = CliRunner().invoke(main, list(args))
        lines = r.stderr.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("lattice-tools: error: "), (args, r.output)
    assert not (tmp_path / "o.ark").exists() and not (tmp_path / "o.pt").exists()
    # as a process: no traceback either
    r = _cli("oracle", "-r", str(f["ok_stm"]), str(f["pt"]), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "implausibly many" in r.stderr, r.stderr
    # the '*' duration CTM itself is fine: oracle scores it against a matching reference
    r = CliRunner().invoke(main, ["oracle", "-r", str(f["ok_stm"]), str(f["ctm"])])
    assert r.exit_code == 0, r.output
    assert "%WER 0.00" in r.stdout


def test_cli_memory_and_recursion_errors_are_one_line(tmp_path, monkeypatch):
    """Whatever still runs out of memory or stack inside a command ends as one line and exit 2."""
    from click.testing import CliRunner

    import lattice_tools.cli.lattices as lattices_cli
    from lattice_tools.cli import main

    for exc in (MemoryError(), RecursionError("maximum recursion depth exceeded"), EOFError("truncated")):
        def boom(*a, _exc=exc, **k):
            raise _exc

        monkeypatch.setattr(lattices_cli, "lattice_info", boom)
        r = CliRunner().invoke(main, ["info", "x.lat"])
        assert r.exit_code == 2, (exc, r.output)
        assert r.output.count("\n") == 1 and r.output.startswith("lattice-tools: error: ")


def test_slf_subnormal_link_posterior_gives_no_floating_point_fault(tmp_path):
    """Fuzzer find (SLF input 5795 of seed 2026): a pocketsphinx link posterior ``p=1e-320`` (subnormal)
    made the posterior reweighting divide by a subnormal flow ("overflow encountered in divide")."""
    from lattice_tools.io.lattices.slf import read_slf

    text = make_input("slf", 2026, 5795)["004.lat"]
    path = tmp_path / "004.lat"
    path.write_bytes(text)
    with np.errstate(all="raise"):
        lat = read_slf(str(path), weights="auto")
    assert lat.num_arcs > 0 and np.all(np.isfinite(lat.graph_cost))
