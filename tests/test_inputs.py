"""How commands take their inputs: transcript formats detected from the
content, one word table and time base for every lattice-reading command, several inputs, lattices
without times, CTM channels, and duplicate or missing ids -- each case a clear refusal or the right
number, never a silent wrong WER.  Data: tests/data/inputs (see its PROVENANCE.md)."""
from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lattice_tools.cli import main
from lattice_tools.core.errors import FormatError, MismatchError

DATA = Path(__file__).resolve().parent / "data" / "inputs"
LAT3, LAT4 = str(DATA / "003.lat"), str(DATA / "004.lat")
ARK = f"ark:gunzip -c {DATA / 'cards.ark.gz'}|"
WORDS = str(DATA / "words.txt")
STM = "003 1 spk3 0.0 5.0 seven of clubs\n004 1 spk4 0.0 5.0 five five\n"
TEXT = "003 seven of clubs\n004 five five\n"


def _cli(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def _run(*args, stdin: bytes | None = None):
    """A real process (real stdin) running the CLI."""
    code = "import sys; from lattice_tools.cli import main; sys.argv[0] = 'lattice-tools'; main()"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], input=stdin, capture_output=True)


def _wer_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("%WER"))


@pytest.fixture()
def refs(tmp_path):
    (tmp_path / "stm").write_text(STM)                 # Kaldi's data/<set>/stm
    (tmp_path / "ref.stm.filt").write_text(STM)        # csrfilt's output name
    (tmp_path / "text").write_text(TEXT)               # Kaldi's data/<set>/text
    d = tmp_path / "lats"                              # 003.lat and 004.lat as one SLF directory
    d.mkdir()
    for p in (LAT3, LAT4):
        (d / Path(p).name).write_bytes(Path(p).read_bytes())
    return tmp_path


# ------------------------------------------------------------------------------------------------
# 1. reference / hypothesis format from the content
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["stm", "ref.stm.filt", "text"])
def test_oracle_reads_references_without_a_telling_extension(refs, name):
    r = _cli("oracle", "-r", refs / name, refs / "lats")
    assert r.exit_code == 0, r.output
    # read as "key words" the STM gave 61.54 % [ 8 / 13 ], rc 0 ("1 spk3 0.0 5.0 seven of clubs", ...)
    assert _wer_line(r.output).startswith("%WER 0.00 [ 0 / 5,")


def test_detection_rule(refs, tmp_path):
    from lattice_tools.io.transcripts.detect import detect_transcript_format

    assert detect_transcript_format(str(refs / "stm")) == "stm"
    assert detect_transcript_format(str(refs / "text")) == "text"
    (tmp_path / "r").write_text("seven of clubs (spk-003)\nfive five (spk-004)\n")
    assert detect_transcript_format(str(tmp_path / "r")) == "trn"
    (tmp_path / "c").write_text("003 1 0.06 0.51 seven 0.97\n003 1 0.57 0.2 of\n")
    assert detect_transcript_format(str(tmp_path / "c"), allowed=("ctm", "trn", "text")) == "ctm"
    # a CTM given where only references are read: named, not read as "key words"
    with pytest.raises(FormatError, match="looks like a CTM.*--ref-format"):
        detect_transcript_format(str(tmp_path / "c"), allowed=("stm", "trn", "text"))
    # five fields that are an STM segment (numeric speaker, empty text) and a CTM word alike
    (tmp_path / "amb").write_text("f 1 2 0 1\n")
    with pytest.raises(FormatError, match=r"several formats \(stm, ctm\).*--ref-format"):
        detect_transcript_format(str(tmp_path / "amb"))
    assert detect_transcript_format(str(tmp_path / "amb"), "stm") == "stm"
    # the extension still decides when it speaks
    (tmp_path / "x.trn").write_text(STM)
    assert detect_transcript_format(str(tmp_path / "x.trn")) == "trn"
    (tmp_path / "empty").write_text(";; nothing\n\n")
    with pytest.raises(FormatError, match="--ref-format"):
        detect_transcript_format(str(tmp_path / "empty"))
    # an empty hypothesis is what its reference pairs with (all deletions, not a format error)
    assert detect_transcript_format(str(tmp_path / "empty"), allowed=("ctm", "trn"), empty="ctm") == "ctm"


