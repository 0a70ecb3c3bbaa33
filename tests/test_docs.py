"""The documentation is tested: docs/cli.md is generated from the CLI and up to date, and the runnable
examples of every docs/*.md page run.

Rules for examples (see docs/guide.md, "Writing documentation"):

* every fenced ```python block runs (unless marked ```python notest: an illustration that cannot run,
  e.g. on LDC data); the blocks of one page share one namespace, in page order, in a fresh temporary
  working directory (a separate Python process per page), with the environment variables
  ``LATTICE_TOOLS_REPO`` (the source tree) set, and links to the repository's ``tests/`` and
  ``lattice_tools/`` folders, so paths written relative to the repository root (``tests/data/sctk/...``) work;
* a ```bash block runs only when marked ```bash test (then with ``bash -e`` in the same directory, in
  page order with the Python blocks); other ```bash/```sh blocks are illustrations (e.g. LDC paths);
* pages listed in SLOW_PAGES are marked ``slow`` (CI runs ``-m "not slow"``).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _recipe_helpers import REPO, tool_env

DOCS = REPO / "docs"
CLI_MD = DOCS / "cli.md"
# Pages whose examples take long (measured on the 2-core test machine under load: oracle.md 21.8 s,
# while all other pages together take about 35 s).
SLOW_PAGES: set[str] = {"oracle.md"}

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)\s*(.*)$")


def extract_blocks(text: str) -> list[dict]:
    """Fenced code blocks of a Markdown page: ``{"lang", "info", "code", "line"}`` (line = 1-based line
    of the first code line).  Nested/longer fences close only on a fence of the same kind and length."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, info = m.group(1), m.group(2).lower(), m.group(3).strip()
        body, j = [], i + 1
        while j < len(lines):
            close = re.match(r"^ {0,3}(`{3,}|~{3,})\s*$", lines[j])
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
                break
            body.append(lines[j])
            j += 1
        blocks.append({"lang": lang, "info": info, "code": "\n".join(body) + "\n", "line": i + 2})
        i = j + 1
    return blocks


def runnable(block: dict) -> str | None:
    """``"python"``, ``"bash"`` or None (not run)."""
    if {"notest", "no-test"} & set(block["info"].split()):
        return None
    if block["lang"] in ("python", "py", "python3"):
        return "python"
    if block["lang"] in ("bash", "sh", "shell") and block["info"].split()[:1] == ["test"]:
        return "bash"
    return None


# Runs the blocks of one page in order in one process; prints which block failed.
_RUNNER = r"""
import json, os, subprocess, sys, traceback
page, blocks = sys.argv[1], json.loads(sys.stdin.read())
ns = {"__name__": "__docs__"}
for b in blocks:
    where = f"{page}:{b['line']}"
    if b["kind"] == "bash":
        proc = subprocess.run(["bash", "-e", "-c", b["code"]], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"FAILED bash block at {where} (exit {proc.returncode})\n{proc.stdout}\n{proc.stderr}")
        continue
    try:
        exec(compile(b["code"], where, "exec"), ns)
    except SystemExit as exc:
        if exc.code not in (0, None):
            sys.exit(f"FAILED python block at {where}: SystemExit({exc.code!r})")
    except BaseException:
        sys.exit(f"FAILED python block at {where}\n{traceback.format_exc()}")
"""


def run_page(page: Path, workdir: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    blocks = [dict(b, kind=kind) for b in extract_blocks(page.read_text(encoding="utf-8"))
              if (kind := runnable(b)) is not None]
    env = tool_env()
    env["MPLBACKEND"] = "Agg"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["LATTICE_TOOLS_REPO"] = str(REPO)
    # Examples are written to run from the repository root (paths like tests/data/sctk/...); they run in a
    # scratch directory that links the repository's data folders, so they leave nothing in the clone.
    for name in ("tests", "lattice_tools"):
        link = Path(workdir) / name
        if not link.exists():
            link.symlink_to(REPO / name, target_is_directory=True)
    return subprocess.run([sys.executable, "-c", _RUNNER, page.name], input=json.dumps(blocks), cwd=workdir,
                          env=env, capture_output=True, text=True, timeout=timeout)


def _pages():
    out = []
    for page in [*sorted(DOCS.glob("*.md")), REPO / "README.md"]:
        if not any(runnable(b) for b in extract_blocks(page.read_text(encoding="utf-8"))):
            continue
        marks = [pytest.mark.slow] if page.name in SLOW_PAGES else []
        out.append(pytest.param(page, id=page.name, marks=marks))
    return out


@pytest.mark.parametrize("page", _pages())
def test_page_examples_run(page, tmp_path):
    proc = run_page(page, tmp_path)
    assert proc.returncode == 0, f"{page.name}: {proc.stderr[-4000:]}\n{proc.stdout[-2000:]}"


# ------------------------------------------------------------------------------------------------
# docs/cli.md
# ------------------------------------------------------------------------------------------------
def _generator():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_cli_reference
    finally:
        sys.path.pop(0)
    return gen_cli_reference


def test_cli_reference_is_up_to_date():
    text, _missing = _generator().render(allow_missing=True)
    current = CLI_MD.read_text(encoding="utf-8") if CLI_MD.exists() else ""
    assert current == text, ("docs/cli.md is out of date with the CLI; regenerate it with\n"
                             "    python scripts/gen_cli_reference.py")


def test_every_command_is_documented():
    from lattice_tools.cli import COMMANDS

    text, missing = _generator().render(allow_missing=True)
    assert not missing, f"commands listed in lattice_tools.cli.COMMANDS whose module does not load: {missing}"
    for name in COMMANDS:
        assert f"## lattice-tools {name}\n\n```text\nUsage: lattice-tools {name} " in text


# ------------------------------------------------------------------------------------------------
# the block extractor itself
# ------------------------------------------------------------------------------------------------
def test_extract_blocks_and_markers():
    page = ("# T\n```python\nx = 1\n```\ntext\n```bash\nrm -rf /\n```\n```bash test\necho ok\n```\n"
            "````markdown\n```python\nnot run\n```\n````\n```sh test\ntrue\n```\n```python notest\nx\n```\n")
    blocks = extract_blocks(page)
    assert [(b["lang"], b["info"], runnable(b)) for b in blocks] == [
        ("python", "", "python"), ("bash", "", None), ("bash", "test", "bash"), ("markdown", "", None),
        ("sh", "test", "bash"), ("python", "notest", None)]
    assert blocks[0]["code"] == "x = 1\n" and blocks[0]["line"] == 3
    assert blocks[3]["code"] == "```python\nnot run\n```\n"


def test_runner_reports_the_failing_block(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```python\nvalue = 41\n```\n\n```python\nassert value == 41\nvalue += 1\n```\n"
                    "```bash test\ntest -d .\n```\n```python\nassert value == 43, value\n```\n")
    work = tmp_path / "w"
    work.mkdir()
    proc = run_page(page, work)
    assert proc.returncode == 1
    assert "FAILED python block at p.md:13" in proc.stderr and "AssertionError: 42" in proc.stderr
