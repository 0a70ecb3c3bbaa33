"""Recipes: the run.pl-compatible local runner, the option parser, the job split/merge
commands, CTM conversion, and the stage scripts on real pocketsphinx lattices -- ``--nj 2`` gives
byte-identical outputs to ``--nj 1``, a rerun does no work, a failed or killed stage leaves nothing
that a rerun would trust."""
from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import time
import zlib
from pathlib import Path

import pytest
from _recipe_helpers import DATA, RECIPES, have_cli, mtimes, run, tool_env, tree_digest
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.core.alternatives_network import depth_statistics
from lattice_tools.core.errors import FormatError, LatticeToolsError, MismatchError
from lattice_tools.pipelines import recipe

LOCAL_RUN = RECIPES / "utils" / "local_run.sh"
needs_cli = pytest.mark.skipif(not have_cli(), reason="the lattice-tools entry point is not installed")


# ------------------------------------------------------------------------------------------------
# utils/local_run.sh: Kaldi run.pl semantics
# ------------------------------------------------------------------------------------------------
def test_local_run_substitutes_job_in_logs_and_command(tmp_path):
    proc = run([LOCAL_RUN, "JOB=1:3", tmp_path / "log" / "echo.JOB.log", "echo", "job", "JOB", "of", "3"])
    assert proc.returncode == 0
    for j in (1, 2, 3):
        log = (tmp_path / "log" / f"echo.{j}.log").read_text()
        lines = log.splitlines()
        assert lines[0] == f"# echo job {j} of 3 "  # the command line, as run.pl writes it
        assert lines[1].startswith("# Started at ")
        assert f"job {j} of 3" in lines
        assert lines[-1].startswith("# Ended (code 0) at ")


def test_local_run_quotes_like_run_pl(tmp_path):
    # An argument with whitespace stays one argument; an escaped | without whitespace builds a pipeline
    # (Kaldi scripts rely on both); an argument holding a double quote is single-quoted.
    log = tmp_path / "q.log"
    run([LOCAL_RUN, log, "printf", "[%s] \\n", "two words", 'say "hi"', "|", "tr", "a-z", "A-Z"])
    body = [line for line in log.read_text().splitlines() if not line.startswith("#")]
    assert body == ["[TWO WORDS] ", '[SAY "HI"] ']


def test_local_run_any_failed_job_fails_the_run(tmp_path):
    proc = run([LOCAL_RUN, "JOB=1:4", tmp_path / "f.JOB.log", "test", "JOB", "-ne", "3"], check=False)
    assert proc.returncode == 1
    assert "1 / 4 failed (jobs 3)" in proc.stderr and "f.*.log" in proc.stderr
    assert "# Ended (code 1)" in (tmp_path / "f.3.log").read_text()
    assert "# Ended (code 0)" in (tmp_path / "f.2.log").read_text()
    single = run([LOCAL_RUN, tmp_path / "one.log", "false"], check=False)
    assert single.returncode == 1 and "job failed, log is in" in single.stderr


def test_local_run_max_jobs_run_limits_concurrency(tmp_path):
    trace = tmp_path / "trace"
    # each job appends "+" on start and "-" on end; with one slot the trace must alternate
    run([LOCAL_RUN, "--max-jobs-run", "1", "JOB=1:4", tmp_path / "s.JOB.log",
         "echo", "+", ">>", trace, ";", "sleep", "0.2", ";", "echo", "-", ">>", trace])
    assert trace.read_text().split() == ["+", "-"] * 4


def test_local_run_rejects_bad_usage(tmp_path):
    one_log = run([LOCAL_RUN, "JOB=1:2", tmp_path / "same.log", "true"], check=False)
    assert one_log.returncode == 1 and "one log file" in one_log.stderr
    bad_range = run([LOCAL_RUN, "JOB=0:2", tmp_path / "x.JOB.log", "true"], check=False)
    assert bad_range.returncode == 1 and "invalid job range" in bad_range.stderr
    queue_opts = run([LOCAL_RUN, "--mem", "4G", "--num-threads", "2", "JOB=1:2", tmp_path / "q.JOB.log", "true"])
    assert queue_opts.returncode == 0  # queue.pl options are accepted and ignored, as run.pl does


