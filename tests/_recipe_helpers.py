"""Helpers for the recipe, egs and docs tests: run the shell stage scripts with the ``lattice-tools``
entry point of this interpreter on PATH."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECIPES = REPO / "recipes"
EGS = REPO / "egs" / "switchboard"
DATA = REPO / "lattice_tools" / "data"


def tool_env() -> dict:
    """The environment for recipe scripts: this interpreter's bin dir first on PATH (so
    ``lattice-tools`` and ``python3`` are the ones under test), no colour/progress noise."""
    env = dict(os.environ)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("LC_ALL", "C.UTF-8")
    return env


def have_cli() -> bool:
    return shutil.which("lattice-tools", path=tool_env()["PATH"]) is not None


def run(args, cwd=None, check=True, timeout=600, **kw) -> subprocess.CompletedProcess:
    """Run a command (list) with :func:`tool_env`; on failure show its output in the assertion."""
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=tool_env(), capture_output=True, text=True,
                          timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {proc.returncode}\n--- stdout\n{proc.stdout}"
                             f"\n--- stderr\n{proc.stderr}")
    return proc


def tree_digest(root: Path, pattern: str = "**/*", exclude=("log", "split")) -> dict:
    """``{relative path: sha256}`` of the files under ``root`` (logs and job splits excluded: they
    name jobs, which legitimately differ between --nj values)."""
    out = {}
    for p in sorted(Path(root).glob(pattern)):
        rel = p.relative_to(root)
        if p.is_file() and not any(part in exclude or part.startswith("split") for part in rel.parts[:-1]):
            out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def mtimes(root: Path) -> dict:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(Path(root).rglob("*")) if p.is_file()}


def sclite_binary() -> str | None:
    """NIST sclite (Debian sctk installs it under /usr/lib/sctk/bin)."""
    found = shutil.which("sclite")
    if found:
        return found
    return "/usr/lib/sctk/bin/sclite" if os.path.exists("/usr/lib/sctk/bin/sclite") else None
