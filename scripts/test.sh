#!/usr/bin/env bash
# The README's test command: install lattice-tools with its test extras and run the test suite.
#  * Debian packages the tests use (sctk = NIST's sclite/csrfilt for cross-checks, sox, espeak-ng for the
#    keyword-search recipe's synthesized speech) are installed
#    when run as root on a Debian-like machine; otherwise those cross-checks are skipped.
#  * torch 2.13.0 (CPU) is pinned before anything else so pip never pulls a multi-GB CUDA build.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -m slow`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! { { command -v sclite >/dev/null || [ -x /usr/lib/sctk/bin/sclite ]; } && command -v espeak-ng >/dev/null; } ; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq sctk sox espeak-ng >/dev/null
fi
python -m pip install -q "torch==2.13.0" || echo "note: torch 2.13.0 is not installable here; torch tests will be skipped"
python -m pip install -q -e '.[test,decode,plots,lhotse,metrics]'
python -m pytest -q -m "not slow" "$@"