# ------------------------------------------------------------------------------------------------
# utils/parse_options.sh
# ------------------------------------------------------------------------------------------------
def _parse(tmp_path, *args):
    script = tmp_path / "script.sh"
    script.write_text(
        "set -e\nnj=1\nsome_option=default\nflag=false\n"
        f". {RECIPES / 'utils' / 'parse_options.sh'}\n"
        'echo "nj=$nj some_option=$some_option flag=$flag rest=$*"\n')
    return run(["bash", script, *args], check=False)


def test_parse_options(tmp_path):
    assert _parse(tmp_path).stdout.strip() == "nj=1 some_option=default flag=false rest="
    out = _parse(tmp_path, "--nj", "4", "--some-option", "a b", "--flag=true", "pos1", "pos2").stdout.strip()
    assert out == "nj=4 some_option=a b flag=true rest=pos1 pos2"
    conf = tmp_path / "my.conf"
    conf.write_text("nj=7\nsome_option=from_conf\n")
    out = _parse(tmp_path, "--config", conf, "--some-option", "cli", "x").stdout.strip()
    assert out == "nj=7 some_option=cli flag=false rest=x"  # config first, later options win
    bad = _parse(tmp_path, "--no-such-option", "1")
    assert bad.returncode == 1 and "invalid option --no-such-option" in bad.stderr
    missing = _parse(tmp_path, "--nj")
    assert missing.returncode == 1 and "needs a value" in missing.stderr


# ------------------------------------------------------------------------------------------------
# split-list / merge / with-list / convert-ctm
# ------------------------------------------------------------------------------------------------
def test_split_list_chunks(tmp_path):
    lst = tmp_path / "items.list"
    lst.write_text("# comment\n" + "".join(f"item{i}\n" for i in range(7)) + "\n")
    outs = recipe.split_list(str(lst), 3, str(tmp_path / "s3" / "part.JOB"))
    chunks = [Path(o).read_text().split() for o in outs]
    assert chunks == [["item0", "item1", "item2"], ["item3", "item4"], ["item5", "item6"]]
    outs = recipe.split_list(str(lst), None, str(tmp_path / "c" / "part.JOB"), chunk_size=3)
    assert [len(Path(o).read_text().split()) for o in outs] == [3, 3, 1]
    with pytest.raises(LatticeToolsError, match="7 items cannot be split into 8 jobs"):
        recipe.split_list(str(lst), 8, str(tmp_path / "x.JOB"))
    with pytest.raises(LatticeToolsError, match="must contain JOB"):
        recipe.split_list(str(lst), 2, str(tmp_path / "x"))
    empty = tmp_path / "empty.list"
    empty.write_text("\n# nothing\n")
    with pytest.raises(FormatError, match="empty.list: the list is empty"):
        recipe.split_list(str(empty), 1, str(tmp_path / "e.JOB"))


@needs_cli
def test_split_list_cli_errors_are_one_line(tmp_path):
    lst = tmp_path / "two.list"
    lst.write_text("a\nb\n")
    proc = run(["lattice-tools", "split-list", "--nj", "3", lst, tmp_path / "p.JOB"], check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"lattice-tools: error: {lst}: 2 items cannot be split into 3 jobs; "
                                                f"use --nj 2 or less"]


@settings(max_examples=25, deadline=None)
@given(text=st.text(alphabet="ab \n", max_size=3000), cuts=st.lists(st.integers(0, 3000), max_size=4))
def test_merge_bytes_do_not_depend_on_the_split(tmp_path_factory, text, cuts):
    tmp = tmp_path_factory.mktemp("merge")
    data = text.encode()
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    parts = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:] or [len(data)], strict=False)):
        p = tmp / f"part{i}.gz"
        with gzip.open(p, "wb") as f:  # parts compressed with other settings: content is what matters
            f.write(data[a:b])
        parts.append(str(p))
    whole = tmp / "whole.txt"
    whole.write_bytes(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recipe, "_BLOCK", 64)  # many block boundaries, at other places than the part boundaries
        recipe.merge_files(parts, str(tmp / "split.gz"))
        recipe.merge_files([str(whole)], str(tmp / "one.gz"))
    assert (tmp / "split.gz").read_bytes() == (tmp / "one.gz").read_bytes()
    assert gzip.decompress((tmp / "split.gz").read_bytes()) == data


