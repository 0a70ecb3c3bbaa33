"""How commands write their outputs and check their options:
one spelling per concept, the user's umask, strict JSON, ``--json -``, closed pipes, report sets that
are never a mix of two runs, temporaries removed on signals and by the next run, memory budgets.

The kill tests really kill a ``lattice-tools`` subprocess while it writes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _io_helpers import small_word_lattice
from click.testing import CliRunner

from lattice_tools.cli import cli_message, main
from lattice_tools.core.files import atomic_write, json_text
from lattice_tools.io import write_lattices

REPO = Path(__file__).resolve().parent.parent


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _cli(*args, stdin=None, umask=None, **kw):
    cmd = [sys.executable, "-m", "lattice_tools", *map(str, args)]
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=_env(), preexec_fn=pre, **kw)


def _no_constants(name):
    raise AssertionError(f"non-standard JSON constant {name}")


def strict_loads(text: str):
    return json.loads(text, parse_constant=_no_constants)


@pytest.fixture()
def lats(tmp_path):
    """Two small timed lattices in a Kaldi text archive, and one without times (OpenFst text)."""
    write_lattices([small_word_lattice("u1"), small_word_lattice("u2")], f"ark,t:{tmp_path}/lats.txt")
    write_lattices(small_word_lattice("u3"), str(tmp_path / "notimes.fst.txt"))
    (tmp_path / "words.txt").write_text("<eps> 0\nthe 1\ncat 2\nsat 3\na 4\nhat 5\n")
    return {"ark": f"ark,t:{tmp_path}/lats.txt", "text": (tmp_path / "lats.txt").read_text(),
            "notimes": str(tmp_path / "notimes.fst.txt"), "words": str(tmp_path / "words.txt")}


@pytest.fixture()
def scoring_files(tmp_path):
    ref = tmp_path / "ref.stm"
    ref.write_text("f1 A spk 0.0 3.0 the cat sat\nf2 A spk 0.0 2.0 a hat\n")
    hyp_a = tmp_path / "a.ctm"
    hyp_a.write_text("f1 A 0.0 1.0 the\nf1 A 1.0 1.0 cat\nf1 A 2.0 1.0 sat\nf2 A 0.0 1.0 a\nf2 A 1.0 1.0 hat\n")
    hyp_b = tmp_path / "b.ctm"
    hyp_b.write_text("f1 A 0.0 1.0 the\nf1 A 1.0 1.0 bat\nf2 A 0.0 1.0 a\n")
    return {"ref": str(ref), "a": str(hyp_a), "b": str(hyp_b)}


# ---------------------------------------------------------------------------------------------
# item 8: one spelling per concept; -n; error messages name flags
# ---------------------------------------------------------------------------------------------
BAD_DEPTHS = ["0", "-1", "2.5", "abc", "1e3"]


@pytest.mark.parametrize("value", BAD_DEPTHS)
@pytest.mark.parametrize("command", ["nbest", "sausage", "phrases", "oracle", "study", "demo"])
def test_depth_is_an_integer_ge_1_or_inf(command, value, lats, tmp_path):
    args = {"nbest": ["nbest", lats["ark"], "-o", tmp_path / "o.ctm"],
            "sausage": ["sausage", lats["ark"], "-o", tmp_path / "o.ctm"],
            "phrases": ["phrases", lats["ark"], "-o", tmp_path / "o.ctm"],
            "oracle": ["oracle", lats["ark"], "-r", tmp_path / "ref.trn"],
            "study": ["study", lats["ark"], "-r", tmp_path / "ref.trn", "-o", tmp_path / "st"],
            "demo": ["demo", "-o", tmp_path / "demo"]}[command]
    flag_value = ["-n", "1," + value] if command == "study" else ["-n", value]
    t = time.time()
    r = CliRunner().invoke(main, [str(a) for a in args] + flag_value)
    assert r.exit_code == 2, r.output
    assert "Invalid value for '-n'" in r.output and "integer >= 1 or 'inf'" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert time.time() - t < 5  # a usage error, not a search
    assert not (tmp_path / "o.ctm").exists()


def test_depth_inf_and_integers_are_accepted(lats, tmp_path):
    for n in ("1", "inf", "INF", "3"):
        r = CliRunner().invoke(main, ["nbest", lats["ark"], "-n", n, "-o", str(tmp_path / "o.ctm"),
                                      "--json", str(tmp_path / "o.json")])
        assert r.exit_code == 0, r.output
        stats = json.loads((tmp_path / "o.json").read_text())
        assert stats["N"] == ("inf" if n.lower() == "inf" else int(n))


def test_one_spelling_for_outputs_in_help():
    """Every command's output location is -o/--out and JSON output is --json PATH|-; the old spellings are
    not shown (docs/cli.md is generated from the help)."""
    from lattice_tools.cli import COMMANDS

    ctx = main.make_context("lattice-tools", ["info", "x"], resilient_parsing=True)
    for name in COMMANDS:
        cmd = main.get_command(ctx, name)
        # (with main's context as parent, as when run: click caches each command's help option)
        with cmd.make_context(name, [], parent=ctx, resilient_parsing=True) as sub:
            text = cmd.get_help(sub)
        for old in ("--out-dir", "--output ", "--ctm PATH", "--stats", "--from", "--to ", "--symbols-out"):
            if (name, old) in (("decode", "--ctm PATH"), ("merge", "--stats")):  # other concepts
                continue
            assert old not in text, (name, old)
        json_opts = [p for p in cmd.params if "--json" in getattr(p, "opts", ())]
        for p in json_opts:
            assert not p.is_flag and p.metavar == "PATH|-", name


def test_lattice_format_choices_are_the_readers_formats():
    from lattice_tools.cli._options import LATTICE_FORMATS
    from lattice_tools.io import FORMATS

    assert LATTICE_FORMATS == tuple(FORMATS)


def test_old_spellings_still_work_hidden(lats, tmp_path):
    r = CliRunner().invoke(main, ["nbest", lats["ark"], "-n", "2", "--ctm", str(tmp_path / "a.ctm"),
                                  "--stats", str(tmp_path / "a.json")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "a.ctm").exists() and json.loads((tmp_path / "a.json").read_text())["N"] == 2
    r = CliRunner().invoke(main, ["convert", lats["ark"], str(tmp_path / "slf"), "--to", "slf"])
    assert r.exit_code == 0, r.output
    r2 = CliRunner().invoke(main, ["convert", lats["ark"], "-o", str(tmp_path / "slf2"), "--out-format", "slf"])
    assert r2.exit_code == 0, r2.output
    assert sorted(os.listdir(tmp_path / "slf")) == sorted(os.listdir(tmp_path / "slf2")) == ["u1.lat", "u2.lat"]


def test_json_refuses_to_overwrite_a_non_json_file(lats, tmp_path):
    """`info --json LATTICE ...` (the old flag form) must not overwrite the lattice."""
    before = Path(lats["notimes"]).read_text()
    r = CliRunner().invoke(main, ["info", "--json", lats["notimes"], lats["ark"]])
    assert r.exit_code == 2 and "refusing to overwrite" in r.output
    assert Path(lats["notimes"]).read_text() == before


def test_error_messages_name_cli_flags_not_parameters(scoring_files, tmp_path):
    stm = tmp_path / "more.stm"
    stm.write_text(Path(scoring_files["ref"]).read_text() + "f3 A spk 0.0 1.0 the\n")
    r = _cli("score", "-r", stm, "-h", scoring_files["a"])
    assert r.returncode == 2
    assert "--allow-missing" in r.stderr and "allow_missing" not in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_cli_message_translation():
    params = main.get_command(None, "score").params
    msg = cli_message("x (use allow_missing to skip them); raise it with max_memory; not max_pops", params)
    assert msg == "x (use --allow-missing to skip them); raise it with --max-memory; not max_pops"
    nested = cli_message("nested <ALT_BEGIN> (sclite mis-scores nested blocks; read with nested='flatten' to "
                         "expand them)", params)
    assert "nested=" not in nested and "--flatten-alternations" in nested
    assert cli_message("the lattice format of x", main.get_command(None, "nbest").params) == "the lattice format of x"
    assert cli_message("no words.txt beside the graph; pass words=",
                       main.get_command(None, "decode-ctc").params) == "no words.txt beside the graph; pass --words"
    assert cli_message("beams must be positive, got beam=-1, lattice_beam=8",
                       main.get_command(None, "decode-ctc").params) == \
        "beams must be positive, got --beam -1, --lattice-beam 8"


# ---------------------------------------------------------------------------------------------
# item 9: umask, strict JSON, --json -, closed pipes
# ---------------------------------------------------------------------------------------------
def test_outputs_get_the_umask_mode(lats, scoring_files, tmp_path):
    out = tmp_path / "o"
    r = _cli("nbest", lats["ark"], "-o", out / "n.ctm", "--json", out / "n.json", umask=0o027)
    assert r.returncode == 0, r.stderr
    r = _cli("score", "-r", scoring_files["ref"], "-h", scoring_files["a"], "-o", out / "rep", umask=0o022)
    assert r.returncode == 0, r.stderr
    r = _cli("convert", lats["ark"], "-o", f"ark,t:{out}/c.txt", umask=0o002)
    assert r.returncode == 0, r.stderr
    modes = {p.name: p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()}
    assert modes == {"n.ctm": 0o640, "n.json": 0o640, "a.ctm.sys": 0o644, "a.ctm.raw": 0o644,
                     "a.ctm.pra": 0o644, "a.ctm.dtl": 0o644, "a.ctm.json": 0o644, "c.txt": 0o664}


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("old")
    os.chmod(p, 0o600)
    with atomic_write(str(p)) as f:
        f.write("new")
    assert p.read_text() == "new" and p.stat().st_mode & 0o777 == 0o600


def test_json_is_strict(lats, tmp_path):
    """A lattice without times has undefined duration/depth: null, never NaN."""
    r = _cli("info", lats["notimes"], "--json", "-")
    assert r.returncode == 0, r.stderr
    data = strict_loads(r.stdout)
    assert data["lattices"][0]["duration"] is None and data["lattices"][0]["depth"] is None
    assert json_text({"a": float("nan"), "b": [float("inf"), 1.5]}, indent=None) == '{"a": null, "b": [null, 1.5]}\n'


@pytest.mark.parametrize("command", ["nbest", "sausage", "phrases"])
def test_json_dash_prints_only_json(command, lats, tmp_path):
    r = _cli(command, lats["ark"], "-n", "2", "-o", tmp_path / "x.ctm", "--json", "-")
    assert r.returncode == 0, r.stderr
    assert strict_loads(r.stdout)["kind"] == command
    r = _cli(command, lats["ark"], "-o", "-", "--json", "-")
    assert r.returncode == 2 and "only one of" in r.stderr


def test_json_dash_prints_only_json_score_info_oracle(lats, scoring_files, tmp_path):
    r = _cli("score", "-r", scoring_files["ref"], "-h", scoring_files["b"], "--json", "-")
    assert r.returncode == 0, r.stderr
    assert strict_loads(r.stdout)["overall"]["ref_words"] == 5
    r = _cli("info", lats["ark"], "--json", "-")
    assert r.returncode == 0 and len(strict_loads(r.stdout)["lattices"]) == 2
    trn = tmp_path / "ref.trn"
    trn.write_text("the cat sat (u1)\na hat (u2)\n")
    r = _cli("oracle", lats["ark"], "--words", lats["words"], "-r", trn, "--json", "-")
    if "no such option" in r.stderr.lower():  # an older build without the word-table option
        r = _cli("oracle", lats["ark"], "-r", trn, "--json", "-")
    assert r.returncode in (0, 2), r.stderr
    if r.returncode == 0:
        assert "utterances" in strict_loads(r.stdout)


def test_closed_pipe_ends_quietly(tmp_path):
    """`lattice-tools ... | head -c 10`: no traceback, no error line, status of a process killed by SIGPIPE."""
    lats = [small_word_lattice(f"utt{i:04d}") for i in range(600)]
    write_lattices(lats, f"ark,t:{tmp_path}/many.txt")
    # a command that streams its output (one big write into a closed pipe may "succeed" on some kernels)
    proc = subprocess.Popen([sys.executable, "-m", "lattice_tools", "sausage", f"ark,t:{tmp_path}/many.txt", "-o", "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == -signal.SIGPIPE
    assert err == ""


# ---------------------------------------------------------------------------------------------
# item 13: report sets, temporaries on signals and after kills
# ---------------------------------------------------------------------------------------------
_PAUSE_AFTER_FIRST_RENAME = r"""
import os, sys, time
real = os.replace
count = [0]
def replace(a, b):
    real(a, b)
    count[0] += 1
    if count[0] == 1:
        print("RENAMED", b, flush=True)
        time.sleep(60)
