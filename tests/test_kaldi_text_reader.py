"""The C reader of Kaldi text lattices (lattice_tools/_ext/kaldi_text/ behind io/_kaldi_text.py).

* Differential: on random lattices written in every spelling the reader takes, and on byte mutations
  of them, it gives exactly the RawFst -- or exactly the error (message, line) -- of the Python line
  parser it replaced (tests/_reference/kaldi_text.py).
* Weights are converted correctly rounded (bit-equal to Python's ``float``) on every path of the
  conversion, whatever the locale (a German LC_NUMERIC, whose decimal separator is a comma).
* The error paths the kernel has of its own (NUL bytes, truncated lines, overflow, huge state ids,
  long lines) and the layouts it must take (CRLF, no final newline), through the archive reader
  and the command line.
"""
from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _reference.kaldi_text import parse_text_fst

from lattice_tools.core.errors import FormatError
from lattice_tools.io import read_lattices
from lattice_tools.io.lattices._kaldi_text import parse_text_block

REPO = Path(__file__).resolve().parent.parent


def _same_raw(a, b) -> None:
    assert (a.kind, a.start, a.num_states) == (b.kind, b.start, b.num_states)
    for f in ("src", "dst", "ilabel", "olabel", "w1", "w2", "final_w1", "final_w2"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f  # bit-equal (-0.0 too)
    assert (a.tids is None) == (b.tids is None)
    if a.tids is not None:
        assert a.tids.dtype == b.tids.dtype == np.int32 and np.array_equal(a.tids, b.tids)
        assert np.array_equal(a.tid_offsets, b.tid_offsets)
    assert sorted(a.final_strings) == sorted(b.final_strings)
    for s in a.final_strings:
        assert a.final_strings[s].dtype == np.int32 and np.array_equal(a.final_strings[s], b.final_strings[s])


def _outcome(block: bytes, lattice_type: str, parser):
    """("ok", RawFst) or ("error", message, line) of one parser on ``block`` (first line 5)."""
    try:
        if parser == "c":
            return ("ok", parse_text_block(block, 5, "f.ark", "k", lattice_type))
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError("not valid text (binary data in a text lattice?)", path="f.ark", key="k") from None
        lines = list(enumerate(text.split("\n"), 5))
        return ("ok", parse_text_fst(lines, "f.ark", "k", lattice_type))
    except FormatError as err:
        return ("error", err.message, err.line if parser == "c" or "binary" not in err.message else None)


def _compare(block: bytes, lattice_type: str = "auto") -> str:
    c, ref = _outcome(block, lattice_type, "c"), _outcome(block, lattice_type, "ref")
    assert c[0] == ref[0], (block, c, ref)
    if c[0] == "ok":
        _same_raw(c[1], ref[1])
    else:
        line = None if "binary" in c[1] else c[2]
        assert (c[1], line) == (ref[1], ref[2]), block
    return c[0]


_WEIGHTS = ["0", "1", "-0", "+1.5", ".5", "5.", "1e3", "2.5E-3", "-7.25e+2", "9.743748121816909",
            "7.9672376268424046", "36.657368", "0.1", "123456789012345678901234567890", "1e-30", "1e25",
            "0.000000000000000000000000000001", "3.0000000000000000000000001", "inf", "-Infinity", "1e400"]


def _number(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.4:
        return rng.choice(_WEIGHTS)
    if pick < 0.7:
        return repr(rng.uniform(-50, 50))
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 24)))
    point = rng.randint(0, len(digits))
    text = digits[:point] + "." + digits[point:] if rng.random() < 0.7 else digits
    if rng.random() < 0.4:
        text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 40))
    return rng.choice(["", "-", "+"]) + text