def test_merge_reports_missing_job_output(tmp_path):
    with pytest.raises(LatticeToolsError, match="missing job output .*nope.gz .did a job fail"):
        recipe.merge_files([str(tmp_path / "nope.gz")], str(tmp_path / "out.gz"))
    assert not (tmp_path / "out.gz").exists()


def test_merge_json_stats(tmp_path):
    a = {"N": 10, "kind": "sausage", "blocks": 3, "alt_blocks": 2, "utterances": 1, "N_max": 4, "N_.9": 4,
         "N_.5": 2, "bytes": 10, "gzip_bytes": 7, "MB": 7e-6}
    b = {"N": 10, "kind": "sausage", "blocks": 2, "alt_blocks": 1, "utterances": 1, "N_max": 9, "N_.9": 9,
         "N_.5": 1, "bytes": 5, "gzip_bytes": 4, "MB": 4e-6}
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    # without per-slot depths: exact sums and max, percentiles unknown (and so also for one part)
    pa.write_text(json.dumps(a)), pb.write_text(json.dumps(b))
    m = recipe.merge_json_stats([str(pa), str(pb)], str(tmp_path / "m.json"))
    assert (m["blocks"], m["alt_blocks"], m["utterances"], m["N_max"], m["bytes"], m["gzip_bytes"]) == (5, 3, 2, 9, 15, 11)
    assert m["N_.9"] is None and m["N_.5"] is None and "depths" in m["note"]
    assert m["MB"] == 11e-6
    one = recipe.merge_json_stats([str(pa)], str(tmp_path / "one.json"))
    assert one["N_.9"] is None
    # with depths: recomputed exactly from all slots
    da, db = [1, 2, 4], [9, 1]
    pa.write_text(json.dumps({**a, "depths": da})), pb.write_text(json.dumps({**b, "depths": db}))
    m = recipe.merge_json_stats([str(pa), str(pb)], str(tmp_path / "m2.json"))
    stats = depth_statistics(da + db).to_dict()
    assert {k: m[k] for k in stats} == stats and m["depths"] == da + db and "note" not in m
    assert json.loads((tmp_path / "m2.json").read_text()) == m
    pb.write_text(json.dumps({**b, "kind": "nbest"}))
    with pytest.raises(MismatchError, match="field 'kind' differs"):
        recipe.merge_json_stats([str(pa), str(pb)], str(tmp_path / "m3.json"))
    pb.write_text("{not json")
    with pytest.raises(FormatError, match="b.json: not valid statistics JSON"):
        recipe.merge_json_stats([str(pa), str(pb)], str(tmp_path / "m4.json"))


def test_measure_ctm_matches_the_alt_ctm_writer(tmp_path):
    from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
    from lattice_tools.io.transcripts.altctm import write_alternatives_ctm

    alts = [Alternatives(f"utt{i}", (Slot(0.1 * i, 0.1 * i + 0.3, (Alternative(("a", "b"), (0.1 * i, 0.1 * i + 0.1),
                                                                              (0.1, 0.2), 0.7, (0.7, 0.7)),
                                                                  Alternative(("c",), (0.1 * i,), (0.3,), 0.3,
                                                                              (0.3,)))),))
            for i in range(200)]
    stats = write_alternatives_ctm(str(tmp_path / "x.ctm.gz"), alts, 10)
    measured = recipe.measure_ctm(str(tmp_path / "x.ctm.gz"))
    assert (measured.bytes, measured.gzip_bytes, measured.MB) == (stats.bytes, stats.gzip_bytes, stats.MB)
    # and it is the size of a real gzip stream of the text
    text = gzip.decompress((tmp_path / "x.ctm.gz").read_bytes())
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    assert len(comp.compress(text) + comp.flush()) == measured.gzip_bytes


