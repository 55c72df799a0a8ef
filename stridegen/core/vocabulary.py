"""Class vocabulary: nuScenes categories, the 10 nuScenes detection classes, and STRIDE-QA's object classes.

STRIDE-QA (arXiv 2508.10427, tables 4-5) reports objects by coarser, language-friendly classes (vehicle, large
vehicle, bus, pedestrian, bicycle, motorcycle, kick scooter, ...). QA text uses these names; detection and tracking
validation use the nuScenes detection classes. The tables below map every nuScenes category to both.
"""

from __future__ import annotations

# nuScenes category -> detection class. Same table as nuscenes-devkit
# python-sdk/nuscenes/eval/detection/utils.py ``category_to_detection_name``; categories not listed (animals,
# personal mobility, strollers, wheelchairs, emergency vehicles, debris, ...) have no detection class ("").
CATEGORY_TO_DETECTION: dict[str, str] = {
    "movable_object.barrier": "barrier",
    "vehicle.bicycle": "bicycle",
    "vehicle.bus.bendy": "bus",
    "vehicle.bus.rigid": "bus",
    "vehicle.car": "car",
    "vehicle.construction": "construction_vehicle",
    "vehicle.motorcycle": "motorcycle",
    "human.pedestrian.adult": "pedestrian",
    "human.pedestrian.child": "pedestrian",
    "human.pedestrian.construction_worker": "pedestrian",
    "human.pedestrian.police_officer": "pedestrian",
    "movable_object.trafficcone": "traffic_cone",
    "vehicle.trailer": "trailer",
    "vehicle.truck": "truck",
}

DETECTION_CLASSES = (
    "car",
    "truck",
    "bus",
    "trailer",
    "construction_vehicle",
    "pedestrian",
    "motorcycle",
    "bicycle",
    "traffic_cone",
    "barrier",
)
TRACKING_CLASSES: tuple[str, ...] = ("bicycle", "bus", "car", "motorcycle", "pedestrian", "trailer", "truck")
# nuScenes category -> tracking class (nuscenes-devkit eval/tracking/utils.py category_to_tracking_name).
CATEGORY_TO_TRACKING: dict[str, str] = {
    "vehicle.bicycle": "bicycle",
    "vehicle.bus.bendy": "bus",
    "vehicle.bus.rigid": "bus",
    "vehicle.car": "car",
    "vehicle.motorcycle": "motorcycle",
    "human.pedestrian.adult": "pedestrian",
    "human.pedestrian.child": "pedestrian",
    "human.pedestrian.construction_worker": "pedestrian",
    "human.pedestrian.police_officer": "pedestrian",
    "vehicle.trailer": "trailer",
    "vehicle.truck": "truck",
}

# nuScenes category -> STRIDE-QA class name used in questions ("" = not used for QA).
CATEGORY_TO_STRIDE: dict[str, str] = {
    "vehicle.car": "vehicle",
    "vehicle.emergency.police": "vehicle",
    "vehicle.truck": "large vehicle",
    "vehicle.trailer": "large vehicle",
    "vehicle.construction": "large vehicle",
    "vehicle.emergency.ambulance": "large vehicle",
    "vehicle.bus.rigid": "bus",
    "vehicle.bus.bendy": "bus",
    "human.pedestrian.adult": "pedestrian",
    "human.pedestrian.child": "pedestrian",
    "human.pedestrian.construction_worker": "pedestrian",
    "human.pedestrian.police_officer": "pedestrian",
    "human.pedestrian.wheelchair": "pedestrian",
    "human.pedestrian.stroller": "pedestrian",
    "human.pedestrian.personal_mobility": "kick scooter",
    "vehicle.bicycle": "bicycle",
    "vehicle.motorcycle": "motorcycle",
    "movable_object.trafficcone": "traffic cone",
    "movable_object.barrier": "barrier",
}

