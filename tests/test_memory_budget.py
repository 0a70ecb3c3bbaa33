"""``--max-memory`` holds on every path: commands run in a subprocess whose address space is capped
(tests/_memory_cap.py) stop with the budget error, one line naming ``--max-memory``, and their peak
resident memory stays near the budget."""
from __future__ import annotations

from pathlib import Path

import pytest
from _memory_cap import BASE_MARGIN, assert_budget_refusal, run_capped

from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.io.lattices.inputs import read_lattice_inputs
from lattice_tools.io.lattices.lattice_files import write_lattices
from lattice_tools.io.transcripts.altctm import AlternativesCtmWriter, alternatives_to_ctm_items, iter_ctm_lines
from lattice_tools.io.transcripts.ctm import format_ctm_item

DATA = Path(__file__).resolve().parent / "data"
MB = 1 << 20


@pytest.fixture(scope="module")
def long_lattice(tmp_path_factory) -> Path:
    """Utterance 005 of the vendored bundled archive alone: 100,000 distinct sequences of ~30 words
    (an N-best list of that depth needs ~175 MB resident)."""
    out = tmp_path_factory.mktemp("lat") / "005.ark"
    lats = [lat for lat in read_lattice_inputs([str(DATA / "kaldi/lats/bundled.ark.gz")]) if lat.key == "005"]
    assert len(lats) == 1
    write_lattices(lats, str(out))
    return out


def test_nbest_deep_list_stops_at_the_budget(long_lattice, tmp_path):
    budget = 80 * MB
    out = tmp_path / "nbest.ctm"
    result = run_capped(["nbest", "-n", "100000", "--max-memory", "80M", long_lattice, "-o", out],
                        cap=budget + BASE_MARGIN, timeout=60)
    assert_budget_refusal(result)
    assert result.peak_rss <= budget * 1.25, result.peak_rss / MB
    assert not out.exists()  # no half-written output
    assert not list(tmp_path.iterdir())  # and no temporary left beside it


def test_nbest_unbounded_search_holds_the_budget_in_the_compiled_search(tmp_path, long_lattice):
    """N = inf on utterance 005 of the vendored archive: the compiled search itself would grow past 800 MB; it
    counts the bytes it allocates against what the budget leaves, so it stops there, not after.  (On the whole
    archive an earlier utterance's search may finish within the budget and its alt-CTM text, hundreds of
    thousands of lines, meet the budget first: a refusal too, but not the search's.)"""
    budget = 100 * MB
    out = tmp_path / "nbest.ctm"
    result = run_capped(["nbest", "-n", "inf", "--max-memory", "100M", long_lattice, "-o", out],
                        cap=budget + BASE_MARGIN, timeout=120)
    assert_budget_refusal(result)
    assert "exact N-best search" in result.stderr and "[005]" in result.stderr, result.stderr
    assert result.peak_rss <= budget * 1.25, result.peak_rss / MB
    assert not list(tmp_path.iterdir())


def _alternatives() -> Alternatives:
    alts = (Alternative(("a", "b"), (0.1, 0.4), (0.3, 0.2), 0.6, (0.6, 0.6)),
            Alternative((), posterior=0.3),
            Alternative(("c",), (float("nan"),), (float("nan"),), 0.1, (0.1,)))
    one = (Alternative(("d",), (1.0,), (0.5,), 1.0, (1.0,)),)
    return Alternatives(key="u", slots=(Slot(0.0, 0.9, alts), Slot(1.0, 1.5, one)), kind="phrases",
                        file="f", channel="A")


@pytest.mark.parametrize("n", [None, 1, 2])
def test_streamed_alt_ctm_lines_equal_the_items_path(n, tmp_path):
    """The writer makes its lines one alternative at a time; they equal formatting the CTM items."""
    alts = _alternatives()
    expected = [line for item in alternatives_to_ctm_items(alts, n) for line in format_ctm_item(item, "%.2f", "%.4f")]
    assert list(iter_ctm_lines(alts, n)) == expected
    with AlternativesCtmWriter(str(tmp_path / "x.ctm"), n) as writer:
        writer.write(alts)
    assert (tmp_path / "x.ctm").read_text().splitlines() == expected


GLM = DATA / "sctk/glm/en20030506.glm"