def test_convert_ctm(tmp_path):
    seg = tmp_path / "segments"
    seg.write_text("sw1-A_000050-000349 sw1-A 0.50 3.49\nsw1-B_000399-000509 sw1-B 3.99 5.09\n")
    r2fc = tmp_path / "reco2file_and_channel"
    r2fc.write_text("sw1-A sw1 A\nsw1-B sw1 B\n")
    ctm = tmp_path / "in.ctm"
    ctm.write_text(";; comment\n"
                   "sw1-A_000050-000349 1 0.21 0.12 he 1.0000\n"
                   "sw1-B_000399-000509 1 * * <ALT_BEGIN>\n"
                   "sw1-B_000399-000509 1 0.15 0.19 ten 0.7000\n"
                   "sw1-B_000399-000509 1 * * <ALT>\n"
                   "sw1-B_000399-000509 1 * * @\n"
                   "sw1-B_000399-000509 1 * * <ALT_END>\n")
    n = recipe.convert_ctm(str(ctm), str(tmp_path / "out.ctm"), segments=str(seg), reco2file_and_channel=str(r2fc))
    assert n == 6
    assert (tmp_path / "out.ctm").read_text() == (";; comment\n"
                                                   "sw1 A 0.71 0.12 he 1.0000\n"
                                                   "sw1 B * * <ALT_BEGIN>\n"
                                                   "sw1 B 4.14 0.19 ten 0.7000\n"
                                                   "sw1 B * * <ALT>\n"
                                                   "sw1 B * * @\n"
                                                   "sw1 B * * <ALT_END>\n")
    bad = tmp_path / "bad.ctm"
    bad.write_text("sw1-A_000050-000349 1 0.21 0.12 he\nunknown_utt 1 0.1 0.1 x\n")
    with pytest.raises(MismatchError, match=r"bad.ctm:2: utterance 'unknown_utt' is not in the segments file"):
        recipe.convert_ctm(str(bad), str(tmp_path / "never.ctm"), segments=str(seg))
    assert not (tmp_path / "never.ctm").exists()  # atomic: nothing half-written


@needs_cli
def test_with_list_passes_each_line_as_one_argument(tmp_path):
    lst = tmp_path / "specs.list"
    lst.write_text("ark:gunzip -c lat.1.gz|\n\nplain.slf\n")
    proc = run(["lattice-tools", "with-list", lst, "python3", "-c", "import sys, json; print(json.dumps(sys.argv[1:]))",
                "--first"])
    assert json.loads(proc.stdout) == ["--first", "ark:gunzip -c lat.1.gz|", "plain.slf"]
    failing = run(["lattice-tools", "with-list", lst, "python3", "-c", "raise SystemExit(3)"], check=False)
    assert failing.returncode == 3  # the job's status is the command's
    missing = run(["lattice-tools", "with-list", lst, "no-such-program-xyz"], check=False)
    assert missing.returncode == 2 and "cannot run 'no-such-program-xyz'" in missing.stderr


# ------------------------------------------------------------------------------------------------
# Stage scripts on real lattices (pocketsphinx on three bundled clips)
# ------------------------------------------------------------------------------------------------
CLIPS = [DATA / "cards" / f"00{i}.wav" for i in (1, 2, 3)]


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    if not have_cli():
        pytest.skip("the lattice-tools entry point is not installed")
    pytest.importorskip("pocketsphinx")
    root = tmp_path_factory.mktemp("decode")
    wavs = root / "wav.list"
    wavs.write_text("".join(f"{p}\n" for p in CLIPS))
    run([RECIPES / "decode_audio.sh", "--nj", "2", wavs, root / "nj2"])
    return root


def test_decode_audio_outputs(decoded):
    d = decoded / "nj2"
    assert (d / ".done").exists() and not (d / "parts").exists()
    assert (d / "lattices.list").read_text().split() == [str(d / "lat" / f"00{i}.lat") for i in (1, 2, 3)]
    ctm_keys = [line.split()[0] for line in (d / "1best.ctm").read_text().splitlines()]
    assert ctm_keys and ctm_keys == sorted(ctm_keys) and set(ctm_keys) == {"001", "002", "003"}
    for j in (1, 2, 3):  # one task per utterance, each logged
        assert "# Ended (code 0)" in (d / "log" / f"decode.{j}.log").read_text()


