"""The executor options shared by `stridegen augment` and `stridegen export` (the build takes ``executor.*``
overrides of its config instead): ``--executor local|ray|plugin``, ``--executor-address``, ``--executor-option``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from stridegen.run.config import ExecutorSection

EXECUTOR = typer.Option(
    "local", "--executor", help="Where scenes run: local (processes of this machine), ray, or a plugin (docs/scale.md)."
)
ADDRESS = typer.Option(
    "",
    "--executor-address",
    help="ray: empty starts a local Ray; 'auto' joins this machine's cluster, ray://host:10001 a remote one.",
    show_default=False,
)
OPTION = typer.Option(
    None,
    "--executor-option",
    help="Executor option key=value (YAML value), repeatable, e.g. --executor-option num_gpus=1.",
    show_default=False,
)


def executor_section(name: str, address: str, options: list[str] | None) -> ExecutorSection:
    """The executor of the command line, checked like the build config's ``executor`` section (ConfigError)."""
    from pydantic import ValidationError

    from stridegen.cli.detect import parse_options
    from stridegen.core.errors import ConfigError
    from stridegen.run.config import ExecutorSection

    try:
        return ExecutorSection(name=name, address=address, options=parse_options(options))
    except ValidationError as exc:
        raise ConfigError(f"--executor {name}: {exc.errors()[0]['msg']}") from None
