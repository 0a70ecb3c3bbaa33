"""``combine --method rover`` against NIST rover.

* NIST's own published rover output (SCTK's doc/rover_demo/rover.ctm, ``rover -m avgconf`` on the
  demo's three systems), vendored under tests/data/rover: no peer needed.
* Random CTM sets (hypothesis: 2-5 systems, files, channels, gaps that cut chunks, case, missing
  confidences, every method, alpha, null confidence, time-mediated alignment) and the vendored real
  CTMs run through Debian's ``rover`` and through lattice-tools: the outputs must be identical.
  Skipped when ``rover`` is absent.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives.rover import _word_text, rover_lines
from lattice_tools.core.errors import FormatError, LatticeToolsError, MismatchError

DATA = os.path.join(os.path.dirname(__file__), "data", "rover")
DEMO = [os.path.join(DATA, f"sys{i}.ctm") for i in (1, 2, 3)]
ROVER = shutil.which("rover") or ("/usr/lib/sctk/bin/rover" if os.path.exists("/usr/lib/sctk/bin/rover") else None)
needs_rover = pytest.mark.skipif(ROVER is None, reason="NIST rover (Debian sctk) is not installed")


def peer(paths, tmp_path, method, alpha, null_conf, use_times):
    out = tmp_path / "rover.out"
    if out.exists():
        out.unlink()
    cmd = [ROVER, *sum((["-h", p, "ctm"] for p in paths), []), "-o", str(out), "-m", method, "-a", repr(alpha),
           "-c", repr(null_conf), "-f", "0"] + (["-T"] if use_times else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return None
    return out.read_text().splitlines()


def test_nist_demo_output():
    with open(os.path.join(DATA, "nist_rover_avgconf.ctm")) as f:
        expected = f.read().splitlines()
    assert rover_lines(DEMO, rover_method="avgconf") == expected


def test_word_text_follows_rover():
    assert _word_text("a;tag1;tag2") == "a"
    assert _word_text("A\\;S") == "A;S"
    assert _word_text("x*") == "x" and _word_text("*") == "*"
    assert _word_text("{a/b}") == "{a/b}"


def test_errors(tmp_path):
    alt = tmp_path / "alt.ctm"
    alt.write_text("f 1 * * <ALT_BEGIN>\nf 1 0.1 0.1 a\nf 1 * * <ALT>\nf 1 0.1 0.1 b\nf 1 * * <ALT_END>\n")
    with pytest.raises(FormatError, match="ALT blocks"):
        rover_lines([str(alt), DEMO[0]])
    other = tmp_path / "other.ctm"
    other.write_text("zzz 1 0.1 0.1 a\n")
    with pytest.raises(MismatchError, match="conversation"):
        rover_lines([DEMO[0], str(other)])
    with pytest.raises(LatticeToolsError, match="at least two"):
        rover_lines([DEMO[0]])
    with pytest.raises(LatticeToolsError, match="method"):
        rover_lines(DEMO, rover_method="nope")


def test_command(tmp_path):
    from click.testing import CliRunner

    from lattice_tools.cli import main

    out = tmp_path / "r.ctm"
    r = CliRunner().invoke(main, ["combine", "--method", "rover", "--rover-method", "avgconf", *DEMO, "-o", str(out)])
    assert r.exit_code == 0, r.output
    with open(os.path.join(DATA, "nist_rover_avgconf.ctm")) as f:
        assert out.read_text() == f.read()


SETS = {
    "nist-demo": DEMO,
    "nist-demo-reordered": [DEMO[1], DEMO[2], DEMO[0]],
    "pocketsphinx": [os.path.join(DATA, f"pocketsphinx_{c}.ctm") for c in "abc"],
    "pocketsphinx-reordered": [os.path.join(DATA, f"pocketsphinx_{c}.ctm") for c in "cab"],
}


@needs_rover
@pytest.mark.parametrize("name", sorted(SETS))
@pytest.mark.parametrize("method, alpha, null_conf, use_times", [
    ("meth1", 1.0, 0.0, False), ("maxconf", 0.5, 0.3, False), ("avgconf", 0.3, 0.7, False), ("oracle", 1.0, 0.0, False),
    ("meth1", 0.5, 0.2, True), ("avgconf", 0.0, 0.0, True),
])
def test_real_ctms_against_rover(tmp_path, name, method, alpha, null_conf, use_times):
    systems = SETS[name]
    expected = peer(systems, tmp_path, method, alpha, null_conf, use_times)
    if expected is None:
        pytest.skip("rover itself fails on this input")
    assert rover_lines(systems, rover_method=method, alpha=alpha, null_conf=null_conf,
                       use_times=use_times) == expected


WORDS = ["a", "b", "c", "d", "e", "A", "B", "ab", "x*", "Zz", "%hesitation"]


@st.composite
def ctm_sets(draw):
    files = sorted(draw(st.sets(st.sampled_from(["f1", "f2", "f3"]), min_size=1, max_size=2)))
    with_conf = draw(st.booleans())
    systems = []
    for _ in range(draw(st.integers(2, 5))):
        lines = []
        for f in files:
            for ch in draw(st.sampled_from([["1"], ["1"], ["1", "2"]])):
                t = draw(st.sampled_from([0.0, 0.5]))
                for _ in range(draw(st.integers(0, 12))):
                    t += draw(st.sampled_from([0.0, 0.1, 0.2, 0.3, 1.5, 2.0]))
                    d = draw(st.sampled_from([0.1, 0.2, 0.3, 0.35]))
                    conf = ""
                    if with_conf and draw(st.integers(0, 19)) > 0:
                        conf = f" {draw(st.sampled_from([0.1, 0.5, 0.55, 0.9, 1.0])):.2f}"
                    lines.append(f"{f} {ch} {t:.2f} {d:.2f} {draw(st.sampled_from(WORDS))}{conf}")
                    t += d
        systems.append(lines)
    method = draw(st.sampled_from(["meth1", "maxconf", "avgconf", "oracle"]))
    return systems, method, draw(st.sampled_from([0.0, 0.3, 0.5, 1.0])), draw(st.sampled_from([0.0, 0.2, 0.7])), \
        draw(st.booleans())


def _check_random(tmp_path, case):
    systems, method, alpha, null_conf, use_times = case
    if not systems[0]:
        return
    paths = []
    for k, lines in enumerate(systems):
        p = tmp_path / f"s{k}.ctm"
        p.write_text("".join(line + "\n" for line in lines))
        paths.append(str(p))
    expected = peer(paths, tmp_path, method, alpha, null_conf, use_times)
    if expected is None:  # rover refused or crashed: nothing to compare
        return
    assert rover_lines(paths, rover_method=method, alpha=alpha, null_conf=null_conf, use_times=use_times) == expected


@needs_rover
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ctm_sets())
def test_random_ctms_against_rover(tmp_path, case):
    _check_random(tmp_path, case)


@needs_rover
@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ctm_sets())
def test_random_ctms_against_rover_long(tmp_path, case):
    _check_random(tmp_path, case)
