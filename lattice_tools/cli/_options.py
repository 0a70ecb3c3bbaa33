"""Options shared by the commands, so that one concept has one spelling everywhere:

* ``-o/--out PATH``: where the command's main output goes (a file, a directory, ``-`` = stdout where a
  stream makes sense);
* ``--json PATH|-``: the machine-readable result as strict JSON (``-`` = stdout, then nothing else is
  printed on stdout);
* ``-n N``: a depth, an integer >= 1 or ``inf``;
* ``--format`` / ``--out-format``: the lattice format of the input / of the output;
* ``--max-memory SIZE``: the memory budget of a search (``2G``, ``500M``; ``inf`` = no budget).

Older spellings that recipes or scripts may still use are kept as hidden aliases (not shown in
``--help`` nor in docs/cli.md).
"""
from __future__ import annotations

import math
import re

import click

#: lattice_tools.io.FORMATS, spelled here so that commands which read no lattices (score, filter)
#: do not import the lattice readers (a test checks that both agree)
LATTICE_FORMATS = ("slf", "sphinx", "kaldi", "openfst", "k2")


class AliasOption(click.Option):
    """An option whose deprecated spellings (``hidden_aliases``) are accepted but not shown in help."""

    def __init__(self, param_decls, hidden_aliases=(), **kw):
        super().__init__(list(param_decls) + list(hidden_aliases), **kw)
        self.hidden_aliases = tuple(hidden_aliases)

    def get_help_record(self, ctx):
        saved = self.opts
        self.opts = [o for o in self.opts if o not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = saved


def option(*decls, hidden_aliases=(), **kw):
    """``click.option`` with hidden deprecated aliases."""
    return click.option(*decls, cls=AliasOption, hidden_aliases=hidden_aliases, **kw)


class DepthType(click.ParamType):
    """A depth N: an integer >= 1, or ``inf`` (every alternative) -> None."""

    name = "N|inf"

    def convert(self, value, param, ctx):
        if value is None or isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        text = str(value).strip()
        if text.lower() == "inf":
            return None
        if re.fullmatch(r"\+?[0-9]+", text) and int(text) >= 1:
            return int(text)
        self.fail(f"expected an integer >= 1 or 'inf', got {value!r}", param, ctx)


DEPTH = DepthType()


class DepthListType(click.ParamType):
    """Comma-separated depths (``1,10,100,inf``) -> a list of int/None."""

    name = "N,N,..."

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        items = [x.strip() for x in str(value).split(",")]
        if not any(items):
            self.fail("expected at least one depth (integers >= 1 or 'inf')", param, ctx)
        return [DEPTH.convert(x, param, ctx) for x in items if x]


DEPTHS = DepthListType()

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([kmgt]?)(i?b?)\s*", re.I)


def parse_size(text) -> int | None:
    """``2G``/``500M``/``1.5g``/``123456`` (bytes; K/M/G/T are powers of 1024) -> bytes; ``inf`` -> None."""
    if text is None:
        return None
    if isinstance(text, int):
        return text
    if str(text).strip().lower() in ("inf", "none", "unlimited"):
        return None
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise ValueError(f"expected a size such as 2G, 500M or 'inf', got {text!r}")
    value = float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " ")
    if not math.isfinite(value) or value < 1:
        raise ValueError(f"expected a size >= 1 byte, got {text!r}")
    return int(value)


class SizeType(click.ParamType):
    name = "SIZE"

    def convert(self, value, param, ctx):
        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


SIZE = SizeType()


def max_memory_option(f=None, *, help_text: str = ""):
    """``--max-memory SIZE`` (parameter ``max_memory``, default 4G = lattice_tools.core._budget.DEFAULT_MAX_MEMORY):
    the budget of resident memory of every step of a command (reading, searches, outputs), one spelling
    and one default everywhere.  ``help_text``: what the budget bounds in this command, if more is worth
    saying."""
    text = ("Memory budget of the whole command (resident memory: 2G, 500M; 'inf' = none): past it the command "
            "stops with one error line and leaves no output." + (" " + help_text if help_text else ""))

    def decorate(g):
        return click.option("--max-memory", "max_memory", type=SIZE, default="4G", show_default=True, help=text)(g)

    return decorate(f) if f is not None else decorate


def _json_destination(ctx, param, value):
    """``--json`` takes a path since it became one spelling for every command (it was a flag of
    ``info`` and ``score``): refuse to overwrite a file that is not JSON, which is what an old
    ``info --json LATTICE ...`` command line would otherwise do to its first lattice."""
    if value is None or value == "-":
        return value
    try:
        with open(value, "rb") as f:
            head = f.read(256).lstrip()
    except OSError:
        return value
    if head and head[:1] not in (b"{", b"["):
        raise click.BadParameter(f"refusing to overwrite {value!r}, which is not a JSON file "
                                 f"(--json takes a path, '-' = stdout)", ctx, param)
    return value


def json_option(help_text: str = "Write the result as JSON here ('-' = stdout, then only JSON is printed there).",
                hidden_aliases=(), **kw):
    kw.setdefault("default", None)
    return option("--json", "json_out", metavar="PATH|-", hidden_aliases=hidden_aliases,
                  callback=_json_destination, help=help_text, **kw)


def out_option(help_text: str, hidden_aliases=(), **kw):
    kw.setdefault("metavar", "PATH")
    return option("-o", "--out", "out", hidden_aliases=hidden_aliases, help=help_text, **kw)


def check_one_stdout(**paths) -> None:
    """At most one output may be stdout (``-``): two streams would interleave."""
    on_stdout = [name for name, p in paths.items() if p == "-"]
    if len(on_stdout) > 1:
        raise click.UsageError(f"only one of {', '.join(on_stdout)} can be '-' (stdout)")


def parallel_options(f):
    """``--jobs N`` / ``--scheduler ADDRESS``: where a corpus-level command runs (lattice_tools.core.parallel)."""
    f = click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Run on the workers of a running Dask scheduler (tcp://host:8786, e.g. one that "
                          "dask-jobqueue's SLURMCluster started). Same output bytes as one process.")(f)
    f = click.option("--jobs", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Run on a local Dask cluster of N worker processes. Same output bytes as one process; "
                          "a killed run started again recomputes only unfinished shards.")(f)
    return f
