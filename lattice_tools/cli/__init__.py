"""The ``lattice-tools`` command line.

Each sub-command lives in its own module under ``lattice_tools.cli`` and is a thin wrapper over a
public function with the same parameters.  Modules are imported lazily, so ``lattice-tools score``
never pays for importing torch or pocketsphinx.  Errors of type
:class:`~lattice_tools.core.errors.LatticeToolsError` are printed on one line and exit with status 2.
"""
from __future__ import annotations

import os
import re
import signal
import sys

# No command does dense linear algebra, and OpenBLAS starting its thread pool costs about 60 ms of
# CPU per process (more than sclite needs to score 20k words); the user's setting wins.
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click  # noqa: E402

from ..core.errors import LatticeToolsError  # noqa: E402
from ._lazy import LazyCommandGroup  # noqa: E402

# command name -> "module:attribute" (module relative to lattice_tools.cli)
# The one-line help is kept here so that `lattice-tools --help` imports no command module.
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("lattices:info_command", "Per-lattice and total statistics (states, arcs, depth, best path, ...)."),
    "convert": ("lattices:convert_command", "Convert lattices between SLF, Kaldi archives, OpenFst text and k2 files."),
    "decode": ("decode:decode_command", "Decode 16 kHz audio into SLF lattices and a 1-best CTM (pocketsphinx)."),
    "nbest": ("alternatives:nbest_command", "Exact N-best lists (utterance-level alternatives) as alt-CTM."),
    "sausage": ("alternatives:sausage_command", "Confusion networks (word-level alternatives) as alt-CTM."),
    "best-path": ("latbin:best_path_command", "Kaldi's lattice-best-path / lattice-1best | nbest-to-ctm."),
    "nbest-paths": ("latbin:nbest_paths_command", "Kaldi's lattice-determinize | lattice-to-nbest (tropical N-best)."),
    "scale": ("latbin:scale_command", "Kaldi's lattice-scale: scale graph and acoustic costs."),
    "add-penalty": ("latbin:add_penalty_command", "Kaldi's lattice-add-penalty: a cost per word arc."),
    "prune": ("latbin:prune_command", "Kaldi's lattice-prune: beam pruning around the best path."),
    "depth": ("latbin:depth_command", "Kaldi's lattice-depth: arcs crossing each frame."),
    "oracle-path": ("latbin:oracle_path_command", "Kaldi's lattice-oracle: the fewest-errors path against word ids."),
    "mbr-decode": ("latbin:mbr_decode_command", "Kaldi's lattice-mbr-decode / lattice-to-ctm-conf: MBR words, sausages, CTM."),
    "nbest-to-lattices": ("combine:nbest_to_lattices_command",
                          "N-best lists (sherpa-onnx, ESPnet, Kaldi, generic TSV/JSONL) as word lattices."),
    "combine": ("combine:combine_command", "Combine several systems' N-best lists into one alt-CTM (posterior network or NIST ROVER)."),
    "phrases": ("alternatives:phrases_command", "Phrase alternatives (Faria et al., section 3.4) as alt-CTM."),
    "score": ("score:score_command", "Score a CTM/alt-CTM/trn against an STM/trn reference exactly like sclite."),
    "filter": ("filter:filter_command", "Apply a NIST GLM to STM/CTM/trn/text exactly like csrfilt.sh."),
    "ladder": ("score:ladder_command", "WER under successive scoring configurations (Faria et al., Table 1)."),
    "oracle": ("oracle:oracle_command", "Exact oracle WER of 1-best, N-best, sausage, phrase or whole lattices."),
    "study": ("oracle:study_command", "Lattice density vs oracle error study (Faria et al., Tables 3-6, plots)."),
    "build-graph": ("ctc:build_graph_command", "Build a CTC decoding graph (tokens, lexicon, words, ARPA LM)."),
    "decode-ctc": ("ctc:decode_ctc_command", "Decode CTC log-probabilities into lattices (Kaldi or k2 decoder)."),
    "metrics": ("metrics:metrics_command", "CER, script fidelity, code-switching, NE-WER, punctuation-aware metrics."),
    "leaderboard": ("metrics:leaderboard_command", "Bootstrap CIs and paired tests over systems and languages."),
    "kws": ("kws:kws_group", "Keyword search: keyword lists, term index, search, scoring exactly like NIST F4DE."),
    "view": ("view:view_command", "One self-contained HTML page of lattices, alternatives, alignments and keyword hits."),
    "demo": ("demo:demo_command", "Run the whole pipeline on the bundled real speech."),
    "split-list": ("recipe:split_list_command", "Split a list file into contiguous job chunks (recipes)."),
    "merge": ("recipe:merge_command", "Concatenate job outputs in order, or merge statistics JSON (recipes)."),
    "with-list": ("recipe:with_list_command", "Run a command with the items of a list file as arguments (recipes)."),
    "convert-ctm": ("recipe:convert_ctm_command", "Map a CTM/alt-CTM from utterances to recording file/channel ids (recipes)."),
}