def _random_block(rng: random.Random, kind: str) -> bytes:
    """A random lattice in text, spelled as OpenFst, Kaldi or a person might write it."""
    n = rng.randint(1, 7)
    sep = lambda: rng.choice([" ", "\t", "  ", " \t"])  # noqa: E731
    lines = []
    for _ in range(rng.randint(0, 10)):
        s, d = rng.randint(0, n - 1), rng.randint(0, n)
        w = f"{_number(rng)},{_number(rng)}"
        if kind == "compact":
            tids = "_".join(str(rng.choice([1, 2, 17, 4000, 2 ** 31 - 1])) for _ in range(rng.randint(0, 4)))
            cols = [s, d, rng.randint(0, 9)] + ([] if rng.random() < 0.2 else [f"{w},{tids}"])
        else:
            cols = [s, d, rng.randint(0, 9), rng.randint(0, 9)] + ([] if rng.random() < 0.2 else [w])
        lines.append(sep().join(map(str, cols)))
    for f in rng.sample(range(n + 1), rng.randint(1, 2)):
        w = f"{_number(rng)},{_number(rng)}" + (",3_4" if kind == "compact" and rng.random() < 0.5 else "")
        lines.append(f"{f}" if rng.random() < 0.3 else f"{f}{sep()}{w}")
    end = rng.choice(["\n", "\r\n"])
    text = end.join((sep() if rng.random() < 0.1 else "") + line + (" " if rng.random() < 0.1 else "")
                    for line in lines)
    return text.encode()


@pytest.mark.parametrize("seed", range(4))
def test_random_lattices_read_as_the_line_parser_read_them(seed):
    rng = random.Random(seed)
    outcomes = []
    for _ in range(250):
        kind = rng.choice(["compact", "lattice"])
        outcomes.append(_compare(_random_block(rng, kind), rng.choice(["auto", "auto", kind])))
    assert outcomes.count("ok") > 150  # the generator makes mostly valid lattices


_MUTANTS = b"0123456789,_.-+eE \t\r\n\x00\x0bxX\xff\xc3"


@pytest.mark.parametrize("seed", range(4))
def test_mutated_lattices_fail_as_the_line_parser_failed(seed):
    rng = random.Random(100 + seed)
    outcomes = []
    for _ in range(400):
        kind = rng.choice(["compact", "lattice"])
        block = bytearray(_random_block(rng, kind))
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(block))
            op = rng.random()
            if op < 0.4 and at < len(block):
                block[at] = rng.choice(_MUTANTS)
            elif op < 0.7:
                block[at:at] = bytes([rng.choice(_MUTANTS)])
            elif at < len(block):
                del block[at]
        outcomes.append(_compare(bytes(block), rng.choice(["auto", kind])))
    assert 50 < outcomes.count("error") < 380


@pytest.mark.parametrize("block, message, line", [
    (b"0 1 2 3 4 5\n0 1 2 x,y,1\n1", "expected at most 5 columns (src dst ilabel olabel weight), got 6", 5),
    (b"0 1 2 3\n0 1 2 3,4,5\n1 0,0", "line looks like a Kaldi compact line but earlier lines (line 5) look like "
     "lattice lines", 6),
    (b"x 1 2\n1", "state id 'x' is not an integer", 5),
    (b"0 1 2\n1\n1 0,0", "state 1 has two final weights", 7),
    (b"0 1 2 inf,0,1\n1", "arc weight is infinite (Zero); arcs must have finite weights", 5),
    (b"0 1 2 1,0,1\n1\n0 1999999999 3", "state id 1999999999 is implausibly large for a lattice of 3 lines", 7),
])
def test_each_error_of_the_kernel(block, message, line):
    with pytest.raises(FormatError) as err:
        parse_text_block(block, 5, "f.ark", "k")
    assert (err.value.message, err.value.line, err.value.key, err.value.path) == (message, line, "k", "f.ark")
    _compare(block)


# ------------------------------------------------------------------------------------------------
# numbers
# ------------------------------------------------------------------------------------------------
def _weights(texts: list[str]) -> np.ndarray:
    block = "\n".join(f"0 1 1 {t},0," for t in texts) + "\n1"
    return parse_text_block(block.encode(), 1, "w", "k").w1


