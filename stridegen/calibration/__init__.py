"""Sensor-rig calibration: rig definitions (calibration/*.yaml) and their loader."""

from stridegen.calibration.rig import CameraSpec, LidarSpec, Rig, load_rig, rig_names

__all__ = ["CameraSpec", "LidarSpec", "Rig", "load_rig", "rig_names"]
