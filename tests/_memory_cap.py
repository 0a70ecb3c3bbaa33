"""Run a ``lattice-tools`` command in a subprocess whose address space is capped (RLIMIT_AS), to prove that a
memory budget holds on a path: past the cap the process cannot allocate at all, so a command that only
*checks* its budget after allocating fails with an out-of-memory line or a crash instead of the budget
error the test expects.

    result = run_capped(["nbest", "-n", "100000", "--max-memory", "150M", ...], cap="400M")
    assert_budget_refusal(result)          # exit 2, one line, names --max-memory

The cap counts virtual memory (what RLIMIT_AS limits), which is above resident memory by the
interpreter's and the libraries' mappings: :data:`BASE_MARGIN` covers that on Linux/x86-64 for
``python -m lattice_tools`` with numpy (measured: a small ``nbest`` runs under a 200 MB cap).
Give ``cap`` as the budget plus that margin plus the overshoot the path is allowed.
"""
from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Address space that ``python -m lattice_tools`` maps beyond its resident memory (interpreter, numpy,
#: click, the compiled kernels), with room to spare.
BASE_MARGIN = 250 << 20

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(size: int | str) -> int:
    if isinstance(size, int):
        return size
    s = size.strip().upper()
    return int(float(s[:-1]) * _UNITS[s[-1]]) if s[-1] in _UNITS else int(s)


@dataclass
class CappedResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss: int  # bytes: the child's maximum resident set size (getrusage of the children)

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.strip()]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def run_capped(args: list[str], cap: int | str, *, timeout: float = 60, input: bytes | None = None,
               cwd: str | os.PathLike | None = None) -> CappedResult:
    """``python -m lattice_tools *args`` with its address space capped at ``cap`` bytes ("400M" works);
    returns its exit status, outputs, wall time and peak resident memory."""
    limit = parse_size(cap)

    def cap_address_space():  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".maxrss") as peak:
        t0 = time.monotonic()
        # a small Python process runs the command and reports its peak: a child forked from this (large)
        # test process would report this one's resident memory as its own peak (Linux carries it over)
        proc = subprocess.Popen([sys.executable, "-c", _REPORT_PEAK, peak.name, sys.executable, "-m", "lattice_tools",
                                 *map(str, args)],
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=out, stderr=err, env=_env(), cwd=cwd, preexec_fn=cap_address_space,
                                start_new_session=True)
        if input is not None:
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(input)
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        seconds = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        text = peak.read().strip()
        return CappedResult(returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                            seconds, int(text) * 1024 if text else 0)


# argv: peak file, command...: run the command, write its peak resident memory (KB), exit with its status
_REPORT_PEAK = """
import os, signal, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def assert_budget_refusal(result: CappedResult, option: str = "--max-memory") -> None:
    """The command stopped cleanly on its budget: exit 2 and one error line that names ``option``
    (not an out-of-memory line, not a traceback, not a crash)."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = result.error_lines
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith("lattice-tools: error:"), lines
    assert option in lines[0], lines[0]
    assert "out of memory" not in lines[0], lines[0]


def assert_clean_refusal(result: CappedResult, *words: str) -> None:
    """The command refused its input cleanly: exit 2, one error line containing every one of ``words``."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = result.error_lines
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith("lattice-tools: error:"), lines
    assert "out of memory" not in lines[0], lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])