# Detection class -> STRIDE-QA class, for detector outputs that carry no finer category.
DETECTION_TO_STRIDE: dict[str, str] = {
    "car": "vehicle",
    "truck": "large vehicle",
    "trailer": "large vehicle",
    "construction_vehicle": "large vehicle",
    "bus": "bus",
    "pedestrian": "pedestrian",
    "motorcycle": "motorcycle",
    "bicycle": "bicycle",
    "traffic_cone": "traffic cone",
    "barrier": "barrier",
}

STRIDE_CLASSES = tuple(dict.fromkeys(CATEGORY_TO_STRIDE.values()))


def detection_class(category: str) -> str:
    """nuScenes detection class of a category ("" when it has none)."""
    return CATEGORY_TO_DETECTION.get(category, "")


def stride_class(category_or_detection_class: str) -> str:
    """STRIDE-QA class of a nuScenes category or detection class ("" when unmapped)."""
    return CATEGORY_TO_STRIDE.get(category_or_detection_class) or DETECTION_TO_STRIDE.get(
        category_or_detection_class, ""
    )


# nuscenes-devkit 1.2.0 nuscenes/eval/detection/constants.py: the detection names are DETECTION_CLASSES, in that order.
DETECTION_NAMES: tuple[str, ...] = DETECTION_CLASSES
ATTRIBUTE_NAMES: tuple[str, ...] = (
    "pedestrian.moving",
    "pedestrian.sitting_lying_down",
    "pedestrian.standing",
    "cycle.with_rider",
    "cycle.without_rider",
    "vehicle.moving",
    "vehicle.parked",
    "vehicle.stopped",
)


# STRIDE-QA-Bench spatiotemporal question categories (turingmotors/STRIDE-QA-Dataset benchmarks/STRIDE-QA-Bench).
# qa_category -> (horizon in seconds, subject). From the toolkit's TIME_BUCKET / EGO_TARGET_DISTINCTION tables:
# "ego_distance_data" asks the distance from the ego to the target, so its subject is the target.
QA_CATEGORIES: dict[str, tuple[int, str]] = {
    "ego_distance_data": (0, "target"),
    "ego_speed_data": (0, "ego"),
    "target_speed_data": (0, "target"),
    "target_bearing_angle_data": (0, "target"),
    **{f"ego_distance_data_4d_t{t}": (t, "target") for t in (1, 2, 3)},
    **{f"ego_speed_data_4d_t{t}": (t, "ego") for t in (1, 2, 3)},
    **{f"target_speed_data_4d_t{t}": (t, "target") for t in (1, 2, 3)},
}

# A plausible attribute per class for boxes that carry none (nuScenes attribute names; "" for cones / barriers).
DEFAULT_ATTRIBUTE = {
    "car": "vehicle.moving",
    "truck": "vehicle.moving",
    "bus": "vehicle.moving",
    "trailer": "vehicle.parked",
    "construction_vehicle": "vehicle.parked",
    "pedestrian": "pedestrian.moving",
    "motorcycle": "cycle.with_rider",
    "bicycle": "cycle.with_rider",
    "traffic_cone": "",
    "barrier": "",
}

# The nuScenes ego vehicle (Renault Zoe), length, width, height in metres: the default ego size of ego-size QA.
NUSCENES_EGO_SIZE_LWH: tuple[float, float, float] = (4.084, 1.730, 1.562)


# KITTI object / tracking types -> nuScenes detection class ("" = no single class: Tram, rail vehicles, are not
# annotated in nuScenes; Misc holds trailers, segways, ...). DontCare rows are regions, not objects, and have no entry.
# Shared by the KITTI reader example (examples/kitti_tracking_reader) and the mmdet3d class map.
KITTI_TO_DETECTION: dict[str, str] = {
    "Car": "car",
    "Van": "car",
    "Truck": "truck",
    "Pedestrian": "pedestrian",
    "Person_sitting": "pedestrian",
    "Cyclist": "bicycle",
    "Tram": "",
    "Misc": "",
}
