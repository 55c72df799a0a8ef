"""How an error reaches the user of a command: one line on stderr, and an exit code that says what kind it was.

Every command of the ``stridegen`` CLI is wrapped by ``guarded`` (where it is defined, and again, as a no-op
safety net, where ``stridegen.cli`` registers it), so no command prints its own error message or traceback:

- the message is ``error: <message>`` on stderr, on one line: control characters (a newline or an ANSI escape in a
  file name) become spaces, and a line longer than ``MAX_LINE_CHARS`` is cut with the number of characters left
  out (a 5 MB field quoted in a message never floods a terminal); a message of several lines (the log check's
  findings) keeps its first line as the error and prints the others indented below it;
- it is written as plain text, never through Rich, so a ``[/red]`` in a path cannot break markup and ``[nan, 1]``
  in a value is printed as it is;
- the exit code (docs/cli.md) is ``EXIT_BAD_INPUT`` (2) for a typed stridegen error, a file or decoding error or
  a usage error, ``EXIT_INTERNAL`` (4) for an unexpected exception (a bug: the message says how to see the
  traceback), ``EXIT_INTERRUPTED`` (130) for Ctrl-C; commands exit ``EXIT_FAILED`` (1) themselves when some
  scenes or items failed and the others are done;
- with ``STRIDEGEN_DEBUG=1`` in the environment the exception propagates unchanged, with its traceback.
- a warning that stridegen's library code raises (``warnings.warn`` with a stridegen warning class) prints as
  one ``warning: <message>`` line on stderr, like the warnings the commands print themselves (``show_warning``).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from stridegen.core.errors import StrideGenError

if TYPE_CHECKING:
    from stridegen.run.runner import SceneResult

EXIT_OK = 0
EXIT_FAILED = 1  # some scenes / items failed; the others are done (rerun to retry)
EXIT_BAD_INPUT = 2  # bad input or usage: a file, a value, an option; nothing (more) was done
EXIT_EMPTY = 3  # stridegen build: the dataset has no QA although the config asks for QA (--allow-empty)
EXIT_INTERNAL = 4  # an unexpected exception: a bug in stridegen or a plugin
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, the shells' convention)

DEBUG_ENV = "STRIDEGEN_DEBUG"
MAX_LINE_CHARS = 1000  # an error line is cut to this many characters
MAX_DETAIL_LINES = 20  # lines printed below the error line of a multi-line message
DEBUG_HINT = f"rerun with {DEBUG_ENV}=1 for the traceback"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_GUARDED = "__stridegen_guarded__"

F = TypeVar("F", bound=Callable[..., Any])


def debug_enabled() -> bool:
    """Whether ``STRIDEGEN_DEBUG`` asks for tracebacks (set and not ``0`` / empty)."""
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def _click_classes(name: str) -> tuple[type[BaseException], ...]:
    """The exception class ``name`` (``UsageError``, ``ClickException``, ``Exit``, ``Abort``) as typer raises it,
    found through typer's public classes: recent typer vendors click (``typer._click``), older typer re-exports
    click's own classes; stridegen never imports click itself."""
    import typer

    found: list[type[BaseException]] = []
    for public in (typer.BadParameter, typer.Exit, typer.Abort):
        found += [cls for cls in public.__mro__ if cls.__name__ == name and cls not in found]
    return tuple(found)


def _input_error_types() -> tuple[type[BaseException], ...]:
    """Exceptions that mean bad input: typed stridegen errors, files, decoding, values, YAML."""
    types: tuple[type[BaseException], ...] = (StrideGenError, OSError, UnicodeError, ValueError)
    try:
        import yaml

        types += (yaml.YAMLError,)
    except ImportError:  # pragma: no cover - pyyaml is a base dependency
        pass
    return types


def exit_code(exc: BaseException) -> int:
    """The exit code of a command ended by ``exc`` (see the module docstring)."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, (*_click_classes("ClickException"), *_input_error_types())):
        return EXIT_BAD_INPUT
    return EXIT_INTERNAL


def message(exc: BaseException) -> str:
    """What went wrong, in words, possibly over several lines (``error_lines`` makes the printed form)."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, _click_classes("UsageError")):
        ctx = getattr(exc, "ctx", None)
        where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        return f"{exc.format_message()}{where}"  # type: ignore[attr-defined]
    if isinstance(exc, _click_classes("ClickException")):
        return str(exc.format_message())  # type: ignore[attr-defined]
    if isinstance(exc, StrideGenError):
        return str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return f"{exc.filename}{target}: {exc.strerror or type(exc).__name__}"
    if exit_code(exc) == EXIT_BAD_INPUT:  # an input error without a stridegen type: say which, and how to see more
        return f"{type(exc).__name__}: {exc} ({DEBUG_HINT})"
    return f"internal error, {type(exc).__name__}: {exc} (a bug: please report it; {DEBUG_HINT})"


