#!/usr/bin/env bash
# Install lattice-tools with its test extras into the current Python and run the test suite.
# torch 2.13.0 (CPU) is only needed for the optional torch paths; pin it so pip never pulls a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q "torch==2.13.0" || echo "note: torch 2.13.0 not installable here; torch tests will be skipped"
python -m pip install -q -e '.[test]'
python -m pytest -q -m "not slow" "$@"