class LazyGroup(LazyCommandGroup):
    command_table = COMMANDS

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if args is not None or not standalone_mode:  # called from Python (tests, scripts): click's own ending
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        # run as the program (console script, python -m): its outputs are complete when the command
        # returns, so the process ends there instead of tearing the interpreter down
        try:
            super().main(args, prog_name, complete_var, standalone_mode, **extra)
        except SystemExit as exc:
            _end_process(exc.code)
        raise AssertionError("unreachable: click's standalone main always exits")  # pragma: no cover

    def invoke(self, ctx):
        previous = _install_signal_handlers()
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader went away (`| head`): end quietly as conventional tools do (killed by SIGPIPE,
            # shell status 141), removing any half-written output first.
            _die_by_signal(signal.SIGPIPE)
        except _Terminated as exc:
            _die_by_signal(exc.signum)
        except LatticeToolsError as exc:
            click.echo(f"lattice-tools: error: {cli_message(str(exc), self._invoked_params(ctx))}", err=True)
            ctx.exit(2)
        except OSError as exc:
            # A file that cannot be opened, read or written is bad input, not a bug: one line, exit 2.
            where = exc.filename if exc.filename is not None else ""
            click.echo(f"lattice-tools: error: {where}{': ' if where else ''}{exc.strerror or exc}", err=True)
            ctx.exit(2)
        except MemoryError:
            # Readers bound sizes before they allocate; an algorithm can still need more memory
            # than the machine has.  One line, not a traceback.
            click.echo("lattice-tools: error: out of memory (the input is too large for this machine or a "
                       "budget option is set too high)", err=True)
            ctx.exit(2)
        except RecursionError:
            click.echo("lattice-tools: error: input nested too deeply to process", err=True)
            ctx.exit(2)
        except EOFError as exc:  # a truncated compressed stream; click would print "Aborted!" and exit 1
            click.echo(f"lattice-tools: error: unexpected end of input ({exc})", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:  # pragma: no cover
            from ..core.files import remove_live_temporaries

            remove_live_temporaries()
            click.echo("lattice-tools: interrupted", err=True)
            ctx.exit(130)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


    def _invoked_params(self, ctx) -> list:
        """The options of the command that ran (in a group such as ``kws``, of its sub-command)."""
        name = ctx.invoked_subcommand
        try:
            cmd = self.get_command(ctx, name) if name else None
        except Exception:  # pragma: no cover - the command ran, so it imports
            cmd = None
        if isinstance(cmd, click.Group):  # the sub-command of the group that ran (recorded when it was chosen)
            cmd = ctx.meta.get("lattice_tools.command")
        return list(cmd.params) if cmd is not None else []


# Hints in error messages of the Python API that name a parameter the CLI spells differently, and
# no option of the command carries: what a command-line user does instead.
_API_HINTS = {
    "read with nested='flatten' to expand them": "expand them with 'lattice-tools filter -i ctm "
                                                 "--flatten-alternations' and score its output",
}
_IDENT = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)*)(=(?:'[^']*'|\"[^\"]*\"|[^\s,;)]+)?)?")


def cli_message(message: str, params) -> str:
    """An error message of the Python API as the command line says it: the parameter names of the
    command's options become their flags, with their value when one is given: snake_case names
    (``allow_missing`` -> ``--allow-missing``; never an ordinary word) and any name written as an
    assignment (``pass words=`` -> ``pass --words``)."""
    flags = {}
    for p in params:
        if isinstance(p, click.Option) and p.name:
            shown = [o for o in p.opts if o not in getattr(p, "hidden_aliases", ())]
            flags[p.name] = max(shown or p.opts, key=len)
    for api, hint in _API_HINTS.items():
        message = message.replace(api, hint)

    def flag(m):
        name, value = m.group(1), m.group(2)
        # a plain word ("format", "words") is a parameter only when written "name=..."
        if name not in flags or ("_" not in name and not value):
            return m.group(0)
        v = (value or "=")[1:]
        if not v or v in ("True", "true"):
            return flags[name]
        return f"{flags[name]} {v.strip(chr(39) + chr(34))}"

    return _IDENT.sub(flag, message)


class _Terminated(BaseException):
    """Raised by the SIGTERM/SIGHUP handler so that ``finally`` blocks and :func:`atomic_write` remove
    their temporaries before the process ends."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame):
    raise _Terminated(signum)


def _install_signal_handlers() -> dict:
    """Handlers for SIGTERM/SIGHUP (when they have their default action); returns the previous ones."""
    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is None or signal.getsignal(signum) != signal.SIG_DFL:
            continue
        try:
            previous[signum] = signal.signal(signum, _on_signal)
        except ValueError:  # not the main thread (e.g. invoked from a test runner thread)
            break
    return previous


def _end_process(code) -> None:
    """End the program with exit status ``code`` (as ``sys.exit(code)``), skipping the interpreter's
    teardown: freeing every object one by one costs CPU in proportion to what the process built (0.01 s
    after a small numpy-only job, more after large ones).  Everything
    an ordinary exit does that matters still happens, in the same order: other threads are waited for
    (with any running, the ordinary exit is taken), atexit handlers run (temporaries, logging,
    coverage), garbage cycles are collected (a file object in one is closed, so flushed), and the
    standard streams are flushed -- into a closed pipe, the process ends as by SIGPIPE, as during
    the command."""
    import atexit
    import gc
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if others or run_exitfuncs is None:
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF
    else:  # sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    run_exitfuncs()
    gc.collect()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BrokenPipeError:
        _die_by_signal(signal.SIGPIPE)
    except (OSError, ValueError):  # a closed or failing stream: the ordinary exit reports it
        sys.exit(code)
    os._exit(status)


def _die_by_signal(signum: int):
    """Remove temporaries, then end by ``signum`` with its default action (the exit status a shell
    and a job scheduler expect: 128 + signum)."""
    from ..core.files import remove_live_temporaries

    remove_live_temporaries()
    try:
        # stdout may hold unflushed output for a closed pipe: point it at /dev/null so the
        # interpreter's final flush does not print "Exception ignored ... BrokenPipeError"
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # pragma: no cover - only if the signal did not end the process


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="lattice-tools")
def main():
    """lattice-tools: lattices -> N-best, sausages, phrase alternatives -> alt-CTM -> sclite-exact scoring
    and oracle WER."""


if __name__ == "__main__":  # pragma: no cover
    main()
