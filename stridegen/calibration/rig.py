"""Sensor rigs: cameras and LiDARs with their mounting on the ego vehicle, loaded from <name>.yaml rig files.

Built-in rigs ship in the package (stridegen/resources/rigs/); user rigs in $STRIDEGEN_CALIBRATION_DIR or
./calibration take precedence over them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stridegen.core.errors import ConfigError, MissingFileError
from stridegen.core.resources import resource_path
from stridegen.core.transforms import make_transform

# Camera axes (x right, y down, z forward) expressed in a forward-looking ego frame (x forward, y left, z up).
_R_EGO_FROM_CAM_FORWARD = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def _rot_z(deg: float) -> np.ndarray:
    a = np.radians(deg)
    return np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])


def _rot_y(deg: float) -> np.ndarray:
    a = np.radians(deg)
    return np.array([[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0], [-np.sin(a), 0.0, np.cos(a)]])


class CameraSpec(BaseModel):
    """A pinhole camera mounted on the ego vehicle."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: str
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    fx: float = Field(gt=0)
    fy: float = Field(gt=0)
    cx: float
    cy: float
    translation_ego: tuple[float, float, float]
    yaw_deg: float = 0.0  # viewing direction in the ego frame, counter-clockwise positive
    pitch_deg: float = 0.0  # positive looks down
    roll_deg: float = 0.0

    @property
    def intrinsic(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    @property
    def horizontal_fov_deg(self) -> float:
        return float(np.degrees(2 * np.arctan2(self.width / 2, self.fx)))

    @property
    def T_ego_from_sensor(self) -> np.ndarray:
        # Look direction: yaw about ego z, then pitch about the camera's lateral axis, roll about its optical axis.
        r_cam = (
            _R_EGO_FROM_CAM_FORWARD
            @ _rot_z(self.roll_deg)
            @ np.array(
                [
                    [1.0, 0.0, 0.0],
                    [0.0, np.cos(np.radians(self.pitch_deg)), -np.sin(np.radians(self.pitch_deg))],
                    [0.0, np.sin(np.radians(self.pitch_deg)), np.cos(np.radians(self.pitch_deg))],
                ]
            )
        )
        return make_transform(_rot_z(self.yaw_deg) @ r_cam, np.array(self.translation_ego))

    def scaled(self, width: int, height: int) -> CameraSpec:
        """The same camera at another resolution (intrinsics scaled, mounting unchanged)."""
        sx, sy = width / self.width, height / self.height
        return self.model_copy(
            update={
                "width": width,
                "height": height,
                "fx": self.fx * sx,
                "fy": self.fy * sy,
                "cx": self.cx * sx,
                "cy": self.cy * sy,
            }
        )


class LidarSpec(BaseModel):
    """A spinning multi-beam LiDAR mounted on the ego vehicle."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: str
    translation_ego: tuple[float, float, float]
    yaw_deg: float = 0.0
    beams: int = Field(ge=1)
    vertical_fov_deg: tuple[float, float]  # (lowest, highest) beam elevation
    azimuth_resolution_deg: float = Field(gt=0)
    rotation_hz: float = Field(gt=0)
    max_range_m: float = Field(gt=0)

    @property
    def T_ego_from_sensor(self) -> np.ndarray:
        return make_transform(_rot_z(self.yaw_deg), np.array(self.translation_ego))

    @property
    def beam_elevations_deg(self) -> np.ndarray:
        lo, hi = self.vertical_fov_deg
        return np.linspace(lo, hi, self.beams)


class Rig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    cameras: list[CameraSpec]
    lidars: list[LidarSpec] = []

    def camera(self, channel: str) -> CameraSpec:
        for cam in self.cameras:
            if cam.channel == channel:
                return cam
        raise ConfigError(f"rig {self.name!r} has no camera {channel!r}; it has {[c.channel for c in self.cameras]}")

    def with_camera_resolution(self, width: int, height: int) -> Rig:
        """Every camera rescaled by width / (its own width), keeping each camera's aspect ratio if height is None."""
        return self.model_copy(update={"cameras": [c.scaled(width, height) for c in self.cameras]})


def calibration_dirs() -> list[Path]:
    """Where rig YAMLs are looked up, first match wins: $STRIDEGEN_CALIBRATION_DIR, ./calibration, then the rigs
    shipped in the package (stridegen/resources/rigs)."""
    dirs = []
    if env := os.environ.get("STRIDEGEN_CALIBRATION_DIR"):
        dirs.append(Path(env))
    dirs.append(Path.cwd() / "calibration")
    dirs.append(resource_path("rigs"))
    return dirs


def rig_names() -> list[str]:
    names: set[str] = set()
    for d in calibration_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def load_rig(name_or_path: str | Path) -> Rig:
    """Load a rig by name (<name>.yaml in one of ``calibration_dirs()``) or from a YAML path."""
    path = Path(name_or_path)
    if not path.suffix:
        for d in calibration_dirs():
            if (d / f"{name_or_path}.yaml").is_file():
                path = d / f"{name_or_path}.yaml"
                break
        else:
            raise MissingFileError(
                f"calibration/{name_or_path}.yaml", f"no rig named {name_or_path!r}; known rigs: {rig_names()}"
            )
    if not path.is_file():
        raise MissingFileError(path, "rig file does not exist")
    from stridegen.formats.textfile import config_error, load_yaml

    data = load_yaml(path, "rig file", config_error)
    try:
        return Rig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: invalid rig definition: {exc}") from exc
