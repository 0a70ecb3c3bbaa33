"""The ``lattice-tools`` command line.

Each sub-command lives in its own module under ``lattice_tools.cli`` and is a thin wrapper over a
public function with the same parameters.  Modules are imported lazily, so ``lattice-tools score``
never pays for importing torch or pocketsphinx.  Errors of type
:class:`~lattice_tools.errors.LatticeToolsError` are printed on one line and exit with status 2.
"""
from __future__ import annotations

import importlib
import os
import sys

# No command does dense linear algebra, and OpenBLAS starting its thread pool costs about 60 ms of
# CPU per process (more than sclite needs to score 20k words); the user's setting wins.
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click  # noqa: E402

from ..errors import LatticeToolsError  # noqa: E402

# command name -> "module:attribute" (module relative to lattice_tools.cli)
# The one-line help is kept here so that `lattice-tools --help` imports no command module.
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("lattices:info_command", "Per-lattice and total statistics (states, arcs, depth, best path, ...)."),
    "convert": ("lattices:convert_command", "Convert lattices between SLF, Kaldi archives, OpenFst text and k2 files."),
    "decode": ("decode:decode_command", "Decode 16 kHz audio into SLF lattices and a 1-best CTM (pocketsphinx)."),
    "nbest": ("alternatives:nbest_command", "Exact N-best lists (utterance-level alternatives) as alt-CTM."),
    "sausage": ("alternatives:sausage_command", "Confusion networks (word-level alternatives) as alt-CTM."),
    "phrases": ("alternatives:phrases_command", "Phrase alternatives (seed 001 section 3.4) as alt-CTM."),
    "score": ("score:score_command", "Score a CTM/alt-CTM/trn against an STM/trn reference exactly like sclite."),
    "filter": ("filter:filter_command", "Apply a NIST GLM to STM/CTM/trn/text exactly like csrfilt.sh."),
    "ladder": ("score:ladder_command", "WER under successive scoring configurations (seed 001 Table 1)."),
    "oracle": ("oracle:oracle_command", "Exact oracle WER of 1-best, N-best, sausage, phrase or whole lattices."),
    "study": ("oracle:study_command", "Lattice density vs oracle error study (seed 001 Tables 3-6, plots)."),
    "build-graph": ("ctc:build_graph_command", "Build a CTC decoding graph (tokens, lexicon, words, ARPA LM)."),
    "decode-ctc": ("ctc:decode_ctc_command", "Decode CTC log-probabilities into lattices (Kaldi or k2 decoder)."),
    "metrics": ("metrics:metrics_command", "CER, script fidelity, code-switching, NE-WER, punctuation-aware metrics."),
    "leaderboard": ("metrics:leaderboard_command", "Bootstrap CIs and paired tests over systems and languages."),
    "kws": ("kws:kws_group", "Keyword search: make keyword lists, score kwslists exactly like NIST F4DE."),
    "demo": ("demo:demo_command", "Run the whole pipeline on the bundled real speech."),
    "split-list": ("recipe:split_list_command", "Split a list file into contiguous job chunks (recipes)."),
    "merge": ("recipe:merge_command", "Concatenate job outputs in order, or merge statistics JSON (recipes)."),
    "with-list": ("recipe:with_list_command", "Run a command with the items of a list file as arguments (recipes)."),
    "convert-ctm": ("recipe:convert_ctm_command", "Map a CTM/alt-CTM from utterances to recording file/channel ids (recipes)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target[0].split(":")
        mod = importlib.import_module(f"{__name__}.{module}")
        return getattr(mod, attr)

    def format_commands(self, ctx, formatter):
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except LatticeToolsError as exc:
            click.echo(f"lattice-tools: error: {exc}", err=True)
            ctx.exit(2)
        except OSError as exc:
            # A file that cannot be opened, read or written is bad input, not a bug: one line, exit 2.
            where = exc.filename if exc.filename is not None else ""
            click.echo(f"lattice-tools: error: {where}{': ' if where else ''}{exc.strerror or exc}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:  # pragma: no cover
            click.echo("lattice-tools: interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:  # pragma: no cover - e.g. piped into `head`
            sys.stderr.close()
            ctx.exit(1)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="lattice-tools")
def main():
    """lattice-tools: lattices -> N-best, sausages, phrase alternatives -> alt-CTM -> sclite-exact scoring
    and oracle WER."""


if __name__ == "__main__":  # pragma: no cover
    main()