@pytest.fixture(scope="module")
def glm_blowup(tmp_path_factory) -> tuple[Path, Path]:
    """A 3,000-word segment and a CTM whose ALT block holds it with 8 contractions: the GLM's rule
    ``CAN'T => {CAN NOT / CANNOT}`` nests a block in the ALT block for each, and flattening them makes
    256 alternatives of 3,000 words (769,024 words, a 3,001 x 769,025 alignment table)."""
    d = tmp_path_factory.mktemp("glm")
    words = ["THE"] * 3000
    for i in range(8):
        words[i * 300] = "CAN'T"
    (d / "ref.stm").write_text("f 1 spk 0.0 3000.0 " + " ".join(words) + "\n")
    lines = ["f 1 * * <ALT_BEGIN>", *(f"f 1 {i}.00 0.50 {w}" for i, w in enumerate(words)),
             "f 1 * * <ALT>", "f 1 0.00 0.50 THE", "f 1 * * <ALT_END>"]
    (d / "hyp.ctm").write_text("\n".join(lines) + "\n")
    return d / "ref.stm", d / "hyp.ctm"


@pytest.mark.parametrize("budget, where", [(100, "flattening the nested ALT block of f 1 (line 1)"),
                                           (300, "3,000 reference words x 769,025 hypothesis arcs")])
def test_score_glm_expansion_is_counted_before_it_is_built(glm_blowup, budget, where):
    ref, hyp = glm_blowup
    result = run_capped(["score", "--max-memory", f"{budget}M", "-r", ref, "-h", hyp, "--glm", GLM],
                        cap=(budget << 20) + BASE_MARGIN, timeout=60)
    assert_budget_refusal(result)
    assert where in result.stderr
    assert result.peak_rss <= budget * MB * 1.25, result.peak_rss / MB


def test_expand_alternation_is_counted_before_it_is_built():
    from lattice_tools.core._budget import memory_budget, resident_bytes
    from lattice_tools.core.errors import BudgetExceededError
    from lattice_tools.scoring.glm.repairs import expand_alternation

    text = " ".join(["{ A B / C }"] * 12 + ["W"] * 2000)
    assert expand_alternation("X { A / B C } Y { D / @ / {E/F} } Z") == [
        ["X", "A", "Y", "D", "Z"], ["X", "A", "Y", "Z"], ["X", "A", "Y", "E", "Z"], ["X", "A", "Y", "F", "Z"],
        ["X", "B", "C", "Y", "D", "Z"], ["X", "B", "C", "Y", "Z"], ["X", "B", "C", "Y", "E", "Z"],
        ["X", "B", "C", "Y", "F", "Z"]]
    with memory_budget(resident_bytes() + (20 << 20)), pytest.raises(BudgetExceededError, match="alternation"):
        expand_alternation(text, where="ref.stm:3")


def test_flatten_nested_block_equals_the_plain_product():
    """The run-based product of flatten_nested_block lists what the Cartesian product of the inner
    blocks lists, in the same order (first listed first), duplicates dropped."""
    import itertools

    from lattice_tools.io.transcripts.ctm import CtmAltBlock, CtmWord, flatten_nested_block

    def w(x):
        return CtmWord("f", "1", 0.0, 0.1, x)

    inner1 = CtmAltBlock("f", "1", ((w("a"),), (w("b"), w("c"))))
    inner2 = CtmAltBlock("f", "1", ((w("d"),), (), (w("a"), w("c"))))
    outer = CtmAltBlock("f", "1", ((w("x"), inner1, w("y"), inner2, w("z")), (w("x"), w("a"), w("y"))))
    flat = flatten_nested_block(outer)
    expected = []
    for i, j in itertools.product(inner1.alternatives, inner2.alternatives):
        expected.append(("x", *(v.word for v in i), "y", *(v.word for v in j), "z"))
    expected.append(("x", "a", "y"))
    assert [tuple(v.word for v in alt) for alt in flat.alternatives] == list(dict.fromkeys(expected))


def test_phrases_search_stops_at_the_budget(tmp_path):
    budget = 60 * MB
    result = run_capped(["phrases", "-n", "inf", "--max-memory", "60M", DATA / "kaldi/lats/bundled.ark.gz",
                         "-o", tmp_path / "p.ctm"], cap=budget + BASE_MARGIN, timeout=120)
    assert_budget_refusal(result)
    assert result.peak_rss <= budget * 1.25, result.peak_rss / MB
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_demo_holds_its_budget(tmp_path):
    """The demo runs under one budget: the decoder's models alone take ~230 MB, so 150M stops it cleanly at
    its first budgeted step, where an unbudgeted run of the same command peaks at ~235 MB."""
    result = run_capped(["demo", "-o", tmp_path / "demo", "--corpus", "cards", "--density", "default", "-n", "10",
                         "--bootstrap", "0", "--no-kws", "--max-memory", "150M"], cap=(150 << 20) + BASE_MARGIN + (200 << 20),
                        timeout=600)
    assert_budget_refusal(result)
    assert "already holds" in result.stderr