def test_weights_are_correctly_rounded():
    """Bit-equal to Python's float (correctly rounded) on random doubles' shortest text, on
    decimal strings of up to 40 digits across the exact and the strtod paths, and on halfway cases."""
    rng = random.Random(7)
    texts = [repr(struct.unpack("<d", rng.randbytes(8))[0]) for _ in range(3000)]
    texts = [t for t in texts if "nan" not in t]
    for _ in range(6000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
        point = rng.randint(0, len(digits))
        texts.append(f"{digits[:point]}.{digits[point:]}e{rng.randint(-45, 45)}")
    # halfway between two doubles, and one digit either side of it
    for _ in range(500):
        x = rng.uniform(1, 1e6)
        half = (np.float64(x) + np.spacing(np.float64(x)) / 2)
        texts += [f"{half:.30g}", f"{np.nextafter(half, 0):.25g}", repr(np.float32(x).item())]
    got = _weights(texts)
    want = np.array([float(t) for t in texts])
    bad = [t for t, a, b in zip(texts, got, want, strict=True) if a.tobytes() != b.tobytes()]
    assert not bad, bad[:5]


def _german_locale(tmp_path: Path) -> dict | None:
    """Environment for a subprocess running under a German locale (compiled here if the system has
    none), or None if it cannot be made."""
    if shutil.which("localedef") is None:
        return None
    locales = tmp_path / "locales"
    locales.mkdir()
    subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(locales / "de_DE.UTF-8")], capture_output=True)
    if not (locales / "de_DE.UTF-8").exists():
        return None
    return dict(os.environ, LOCPATH=str(locales), PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests")]))


_UNDER_GERMAN_LOCALE = r"""
import locale, sys
locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")
assert locale.localeconv()["decimal_point"] == ","
from lattice_tools.io.lattices._kaldi_text import parse_text_block
texts = ["1.5", "0.1", "2.5e-3", "1234567890.1234567890123456789", "0.000000000000000000000000000000123456789"]
block = "\n".join(f"0 1 1 {t},{t}," for t in texts) + "\n1"
raw = parse_text_block(block.encode(), 1, "w", "k")
assert raw.w1.tolist() == raw.w2.tolist() == [float(t) for t in texts], raw.w1.tolist()
print("ok")
"""


def test_weights_do_not_depend_on_the_locale(tmp_path):
    """Under a locale whose decimal separator is a comma, "1.5" is still 1.5 on both conversion
    paths (plain strtod would stop at the point)."""
    env = _german_locale(tmp_path)
    if env is None:
        pytest.skip("no German locale and it cannot be compiled here (localedef / locale sources missing)")
    res = subprocess.run([sys.executable, "-c", _UNDER_GERMAN_LOCALE], env=env, capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


# ------------------------------------------------------------------------------------------------
# archives: layouts to take and inputs to refuse
# ------------------------------------------------------------------------------------------------
_GOOD = "u1 \n0 1 5 1.5,2,1_1\n1 2 6 0.5,0,1\n2 0,0,\n\nu2 \n0 1 7 1,1,1_1_1\n1\n\n"


def _read(tmp_path: Path, data: bytes):
    ark = tmp_path / "a.ark"
    ark.write_bytes(data)
    return list(read_lattices(f"ark:{ark}"))


def _arcs(lats):
    return [(x.key, x.src.tolist(), x.dst.tolist(), x.word.tolist(), x.graph_cost.tolist(), x.acoustic_cost.tolist(),
             x.t0.tolist(), x.t1.tolist()) for x in lats]


@pytest.mark.parametrize("variant", ["crlf", "extra whitespace", "blank line of whitespace at the end"])
def test_archive_layouts_read_the_same(tmp_path, variant):
    want = _arcs(_read(tmp_path, _GOOD.encode()))
    data = {"crlf": _GOOD.replace("\n", "\r\n"),
            "extra whitespace": _GOOD.replace("0 1 5 1.5", " 0  1\t5 \t1.5").replace("\n\nu2", "\n \t\nu2"),
            "blank line of whitespace at the end": _GOOD.rstrip("\n") + "\n \t\r\n"}[variant]
    assert _arcs(_read(tmp_path, data.encode())) == want


@pytest.mark.parametrize("ending", ["\n", ""])
def test_a_text_lattice_without_its_empty_line_is_a_truncated_archive(tmp_path, ending):
    """Kaldi ends every text lattice with an empty line: an archive whose last lattice lacks it was cut (a cut
    at a line boundary would otherwise read as a smaller lattice), whether or not its last line is whole."""
    data = _GOOD.rstrip("\n") + ending
    with pytest.raises(FormatError, match="truncated archive") as err:
        _read(tmp_path, data.encode())
    assert err.value.key == "u2" and err.value.path == str(tmp_path / "a.ark")
    assert err.value.line == data.count("\n") + 1  # where the empty line is missing


def test_an_archive_cut_inside_a_weight_names_both_line_kinds(tmp_path):
    """Cut inside the weight of a compact-lattice arc, the last line reads as a plain-lattice line
    (src dst ilabel olabel): the error says the archive was cut and names both kinds in full."""
    data = b"u1 \n0 1 5 1.5,2,1_1\n0 2 6 6.54"
    with pytest.raises(FormatError, match="truncated archive") as err:
        _read(tmp_path, data)
    assert err.value.message.endswith("look like compact lines") and err.value.line == 3 and err.value.key == "u1"


@pytest.mark.parametrize("data, message, line", [
    (b"u1 \n0 1 5 1.5,2,1\n1 \x00\n\n", "bad Kaldi compact line", 3),
    (b"u1 \n0 1 5 1.5\x00,2,1\n1\n\n", "bad Kaldi compact line", 2),
    (b"u1 \n0 1\n1\n\n", "bad Kaldi compact line '0 1'", 2),  # truncated arc line
    (b"u1 \n0 1 5 1.5,2,1\n1 0,", "bad Kaldi compact line '1 0,'", 3),  # truncated final line, no newline
    (b"u1 \n0 1 5 abc,2,1\n1\n\n", "bad Kaldi compact line '0 1 5 abc,2,1'", 2),  # non-numeric weight
    (b"u1 \n0 1 5 1.5,2e,1\n1\n\n", "bad Kaldi compact line", 2),
    (b"u1 \n0 1 5 1e999,0,1\n1\n\n", "arc weight is infinite", 2),  # overflow to inf
    (b"u1 \n0 1 5 1,0,99999999999999999999999\n1\n\n", "transition id 99999999999999999999999 is outside", 2),
    (b"u1 \n0 1 5 1,0,1\n1 \xff\n\n", "not valid text", 3),
    (b"u1 \n0 1 5 1,0,1\r\n1 0,0 x\r\n\r\n", "bad Kaldi compact line '1 0,0 x'", 3),
])
def test_archive_errors_name_file_line_and_key(tmp_path, data, message, line):
    with pytest.raises(FormatError) as err:
        _read(tmp_path, data)
    assert message in err.value.message and err.value.line == line and err.value.key == "u1"
    assert err.value.path == str(tmp_path / "a.ark")


def test_huge_state_id_and_long_lines_allocate_nothing_big(tmp_path):
    """A state id claiming 2e9 states is refused before anything of its size is allocated; a 4 MB
    line is quoted in 200 characters."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(FormatError, match="implausibly large") as err:
        _read(tmp_path, b"u1 \n0 2147483646 5 1,0,1\n2147483646\n\n")
    assert err.value.line == 2
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KB
    with pytest.raises(FormatError) as err:
        _read(tmp_path, b"u1 \n0 1 5 1," + b"9" * (1 << 22) + b"x,1\n1\n\n")
    assert err.value.line == 2 and len(err.value.message) < 400


def test_a_long_number_is_read_exactly(tmp_path):
    digits = "1." + "3" * 5000
    lats = _read(tmp_path, f"u1 \n0 1 5 {digits},0,1\n1\n\n".encode())
    assert lats[0].graph_cost[0] == float(digits)


def test_cli_reports_a_bad_text_archive_on_one_line(tmp_path):
    ark = tmp_path / "a.ark"
    ark.write_bytes(b"u1 \n0 1 5 1.5,2,1\n1 \x00\n\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    res = subprocess.run([sys.executable, "-m", "lattice_tools", "best-path", f"ark:{ark}"], capture_output=True,
                         text=True, env=env, stdin=subprocess.DEVNULL)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and "a.ark:3 [u1]: " in res.stderr and "bad Kaldi compact line" in res.stderr


def test_kernel_checks_its_arguments():
    from lattice_tools._ext import native

    with pytest.raises(ValueError, match="kind"):
        native("kaldi_text").parse_block(b"0 1 2\n1", 7)
    kernel = native("kaldi_frames")
    src, dst, dur = np.array([0, 1]), np.array([1, 2]), np.array([1, 1])
    frame = np.empty(3, np.int64)
    assert kernel.state_frames(0, src, dst, dur, frame) and frame.tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="state_frames: argument dur must be a C-contiguous array of int64"):
        kernel.state_frames(0, src, dst, dur.astype(np.int32), frame)
    with pytest.raises(ValueError, match=r"state_frames: argument dst must have 2 items \(got 1\)"):
        kernel.state_frames(0, src, dst[:1], dur, frame)
    with pytest.raises(ValueError, match="outside"):
        kernel.state_frames(0, src, np.array([1, 3]), dur, frame)
    with pytest.raises(ValueError, match="negative duration"):
        kernel.state_frames(0, src, dst, np.array([1, -1]), frame)
    with pytest.raises(ValueError, match="start state"):
        kernel.state_frames(3, src, dst, dur, frame)
    with pytest.raises((TypeError, ValueError)):
        kernel.state_frames(0, src, dst, dur, np.empty(3, np.int64)[::2])  # not contiguous
    assert not kernel.state_frames(0, np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([1, 1, 1]), frame)



@pytest.mark.parametrize("layout", ["text", "binary", "text.gz", "binary.gz"])
def test_an_archive_cut_anywhere_is_an_error_naming_the_file(tmp_path, test_data_dir, layout):
    """A Kaldi archive cut inside a lattice is refused (text: with the line), never read as a shorter archive;
    only a cut between two lattices leaves a valid archive.  Three lattices of the Kaldi-written
    bundled archive, cut at 150 random bytes (text and binary, plain and gzip-compressed)."""
    import gzip
    import itertools

    from lattice_tools.core.errors import LatticeError
    from lattice_tools.io.lattices.kaldi import read_kaldi_lattices, write_kaldi_lattices

    lats = list(itertools.islice(read_kaldi_lattices(f"ark:{test_data_dir / 'kaldi/lats/bundled.ark.gz'}"), 3))
    text, gz = layout.startswith("text"), layout.endswith(".gz")
    ends = []  # the archive's length after each whole lattice
    for k in range(len(lats) + 1):
        write_kaldi_lattices(lats[:k], f"ark{',t' if text else ''}:{tmp_path / 'whole.ark'}")
        ends.append(len((tmp_path / "whole.ark").read_bytes()))
    data = (tmp_path / "whole.ark").read_bytes()
    packed = gzip.compress(data, mtime=0) if gz else data
    cut = tmp_path / ("cut.ark.gz" if gz else "cut.ark")
    rng = random.Random(7)
    refused = 0
    for n in sorted(rng.sample(range(1, len(packed)), 150)):
        cut.write_bytes(packed[:n])
        try:
            got = [lat.key for lat in read_kaldi_lattices(f"ark:{cut}")]
        except (FormatError, LatticeError) as exc:
            refused += 1
            assert exc.path == str(cut)
            if text and not gz:
                assert exc.line is not None
            continue
        # accepted: the cut is at the end of a whole lattice (text: maybe inside its empty line)
        assert not gz
        whole = [k for k, end in enumerate(ends) if data[:n].rstrip() == data[:end].rstrip()]
        assert whole and got == [lat.key for lat in lats][:whole[0]]
    assert refused == 150 if gz else refused >= 140
