"""A click group whose sub-commands are imported on first use, so that ``lattice-tools --help`` and each
command import only what they need (numpy, the readers, ...)."""
from __future__ import annotations

import importlib

import click


class LazyCommandGroup(click.Group):
    """Sub-commands from ``command_table``: name -> ("module:attribute" under lattice_tools.cli, short help)."""

    command_table: dict[str, tuple[str, str]] = {}

    def list_commands(self, ctx):
        return sorted(self.command_table)

    def get_command(self, ctx, name):
        target = self.command_table.get(name)
        if target is None:
            return None
        module, attr = target[0].split(":")
        return getattr(importlib.import_module(f"lattice_tools.cli.{module}"), attr)

    def resolve_command(self, ctx, args):
        name, cmd, rest = super().resolve_command(ctx, args)
        # the innermost command chosen so far (ctx.meta is shared by the contexts of one invocation): what an
        # error names the options of (lattice_tools.cli.LazyGroup)
        ctx.meta["lattice_tools.command"] = cmd
        return name, cmd, rest

    def format_commands(self, ctx, formatter):
        # the short help comes from the table, so listing the commands imports none of them
        with formatter.section("Commands"):
            formatter.write_dl([(name, self.command_table[name][1]) for name in self.list_commands(ctx)])
