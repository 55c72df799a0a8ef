"""Typed errors. Every error about input data names the file (or table) and the reason."""

from __future__ import annotations

from pathlib import Path


class StrideGenError(Exception):
    """Base class of all stridegen errors."""


class GeometryError(StrideGenError, ValueError):
    """Invalid geometric input (non-finite or non-unit quaternion, wrong shape)."""


class ConfigError(StrideGenError, ValueError):
    """Invalid configuration value."""


class UsageError(StrideGenError):
    """A command's options or arguments do not go together (a bad value of one option: ``typer.BadParameter``)."""


class MissingExtraError(StrideGenError, ImportError):
    """An optional dependency is not installed."""

    def __init__(self, extra: str, module: str, alternative: str = "") -> None:
        """``extra``: what to put in ``stridegen[...]``; ``alternative``: a way to do without it (an option)."""
        hint = f" (or {alternative})" if alternative else ""
        super().__init__(f"'{module}' is not installed: pip install 'stridegen[{extra}]'{hint}")
        self.extra = extra
        self.module = module


class LogFormatError(StrideGenError, ValueError):
    """A driving log file is missing, truncated or holds invalid values.

    ``path`` names the file (or table), ``reason`` says what is wrong with it.
    """

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class MissingFileError(LogFormatError, FileNotFoundError):
    """A table or sensor file the log refers to does not exist."""


class PointCloudSizeError(LogFormatError):
    """A point-cloud file's byte size is not a whole number of points."""


class InvalidPoseError(LogFormatError):
    """A pose or calibration has NaN values or a non-unit quaternion."""


class InvalidCalibrationError(LogFormatError):
    """A camera calibration is unusable: intrinsics missing, not finite, or with a focal length that is not positive."""


class DuplicateTokenError(LogFormatError):
    """Two records of one table share a token but differ: every reference to that token is ambiguous."""


class UnknownChannelError(LogFormatError, KeyError):
    """A sensor channel that the log does not have was asked for."""

    def __str__(self) -> str:  # KeyError would quote the message
        return f"{self.path}: {self.reason}"


class LogCheckError(StrideGenError):
    """The log check (``stridegen check``, run before a build) found errors that concern the whole log.

    ``findings`` are the error findings (``stridegen.logs.check.Finding``); the message lists them with their
    likely causes.
    """

    def __init__(self, message: str, findings: list | None = None) -> None:
        super().__init__(message)
        self.findings = list(findings or [])


class PredictionFormatError(StrideGenError, ValueError):
    """A predictions / results file is malformed."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class DataFormatError(StrideGenError, ValueError):
    """A dataset or export file (not a driving log, not a predictions file) is malformed."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class ShardError(StrideGenError):
    """A dataset file (manifest, shard) is missing, corrupt, or does not match the manifest.

    ``path`` names the file, ``table`` the table or dataset inside it (``qa/answer``; ``None`` when the damage is
    not in one table, e.g. a file that is not HDF5 at all), ``reason`` says what is wrong.
    """

    def __init__(self, path: str | Path, reason: str, table: str | None = None) -> None:
        super().__init__(f"{path}: {table}: {reason}" if table else f"{path}: {reason}")
        self.path = str(path)
        self.table = table
        self.reason = reason


def require(module: str, extra: str):
    """Import an optional heavy dependency lazily, or raise MissingExtraError naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(extra, module) from exc
