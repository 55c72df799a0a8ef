"""Typed readers of a stridegen-log's JSON values, and the errors they raise (format: stridegen/logs/native.py).

Every reader takes a parsed JSON value and its place, an ``At`` (the file, the row in it and the key path inside
the row), and returns the value checked and converted, or raises a LogFormatError subclass whose message names the
file, the row, the key and the reason::

    /data/my-log/scenes/drive-1/frames.jsonl: line 2, ego_pose.rotation_wxyz: [1.0, 0.0, 0.0, 0.5] is not ...

``UNLOCATED`` is the place of a value read without tracking where it is: a reader then raises ``Doubt`` (no
message, no place) where it would raise an error, so that a caller can read a whole list quickly and read it again
with places only to name the error (the boxes of a frame: stridegen.logs.native_boxes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from stridegen.core.bounded_json import loads
from stridegen.core.errors import GeometryError, InvalidPoseError, LogFormatError, MissingFileError
from stridegen.core.transforms import check_unit_quaternion, make_transform
from stridegen.formats.textfile import read_text
from stridegen.logs.bounds import coordinate_problem
from stridegen.logs.names import SAFE_NAME_RULE, is_safe_name

# 1e17 us is the year 5138: a larger timestamp_us is a nanosecond (or picosecond) timestamp by mistake.
MAX_TIMESTAMP_US = 10**17
QUATERNION_ATOL = 1e-3  # as stridegen.logs._common.validate_pose


class UnsupportedVersionError(LogFormatError):
    """The manifest is not a stridegen-log, or of a format version this reader does not read."""


class InvalidValueError(LogFormatError):
    """A value has the wrong type, shape or range (NaN, a non-positive size or focal length, an unknown key)."""


class TimestampError(LogFormatError):
    """Timestamps out of order, duplicated, or not in microseconds."""


class UnknownModalityError(LogFormatError):
    """A sensor's modality is not camera, lidar or radar."""


class UnsafeNameError(LogFormatError):
    """A scene or channel name is not a safe folder name."""


class Doubt(Exception):
    """What a reader raises for a wrong value at ``UNLOCATED``: read the value again with its place for the error."""


# ---------------------------------------------------------------------------------------------- places


@dataclass(slots=True)  # not frozen: a frozen dataclass takes three times as long to make, and a box makes 14
class At:
    """Where a value is: the file, the row in it and the key path inside the row (for error messages)."""

    path: Path
    row: str
    key: str = ""

    located = True  # False for UNLOCATED

    def __getitem__(self, key: str | int) -> At:
        if isinstance(key, int):
            return At(self.path, self.row, f"{self.key}[{key}]")
        return At(self.path, self.row, f"{self.key}.{key}" if self.key else key)

    def row_of(self, index: int) -> At:
        """Item ``index`` of the list here, as a row of its own ("sensors[1]")."""
        return At(self.path, f"{self.where}[{index}]")

    def item(self, index: int, row_name: str) -> At:
        """Item ``index`` of the list here: ``key[index]`` of this row, or, where the list is the whole row (a box
        file), a row of its own named ``<row_name> <index>`` ("box 3")."""
        return self[index] if self.key else At(self.path, f"{row_name} {index}")

    @property
    def where(self) -> str:
        return f"{self.row}, {self.key}" if self.key else self.row

    def fail(self, cls: type[LogFormatError], reason: str) -> Exception:
        """The error to raise for the value here: ``cls`` with the file, the row, the key and ``reason``."""
        return cls(self.path, f"{self.where}: {reason}")


@dataclass(slots=True)
class _Unlocated(At):
    """The place of values read without their places: every part of it is itself, every error a ``Doubt``."""

    located = False

    def __getitem__(self, key: str | int) -> At:
        return self

    def row_of(self, index: int) -> At:
        return self

    def item(self, index: int, row_name: str) -> At:
        return self

    def fail(self, cls: type[LogFormatError], reason: str) -> Exception:
        return Doubt()


UNLOCATED: At = _Unlocated(Path(), "")


# ---------------------------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Keys:
    """The keys of a JSON object: those it must have, those it may have; keys starting with ``x_`` are free."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()

    @cached_property
    def allowed(self) -> frozenset[str]:
        return frozenset(self.required + self.optional)


def kind_of(value: Any) -> str:
    """The JSON-ish name of a value's type, for messages ("null", "str", "list", ...)."""
    return "null" if value is None else type(value).__name__


_NUMBER_TYPES = frozenset((int, float))  # of json.loads: a bool is not a number
_NUMBER_OR_NULL_TYPES = _NUMBER_TYPES | {type(None)}


def is_number(x: Any) -> bool:
    """A JSON number: an int or a float, not a bool."""
    return type(x) in _NUMBER_TYPES


def are_numbers(values: list[Any], null: bool = False) -> bool:
    """Every item a JSON number (``null``: or null)."""
    return frozenset(map(type, values)) <= (_NUMBER_OR_NULL_TYPES if null else _NUMBER_TYPES)


def read_object(value: Any, at: At, keys: Keys) -> dict[str, Any]:
    """A JSON object with the required keys and no unknown ones; free ``x_...`` keys are skipped (at
    ``UNLOCATED`` they are a doubt: the located read skips them)."""
    if not isinstance(value, dict):
        raise at.fail(InvalidValueError, f"must be a JSON object, got {kind_of(value)}")
    allowed = keys.allowed
    if not allowed.issuperset(value):
        unknown = [k for k in value if k not in allowed and not str(k).startswith("x_")]
        if unknown or not at.located:
            raise at.fail(
                InvalidValueError,
                f"unknown key(s) {unknown}; allowed: {list(keys.required) + list(keys.optional)} (x_... keys are free)",
            )
    missing = [k for k in keys.required if k not in value]
    if missing:
        raise at.fail(InvalidValueError, f"missing key(s) {missing}")
    return value