# ------------------------------------------------------------------------------------------------------------
# every command that reads lattices: one --max-memory, and it holds while the lattices are read


@pytest.fixture(scope="module")
def wide_lattice(tmp_path_factory) -> dict:
    """One Kaldi lattice of 100,000 arcs (a 4,000-slot sausage, 25 words a slot): reading it takes ~30 MB
    over the interpreter's ~33 MB, so a 60M budget cannot hold it; its words.txt and references."""
    import numpy as np

    from lattice_tools.core.lattice import Lattice
    from lattice_tools.core.symbols import SymbolTable

    d = tmp_path_factory.mktemp("wide")
    slots, width = 4000, 25
    src = np.repeat(np.arange(slots), width)
    rng = np.random.default_rng(0)
    symbols = SymbolTable.from_words([f"w{i}" for i in range(1, width + 1)])
    final = np.full(slots + 1, np.inf)
    final[-1] = 0.0
    lat = Lattice.from_arcs(src=src, dst=src + 1, word=np.tile(np.arange(1, width + 1), slots), symbols=symbols,
                            final_graph_cost=final, t0=src * 3, t1=src * 3 + 3, graph_cost=rng.uniform(0, 3, len(src)),
                            acoustic_cost=rng.uniform(0, 30, len(src)), key="wide")
    write_lattices([lat], f"ark:{d / 'wide.ark'}")
    symbols.write(str(d / "words.txt"))
    (d / "ref.txt").write_text("wide " + " ".join(["w1"] * slots) + "\n")
    (d / "ref.int").write_text("wide " + " ".join(["1"] * slots) + "\n")
    (d / "ref.ctm").write_text("wide 1 0.00 0.03 w1\n")
    (d / "kwlist.xml").write_text('<kwlist ecf_filename="ecf.xml" language="english" encoding="UTF-8" '
                                  'compareNormalize="" version="1">\n<kw kwid="KW-1"><kwtext>w1</kwtext></kw>\n'
                                  '</kwlist>\n')
    return {"L": str(d / "wide.ark"), "W": str(d / "words.txt"), "d": d}


#: every command that reads lattices, with the outputs it writes (OUT: the test's empty output directory)
LATTICE_COMMANDS = {
    "info": ["info", "{L}", "--json", "{OUT}/info.json"],
    "convert": ["convert", "{L}", "-o", "ark:{OUT}/o.ark"],
    "nbest": ["nbest", "-n", "3", "{L}", "-o", "{OUT}/o.ctm"],
    "sausage": ["sausage", "-n", "3", "{L}", "-o", "{OUT}/o.ctm"],
    "phrases": ["phrases", "-n", "3", "{L}", "-o", "{OUT}/o.ctm"],
    "best-path": ["best-path", "{L}", "--tra", "{OUT}/o.tra"],
    "nbest-paths": ["nbest-paths", "{L}", "--tra", "{OUT}/o.tra"],
    "scale": ["scale", "{L}", "-o", "ark:{OUT}/o.ark"],
    "add-penalty": ["add-penalty", "{L}", "--word-penalty", "1", "-o", "ark:{OUT}/o.ark"],
    "prune": ["prune", "{L}", "-o", "ark:{OUT}/o.ark"],
    "depth": ["depth", "{L}", "-o", "{OUT}/depth.txt"],
    "mbr-decode": ["mbr-decode", "{L}", "--tra", "{OUT}/o.tra"],
    "oracle-path": ["oracle-path", "{L}", "-r", "{d}/ref.int", "--tra", "{OUT}/o.tra"],
    "oracle": ["oracle", "{L}", "-r", "{d}/ref.txt", "--words", "{W}", "--json", "{OUT}/o.json"],
    "study": ["study", "{L}", "-r", "{d}/ref.txt", "--words", "{W}", "-o", "{OUT}/study"],
    "view": ["view", "{L}", "-o", "{OUT}/v.html"],
    "kws index": ["kws", "index", "{L}", "-o", "{OUT}/i.sqlite"],
    "kws study": ["kws", "study", "{L}", "--ctm", "{d}/ref.ctm", "--kwlist", "{d}/kwlist.xml", "--words", "{W}",
                  "-o", "{OUT}/kws"],
    "combine": ["combine", "--nbest-format", "lattice", "{L}", "{L}", "-o", "{OUT}/c.ctm"],
}


def _args(name: str, paths: dict, out: Path) -> list[str]:
    return [a.format(OUT=out, **paths) for a in LATTICE_COMMANDS[name]]


