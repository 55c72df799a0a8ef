"""Class vocabulary: nuScenes categories, the 10 nuScenes detection classes, and STRIDE-QA's object classes.

STRIDE-QA (arXiv 2508.10427, tables 4-5) reports objects by coarser, language-friendly classes (vehicle, large
vehicle, bus, pedestrian, bicycle, motorcycle, kick scooter, ...). QA text uses these names; detection and tracking
validation use the nuScenes detection classes. The tables below map every nuScenes category to both.
"""

from __future__ import annotations

from stridegen.logs.nuscenes import CATEGORY_TO_DETECTION

DETECTION_CLASSES = (
    "car", "truck", "bus", "trailer", "construction_vehicle", "pedestrian", "motorcycle", "bicycle",
    "traffic_cone", "barrier",
)
TRACKING_CLASSES = ("bicycle", "bus", "car", "motorcycle", "pedestrian", "trailer", "truck")

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
    "car": "vehicle", "truck": "large vehicle", "trailer": "large vehicle", "construction_vehicle": "large vehicle",
    "bus": "bus", "pedestrian": "pedestrian", "motorcycle": "motorcycle", "bicycle": "bicycle",
    "traffic_cone": "traffic cone", "barrier": "barrier",
}

STRIDE_CLASSES = tuple(dict.fromkeys(CATEGORY_TO_STRIDE.values()))


def detection_class(category: str) -> str:
    """nuScenes detection class of a category ("" when it has none)."""
    return CATEGORY_TO_DETECTION.get(category, "")


def stride_class(category_or_detection_class: str) -> str:
    """STRIDE-QA class of a nuScenes category or detection class ("" when unmapped)."""
    return CATEGORY_TO_STRIDE.get(category_or_detection_class) or DETECTION_TO_STRIDE.get(
        category_or_detection_class, "")
