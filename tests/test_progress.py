"""Long jobs show progress on a terminal only: a bar on stderr when stderr is a TTY, nothing in captured
output (logs, pipes, the test suite)."""
from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LATS = ROOT / "tests/data/kaldi/lats"


def _run(args, tty: bool, cwd) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", COLUMNS="100")
    cmd = [sys.executable, "-m", "lattice_tools", *map(str, args)]
    if not tty:
        proc = subprocess.run(cmd, capture_output=True, env=env, cwd=cwd, timeout=120)
        return proc.returncode, proc.stderr.decode()
    master, slave = pty.openpty()
    # a terminal of 0 columns (a fresh pty) gets an empty bar: give it a size
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave, env=env, cwd=cwd)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal (EIO)
                break
            if not data:
                break
            chunks.append(data)
        return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")
    finally:
        os.close(master)


COMMANDS = {
    "nbest": (["nbest", "-n", "5", LATS / "bundled.ark.gz", "-o", "x.ctm"], "nbest: 10lat"),
    "sausage": (["sausage", "-n", "5", LATS / "bundled.ark.gz", "-o", "x.ctm"], "sausage: 10lat"),
    "kws index": (["kws", "index", LATS / "bundled.ark.gz", "-o", "x.db"], "kws index: 10utt"),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_progress_on_a_terminal_only(name, tmp_path):
    args, bar = COMMANDS[name]
    rc, err = _run(args, True, tmp_path)
    assert rc == 0, err
    assert bar in err, err
    for f in ("x.ctm", "x.db"):
        if (tmp_path / f).exists():
            (tmp_path / f).unlink()
    rc, err = _run(args, False, tmp_path)
    assert rc == 0, err
    assert bar not in err and "\r" not in err, err