def test_decode_audio_nj1_identical_and_equal_to_single_decodes(decoded):
    run([RECIPES / "decode_audio.sh", "--nj", "1", decoded / "wav.list", decoded / "nj1"])
    assert tree_digest(decoded / "nj1", "lat/*") == tree_digest(decoded / "nj2", "lat/*")
    assert (decoded / "nj1" / "1best.ctm").read_bytes() == (decoded / "nj2" / "1best.ctm").read_bytes()
    # each utterance is decoded by a fresh decoder: the same bytes as decoding that file alone
    run(["lattice-tools", "decode", "-o", decoded / "alone", CLIPS[1]])
    assert (decoded / "alone" / "002.lat").read_bytes() == (decoded / "nj1" / "lat" / "002.lat").read_bytes()


def _make_alts(decoded, out, nj, *extra):
    return run([RECIPES / "make_alternatives.sh", "--nj", str(nj), "--kinds", "nbest sausage phrases", "--depths", "2",
                *extra, decoded / "nj2" / "lattices.list", out])


@pytest.fixture(scope="module")
def alternatives_nj1(decoded):
    out = decoded / "alt_nj1"
    _make_alts(decoded, out, 1)
    return out


def test_make_alternatives_outputs_and_stats(decoded, alternatives_nj1):
    for kind in ("nbest", "sausage", "phrases"):
        d = alternatives_nj1 / f"{kind}.n2"
        assert (d / ".done").exists() and not (d / "parts").exists()
        text = gzip.decompress((d / "alt.ctm.gz").read_bytes()).decode()
        assert {line.split()[0] for line in text.splitlines()} == {"001", "002", "003"}
        stats = json.loads((d / "stats.json").read_text())
        assert stats["kind"] == kind and stats["N"] == 2 and stats["utterances"] == 3 and stats["N_max"] <= 2
        assert stats["bytes"] == len(text.encode())  # measured on the delivered file
        assert (stats["gzip_bytes"], stats["MB"]) == (recipe.measure_ctm(str(d / "alt.ctm.gz")).gzip_bytes,
                                                      stats["gzip_bytes"] / 1e6)
    # the alt-CTM equals a direct single-process run of the CLI on the same lattices
    lats = (decoded / "nj2" / "lattices.list").read_text().split()
    run(["lattice-tools", "sausage", "-n", "2", *lats, "-o", decoded / "direct.ctm.gz"])
    assert gzip.decompress((decoded / "direct.ctm.gz").read_bytes()) == \
        gzip.decompress((alternatives_nj1 / "sausage.n2" / "alt.ctm.gz").read_bytes())


def test_make_alternatives_nj2_byte_identical_to_nj1(decoded, alternatives_nj1):
    out = decoded / "alt_nj2"
    _make_alts(decoded, out, 2)
    assert (out / "log" / "nbest.n2.2.log").exists()  # really two jobs
    assert tree_digest(out) == tree_digest(alternatives_nj1)
    assert len(tree_digest(out)) == 9  # 3 kinds x (alt.ctm.gz, stats.json, .done)


def test_make_alternatives_rerun_does_no_work(decoded, alternatives_nj1):
    before = mtimes(alternatives_nj1)
    proc = _make_alts(decoded, alternatives_nj1, 1)
    assert proc.stdout.count("is done, skipping") == 3
    after = mtimes(alternatives_nj1)
    assert {k: v for k, v in after.items() if "split" not in k} == {k: v for k, v in before.items() if "split" not in k}


