"""The Argoverse 2 sensor-dataset layout: the category map to nuScenes detection classes, the feather files' column
names, finding the log folders under a root, and reading a feather file's columns (pyarrow, the ``av2`` extra,
imported lazily). The reader is ``stridegen.logs.av2``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stridegen.core.errors import LogFormatError, MissingFileError, require

# AV2 category -> nuScenes detection class, "" where no nuScenes detection class fits. Class definitions:
# AV2 sensor-dataset taxonomy (argoverse/av2-api, src/av2/datasets/sensor/constants.py AnnotationCategories and
# the dataset paper, Wilson et al. 2021, appendix) against the nuScenes annotator instructions and the devkit's
# category_to_detection_name (python-sdk/nuscenes/eval/detection/utils.py).
AV2_TO_DETECTION: dict[str, str] = {
    "REGULAR_VEHICLE": "car",  # cars, vans, pickups, SUVs: nuScenes vehicle.car
    "BOX_TRUCK": "truck",
    "TRUCK": "truck",
    "TRUCK_CAB": "truck",  # tractor unit of a semi; nuScenes labels it vehicle.truck, its trailer separately
    "BUS": "bus",
    "ARTICULATED_BUS": "bus",  # nuScenes vehicle.bus.bendy
    "SCHOOL_BUS": "bus",
    "VEHICULAR_TRAILER": "trailer",
    "MESSAGE_BOARD_TRAILER": "trailer",  # nuScenes vehicle.trailer: any trailer, towed or not
    "TRAFFIC_LIGHT_TRAILER": "trailer",
    "BICYCLE": "bicycle",
    "MOTORCYCLE": "motorcycle",
    "PEDESTRIAN": "pedestrian",
    "OFFICIAL_SIGNALER": "pedestrian",  # nuScenes police_officer / construction_worker -> pedestrian
    "CONSTRUCTION_CONE": "traffic_cone",
    # Deliberately unmapped (""): BICYCLIST / MOTORCYCLIST (nuScenes has no rider box; the rider is part of
    # the cycle box there), LARGE_VEHICLE (RVs, fire trucks: nuScenes vehicle.emergency.* or car, no single
    # class), CONSTRUCTION_BARREL and BOLLARD (neither a cone nor a temporary barrier), STROLLER, WHEELCHAIR,
    # WHEELED_DEVICE, WHEELED_RIDER (excluded from nuScenes pedestrian, as in the devkit), RAILED_VEHICLE,
    # ANIMAL, DOG, SIGN, STOP_SIGN, MOBILE_PEDESTRIAN_CROSSING_SIGN.
}

ANNOTATION_COLUMNS = (
    "timestamp_ns",
    "track_uuid",
    "category",
    "length_m",
    "width_m",
    "height_m",
    "qw",
    "qx",
    "qy",
    "qz",
    "tx_m",
    "ty_m",
    "tz_m",
    "num_interior_pts",
)
POSE_COLUMNS = ("timestamp_ns", "qw", "qx", "qy", "qz", "tx_m", "ty_m", "tz_m")
LIDAR_COLUMNS = ("x", "y", "z", "intensity")
LIDAR_CHANNEL = "LIDAR"
INTRINSICS_COLUMNS = ("sensor_name", "fx_px", "fy_px", "cx_px", "cy_px", "k1", "k2", "k3", "height_px", "width_px")
EXTRINSICS_COLUMNS = ("sensor_name", *POSE_COLUMNS[1:])


def av2_to_detection(category: str) -> str:
    return AV2_TO_DETECTION.get(category, "")


def is_av2_log(path: Path) -> bool:
    return (path / "annotations.feather").is_file()


def find_av2_logs(root: Path) -> list[Path]:
    """The log folders under ``root``: ``root`` itself if it is one, else its children that are, by name."""
    if is_av2_log(root):
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and is_av2_log(p))


def is_av2_layout(root: Path) -> bool:
    """Whether ``root`` is an AV2 log folder (``annotations.feather``) or a folder of such (the ``av2`` reader's
    answer to ``stridegen.logs.detect_format``)."""
    return bool(find_av2_logs(root))


def read_feather(path: Path, columns: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """Columns of a feather file as numpy arrays; MissingFileError / LogFormatError naming the file."""
    feather = require("pyarrow.feather", "av2")
    if not path.is_file():
        raise MissingFileError(path, "AV2 file is missing")
    try:
        table = feather.read_table(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for corrupt files
        raise LogFormatError(path, f"not a readable feather file ({type(exc).__name__}: {exc})") from None
    names = table.column_names
    missing = [c for c in (columns or ()) if c not in names]
    if missing:
        raise LogFormatError(path, f"missing columns {missing}; has {names}")
    return {c: table.column(c).to_numpy() for c in (columns or names)}