def test_score_reads_filtered_stm_and_ctm_from_stdin(refs, tmp_path):
    ctm = tmp_path / "s.ctm"
    assert _cli("sausage", LAT3, LAT4, "-n", "3", "--ctm", ctm).exit_code == 0
    r = _cli("score", "-r", refs / "ref.stm.filt", "-h", ctm)          # used to blame the hypothesis
    assert r.exit_code == 0, r.output
    assert "%WER 0.00 [ 0 / 5," in r.output
    # '-h -' used to be taken as trn; a real pipe, plain and gzipped
    for data in (ctm.read_bytes(), gzip.compress(ctm.read_bytes())):
        p = _run("score", "-r", refs / "stm", "-h", "-", stdin=data)
        assert p.returncode == 0, p.stderr
        assert b"%WER 0.00 [ 0 / 5," in p.stdout
    p = _run("score", "-r", "-", "-h", ctm, stdin=STM.encode())
    assert p.returncode == 0 and b"%WER 0.00 [ 0 / 5," in p.stdout, p.stderr
    r = _cli("score", "-r", refs / "ref.stm.filt", "-h", "-", input=ctm.read_text())
    assert r.exit_code == 0 and "%WER 0.00 [ 0 / 5," in r.output, r.output


def test_score_accepts_kaldi_text(refs, tmp_path):
    (tmp_path / "hyp.trn").write_text("seven of clubs (003)\nfive (004)\n")
    (tmp_path / "hyp").write_text("003 seven of clubs\n004 five\n")
    for hyp in ("hyp.trn", "hyp"):
        r = _cli("score", "-r", refs / "text", "-h", tmp_path / hyp, "--id-type", "sp")
        assert r.exit_code == 0, r.output
        assert "%WER 20.00 [ 1 / 5, 0 ins, 1 del, 0 sub ]" in r.output
    r = _cli("score", "-r", refs / "text", "-h", tmp_path / "hyp", "--ref-format", "trn")
    assert r.exit_code == 2 and "(utterance-id)" in r.output
    # a GLM filters Kaldi text as it filters trn (both sides)
    (tmp_path / "g.glm").write_text(";; t\n* case_sensitive = 'F'\nSEVEN => SIX\n")
    (tmp_path / "six").write_text("003 six of clubs\n004 five five\n")
    r = _cli("score", "-r", refs / "text", "-h", tmp_path / "six", "--id-type", "sp", "--glm", tmp_path / "g.glm")
    assert r.exit_code == 0 and "%WER 0.00 [ 0 / 5," in r.output, r.output


def test_oracle_text_reference_with_glm(refs, tmp_path):
    """The GLM reaches both sides: the reference's SEVEN and the 1-best's seven both become SIX (as
    'score --glm' does); a whole lattice is no transcript, so a GLM with it is refused, not applied
    to the reference alone (which scored 20 % here)."""
    (tmp_path / "g.glm").write_text(";; t\n* case_sensitive = 'F'\nSEVEN => SIX\n")
    r = _cli("oracle", "-r", refs / "text", "--glm", tmp_path / "g.glm", LAT3, LAT4)
    assert r.exit_code == 2 and "GLM cannot be applied to a whole lattice" in r.output, r.output
    r = _cli("oracle", "-r", refs / "text", "--glm", tmp_path / "g.glm", LAT3, LAT4, "--representation", "1best")
    assert r.exit_code == 0, r.output
    assert "%WER 0.00 [ 0 / 5, 0 ins, 0 del, 0 sub ]" in r.output


# ------------------------------------------------------------------------------------------------
# 2. word table, several inputs, frame shift
# ------------------------------------------------------------------------------------------------
def test_kaldi_archive_needs_its_word_table(refs):
    r = _cli("oracle", "-r", refs / "text", ARK)
    assert r.exit_code == 2 and "--words" in r.output          # used to print 100 % WER, rc 0
    r = _cli("oracle", "-r", refs / "text", "--words", WORDS, ARK)
    assert r.exit_code == 0, r.output
    assert "%WER 0.00 [ 0 / 5," in r.output


def test_icefall_pt_needs_its_word_table_and_has_no_times(tmp_path):
    """A k2 word acceptor saved the icefall way: ids only, and no frame times."""
    k2 = DATA.parent / "k2-fixtures"
    pt, words = k2 / "word_lattice.pt", k2 / "words.txt"
    (tmp_path / "text").write_text("0 SEE THE RED SAND\n")
    r = _cli("oracle", "-r", tmp_path / "text", pt)
    assert r.exit_code == 2 and "--words" in r.output           # used to print 100 % WER, rc 0
    r = _cli("oracle", "-r", tmp_path / "text", "--words", words, pt)
    assert r.exit_code == 0 and "%WER 0.00 [ 0 / 4," in r.output, r.output
    r = _cli("phrases", pt, "--words", words, "--ctm", tmp_path / "p.ctm")
    assert r.exit_code == 2 and "--allow-untimed" in r.output


def test_alternatives_of_bare_ids_warn(tmp_path):
    r = _cli("nbest", ARK, "-n", "1", "--ctm", tmp_path / "x.ctm")
    assert r.exit_code == 0 and "warning" in r.output and "--words" in r.output
    r = _cli("nbest", ARK, "-n", "1", "--ctm", tmp_path / "x.ctm", "--words", WORDS)
    assert r.exit_code == 0 and "warning" not in r.output