def read_string(value: Any, at: At, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise at.fail(InvalidValueError, f"must be a string, got {kind_of(value)}")
    if not value and not empty:
        raise at.fail(InvalidValueError, "must not be empty")
    return value


def read_integer(value: Any, at: At, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.fail(InvalidValueError, f"must be an integer, got {kind_of(value)} {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise at.fail(InvalidValueError, f"{value} is outside [{low}, {'inf' if high is None else high}]")
    return value


def read_numbers(value: Any, at: At, n: int, cls: type[LogFormatError] = InvalidValueError) -> np.ndarray:
    """A list of ``n`` finite numbers as float64."""
    if not isinstance(value, list) or len(value) != n or not are_numbers(value):
        raise at.fail(cls, f"must be a list of {n} numbers, got {value!r}")
    if not all(map(math.isfinite, value)):
        raise at.fail(cls, f"{value!r} has non-finite values")
    return np.array(value, dtype=np.float64)


def read_quaternion(value: Any, at: At) -> np.ndarray:
    """A rotation ``[w, x, y, z]``: 4 numbers, finite and of unit norm within ``QUATERNION_ATOL``."""
    q = np.array(read_wxyz(value, at), dtype=np.float64)
    check_rotations(q, value, at)
    return q


def read_wxyz(value: Any, at: At) -> list[Any]:
    """The 4 numbers ``[w, x, y, z]`` of a rotation, as they are (their norm: ``check_rotations``)."""
    if not isinstance(value, list) or len(value) != 4 or not are_numbers(value):
        raise at.fail(InvalidPoseError, f"must be a list of 4 numbers [w, x, y, z], got {value!r}")
    return value


def check_rotations(q: np.ndarray, value: Any, at: At) -> None:
    """``q`` ([4], or [N, 4] at once) finite and of unit norm within ``QUATERNION_ATOL`` (check_unit_quaternion);
    ``value`` is what ``q`` was read from, for the message."""
    try:
        check_unit_quaternion(q, atol=QUATERNION_ATOL)
    except GeometryError as exc:
        raise at.fail(InvalidPoseError, f"{value!r} is not a rotation [w, x, y, z]: {exc}") from None


_POSE_KEYS = Keys(("rotation_wxyz", "translation_m"))


def read_pose(value: Any, at: At) -> np.ndarray:
    """``{"rotation_wxyz": [w, x, y, z], "translation_m": [x, y, z]}`` -> 4x4 transform."""
    rec = read_object(value, at, _POSE_KEYS)
    q = read_quaternion(rec["rotation_wxyz"], at["rotation_wxyz"])
    t = read_numbers(rec["translation_m"], at["translation_m"], 3, InvalidPoseError)
    problem = coordinate_problem(t)
    if problem:
        raise at["translation_m"].fail(InvalidPoseError, problem)
    return make_transform(q, t)


def read_name(value: Any, at: At, what: str) -> str:
    """A scene or channel name that is a safe folder name (stridegen.logs.names)."""
    text = read_string(value, at)
    if not is_safe_name(text):
        raise at.fail(UnsafeNameError, f"{what} {text!r} is not a safe folder name ({SAFE_NAME_RULE})")
    return text


def read_timestamp(value: Any, at: At) -> int:
    """A ``timestamp_us``: a non-negative integer of microseconds, below ``MAX_TIMESTAMP_US``."""
    ts = read_integer(value, at, low=0)
    if ts >= MAX_TIMESTAMP_US:
        raise at.fail(
            TimestampError,
            f"{ts} looks like nanoseconds (>= 1e17 us, the year 5138); timestamp_us is in microseconds",
        )
    return ts


def read_relative_file(value: Any, at: At, base: Path, suffixes: tuple[str, ...], what: str) -> Path:
    """A file named relative to ``base``: no absolute path, no '..', one of ``suffixes``, and existing."""
    text = read_string(value, at)
    rel = PurePosixPath(text)
    if rel.is_absolute() or ".." in rel.parts or "\\" in text:
        raise at.fail(InvalidValueError, f"{text!r} must be a relative path with '/' separators and no '..'")
    if text.lower().endswith(".pcd.bin"):
        raise at.fail(
            InvalidValueError,
            f"{text!r}: nuScenes .pcd.bin files hold 5 values per point; .bin here means 4 (x, y, z, intensity): "
            "write the points as .npy",
        )
    if rel.suffix.lower() not in suffixes:
        raise at.fail(InvalidValueError, f"{text!r}: a {what} file must end in one of {list(suffixes)}")
    path = base / rel
    if not path.is_file():
        raise MissingFileError(path, f"file is missing (named by {at.path}, {at.where})")
    return path


def read_json_file(path: Path, what: str) -> Any:
    """The parsed JSON of a file; a missing file, text that is not UTF-8 or not JSON raise naming the file."""
    if not path.exists():
        raise MissingFileError(path, f"{what} is missing")
    text = read_text(path, what, InvalidValueError)  # UTF-8, a byte-order mark tolerated (formats.textfile)
    # Nested no deeper than STRIDEGEN_JSON_MAX_DEPTH (core.bounded_json): a deeper file is one error, not a
    # RecursionError; a repeated key keeps JSON's last-one-wins, as the other log readers do.
    return loads(text, path, InvalidValueError, reject_duplicates=False)
