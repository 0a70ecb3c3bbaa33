"""Every ```python block of docs/metrics.md runs and prints exactly its ``# -> ...`` lines."""
# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import contextlib
import io
import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "metrics.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_doc_has_examples():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_block_prints_what_it_says(code):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, str(DOC), "exec"), {})
    printed = [" ".join(ln.split()) for ln in buf.getvalue().splitlines()]
    expected = [" ".join(m.split()) for m in re.findall(r"#\s*->\s*(.*)$", code, flags=re.M)]
    if expected:
        assert printed == expected