os.replace = replace
sys.argv = ["lattice-tools"] + sys.argv[1:]
from lattice_tools.cli import main
main()
"""


def _temporaries(d: Path) -> list:
    return sorted(p.name for p in Path(d).iterdir() if p.name.startswith(".tmp."))


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_score_never_leaves_a_mixed_report_set(sig, scoring_files, tmp_path):
    out = tmp_path / "rep"
    r = _cli("score", "-r", scoring_files["ref"], "-h", scoring_files["a"], "-o", out, "--name", "sys")
    assert r.returncode == 0, r.stderr
    first = {k: (out / f"sys.{k}").read_text() for k in ("sys", "raw", "pra", "dtl", "json")}
    proc = subprocess.Popen([sys.executable, "-c", _PAUSE_AFTER_FIRST_RENAME, "score", "-r", scoring_files["ref"],
                             "-h", scoring_files["b"], "-o", str(out), "--name", "sys"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    line = proc.stdout.readline()
    assert line.startswith("RENAMED"), proc.stderr.read()
    proc.send_signal(sig)
    proc.wait(30)
    present = {p.name.split(".", 1)[1]: p.read_text() for p in out.iterdir() if p.name.startswith("sys.")}
    # never a member of the first run beside one of the second
    old = {k for k, v in present.items() if v == first[k]}
    assert not old or old == set(present), f"mixed report set: {sorted(old)} old of {sorted(present)}"
    assert "json" not in present  # the completion marker comes last
    if sig == signal.SIGTERM:
        assert _temporaries(out) == []
        assert proc.returncode == -signal.SIGTERM
    else:
        assert _temporaries(out)  # what a SIGKILL leaves ...
    r = _cli("score", "-r", scoring_files["ref"], "-h", scoring_files["b"], "-o", out, "--name", "sys")
    assert r.returncode == 0, r.stderr
    assert _temporaries(out) == []  # ... the next run removes
    assert sorted(p.name for p in out.iterdir()) == ["sys.dtl", "sys.json", "sys.pra", "sys.raw", "sys.sys"]
    assert json.loads((out / "sys.json").read_text())["overall"]["errors"] > 0


def _kill_mid_write(cmd: list, stdin_text: str, out_dir: Path, sig: int):
    """Start ``cmd`` reading lattices from stdin, give it one lattice, wait for its output temporary,
    kill it with ``sig``."""
    proc = subprocess.Popen([sys.executable, "-m", "lattice_tools", *map(str, cmd)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    proc.stdin.write(stdin_text)
    proc.stdin.flush()
    deadline = time.time() + 60
    while not _temporaries(out_dir):
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() < deadline, "no temporary appeared"
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(sig)
    rc = proc.wait(30)
    proc.stdin.close()
    return rc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
@pytest.mark.parametrize("command", ["convert", "phrases"])
def test_killed_writers_leave_no_temporaries(command, sig, lats, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    target = ["-o", f"ark,t:{out}/lats.txt"] if command == "convert" else ["-o", out / "p.ctm"]
    first_lattice = lats["text"].split("\n\n")[0] + "\n\n"
    rc = _kill_mid_write([command, "ark,t:-", *target], first_lattice, out, sig)
    assert rc != 0
    names = sorted(p.name for p in out.iterdir())
    if sig == signal.SIGKILL:
        assert names and all(n.startswith(".tmp.") for n in names)  # nothing can clean up after SIGKILL ...
        r = _cli(command, lats["ark"], *target)
        assert r.returncode == 0, r.stderr
        assert _temporaries(out) == []  # ... but the next run does
    else:
        assert names == [], names  # no temporary, no partial output
        assert rc == (-sig if sig == signal.SIGTERM else 130)


def test_stale_temporaries_of_live_processes_and_other_targets_are_kept(tmp_path):
    from lattice_tools.core.files import _host_tag, remove_stale_temporaries

    host = _host_tag()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    names = {f".tmp.{host}.{dead}.abc.x.ctm": False, f".tmp.{host}.{os.getppid()}.abc.x.ctm": True,
             f".tmp.{host}.{dead}.abc.y.ctm": True, f".tmp.otherhost.{dead}.abc.x.ctm": True}
    for n in names:
        (tmp_path / n).write_text("partial")
    remove_stale_temporaries(str(tmp_path / "x.ctm"))
    assert {n: (tmp_path / n).exists() for n in names} == names


# ---------------------------------------------------------------------------------------------
# item 14: memory budgets named in the error
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["nbest", "phrases"])
def test_memory_budget_names_the_flag(command, lats, tmp_path):
    r = _cli(command, lats["ark"], "-n", "inf", "-o", tmp_path / "x.ctm", "--max-memory", "1M")
    assert r.returncode == 2, r.stderr
    assert "memory budget" in r.stderr and "--max-memory" in r.stderr and "max_memory" not in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x.ctm").exists()
    r = _cli(command, lats["ark"], "-n", "inf", "-o", tmp_path / "x.ctm", "--max-memory", "lots")
    assert r.returncode == 2 and "Invalid value for '--max-memory'" in r.stderr
    r = _cli(command, lats["ark"], "-n", "inf", "-o", tmp_path / "x.ctm", "--max-memory", "2G")
    assert r.returncode == 0, r.stderr


def test_parse_size():
    from lattice_tools.cli._options import parse_size

    assert parse_size("2G") == 2 << 30 and parse_size("500m") == 500 << 20 and parse_size("1.5k") == 1536
    assert parse_size("inf") is None and parse_size("123") == 123
    for bad in ("-1G", "2X", "", "0"):
        with pytest.raises(ValueError):
            parse_size(bad)


# ---------------------------------------------------------------------------------------------
# item 10: study tables and plots
# ---------------------------------------------------------------------------------------------
def _study_rows():
    def row(rep, n, wer, mb, **kw):
        d = {"representation": rep, "N": n, "density": "dense", "set": "dense", "prune": 0.0, "utterances": 5,
             "arcs": 3458, "cost": wer, "wer": wer, "wer_low": max(wer - 5, 0), "wer_high": wer + 5, "MB": mb,
             "C": 15, "S": 6, "D": 0, "I": 0, "ref_words": 21, "precision": float("nan"), "recall": 0.7,
             "N_max": None, "N_.9": None, "N_.5": None, "seconds": 0.5, "blocks": None}
        d.update(kw)
        return d
    from lattice_tools.oracle.study import StudyRow

    return [StudyRow.from_dict(d) for d in (
        row("1best", "1", 28.6, 2e-4), row("nbest", "1", 23.8, 3e-4), row("nbest", "10", 19.0, 1e-3),
        {"representation": "nbest", "N": "inf", "density": "dense", "set": "dense", "prune": 0.0,
         "skipped": "N=inf exceeds the search budget (exact sequence search exceeded 200000 search nodes)"},
        row("phrase", "1", 23.8, 3e-4), row("phrase", "10", 0.0, 2e-3), row("phrase", "inf", 0.0, 2e-3),
        row("lattice", "inf", 0.0, 0.07))]


def test_study_table_names_the_1bests_marks_budget_cells_and_the_data(tmp_path):
    from lattice_tools.oracle.study import write_tables

    files = write_tables(_study_rows(), [], str(tmp_path), title="5 'cards' recordings",
                         baselines=[{"density": "dense", "name": "decoder hypothesis (pocketsphinx hyp())",
                                     "wer": 30.0, "C": 15, "S": 5, "D": 1, "I": 0, "ref_words": 21}])
    md = Path(files["markdown"]).read_text()
    assert md.startswith("# Oracle WER study: 5 'cards' recordings")
    assert "| dense | decoder hypothesis (pocketsphinx hyp()) | 30.00 |" in md
    assert "| dense | lattice best path | 28.60 |" in md
    assert "| dense | most probable word sequence (N-best, N=1) | 23.80 |" in md
    assert "| dense | inf | *stopped by the search budget* |" in md
    assert "exceeded 200000 search nodes" in md  # the reason, in the notes
    strict_loads(Path(files["json"]).read_text())  # precision NaN -> null


def test_study_plots_draw_inf_budget_cells_intervals_and_labels(tmp_path, monkeypatch):
    """Inspect what is drawn (the PNGs were also checked by eye): N=inf a separate point labelled 'inf',
    the budget-stopped cell annotated, error bars, MB points labelled with N, the data in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lattice_tools.oracle import study

    seen = {}
    real_close = plt.close

    def keep(fig=None):
        seen[len(seen)] = fig
    monkeypatch.setattr(plt, "close", keep)
    files = study.plot_study(_study_rows(), str(tmp_path), title="5 'cards' recordings")
    monkeypatch.setattr(plt, "close", real_close)
    assert set(files) == {"plot_n", "plot_mb"} and all(Path(f).stat().st_size > 10_000 for f in files.values())
    fig_n, fig_mb = seen[0], seen[1]
    for fig in (fig_n, fig_mb):
        assert "5 'cards' recordings" in fig._suptitle.get_text()
        ax = fig.axes[0]
        texts = [t.get_text() for t in ax.texts]
        assert any("stopped by the" in t and "N=inf" in t for t in texts), texts
        assert ax.get_title().startswith("dense: 5 utt., 21 ref. words")
        assert any(type(c).__name__ == "ErrorbarContainer" for c in ax.containers)
    ax_n = fig_n.axes[0]
    assert [t.get_text() for t in ax_n.get_xticklabels()][-1] == "inf"
    phrase = [c for c in ax_n.containers if c.get_label() == "phrase"][0]
    assert list(phrase.lines[0].get_xdata()) == [1, 10]  # inf is not on the line of finite N
    labels_mb = [t.get_text() for t in fig_mb.axes[0].texts]
    assert "N=10,inf" in labels_mb and "N=1" in labels_mb
    for fig in seen.values():
        real_close(fig)


