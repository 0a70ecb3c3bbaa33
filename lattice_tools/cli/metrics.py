"""``lattice-tools metrics`` and ``lattice-tools leaderboard``: thin wrappers over
:func:`lattice_tools.metrics.commands.metrics` / :func:`~lattice_tools.metrics.commands.leaderboard`."""
from __future__ import annotations

import sys

import click

from ..core.errors import LatticeToolsError
from ._options import check_one_stdout, json_option


def _pairs(values, what):
    out = []
    for v in values:
        if "=" not in v:
            raise LatticeToolsError(f"{what} must be NAME=PATH, got {v!r}")
        name, path = v.split("=", 1)
        if not name or not path:
            raise LatticeToolsError(f"{what} must be NAME=PATH, got {v!r}")
        out.append((name, path))
    return out


def _ks(value: str) -> tuple[int | None, ...]:
    out: list[int | None] = []  # None: every alternative
    for p in value.split(","):
        p = p.strip()
        if p in ("all", "inf", ""):
            out.append(None)
        else:
            try:
                k = int(p)
            except ValueError:
                raise LatticeToolsError(f"--ks takes integers or 'all', got {p!r}") from None
            if k < 1:
                raise LatticeToolsError(f"--ks values must be >= 1, got {k}")
            out.append(k)
    return tuple(out)


_common = [
    click.option("--annotations", "-a", type=click.Path(dir_okay=False), default=None,
                 help="Per-utterance lang/entities/cs annotations (JSON, JSON lines or TSV; see docs/metrics.md)."),
    click.option("--format", "fmt", type=click.Choice(["auto", "text", "trn", "stm"]), default="auto", show_default=True,
                 help="Transcript format: 'id words...' (text), 'words... (id)' (trn) or, for the reference, an STM "
                      "(keyed by recording file); auto: detected as 'score' detects it."),
    click.option("--glm", "glms", multiple=True,
                 help="GLM applied like csrfilt.sh to the reference and to every hypothesis, as 'score --glm' "
                      "(repeatable, in order)."),
    click.option("--allow-missing", is_flag=True,
                 help="An utterance on one side only is an error without it (as in 'score'); with it a hypothesis "
                      "without reference is left out and a reference utterance without hypothesis is not covered "
                      "(an STM's: scored as deletions)."),
    click.option("--normalizer", type=click.Choice(["auto", "none", "plain", "indic", "whisper-basic"]),
                 default="auto", show_default=True,
                 help="Text normalization before WER/CER (auto: indic-nlp for Indic languages, plain otherwise)."),
    click.option("--lang", default=None, help="Language of utterances without an annotation (e.g. hi, en)."),
    click.option("--orthography/--no-orthography", default=True, show_default=True,
                 help="Punctuation and capitalisation metrics on the raw text."),
    click.option("--resamples", type=click.IntRange(0), default=10_000, show_default=True,
                 help="Bootstrap resamples (0: no intervals)."),
    click.option("--seed", type=int, default=42, show_default=True, help="Bootstrap random seed."),
    click.option("--ci-method", type=click.Choice(["percentile", "normal"]), default="percentile", show_default=True,
                 help="percentile interval, or mean ± 1.96 sd (Kaldi/kaldialign)."),
    click.option("--encoding", default="utf-8", show_default=True,
                 help="Text encoding of the transcript and annotation files (e.g. latin-1, gb2312)."),
]


def _apply(options):
    def deco(f):
        for o in reversed(options):
            f = o(f)
        return f
    return deco


@click.command("metrics")
@click.argument("ref", type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("hyp", type=click.Path(dir_okay=False, allow_dash=True))
@_apply(_common)
@json_option("JSON summary ('-' = stdout).", hidden_aliases=("-o", "--output"), default="-", show_default=True)
@click.option("--per-utterance", default=None, help="Per-utterance results as JSON lines.")
@click.option("--alternatives", "alternatives", multiple=True, metavar="LABEL=ALTCTM",
              help="Alternatives (alt-CTM) of this system: oracle metrics and alternative coverage. Repeatable.")
@click.option("--ks", default="1,2,5,10,all", show_default=True, help="Depths k for alternative coverage.")
@click.option("--coverage-plot", default=None, help="Alternative-coverage figure (.png/.pdf/.svg).")
def metrics_command(ref, hyp, annotations, fmt, glms, allow_missing, normalizer, lang, orthography, resamples, seed,
                    ci_method, encoding, json_out, per_utterance, alternatives, ks, coverage_plot):
    """CER beside WER, script fidelity, code-switching, NE-WER/NE-FNR and punctuation/capitalisation
    metrics of one system (HYP) against REF, with bootstrap CIs."""
    from ..metrics.commands import metrics

    check_one_stdout(**{"--json": json_out, "--per-utterance": per_utterance})
    report = metrics(ref, hyp, annotations=annotations, output=json_out, per_utterance=per_utterance, fmt=fmt,
                      normalizer=normalizer, lang=lang, orthography=orthography, resamples=resamples, seed=seed,
                      ci_method=ci_method, alternatives=_pairs(alternatives, "--alternatives"), ks=_ks(ks),
                      coverage_plot=coverage_plot, progress=sys.stderr.isatty(), encoding=encoding, glms=list(glms),
                      allow_missing=allow_missing)
    for w in report.warnings:
        click.echo(f"lattice-tools: warning: {w}", err=True)


@click.command("leaderboard")
@click.argument("ref", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--system", "-s", "systems", multiple=True, required=True, metavar="NAME=PATH",
              help="A system's hypotheses (repeat for every system).")
@_apply(_common)
@json_option("JSON report ('-' = stdout).", hidden_aliases=("-o", "--output"), default="-", show_default=True)
@click.option("--markdown", "-m", default=None, help="Markdown report.")
def leaderboard_command(ref, systems, annotations, fmt, glms, allow_missing, normalizer, lang, orthography, resamples,
                        seed, ci_method, encoding, json_out, markdown):
    """Leaderboard over several systems and languages: per-language metrics with bootstrap CIs,
    coverage and failure taxonomy, composite rating and paired bootstrap tests."""
    from ..metrics.commands import leaderboard

    check_one_stdout(**{"--json": json_out, "--markdown": markdown})
    report = leaderboard(ref, _pairs(systems, "--system"), annotations=annotations, markdown=markdown,
                         output=json_out, fmt=fmt, normalizer=normalizer, lang=lang, orthography=orthography,
                         resamples=resamples, seed=seed, ci_method=ci_method, progress=sys.stderr.isatty(),
                         encoding=encoding, glms=list(glms), allow_missing=allow_missing)
    for w in report.warnings:
        click.echo(f"lattice-tools: warning: {w}", err=True)
