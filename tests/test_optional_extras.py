"""The core install and its extras: what needs ``[decode]`` or ``[plots]`` says so on one line (exit 2)
when the package is missing, and the core (numpy, click, kaldialign, networkx, tqdm) scores, oracles and
searches without them."""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
INPUTS = REPO / "tests" / "data" / "inputs"
CARDS_TRN = REPO / "lattice_tools" / "data" / "cards" / "transcription.trn"
SCLITE_DATA = REPO / "tests" / "data" / "sctk" / "sclite-testdata"

# Runs the command line with the named top-level packages made unimportable (None in sys.modules makes
# `import X` raise ImportError), as on a machine where the extra is not installed.
_WITHOUT = """
import sys
for name in {hidden!r}:
    sys.modules[name] = None
from lattice_tools.cli import main
sys.argv = ["lattice-tools"] + sys.argv[1:]
main()
"""


def _run_without(hidden, *args, cwd):
    return subprocess.run([sys.executable, "-c", _WITHOUT.format(hidden=list(hidden)), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_plots_without_matplotlib_name_the_extra(tmp_path):
    r = _run_without(["matplotlib"], "study", f"cards={INPUTS / 'cards.ark.gz'}", "--words", INPUTS / "words.txt",
                     "-r", CARDS_TRN, "--allow-missing", "-o", tmp_path / "st", "-n", "1", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "lattice-tools[plots]" in r.stderr and "--no-plots" in r.stderr and "Traceback" not in r.stderr
    r = _run_without(["matplotlib"], "study", f"cards={INPUTS / 'cards.ark.gz'}", "--words", INPUTS / "words.txt",
                     "-r", CARDS_TRN, "--allow-missing", "-o", tmp_path / "st2", "-n", "1", "--no-plots",
                     cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "st2" / "study.json").exists()


def test_decoding_without_pocketsphinx_names_the_extra(tmp_path):
    wav = REPO / "lattice_tools" / "data" / "cards" / "001.wav"
    r = _run_without(["pocketsphinx"], "decode", wav, "-o", tmp_path / "lat", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "lattice-tools[decode]" in r.stderr and "Traceback" not in r.stderr


def test_core_commands_run_without_the_extras(tmp_path):
    hidden = ["matplotlib", "pocketsphinx", "kaldifst", "kaldi_decoder", "torch", "k2"]
    r = _run_without(hidden, "score", "-r", SCLITE_DATA / "lvc_ref.stm", "-h", SCLITE_DATA / "lvc_hyp.ctm",
                     cwd=tmp_path)
    assert r.returncode == 0 and "%WER 52.67 [ 937 / 1779" in r.stdout, r.stderr
    r = _run_without(hidden, "oracle", INPUTS / "cards.ark.gz", "--words", INPUTS / "words.txt", "-r", CARDS_TRN,
                     "--allow-missing", "--representation", "lattice", cwd=tmp_path)
    assert r.returncode == 0 and "%WER" in r.stdout, r.stderr
    r = _run_without(hidden, "kws", "index", INPUTS / "cards.ark.gz", "--words", INPUTS / "words.txt",
                     "-o", tmp_path / "idx.db", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_a_fresh_core_install_scores_oracles_and_indexes(tmp_path):
    """``pip install .`` (no extras) into a new virtual environment, then the core commands."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([py, "-m", "pip", "install", "-q", str(REPO)], check=True, timeout=900)
    installed = subprocess.run([py, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                               check=True).stdout.lower()
    for extra in ("matplotlib", "pocketsphinx", "kaldifst", "kaldi-decoder"):
        assert f"{extra}==" not in installed
    cli = env_dir / "bin" / "lattice-tools"
    r = subprocess.run([cli, "score", "-r", SCLITE_DATA / "lvc_ref.stm", "-h", SCLITE_DATA / "lvc_hyp.ctm"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and "%WER 52.67 [ 937 / 1779" in r.stdout, r.stderr
    r = subprocess.run([cli, "oracle", INPUTS / "cards.ark.gz", "--words", INPUTS / "words.txt", "-r", CARDS_TRN,
                        "--allow-missing"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and "%WER" in r.stdout, r.stderr
    r = subprocess.run([cli, "decode", REPO / "lattice_tools" / "data" / "cards" / "001.wav", "-o", tmp_path / "l"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and "lattice-tools[decode]" in r.stderr, r.stderr