def test_oracle_memory_budget_names_the_flag(lats, tmp_path):
    trn = tmp_path / "ref.trn"
    trn.write_text("the cat sat (u1)\na hat (u2)\n")
    args = ["oracle", lats["ark"], "--words", lats["words"], "-r", trn, "--representation", "nbest", "-n", "inf"]
    r = _cli(*args, "--max-memory", "1M")
    assert r.returncode == 2, r.stderr
    assert "memory budget" in r.stderr and "--max-memory" in r.stderr and "max_memory" not in r.stderr
    r = _cli(*args)
    assert "memory budget" not in r.stderr


def test_oracle_glm_scratch_reference_is_removed(lats, tmp_path):
    """`oracle --glm` filters the reference into a scratch file: it used to stay in $TMPDIR forever."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / "t.glm").write_text(
        ';; test\n* name "t.glm"\n* desc "test"\n* copy_no_hit = \'T\'\n'
        "I'M => {I'M / I AM} / [ ] __ [ ]\n")
    trn = tmp_path / "ref.trn"
    trn.write_text("the cat sat (u1)\na hat (u2)\n")
    env = _env()
    env["TMPDIR"] = str(scratch)
    r = subprocess.run([sys.executable, "-m", "lattice_tools", "oracle", lats["ark"], "-r", str(trn), "--glm",
                        str(tmp_path / "t.glm"), "--json", "-"], capture_output=True, text=True, env=env)
    assert r.returncode in (0, 2), r.stderr  # (bare word ids may be refused)
    assert "Traceback" not in r.stderr
    assert sorted(os.listdir(scratch)) == []