@pytest.mark.parametrize("name", sorted(LATTICE_COMMANDS))
def test_reading_lattices_holds_the_budget(name, wide_lattice, tmp_path):
    """Under an address-space cap of the budget plus the interpreter's margin, every command stops reading the
    lattice at --max-memory with its one-line budget error (not an out-of-memory line), peaks near the budget
    and leaves no output."""
    budget = 60 * MB
    out = tmp_path / "out"
    out.mkdir()
    result = run_capped([*_args(name, wide_lattice, out), "--max-memory", "60M"], cap=budget + BASE_MARGIN,
                        timeout=60)
    if name == "best-path" and result.returncode == 0:
        # best-path computes from the archive's bytes without building the lattice (~256 bytes an arc at most,
        # within what the budget leaves, else the lattice goes to the reader, which refuses it): it may fit
        assert result.peak_rss <= budget, result.peak_rss / MB
        return
    assert_budget_refusal(result)
    assert "[wide]" in result.stderr
    assert result.peak_rss <= budget * 1.25, result.peak_rss / MB
    left = [p for p in out.rglob("*") if p.is_file()]
    assert not left, left


def test_every_lattice_command_takes_the_budget_and_the_keys():
    """The audit: every command with lattice inputs (it takes --words; build-graph writes a words.txt,
    nbest-to-lattices reads N-best files, decode-ctc log-probabilities) takes --max-memory (one default) and
    --keys, and the list above covers each (kws search reads lattices only for terms longer than its index's,
    tests/test_one_door.py covers its --keys)."""
    from test_cli_api_parity import COMMANDS

    readers = {name for name, cmd in COMMANDS.items() if any(p.name == "words" for p in cmd.params)
               and name not in ("build-graph", "nbest-to-lattices", "decode-ctc")}
    assert readers - {"kws search"} == set(LATTICE_COMMANDS)
    for name in sorted(readers | {"nbest-to-lattices", "score", "demo"}):
        params = {p.name: p for p in COMMANDS[name].params}
        assert "keys" in params or name in ("nbest-to-lattices", "score", "demo"), name
        assert params["max_memory"].default == "4G", name


def test_an_slf_lattice_that_cannot_fit_is_refused_before_it_is_parsed(wide_lattice, tmp_path):
    """The same 100,000 arcs as SLF text (7 MB): parsing it peaks at ~250 MB, so under 150M the reader refuses it
    from its size before parsing (one line naming --max-memory and the file), near the interpreter's own size."""
    slf = tmp_path / "wide.slf"
    write_lattices(list(read_lattice_inputs([wide_lattice["L"]], words=wide_lattice["W"])), str(slf), format="slf")
    result = run_capped(["info", slf, "--max-memory", "150M"], cap=(150 << 20) + BASE_MARGIN, timeout=60)
    assert_budget_refusal(result)
    assert "parsing the SLF lattice at line 1" in result.stderr and str(slf) in result.stderr
    assert result.peak_rss <= 100 * MB, result.peak_rss / MB


@pytest.mark.parametrize("form", ["kaldi text", "openfst text", "k2"])
def test_other_lattice_files_stop_at_the_budget_while_read(form, wide_lattice, tmp_path):
    """The same 100,000 arcs as a Kaldi text archive and a k2 file (each refused from its size before it is
    parsed or loaded) and as OpenFst text (reading stops at the budget): one line naming --max-memory, peak near
    the budget."""
    lats = list(read_lattice_inputs([wide_lattice["L"]]))
    if form == "k2":
        pytest.importorskip("torch")  # (the writer needs torch; the reader does not)
        spec = str(tmp_path / "wide.pt")
        write_lattices(lats, spec)
    elif form == "kaldi text":
        spec = f"ark:{tmp_path / 'wide.txt.ark'}"
        write_lattices(lats, f"ark,t:{tmp_path / 'wide.txt.ark'}")
    else:
        spec = str(tmp_path / "wide.fst.txt")
        write_lattices(lats, spec, format="openfst")
    result = run_capped(["info", spec, "--max-memory", "60M"], cap=(60 << 20) + BASE_MARGIN, timeout=60)
    assert_budget_refusal(result)
    assert result.peak_rss <= 60 * MB * 1.25, result.peak_rss / MB


