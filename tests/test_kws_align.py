"""Reference word times by forced alignment with pocketsphinx: the bundled
recordings aligned to their transcripts; every reference word aligned; times agree with the decoder's
1-best where the words agree; the CTM/RTTM/ECF outputs read back; wrong, incomplete and out-of-dictionary
transcripts are named errors (exit 2, no output file)."""
from __future__ import annotations

import pytest
from _recipe_helpers import DATA, have_cli, run

from lattice_tools.core.errors import FormatError, MismatchError, SymbolError

pytest.importorskip("pocketsphinx")

DECODE_CTM = DATA.parent.parent / "tests" / "data" / "kaldi_kws" / "bundled.decode.ctm"
LIBRIVOX_0880 = DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav"


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory):
    path = tmp_path_factory.mktemp("align") / "all.trn"
    path.write_text((DATA / "librivox" / "transcription.trn").read_text() + (DATA / "cards" / "transcription.trn").read_text())
    return path


@pytest.fixture(scope="module")
def aligned(transcripts):
    from lattice_tools.decode.align import align_audio

    return align_audio([str(p) for p in sorted((DATA / "librivox").glob("*.wav")) + sorted((DATA / "cards").glob("*.wav"))],
                       str(transcripts))


def test_every_reference_word_is_aligned(aligned, transcripts):
    from lattice_tools.decode.align import read_transcripts

    texts = read_transcripts(str(transcripts))
    assert len(aligned) == 10
    for u in aligned:
        assert [w.word for w in u.words] == texts[u.key].split(), u.key
        # increasing, non-overlapping, inside the audio
        for a, b in zip(u.words, u.words[1:], strict=False):
            assert a.start + a.dur <= b.start + 1e-9
        assert 0 <= u.words[0].start and u.words[-1].start + u.words[-1].dur <= u.duration + 0.011
        assert all(w.dur > 0 for w in u.words)


def test_alignment_agrees_with_the_decoders_one_best(aligned):
    """Where the forced alignment and pocketsphinx's 1-best (tests/data/kaldi_kws/bundled.decode.ctm)
    have the same words, their start times agree (measured: 74 of 92 words paired, median 0, max 0.18 s)."""
    from lattice_tools.decode.align import word_time_agreement
    from lattice_tools.io.transcripts.ctm import read_ctm

    hyp = [(w.file, w.start, w.duration, w.word) for w in read_ctm(str(DECODE_CTM))]
    ref = [(w.key, w.start, w.dur, w.word) for u in aligned for w in u.words]
    check = word_time_agreement(ref, hyp)
    assert check["reference_words"] == 92
    assert check["pairs"] >= 70
    assert check["start_abs_median"] <= 0.02 and check["start_abs_p90"] <= 0.05
    assert check["start_abs_max"] <= 0.25 and check["end_abs_max"] <= 0.35
    # and a shifted hypothesis is measured as shifted (the check can fail)
    shifted = word_time_agreement(ref, [(k, s + 0.3, d, w) for k, s, d, w in hyp])
    assert shifted["start_abs_median"] >= 0.28


def test_check_ctm_words_without_a_time_are_left_out(tmp_path):
    """`kws align --check-ctm` compares the CTM's timed words: a `*` start or duration leaves the word out (a `*`
    duration used to reach `start + None` and end the command with a TypeError)."""
    from lattice_tools.decode.align import ctm_word_times, word_time_agreement

    ctm = tmp_path / "hyp.ctm"
    ctm.write_text("u 1 0.50 0.20 THE\nu 1 0.70 * RED\nu 1 * * SAND\nu 1 1.10 0.30 SEED\n")
    hyp = ctm_word_times(str(ctm))
    assert hyp == [("u", 0.5, 0.2, "THE"), ("u", 1.1, 0.3, "SEED")]
    ref = [("u", 0.5, 0.2, "THE"), ("u", 0.7, 0.3, "RED"), ("u", 1.0, 0.4, "SEED")]
    check = word_time_agreement(ref, hyp)
    assert check["pairs"] == 2 and check["start_abs_max"] == pytest.approx(0.1)


@pytest.mark.skipif(not have_cli(), reason="the lattice-tools entry point is not installed")
def test_cli_writes_ctm_rttm_ecf(transcripts, tmp_path, aligned):
    from lattice_tools.io.keyword_search.ecf import read_ecf
    from lattice_tools.io.keyword_search.rttm import check_overlaps, lexemes_from_ctm, read_rttm

    cards = sorted((DATA / "cards").glob("*.wav"))
    proc = run(["lattice-tools", "kws", "align", *cards, "-t", transcripts, "-o", tmp_path / "ref.ctm",
                "--rttm", tmp_path / "ref.rttm", "--ecf", tmp_path / "ecf.xml", "--json", "-"])
    assert '"utterances": 5' in proc.stdout
    rttm = read_rttm(str(tmp_path / "ref.rttm"))
    lex = [r for r in rttm if r.type == "LEXEME"]
    check_overlaps(rttm, str(tmp_path / "ref.rttm"))
    assert [r.ortho for r in lex] == " ".join(
        line.rsplit("(", 1)[0] for line in (DATA / "cards" / "transcription.trn").read_text().splitlines()).split()
    assert [(r.file, r.tbeg, r.dur, r.ortho) for r in lexemes_from_ctm(str(tmp_path / "ref.ctm"))] == \
        [(r.file, r.tbeg, r.dur, r.ortho) for r in lex]
    expect = {(w.key, w.start, w.word) for u in aligned if u.key in {p.stem for p in cards} for w in u.words}
    assert {(r.file, r.tbeg, r.ortho) for r in lex} == expect  # the CLI is the function
    ecf = read_ecf(str(tmp_path / "ecf.xml"))
    assert sorted(e.file for e in ecf.excerpts) == [p.stem for p in cards]
    assert all(e.tbeg == 0 and e.dur > 1 for e in ecf.excerpts)


def test_wrong_transcript_is_refused(tmp_path):
    from lattice_tools.decode.align import align_audio

    with pytest.raises(FormatError, match="cannot be aligned.*decoder hears"):
        align_audio(str(LIBRIVOX_0880), {LIBRIVOX_0880.stem: "ten of clubs"})


def test_incomplete_transcript_is_refused():
    from lattice_tools.decode.align import align_audio

    with pytest.raises(FormatError, match="seven of hearts"):
        align_audio(str(DATA / "cards" / "005.wav"), {"005": "eight of spades four of clubs"})


def test_out_of_dictionary_and_missing_transcripts():
    from lattice_tools.decode.align import align_audio

    with pytest.raises(SymbolError, match="clubz"):
        align_audio(str(DATA / "cards" / "001.wav"), {"001": "ten of clubz"})
    with pytest.raises(MismatchError, match="without a transcript"):
        align_audio(str(DATA / "cards" / "001.wav"), {"002": "four queen of clubs"})
    with pytest.raises(FormatError, match="empty"):
        align_audio(str(DATA / "cards" / "001.wav"), {"001": ""})


@pytest.mark.skipif(not have_cli(), reason="the lattice-tools entry point is not installed")
def test_cli_error_exit_2_and_no_output(tmp_path):
    trn = tmp_path / "bad.trn"
    trn.write_text(f"ten of clubs ({LIBRIVOX_0880.stem})\n")
    proc = run(["lattice-tools", "kws", "align", LIBRIVOX_0880, "-t", trn, "-o", tmp_path / "ref.ctm",
                "--rttm", tmp_path / "ref.rttm"], check=False)
    assert proc.returncode == 2 and "cannot be aligned" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "ref.ctm").exists() and not (tmp_path / "ref.rttm").exists()
