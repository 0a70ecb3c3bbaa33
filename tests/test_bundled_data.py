"""The bundled recordings and transcriptions the demo and the recipes start from are where the code looks for
them (the demo itself is a slow test; this one is not)."""
from __future__ import annotations

import os

import pytest

from lattice_tools.pipelines.demo import _bundled


@pytest.mark.parametrize("corpus", ["librivox", "cards"])
def test_the_demo_finds_every_bundled_recording_and_its_transcription(corpus):
    audio, trn = _bundled(corpus)
    assert len(audio) >= 3 and all(os.path.isfile(a) and a.endswith(".wav") for a in audio)
    assert os.path.isfile(trn)
    keys = {line.rsplit("(", 1)[1].rstrip(")\n").strip() for line in open(trn, encoding="utf-8") if "(" in line}
    assert {os.path.basename(a)[:-4] for a in audio} <= keys