@pytest.mark.parametrize("compressed", [False, True])
def test_the_ctm_column_reader_refuses_a_file_the_budget_cannot_hold(tmp_path, compressed):
    """The columnar CTM reader (what score and oracle read a CTM with) checks the budget before it reads the
    file: about 10 bytes per byte of the file at its peak."""
    import gzip

    from lattice_tools.core._budget import memory_budget, resident_bytes
    from lattice_tools.core.errors import BudgetExceededError
    from lattice_tools.scoring.ctm_columns import read_ctm_columns

    text = "".join(f"f A {i / 10:.2f} 0.10 w{i % 97}\n" for i in range(200_000)).encode()   # ~4.5 MB
    path = tmp_path / ("x.ctm.gz" if compressed else "x.ctm")
    path.write_bytes(gzip.compress(text) if compressed else text)
    with memory_budget(resident_bytes() + 8 * MB), pytest.raises(BudgetExceededError, match="reading the CTM"):
        read_ctm_columns(str(path), str.lower)
    with memory_budget(resident_bytes() + 400 * MB):
        assert read_ctm_columns(str(path), str.lower) is not None


@pytest.fixture(scope="module")
def long_nbest_list(tmp_path_factory) -> Path:
    """One utterance with a 12,000-best list of 30 timed words each (6 MB of TSV; the merge into a lattice
    needs several hundred MB resident without a budget)."""
    import random

    rng = random.Random(1)
    path = tmp_path_factory.mktemp("nbest") / "long.tsv"
    times = " ".join(f"{0.3 * i:.2f}:{0.3 * i + 0.25:.2f}" for i in range(30))
    with open(path, "w") as f:
        for rank in range(1, 12001):
            words = " ".join(f"w{rng.randrange(5000)}" for _ in range(30))
            f.write(f"u1\t{rank}\t{-0.01 * rank:.3f}\t{words}\t{times}\n")
    return path


@pytest.mark.parametrize("command", ["nbest-to-lattices", "combine"])
def test_nbest_paths_stop_at_the_budget(command, long_nbest_list, tmp_path):
    budget = 80 * MB
    if command == "nbest-to-lattices":
        out = tmp_path / "lats.ark"
        args = ["nbest-to-lattices", long_nbest_list, "-o", f"ark:{out}", "--write-words", tmp_path / "words.txt"]
    else:
        out = tmp_path / "combined.ctm"
        args = ["combine", long_nbest_list, long_nbest_list, "-o", out]
    result = run_capped([*args, "--max-memory", "80M"], cap=budget + BASE_MARGIN, timeout=120)
    assert_budget_refusal(result)
    assert result.peak_rss <= budget * 1.25, result.peak_rss / MB
    assert not list(tmp_path.iterdir())  # no output, no temporary


def test_nbest_to_lattices_within_its_budget(tmp_path):
    """A small file runs under a small budget (the check does not refuse what fits)."""
    out = tmp_path / "lats.ark"
    result = run_capped(["nbest-to-lattices", DATA / "nbest/generic.tsv", "-o", f"ark:{out}", "--max-memory", "150M"],
                        cap=(150 * MB) + BASE_MARGIN, timeout=60)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 0


def test_resident_bytes_reads_its_own_process_and_asks_the_page_size_once(monkeypatch):
    import os
    import sys

    from lattice_tools.core import _budget

    if not os.path.exists("/proc/self/statm") or not hasattr(os, "fork"):
        pytest.skip("needs /proc and fork (Linux)")
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    first = _budget.resident_bytes()
    assert first > 0 and abs(first - pages * os.sysconf("SC_PAGE_SIZE")) < 64 << 20

    def refused(name):
        raise AssertionError(f"sysconf({name!r}) asked again")

    monkeypatch.setattr(_budget.os, "sysconf", refused)   # the page size was asked with the first reading
    assert _budget.resident_bytes() > 0
    monkeypatch.undo()
    # a forked worker reads its own figures: it grows by what it allocates, its parent does not
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # the worker
        status = 1
        try:
            os.close(read_end)
            before = _budget.resident_bytes()
            block = bytearray(96 << 20)   # zero pages: touched below so that they are resident
            block[::4096] = b"\1" * len(block[::4096])
            grown = _budget.resident_bytes() - before
            target = os.readlink(f"/proc/self/fd/{_budget._statm[1]}")
            os.write(write_end, f"{_budget._statm[0] == os.getpid()} {target} {grown}".encode())
            status = 0
        finally:
            sys.stdout.flush()
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        same_pid, target, grown = f.read().decode().split()
    _, status = os.waitpid(pid, 0)
    assert status == 0
    assert same_pid == "True" and target == f"/proc/{pid}/statm"
    assert int(grown) >= 90 << 20
    assert os.readlink(f"/proc/self/fd/{_budget._statm[1]}") == f"/proc/{os.getpid()}/statm"
