"""Sensor-rig calibration: rig definitions (stridegen/resources/rigs/*.yaml, user rigs in ./calibration) and their
loader."""

from stridegen.calibration.rig import CameraSpec, LidarSpec, Rig, load_rig, rig_names

__all__ = ["CameraSpec", "LidarSpec", "Rig", "load_rig", "rig_names"]
