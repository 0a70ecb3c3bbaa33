"""The fixed costs of a process: what a command imports (no numba: the kernels are C, lattice_tools/_ext/),
and the Kaldi readers' fast
paths against their plain transcriptions (bench/bench_startup.py measures the costs)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
KGRAPH = f"ark:{REPO / 'tests/data/kaldi/lats/kgraph_lat.1'}"
BUNDLED = f"ark:gunzip -c {REPO / 'tests/data/kaldi/lats/bundled.ark.gz'} |"


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_alternatives_package_imports_its_algorithms_on_first_use():
    """Importing the package imports no algorithm; every public name still resolves, also through
    ``from ... import``."""
    code = """
import sys
import lattice_tools.alternatives as A
loaded = sorted(m for m in sys.modules if m.startswith("lattice_tools.alternatives.") or m == "numba")
print(loaded)
from lattice_tools.alternatives import Alternatives, phrases, sausage, write_alternatives_ctm
import lattice_tools.alternatives.sausages as S
assert A.sausage is S.sausage is sausage and callable(phrases) and callable(write_alternatives_ctm)
assert set(A.__all__) <= set(dir(A))
print(all(getattr(A, name) is not None for name in A.__all__))
"""
    assert _run(code).splitlines() == ["[]", "True"]


def test_unknown_name_of_the_alternatives_package_is_an_attribute_error():
    import lattice_tools.alternatives as A

    with pytest.raises(AttributeError, match="no_such_name"):
        A.no_such_name  # noqa: B018


_AS_THE_PROGRAM = """
import atexit, os, sys
def report():  # (the program ends without tearing the interpreter down, but atexit handlers run)
    print({what})
atexit.register(report)
from lattice_tools.cli import main
sys.argv = ["lattice-tools", *{argv!r}]
main()
"""


def test_no_module_imports_numba():
    """The compiled loops are C (lattice_tools/_ext/); numba, its ~0.3 s start-up per process and its
    llvmlite are not a dependency: no module of the package imports it, and pyproject.toml does not
    declare it."""
    import ast

    offenders = []
    for path in sorted((REPO / "lattice_tools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(REPO)}:{node.lineno}" for n in names if n.split(".")[0] == "numba"]
    assert offenders == []
    assert "numba" not in (REPO / "pyproject.toml").read_text()


@pytest.mark.parametrize("argv", [
    ["mbr-decode", BUNDLED, "--acoustic-scale", "0.1", "--tra", "-", "--sausage-stats", os.devnull, "--ctm", os.devnull],
    ["sausage", KGRAPH, "-o", os.devnull],
])
def test_mbr_commands_do_not_import_numba(argv):
    """MBR decoding and sausages run the compiled C recursion (lattice_tools/_ext/mbr.c): numba is not
    imported, and the command still decodes every lattice."""
    code = _AS_THE_PROGRAM.format(what='"numba" in sys.modules, "lattice_tools._ext.mbr" in sys.modules', argv=argv)
    lines = _run(code).splitlines()
    assert lines[-1] == "False True"
    if argv[0] == "mbr-decode":
        keys = [line.split()[0] for line in lines[:-1]]
        assert keys[:5] == ["001", "002", "003", "004", "005"] and len(keys) == 10


def test_best_path_imports_neither_numba_nor_the_alternatives_algorithms():
    what = 'sorted(m for m in sys.modules if m == "numba" or m.startswith("lattice_tools.alternatives."))'
    code = _AS_THE_PROGRAM.format(what=what, argv=["best-path", KGRAPH, "--tra", os.devnull])
    assert _run(code).splitlines()[-1] == "[]"


def test_nbest_runs_without_numba():
    """The exact N-best search is compiled C (lattice_tools/_ext/nbest/): the command imports no numba."""
    what = '"numba" in sys.modules, "lattice_tools._ext.nbest" in sys.modules'
    lat = str(REPO / "tests/data/inputs/003.lat")
    code = _AS_THE_PROGRAM.format(what=what, argv=["nbest", "-n", "20", "--acoustic-scale", "0.1", lat, "-o", os.devnull])
    assert _run(code).splitlines()[-1] == "False True"


def test_phrases_command_runs_without_numba(tmp_path):
    """The phrase search runs on the compiled C kernels (lattice_tools/_ext/search/): a ``phrases`` run
    imports no numba, and does run the search (its output has alternatives)."""
    out = tmp_path / "p.ctm"
    what = '"numba" in sys.modules, "lattice_tools.alternatives._determinizer" in sys.modules'
    code = _AS_THE_PROGRAM.format(what=what, argv=["phrases", str(REPO / "tests/data/slf/pocketsphinx_cards_002.lat.gz"),
                                                    "-n", "10", "--acoustic-scale", "0.1", "-o", str(out)])
    assert _run(code).splitlines()[-1] == "False True"
    assert "<ALT_BEGIN>" in out.read_text()


@pytest.mark.parametrize("argv,status,stdout,stderr", [
    (["best-path", KGRAPH, "--tra", "-"], 0, "CVTE201703_00030_165722_1175 54432", '"lattices": 10'),
    (["best-path", "ark:/nonexistent/x.ark", "--tra", "-"], 2, "", "lattice-tools: error: /nonexistent/x.ark"),
    (["no-such-command"], 2, "", "No such command"),
    (["--version"], 0, "version", ""),
])
def test_program_ends_with_its_outputs_flushed_and_its_status(tmp_path, argv, status, stdout, stderr):
    """Run as the program, lattice-tools ends without the interpreter's teardown: the standard streams
    are flushed, files written, atexit handlers run, and the exit status is click's."""
    code = _AS_THE_PROGRAM.format(what='"atexit ran", file=sys.stderr', argv=argv)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == status, out.stderr
    assert stdout in out.stdout and stderr in out.stderr
    assert out.stderr.rstrip().endswith("atexit ran")
    if argv[0] == "best-path" and status == 0:
        assert len(out.stdout.splitlines()) == 10 and out.stdout.endswith("\n")


