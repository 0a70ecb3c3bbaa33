"""Benchmark: where the time of a small lattice-tools job goes -- the fixed costs of a process.

Each row is a whole process, timed as CPU seconds (user + system, children included), best of
``--rounds``, all rows interleaved round by round (the machine may be shared).  A stage's cost is the
difference between two rows: e.g. numpy = ``import numpy`` - ``pass``.  The job rows run on kGraph's
real Kaldi archive (tests/data/kaldi/lats/kgraph_lat.1: 10 utterances, 1,876 arcs, binary), where
Kaldi's ``lattice-best-path`` / ``lattice-mbr-decode`` take about 0.01 s in all.

Python compiles a module's source each time it is imported when no ``.pyc`` can be written
(``PYTHONDONTWRITEBYTECODE=1``, a read-only tree); ``pip install`` writes them, so users do not pay
that.  The rows run with ``.pyc`` files (in ``--workdir``, via ``PYTHONPYCACHEPREFIX``), and one row
shows the cost without them.

Usage::

    python bench/bench_startup.py [--rounds 10] [--workdir /tmp/bench_startup]

Measured 2026-11-26 (2 shared cores, --rounds 10): see docs/kaldi.md ("Where the time of a small job goes").

Measured 2026-11-29 (2 shared cores under load, ``--rounds 8``, CPU s, best of 8)::

    0.009  python -S -c pass (no site module)
    0.039  python -c pass
    0.108  python -c 'import numpy'
    0.115  python -c 'import numpy, click'
    0.058  python -c 'import click'
    0.059  lattice-tools --help
    0.063  lattice-tools --help, no .pyc
    0.138  imports of info
    0.137  info on a small SLF
    0.172  info on a small SLF, no .pyc

``--help`` is at its floor: it costs what ``python -c 'import click'`` costs (58-59 ms; it imports click,
``lattice_tools.core.errors`` and the lazy command table, no command module; click itself pulls ``uuid``,
``platform``, ``datetime`` and ``inspect``).  30 ms of that floor are this machine's ``site`` hooks (the
``.pth`` files of an editable install and a CA bundle: ``python -S -c pass`` 9 ms, ``python -c pass``
39 ms); where no ``.pyc`` files can be written (``PYTHONDONTWRITEBYTECODE=1``, as in this machine's shells)
it is 63-75 ms.  ``info`` cannot reach 60 ms: importing numpy alone costs 69 ms on top of ``python -c
pass`` (``python -X importtime``: its largest own costs are ``numpy._core._add_newdocs`` and the typing
modules ``numpy._typing._dtype_like`` / ``_array_like`` that ``numpy.lib`` and ``numpy.linalg`` import),
so its floor is python + numpy + click = 115 ms; lattice-tools' modules for ``info`` (the SLF reader,
the Lattice type, the statistics) and the work add 22 ms.  Avoiding numpy in ``info`` would need a second,
pure-Python lattice reader and Lattice type: not done (one engine per format).
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARCHIVE = f"ark:{REPO / 'tests/data/kaldi/lats/kgraph_lat.1'}"
PY = sys.executable
#: a small real lattice (Sphinx-III's AN4 SLF, 3 kB; tests/data/slf/PROVENANCE.md)
SMALL = str(REPO / "tests/data/slf/sphinx3_pittsburgh.slf")

# (label, command): python -c snippets and lattice-tools jobs
ROWS = [
    ("python -S -c pass (no site module)", [PY, "-S", "-c", "pass"]),
    ("python -c pass", [PY, "-c", "pass"]),
    ("python -c 'import numpy'", [PY, "-c", "import numpy"]),
    ("python -c 'import numpy, click'", [PY, "-c", "import numpy, click"]),
    ("python -c 'import click'", [PY, "-c", "import click"]),
    ("lattice-tools --help", [PY, "-m", "lattice_tools.cli", "--help"]),
    ("lattice-tools --help, no .pyc", [PY, "-m", "lattice_tools.cli", "--help"]),
    ("imports of info", [PY, "-c", "import lattice_tools.cli, lattice_tools.cli.lattices, lattice_tools.io.lattices.slf, "
                         "lattice_tools.algorithms.statistics"]),
    ("info on a small SLF", [PY, "-m", "lattice_tools.cli", "info", SMALL]),
    ("info on a small SLF, no .pyc", [PY, "-m", "lattice_tools.cli", "info", SMALL]),
    ("imports of best-path", [PY, "-c", "import lattice_tools.cli, lattice_tools.cli.latbin, lattice_tools.pipelines.latbin, "
                              "lattice_tools.io.lattices.kaldi, lattice_tools.algorithms.kaldi_ops"]),
    ("best-path on kGraph", [PY, "-m", "lattice_tools.cli", "best-path", ARCHIVE, "--acoustic-scale", "0.1",
                             "--tra", os.devnull]),
    ("best-path on kGraph, no .pyc", [PY, "-m", "lattice_tools.cli", "best-path", ARCHIVE, "--acoustic-scale",
                                      "0.1", "--tra", os.devnull]),
    ("imports of mbr-decode", [PY, "-c", "import lattice_tools.cli, lattice_tools.cli.latbin, "
                                       "lattice_tools.pipelines.latbin, lattice_tools.io.lattices.kaldi, "
                                       "lattice_tools.alternatives.sausages"]),
    ("mbr-decode on kGraph", [PY, "-m", "lattice_tools.cli", "mbr-decode", ARCHIVE, "--acoustic-scale", "0.1",
                              "--sausage-stats", os.devnull]),
]


def cpu_seconds(cmd: list[str], env: dict) -> float:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        sys.exit(f"bench_startup: {' '.join(cmd)} failed (exit {res.returncode}): {res.stderr[-300:]}")
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--workdir", default="/tmp/bench_startup")
    args = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with_pyc = dict(base, PYTHONPYCACHEPREFIX=str(Path(args.workdir) / "pycache"))
    without_pyc = dict(base, PYTHONDONTWRITEBYTECODE="1")  # (installed packages keep their .pyc files)
    envs = [without_pyc if "no .pyc" in label else with_pyc for label, _ in ROWS]
    for (_, cmd), env in zip(ROWS, envs, strict=True):  # warm-up: .pyc files, page cache
        cpu_seconds(cmd, env)
    best = [float("inf")] * len(ROWS)
    for _ in range(args.rounds):
        for i, ((_, cmd), env) in enumerate(zip(ROWS, envs, strict=True)):
            best[i] = min(best[i], cpu_seconds(cmd, env))
    print(f"CPU seconds, best of {args.rounds} (whole process)")
    for (label, _), t in zip(ROWS, best, strict=True):
        print(f"{t:7.3f}  {label}")


if __name__ == "__main__":
    main()
