"""The `stridegen` command line. Thin: parse arguments, call library functions, print results.

``main`` (the console script) imports only the module of the command it runs, so that `stridegen build --help` does
not pay for the imports of every other command; ``app`` (every command, built on first use) is what tests use.
``stridegen COMMAND ...`` with a plain command (not a group) first runs an app of that command alone, named
``stridegen COMMAND`` (``command_app``): the same help, errors and exit codes as through the root group, without
the root group's own options, whose values typer coerces through pydantic (importing pydantic and building a
schema costs more CPU than the rest of `stridegen build --help`; issue 35, benchmarks/bench_startup.py).

Every command registered here is wrapped by ``stridegen.cli.errors.guarded`` (one-line errors on stderr, the exit
codes of docs/cli.md); command modules apply it where they define a command, and registration applies it
again, a no-op then, so that a command that forgot it is covered all the same.
"""

from __future__ import annotations

import copy
import importlib
import os
import sys
from typing import Any

import typer

from stridegen import __version__
from stridegen.cli.errors import guarded

# Each entry: (module, attribute, command name). Every command lives in this package and calls the library
# functions of its layer; importing them is cheap (heavy dependencies are imported inside the command functions).
_COMMANDS: list[tuple[str, str, str]] = [
    ("stridegen.cli.synth", "synth", "synth"),
    ("stridegen.cli.convert", "convert", "convert"),
    ("stridegen.cli.check", "check", "check"),
    ("stridegen.cli.build", "build", "build"),
    ("stridegen.cli.build", "inspect", "inspect"),
    ("stridegen.cli.detect", "detect", "detect"),
    ("stridegen.cli.detect", "track", "track"),
    ("stridegen.cli.augment", "augment", "augment"),
    ("stridegen.cli.validate", "validate", "validate"),
    ("stridegen.cli.render", "render", "render"),
    ("stridegen.cli.export", "export", "export"),
    ("stridegen.cli.predict", "predict", "predict"),
    ("stridegen.cli.report", "report", "report"),
    ("stridegen.cli.anonymize", "anonymize", "anonymize"),
]

# Sub-apps (command groups): (module, attribute, group name).
_GROUPS: list[tuple[str, str, str]] = [
    ("stridegen.cli.judge", "judge_app", "judge"),
    ("stridegen.cli.calibrate", "calibrate_app", "calibrate"),
]

# `stridegen eval ...`: evaluators. (module, attribute, command name).
_EVAL_HELP = "Score predictions against ground truth (nuScenes detection / tracking, STRIDE-QA LSR, spatial QA)."
_EVAL_COMMANDS: list[tuple[str, str, str]] = [
    ("stridegen.cli.eval_detection", "eval_detection", "detection"),
    ("stridegen.cli.eval_tracking", "eval_tracking", "tracking"),
    ("stridegen.cli.eval_lsr", "eval_lsr", "lsr"),
    ("stridegen.cli.eval_spatial", "eval_spatial", "spatial"),
]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"stridegen {__version__}")
        raise typer.Exit()


def root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """stridegen: driving logs -> sharded VQA datasets, plus the evaluators that score models on them."""


def guarded_group(group: typer.Typer) -> typer.Typer:
    """A copy of a command group (a module's Typer app) whose commands, and those of its sub-groups, are guarded;
    the module's own app is left as it is."""
    out = copy.copy(group)
    out.registered_commands = []
    for info in group.registered_commands:
        info = copy.copy(info)
        if info.callback is not None:
            info.callback = guarded(info.callback)
        out.registered_commands.append(info)
    out.registered_groups = []
    for sub in group.registered_groups:
        sub = copy.copy(sub)
        if sub.typer_instance is not None:
            sub.typer_instance = guarded_group(sub.typer_instance)
        out.registered_groups.append(sub)
    return out


def _load(module: str, attr: str) -> Any:
    return getattr(importlib.import_module(module), attr)


def build_app(command: str | None = None) -> typer.Typer:
    """The `stridegen` app with every command (``command`` None), or with only the command or group ``command``."""
    out = typer.Typer(
        name="stridegen",
        help="Build spatiotemporal VQA datasets from driving logs (STRIDE-QA pipeline) and score models on them.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_show_locals=False,
    )
    out.callback()(root)
    for module, attr, name in _COMMANDS:
        if command in (None, name):
            out.command(name)(guarded(_load(module, attr)))
    if command in (None, "eval"):
        eval_app = typer.Typer(help=_EVAL_HELP, no_args_is_help=True)
        for module, attr, name in _EVAL_COMMANDS:
            eval_app.command(name)(guarded(_load(module, attr)))
        out.add_typer(eval_app, name="eval")
    for module, attr, name in _GROUPS:
        if command in (None, name):
            out.add_typer(guarded_group(_load(module, attr)), name=name)
    return out


def command_names() -> set[str]:
    """The first words of every command line: commands, groups and ``eval``."""
    return {name for *_, name in _COMMANDS} | {name for *_, name in _GROUPS} | {"eval"}


def command_app(command: str) -> typer.Typer | None:
    """An app of the plain command ``command`` alone (typer runs a one-command app as that command), to be run with
    the program name ``stridegen COMMAND``; None for a group or a word that is no command."""
    for module, attr, name in _COMMANDS:
        if name == command:
            out = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False)
            out.command(name)(guarded(_load(module, attr)))
            return out
    return None


def main() -> None:
    """The console script. ``stridegen COMMAND ...`` with a plain command: that command's app alone
    (``command_app``). Otherwise the app with only the command or group named on the command line (the first word
    that is not an option: the root has no option that takes a value), or with every command for the root's help
    and for a word that is no command (click then lists them)."""
    single = command_app(sys.argv[1]) if len(sys.argv) > 1 else None
    if single is not None:  # the program name as click derives it for a console script, then the command's
        single(sys.argv[2:], prog_name=f"{os.path.basename(sys.argv[0])} {sys.argv[1]}")
        return
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    build_app(command if command in command_names() else None)()


_app: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    """``app``: every command, built on first use (PEP 562)."""
    global _app
    if name == "app":
        if _app is None:
            _app = build_app()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
