"""Every command line is a thin wrapper over public functions with the same parameters (meeteval's
``test_shell_vs_py`` idea): for each command, the keyword arguments its callback passes on from its options
keep the option's name, and the option's default equals the function's default, so ``lattice-tools X --opt V``
and ``X(..., opt=V)`` mean the same thing.  The few documented translations (a negative flag such as
``--no-plots`` for ``plots=``) are listed below with their reason.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

import click
import pytest

from lattice_tools.cli import main

# (command, function parameter, option) pairs whose names differ on purpose
TRANSLATIONS = {
    ("filter", "upcase", "no_upcase"): "csrfilt's -u flag is a negative option",
    ("study", "include_infinity", "no_infinity"): "a negative flag",
    ("study", "plots", "no_plots"): "a negative flag",
    ("kws score", "check_reference_overlaps", "allow_overlapping_reference"): "a negative flag",
    ("kws score", "outside_ecf", "ignore_outside_ecf"): "a flag for one of two policies",
    ("kws score", "char_split_text", "char_split"): "F4DE's option name",
    ("metrics", "output", "json_out"): "--json PATH|- is the one spelling of JSON output",
    ("leaderboard", "output", "json_out"): "--json PATH|- is the one spelling of JSON output",
    ("decode-ctc", "format", "out_format"): "write_lattices' format is the output's (--format is the input's)",
    ("kws score", "optimum", "otwv"): "F4DE's report names the optimum (OTWV) and supremum (STWV) columns",
    ("kws score", "supremum", "stwv"): "F4DE's report names the optimum (OTWV) and supremum (STWV) columns",
    ("kws search", "rttm", "tune_rttm"): "the tuning set's reference (the search itself has none)",
    ("kws search", "ctm", "tune_ctm"): "the tuning set's reference (the search itself has none)",
    ("study", "out_dir", "out"): "-o/--out is the one spelling of an output; run_study writes a directory",
    ("kws align", "ctm", "out"): "-o/--out is the main output; write_alignment names its outputs by format",
}


def _leaf_commands():
    ctx = click.Context(main)

    def walk(group, prefix):
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                yield from walk(command, [*prefix, name])
            else:
                yield " ".join([*prefix, name]), command

    return dict(walk(main, []))


COMMANDS = _leaf_commands()


def _resolve(func_node: ast.expr, namespace: dict):
    if isinstance(func_node, ast.Name):
        return namespace.get(func_node.id)
    if isinstance(func_node, ast.Attribute) and isinstance(func_node.value, ast.Name):
        return getattr(namespace.get(func_node.value.id), func_node.attr, None)
    return None


def _api_calls(callback):
    """(function, call node) for each call in the callback to a lattice_tools function outside the CLI."""
    source = textwrap.dedent(inspect.getsource(callback))
    tree = ast.parse(source)
    namespace = dict(vars(importlib.import_module(callback.__module__)))
    for node in ast.walk(tree):  # the commands import their functions lazily, inside the callback
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module("." * node.level + (node.module or ""), package="lattice_tools.cli")
            namespace.update({a.asname or a.name: getattr(module, a.name) for a in node.names})
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = _resolve(node.func, namespace)
            module = getattr(func, "__module__", "") or ""
            if inspect.isclass(func) and issubclass(func, BaseException):
                continue
            if callable(func) and module.startswith("lattice_tools") and not module.startswith("lattice_tools.cli"):
                yield func, node


def test_every_command_wraps_a_public_function():
    lonely = [name for name, cmd in COMMANDS.items() if not list(_api_calls(inspect.unwrap(cmd.callback)))]
    assert not lonely, f"commands that call no public lattice_tools function: {lonely}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_options_keep_their_names_and_defaults(name):
    command = COMMANDS[name]
    options = {p.name: p for p in command.params}
    problems = []
    for func, call in _api_calls(inspect.unwrap(command.callback)):
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            continue
        for keyword in call.keywords:
            if keyword.arg is None or not isinstance(keyword.value, ast.Name) or keyword.value.id not in options:
                continue
            option = keyword.value.id
            if keyword.arg != option and (name, keyword.arg, option) not in TRANSLATIONS:
                problems.append(f"{func.__module__}.{func.__qualname__}({keyword.arg}=...) gets --{option}")
                continue
            parameter = signature.parameters.get(keyword.arg)
            if parameter is None or parameter.default is inspect.Parameter.empty:
                continue
            default = options[option].default
            if type(default).__module__.startswith("click"):  # click's "no default given" sentinel (click >= 8.3)
                continue
            if callable(default) or options[option].multiple or keyword.arg != option:
                continue
            if isinstance(default, str):  # what the command passes: '4G' -> 4294967296, '10' -> 10
                default = options[option].type_cast_value(click.Context(command), default)
            if default != parameter.default and not (default is None or parameter.default is None):
                problems.append(f"--{option} defaults to {default!r}, {func.__qualname__}({keyword.arg}=) to "
                                f"{parameter.default!r}")
    assert not problems, f"lattice-tools {name}:\n" + "\n".join(problems)