def test_bare_ids_against_an_id_reference_are_fine(tmp_path):
    ids = {w: i for w, i in (line.split() for line in open(WORDS))}
    (tmp_path / "ids").write_text("".join(f"{k} {' '.join(ids[w] for w in t.split())}\n"
                                          for k, t in (line.split(None, 1) for line in TEXT.splitlines())))
    r = _cli("oracle", "-r", tmp_path / "ids", ARK)
    assert r.exit_code == 0, r.output
    assert "%WER 0.00 [ 0 / 5," in r.output


@pytest.mark.parametrize("command", ["info", "convert", "nbest", "sausage", "phrases", "oracle", "study"])
def test_every_lattice_command_takes_the_same_input_options(command):
    r = _cli(command, "--help")
    assert r.exit_code == 0
    for option in ("--words", "--frame-shift", "--frame-subsampling-factor"):
        assert option in r.output, (command, option)
    assert "--symbols" not in r.output


def test_convert_files_one_by_one_writes_a_table_for_all(tmp_path, refs):
    """`convert a.lat b.lat ark,t:out --write-words w` used to write the last file's table only."""
    out, w = tmp_path / "out.ark", tmp_path / "w.txt"
    r = _cli("convert", LAT3, LAT4, f"ark,t:{out}", "--write-words", w)
    assert r.exit_code == 0, r.output
    r = _cli("oracle", "-r", refs / "text", "--words", w, f"ark:{out}")
    assert r.exit_code == 0, r.output
    assert "%WER 0.00 [ 0 / 5," in r.output
    # the same files as a directory give the same table
    d = tmp_path / "d"
    d.mkdir()
    for p in (LAT3, LAT4):
        (d / Path(p).name).write_bytes(Path(p).read_bytes())
    assert _cli("convert", d, f"ark,t:{tmp_path / 'out2.ark'}", "--write-words", tmp_path / "w2.txt").exit_code == 0
    assert (tmp_path / "w2.txt").read_text() == w.read_text()
    assert (tmp_path / "out2.ark").read_text() == out.read_text()


def _ctm_times(path):
    return [(float(p[2]), float(p[3])) for p in (line.split() for line in open(path)) if p[2] != "*"]


def test_frame_subsampling_factor_scales_times(tmp_path):
    base, chain, explicit = (tmp_path / f"{n}.ctm" for n in ("base", "chain", "explicit"))
    common = ["nbest", ARK, "--words", WORDS, "-n", "1"]
    assert _cli(*common, "--ctm", base).exit_code == 0
    assert _cli(*common, "--ctm", chain, "--frame-subsampling-factor", "3").exit_code == 0
    assert _cli(*common, "--ctm", explicit, "--frame-shift", "0.03").exit_code == 0
    b, c = _ctm_times(base), _ctm_times(chain)
    assert b and len(b) == len(c)
    assert all(abs(3 * x - y) < 0.015 and abs(3 * dx - dy) < 0.015 for (x, dx), (y, dy) in zip(b, c, strict=False))
    assert chain.read_text() == explicit.read_text()
    r = _cli(*common, "--ctm", base, "--frame-subsampling-factor", "0")
    assert r.exit_code == 2


# ------------------------------------------------------------------------------------------------
# 4. lattices without times
# ------------------------------------------------------------------------------------------------
NOALI = f"ark:{DATA / 'insertion_noali.ark'}"
TINY = str(DATA / "tiny.words.txt")


@pytest.mark.parametrize("kind", ["nbest", "sausage", "phrases"])
def test_untimed_lattices_refused_for_ctm_outputs(tmp_path, kind):
    ctm = tmp_path / "x.ctm"
    r = _cli(kind, NOALI, "--words", TINY, "--ctm", ctm)
    assert r.exit_code == 2 and "--allow-untimed" in r.output and "no word times" in r.output
    assert not ctm.exists()
    r = _cli(kind, NOALI, "--words", TINY, "--ctm", ctm, "--allow-untimed")
    assert r.exit_code == 0, r.output
    assert ctm.exists()
    # the same lattice with its alignment is accepted
    assert _cli(kind, f"ark:{DATA / 'insertion.ark'}", "--words", TINY, "--ctm", ctm).exit_code == 0


def test_untimed_lattices_and_phrase_oracle(tmp_path):
    (tmp_path / "t").write_text("u2 a b c\n")
    r = _cli("oracle", "-r", tmp_path / "t", "--words", TINY, NOALI, "--representation", "phrase")
    assert r.exit_code == 2 and "--allow-untimed" in r.output
    r = _cli("study", NOALI, "-r", tmp_path / "t", "--words", TINY, "-o", tmp_path / "st", "-n", "1",
             "--bootstrap", "0", "--no-plots")
    assert r.exit_code == 2 and "--allow-untimed" in r.output
    timed = _cli("oracle", "-r", tmp_path / "t", "--words", TINY, f"ark:{DATA / 'insertion.ark'}")
    untimed = _cli("oracle", "-r", tmp_path / "t", "--words", TINY, NOALI)    # the whole lattice needs no times
    assert timed.exit_code == untimed.exit_code == 0
    assert _wer_line(timed.output) == _wer_line(untimed.output)