def test_program_writes_complete_files_and_waits_for_its_threads(tmp_path):
    """A file written by the command is complete; a non-daemon thread still running at the end is
    waited for (the ordinary exit)."""
    code = _AS_THE_PROGRAM.format(what='"atexit ran"', argv=["mbr-decode", KGRAPH, "--acoustic-scale", "0.1",
                                                             "--sausage-stats", str(tmp_path / "saus")])
    code = code.replace("from lattice_tools.cli import main", f"""import threading, time
def late():
    time.sleep(1.5)
    open(os.path.join({str(tmp_path)!r}, "thread"), "w").write("done")
threading.Thread(target=late).start()
from lattice_tools.cli import main""")
    assert _run(code).splitlines()[-1] == "atexit ran"
    assert (tmp_path / "thread").read_text() == "done"
    assert len((tmp_path / "saus").read_text().splitlines()) == 10


# ------------------------------------------------------------------------------------------------
# Kaldi lattices' frames (C kernel, a walk from the start) == the loop over the arcs
# ------------------------------------------------------------------------------------------------
def _frames_by_arc_loop(lat, dur):
    """The plain transcription: frames along the arcs in order; None at the first disagreement."""
    fr = [-1] * lat.num_states
    fr[0] = 0
    for s, d, n in zip(lat.src.tolist(), lat.dst.tolist(), dur.tolist(), strict=True):
        t = fr[s] + n
        if fr[d] < 0:
            fr[d] = t
        elif fr[d] != t:
            return None
    return np.array(fr, np.int64)


def test_kaldi_state_frames_equal_the_arc_loop():
    from lattice_tools._ext import native
    from lattice_tools.core.lattice import Lattice
    from lattice_tools.core.symbols import SymbolTable

    rng = np.random.default_rng(7)
    syms = SymbolTable({"a": 1})
    outcomes = set()
    for trial in range(1500):
        n = int(rng.integers(1, 14))
        m = int(rng.integers(0, 35)) if n > 1 else 0
        src = rng.integers(0, n - 1, m) if n > 1 else np.zeros(0, np.int64)
        dst = np.array([rng.integers(s + 1, n) for s in src], np.int64)
        if trial % 2:  # consistent times
            state_frame = np.sort(rng.integers(0, 6, n))
            state_frame[0] = 0
            dur = state_frame[dst] - state_frame[src]
        else:  # mostly inconsistent
            dur = rng.integers(0, 3, m)
        lat = Lattice.from_arcs(src=src, dst=dst, word=np.ones(m, np.int64), symbols=syms,
                                final_graph_cost=np.zeros(n), num_states=n, attrs={"d": dur})
        d = lat.attrs["d"].astype(np.int64)
        got = np.empty(lat.num_states, np.int64)
        consistent = native("kaldi_frames").state_frames(0, lat.src.astype(np.int64), lat.dst.astype(np.int64), d, got)
        want = _frames_by_arc_loop(lat, d)
        assert (want is None) == (not consistent), trial
        if want is not None:
            assert np.array_equal(want, got), trial
        outcomes.add(want is None)
    assert outcomes == {True, False}