def test_make_alternatives_failed_job_fails_the_stage(decoded, alternatives_nj1, tmp_path):
    good = (decoded / "nj2" / "lattices.list").read_text().split()
    broken = tmp_path / "lattices.list"
    broken.write_text("\n".join(good + [str(tmp_path / "missing.lat")]) + "\n")
    out = tmp_path / "alt"
    proc = run([RECIPES / "make_alternatives.sh", "--nj", "2", "--kinds", "sausage", "--depths", "2", broken, out],
               check=False)
    assert proc.returncode != 0
    assert "1 / 2 failed (jobs 2)" in proc.stderr
    assert "missing.lat" in (out / "log" / "sausage.n2.2.log").read_text()
    assert not (out / "sausage.n2" / ".done").exists() and not (out / "sausage.n2" / "alt.ctm.gz").exists()
    # fixed input: the rerun redoes the stage and gets the same bytes as a clean run
    broken.write_text("\n".join(good) + "\n")
    run([RECIPES / "make_alternatives.sh", "--nj", "2", "--kinds", "sausage", "--depths", "2", broken, out])
    assert tree_digest(out / "sausage.n2") == tree_digest(alternatives_nj1 / "sausage.n2")


def test_killed_stage_leaves_nothing_trusted(decoded, alternatives_nj1, tmp_path):
    out = tmp_path / "alt"
    cmd = [str(RECIPES / "make_alternatives.sh"), "--nj", "2", "--kinds", "phrases", "--depths", "2",
           str(decoded / "nj2" / "lattices.list"), str(out)]
    proc = subprocess.Popen(cmd, env=tool_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 120
    while not (out / "log" / "phrases.n2.1.log").exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole stage: script, runner and jobs
    proc.wait()
    if not (out / "phrases.n2" / ".done").exists():
        # whatever was left (parts/, maybe even a final file) is not trusted: the rerun redoes the output
        proc2 = run(cmd)
        assert "skipping" not in proc2.stdout
    assert tree_digest(out / "phrases.n2") == tree_digest(alternatives_nj1 / "phrases.n2")


def test_convert_ctm_equals_placing_alternatives_in_their_recordings(decoded, tmp_path):
    """Independent reference: the alternatives commands' own --segments placement (Alternatives.with_location
    on the numbers) must equal converting their utterance-level alt-CTM afterwards (on the text)."""
    seg = tmp_path / "segments"
    seg.write_text("001 recA 1.25 5.00\n002 recA 7.33 9.00\n003 recB 0.07 3.00\n")
    lats = (decoded / "nj2" / "lattices.list").read_text().split()
    for kind in ("sausage", "phrases"):
        placed, plain, converted = (tmp_path / f"{kind}.{x}.ctm" for x in ("placed", "plain", "converted"))
        run(["lattice-tools", kind, "-n", "3", "--segments", seg, "-o", placed, *lats])
        run(["lattice-tools", kind, "-n", "3", "-o", plain, *lats])
        run(["lattice-tools", "convert-ctm", "--segments", seg, plain, converted])
        assert converted.read_bytes() == placed.read_bytes()
        assert placed.read_text().count("\n") > 20


def test_score_ctm_script(decoded, alternatives_nj1, tmp_path):
    # an STM for the three clips from their trn reference (file = utterance id, times from 0)
    refs = {}
    for line in (DATA / "cards" / "transcription.trn").read_text().splitlines():
        text, _, utt = line.rpartition(" (")
        refs[utt.rstrip(")")] = text
    stm = tmp_path / "ref.stm"
    stm.write_text("".join(f"{u} 1 spk_{u} 0.00 100.00 {refs[u]}\n" for u in ("001", "002", "003")))
    out = tmp_path / "score"
    ctm = alternatives_nj1 / "sausage.n2" / "alt.ctm.gz"
    proc = run([RECIPES / "score_ctm.sh", stm, ctm, out])
    assert proc.stdout.startswith("%WER ")
    assert (out / "wer").read_text() == proc.stdout
    direct = [line for line in run(["lattice-tools", "score", "-r", stm, "-h", ctm, "-D"]).stdout.splitlines()
              if line.startswith("%WER ")][-1]
    assert proc.stdout.strip() == direct
    for ext in ("sys", "pra", "json"):
        assert (out / f"score.{ext}").exists()
    again = run([RECIPES / "score_ctm.sh", stm, ctm, out])
    assert "is done, skipping" in again.stdout and again.stdout.strip().endswith(direct)
