"""Where the tests' vendored third-party data lives (see tests/data/README.md for provenance)."""
from pathlib import Path

TEST_DATA = Path(__file__).resolve().parent / "data"