# ------------------------------------------------------------------------------------------------
# 5. channels
# ------------------------------------------------------------------------------------------------
def test_one_channel_convention(refs, tmp_path):
    import inspect

    from lattice_tools.cli.decode import decode_command
    from lattice_tools.decode.pocketsphinx import decode_audio

    assert inspect.signature(decode_audio).parameters["channel"].default == "1"
    assert next(p for p in decode_command.params if p.name == "channel").default == "1"
    for kind in ("nbest", "sausage", "phrases"):
        ctm = tmp_path / f"{kind}.ctm"
        assert _cli(kind, LAT3, LAT4, "--ctm", ctm).exit_code == 0
        assert {line.split()[1] for line in open(ctm)} == {"1"}
        r = _cli("score", "-r", refs / "stm", "-h", ctm)
        assert r.exit_code == 0, r.output


def test_channel_mismatch_names_the_option(refs, tmp_path):
    ctm = tmp_path / "a.ctm"
    assert _cli("phrases", LAT3, LAT4, "--ctm", ctm, "--channel", "A").exit_code == 0
    assert {line.split()[1] for line in open(ctm)} == {"A"}
    r = _cli("score", "-r", refs / "stm", "-h", ctm)
    assert r.exit_code == 2
    assert "channels disagree" in r.output and "--channel 1" in r.output
    (tmp_path / "a.stm").write_text(STM.replace(" 1 spk", " A spk"))
    r = _cli("score", "-r", tmp_path / "a.stm", "-h", ctm)
    assert r.exit_code == 0 and "%WER 0.00" in r.output, r.output


# ------------------------------------------------------------------------------------------------
# 12. identity faults
# ------------------------------------------------------------------------------------------------
def test_duplicate_trn_ids_are_refused(refs, tmp_path):
    (tmp_path / "ref.trn").write_text("seven of clubs (s-003)\nfive five (s-004)\nfive four (s-004)\n")
    (tmp_path / "hyp.trn").write_text("seven of clubs (s-003)\nfive five (s-004)\n")
    r = _cli("score", "-r", tmp_path / "ref.trn", "-h", tmp_path / "hyp.trn")
    assert r.exit_code == 2
    assert "'s-004' appears twice in the reference" in r.output and "lines 2 and 3" in r.output
    (tmp_path / "same.trn").write_text("seven of clubs (s-003)\nfive five (s-004)\nfive five (s-004)\n")
    r = _cli("score", "-r", tmp_path / "same.trn", "-h", tmp_path / "hyp.trn")
    assert r.exit_code == 0 and "%WER 0.00 [ 0 / 5," in r.output, r.output
    (tmp_path / "dup.trn").write_text("seven of clubs (s-003)\nfive five (s-004)\nfive five (s-004)\n")
    r = _cli("score", "-r", tmp_path / "same.trn", "-h", tmp_path / "dup.trn")
    assert r.exit_code == 2 and "'s-004' appears twice in the hypothesis (lines 2 and 3)" in r.output
    r = _cli("oracle", "-r", tmp_path / "ref.trn", LAT3)
    assert r.exit_code == 2 and "appears twice" in r.output


def test_oracle_refuses_references_without_lattices(refs):
    r = _cli("oracle", "-r", refs / "text", LAT3)
    assert r.exit_code == 2 and "'004'" in r.output and "--allow-missing" in r.output
    r = _cli("oracle", "-r", refs / "text", LAT3, "--allow-missing")
    assert r.exit_code == 0 and "%WER 0.00 [ 0 / 3," in r.output and "warning" in r.output


@pytest.mark.parametrize("command", ["info", "nbest", "sausage", "phrases", "oracle"])
def test_a_key_given_twice_is_refused(refs, tmp_path, command):
    args = {"info": [], "oracle": ["-r", refs / "text"]}.get(command, ["--ctm", tmp_path / "x.ctm"])
    r = _cli(command, LAT3, LAT4, LAT3, *args)
    assert r.exit_code == 2 and "'003' is given twice" in r.output, r.output
    assert not (tmp_path / "x.ctm").exists()


def test_read_lattice_inputs_names_both_places():
    from lattice_tools.io import read_lattice_inputs

    with pytest.raises(MismatchError, match=r"'003' is given twice \(in .*003.lat and in .*003.lat\)"):
        list(read_lattice_inputs([LAT3, LAT3]))