def one_line(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """``text`` without control characters, cut to ``limit`` characters (saying how many were left out)."""
    text = _CONTROL.sub(" ", text).strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def error_lines(exc: BaseException, clean: Callable[[str], str] | None = None) -> list[str]:
    """The lines printed for ``exc``: ``error: <first line>``, then the message's other lines indented.

    ``clean`` rewrites the message first (the judges pass their secret redaction).
    """
    text = message(exc)
    if clean is not None:
        text = clean(text)
    first, *rest = [line for line in text.splitlines() if line.strip()] or [type(exc).__name__]
    lines = [f"error: {one_line(first)}"]
    lines += [f"  {one_line(line)}" for line in rest[:MAX_DETAIL_LINES]]
    if len(rest) > MAX_DETAIL_LINES:
        lines.append(f"  ... ({len(rest) - MAX_DETAIL_LINES} more lines)")
    return lines


def report(exc: BaseException, clean: Callable[[str], str] | None = None) -> NoReturn:
    """Print ``exc`` as ``error_lines`` on stderr and end the command with its ``exit_code``."""
    import typer

    sys.stdout.flush()  # what the command printed so far comes before the error
    sys.stderr.write("".join(f"{line}\n" for line in error_lines(exc, clean)))
    sys.stderr.flush()
    raise typer.Exit(exit_code(exc))


def exit_failed_scenes(failed: Sequence[SceneResult]) -> None:
    """End a scene run's command with ``EXIT_FAILED`` when scenes failed: one ``error: <scene>: <reason>`` line
    each on stderr, then their count; return when none did."""
    import typer

    if not failed:
        return
    for r in failed:
        typer.echo(f"error: {one_line(f'{r.scene}: {r.reason}')}", err=True)
    typer.echo(f"{len(failed)} scene(s) failed; rerun to retry them", err=True)
    raise typer.Exit(EXIT_FAILED)


_PYTHON_SHOWWARNING = warnings.showwarning


def show_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    """``warnings.showwarning`` while a command runs: a warning class of stridegen's own (``StaleLockWarning``,
    ``UncheckedShardWarning``, ...) prints as one ``warning: <message>`` line on stderr, the format of every other
    warning the commands print (not Python's ``file:line: Category: message`` and source line); any other
    warning (a library's) keeps Python's format."""
    if category.__module__.partition(".")[0] != "stridegen":
        _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)
        return
    out = sys.stderr if file is None else file
    sys.stdout.flush()  # what the command printed so far comes first
    out.write(f"warning: {one_line(str(message))}\n")
    out.flush()


def guarded(command: F | None = None, *, clean: Callable[[str], str] | None = None) -> Any:
    """Wrap a typer command function so that every exception ends it as ``report`` says.

    Use as ``@guarded`` or ``@guarded(clean=redact)``; wrapping a wrapped function returns it unchanged. The
    wrapper keeps the function's signature and docstring (typer reads the parameters through ``__wrapped__``).
    ``typer.Exit`` and ``typer.Abort`` (a command's own exit) pass through; with ``STRIDEGEN_DEBUG=1`` every
    exception does.
    """

    def wrap(func: F) -> F:
        if getattr(func, _GUARDED, False):
            return func

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            exits = (*_click_classes("Exit"), *_click_classes("Abort"))
            shown_before, warnings.showwarning = warnings.showwarning, show_warning
            try:
                return func(*args, **kwargs)
            except exits:
                raise
            except (Exception, KeyboardInterrupt) as exc:
                if debug_enabled():
                    raise
                report(exc, clean)
            finally:
                warnings.showwarning = shown_before

        setattr(wrapper, _GUARDED, True)
        return wrapper  # type: ignore[return-value]

    return wrap(command) if command is not None else wrap


def is_guarded(command: Callable[..., Any]) -> bool:
    """Whether ``command`` is a ``guarded`` wrapper."""
    return bool(getattr(command, _GUARDED, False))