# ------------------------------------------------------------------------------------------------
# the Kaldi readers' fast paths
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tids", ["1_1_1", "0_9_3", "12_7", "7_123456789", ""])
def test_tid_strings_single_and_multi_digit(tids):
    """Single-digit and multi-digit ids: the C reader gives what the Python line parser gave."""
    from _reference.kaldi_text import parse_text_fst

    from lattice_tools.io.lattices._kaldi_text import parse_text_block

    block = f"0 1 5 1.5,2,{tids}\n0 2 6 1,0,3_4\n1 3 7 0.25,0,\n2 3 7 1,1,9\n3 0,0,{tids}".encode()
    fast = parse_text_block(block, 1, "x", "u")
    slow = parse_text_fst(list(enumerate(block.decode().split("\n"), 1)), "x", "u")
    assert [s.tolist() for s in fast.strings] == [s.tolist() for s in slow.strings]
    assert all(s.dtype == np.int32 for s in fast.strings)
    assert {k: v.tolist() for k, v in fast.final_strings.items()} == {k: v.tolist() for k, v in slow.final_strings.items()}


def test_text_block_with_trailing_whitespace_is_read():
    from lattice_tools.core.errors import FormatError
    from lattice_tools.io.lattices._kaldi_text import parse_text_block

    raw = parse_text_block(b"0 1 5 1.5,2,1_2\n1 0,0,\n \t\n", 1, "x", "u")
    assert raw.num_states == 2 and raw.strings[0].tolist() == [1, 2]
    with pytest.raises(FormatError, match="empty lattice"):
        parse_text_block(b" \n\t", 1, "x", "u")


def test_binary_compact_reader_reads_what_the_text_reader_reads(tmp_path):
    """The binary CompactLattice reader (arcs gathered into lists) gives the RawFst the text reader
    gives for the same lattices written both ways (text weights have fewer digits), also for a
    lattice of one final state without arcs."""
    from lattice_tools.core.lattice import Lattice
    from lattice_tools.core.symbols import SymbolTable
    from lattice_tools.io import read_lattices, write_lattices
    from lattice_tools.io.lattices import kaldi as K

    lats = list(read_lattices(KGRAPH))
    single = Lattice.from_arcs(src=[], dst=[], word=[], symbols=SymbolTable({}), final_graph_cost=[0.5],
                               final_acoustic_cost=[0.25], key="empty")
    write_lattices([*lats, single], f"ark:{tmp_path / 'b.ark'}", lattice_type="compact")
    write_lattices([*lats, single], f"ark,t:{tmp_path / 't.ark'}", lattice_type="compact")
    binary = list(K.iter_raw(f"ark:{tmp_path / 'b.ark'}"))
    text = list(K.iter_raw(f"ark:{tmp_path / 't.ark'}"))
    assert [k for k, _ in binary] == [k for k, _ in text] == [x.key for x in lats] + ["empty"]
    assert binary[-1][1].num_states == 1 and len(binary[-1][1].src) == 0
    for (_, a), (_, b) in zip(binary, text, strict=True):
        assert (a.kind, a.start, a.num_states) == (b.kind, b.start, b.num_states) == ("compact", 0, a.num_states)
        for f in ("src", "dst", "ilabel", "olabel"):
            assert getattr(a, f).dtype == np.int64 and np.array_equal(getattr(a, f), getattr(b, f)), f
        for f in ("w1", "w2", "final_w1", "final_w2"):
            assert getattr(a, f).dtype == np.float64 and np.allclose(getattr(a, f), getattr(b, f), rtol=1e-6), f
        assert [t.tolist() for t in a.strings] == [t.tolist() for t in b.strings]
        assert all(t.dtype == np.int32 for t in a.strings)


#: modules whose import costs tens to hundreds of milliseconds; ``lattice-tools --help`` needs none of them
HEAVY_MODULES = ("numpy", "scipy", "matplotlib", "torch", "k2", "networkx", "pocketsphinx", "kaldifst", "tqdm",
                 "pandas", "dask", "distributed", "hypothesis")


def test_help_imports_only_click_and_the_command_table():
    """``lattice-tools --help`` lists the commands from the table in lattice_tools/cli/__init__.py: it
    imports click and the package's own start-up modules, no command module and no heavy library."""
    what = (f'(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY_MODULES!r}), '
            'sorted(m for m in sys.modules if m.startswith("lattice_tools")))')
    code = _AS_THE_PROGRAM.format(what=what, argv=["--help"])
    heavy, ours = eval(_run(code).splitlines()[-1])  # noqa: S307 - our own repr of two lists
    assert heavy == []
    assert ours == ["lattice_tools", "lattice_tools.cli", "lattice_tools.cli._lazy", "lattice_tools.core",
                    "lattice_tools.core._exports", "lattice_tools.core.errors"]
