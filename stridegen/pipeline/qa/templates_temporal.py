"""Question and answer phrasings of the ego-centric spatiotemporal QA (STRIDE-QA-Bench groups).

Questions are keyed by the official ``qa_category`` name (the item's ``predicate``); the three future horizons of
one quantity share their phrasings through the ``{n}`` / ``{secs}`` slots. Answers are keyed by answer set.

Slots: ``{region}`` ("Region [0]"), ``{n}`` (whole seconds ahead), ``{secs}`` ("second" / "seconds"),
``{dist}`` ("12.34 m", ``fmt_metres``), ``{deg}`` ("-35 degrees", ``fmt_degrees``), ``{clock}`` ("1 o'clock",
from the rounded angle), ``{side}`` ("35 degrees to the right", "dead ahead", "directly behind"), ``{speed}``
("3.21 m/s", ``fmt_mps``).

Every answer must read back to its ground truth with both answer grammars of ``stridegen.eval.lsr.answer_parser``
(the toolkit's ``official`` one and our ``robust`` one), which constrains the wording (tested for every
phrasing in tests/pipeline/qa/test_spatiotemporal.py):

- the signed angle (``{deg}``) comes before the clock position and before ``{side}``: both grammars take the
  first angle, and the robust one reads a clock position that comes first;
- the distance comes before any other length-like text, and no number is followed by "in", "ft", "m" ... other
  than the quantity itself (the official grammar takes the first unit family found anywhere);
- no bare number directly followed by "and" / "to" / "-" and another number (the robust grammar reads ranges).
"""

from __future__ import annotations

from stridegen.pipeline.qa.base import Phrasebook

HORIZONS_S: tuple[int, ...] = (1, 2, 3)

# Answer sets.
ANS_DISTANCE = "distance"
ANS_BEARING = "bearing"
ANS_TARGET_SPEED = "target_speed"
ANS_EGO_SPEED = "ego_speed"
ANS_DISTANCE_FUTURE = "distance_future"
ANS_TARGET_SPEED_FUTURE = "target_speed_future"
ANS_EGO_SPEED_FUTURE = "ego_speed_future"

_Q_DISTANCE_NOW = (
    "How far is {region} from the ego vehicle?",
    "What is the distance between the ego vehicle and {region}?",
    "How far away is {region} from us right now?",
    "Can you tell me how far {region} is from our car?",
    "What is the current distance from the ego vehicle to {region}?",
    "How many meters separate us from {region} at the moment?",
    "Give the distance from the ego car to {region} at this moment.",
    "How distant is {region} from the ego vehicle now?",
    "Measure the distance from our vehicle to {region}.",
)
_Q_BEARING_NOW = (
    "In which direction is {region} from the ego vehicle?",
    "At what angle is {region} relative to our heading?",
    "What is the bearing of {region} from the ego vehicle?",
    "Which way is {region} from us, as an angle from straight ahead?",
    "What is the heading angle of {region} in the ego vehicle's frame?",
    "How many degrees off our heading is {region}?",
    "Where is {region} relative to the ego vehicle's direction of travel, in degrees?",
    "From the ego car's point of view, at what angle does {region} lie?",
)
_Q_TARGET_SPEED_NOW = (
    "How fast is {region} moving?",
    "What is the current speed of {region}?",
    "At what speed is {region} travelling right now?",
    "How quickly is {region} going at the moment?",
    "What speed does {region} have now?",
    "Tell me the speed of {region}.",
    "How fast is {region} going over the ground?",
    "What is the speed of {region} at this moment?",
)
_Q_EGO_SPEED_NOW = (
    "How fast is the ego vehicle going?",
    "What is our current speed?",
    "At what speed is the ego car travelling right now?",
    "What is the speed of the ego vehicle at this moment?",
    "How fast are we driving now?",
    "Tell me the ego vehicle's current speed.",
    "What speed is our car doing?",
    "How quickly is the ego vehicle moving at present?",
)
_Q_DISTANCE_FUTURE = (
    "How far will {region} be from us in {n} {secs}, and in which direction?",
    "Where will {region} be relative to the ego vehicle {n} {secs} from now (distance and angle)?",
    "In {n} {secs}, what will be the distance and bearing of {region} from the ego vehicle?",
    "Predict the distance and direction of {region} from our car after {n} {secs}.",
    "After {n} {secs}, how far away will {region} be, and at what angle?",
    "What distance and heading angle will {region} have relative to the ego vehicle {n} {secs} later?",
    "{n} {secs} from now, how far and in which direction will {region} be from us?",
    "Estimate where {region} will be in {n} {secs}: how far from the ego vehicle, and at which angle?",
    "Looking {n} {secs} ahead, at what distance and direction will {region} be from the ego car?",
)
_Q_TARGET_SPEED_FUTURE = (
    "How fast will {region} be moving in {n} {secs}?",
    "What will the speed of {region} be {n} {secs} from now?",
    "Predict the speed of {region} after {n} {secs}.",
    "At what speed will {region} travel {n} {secs} later?",
    "In {n} {secs}, how fast will {region} be going?",
    "What speed will {region} have after {n} {secs}?",
    "Estimate the speed of {region} {n} {secs} from now.",
    "How quickly will {region} be moving {n} {secs} into the future?",
)
_Q_EGO_SPEED_FUTURE = (
    "How fast will the ego vehicle be going in {n} {secs}?",
    "What will our speed be {n} {secs} from now?",
    "Predict the ego car's speed after {n} {secs}.",
    "At what speed will we be driving {n} {secs} later?",
    "In {n} {secs}, how fast will the ego vehicle travel?",
    "What speed will the ego vehicle have after {n} {secs}?",
    "Estimate our vehicle's speed {n} {secs} into the future.",
    "How quickly will we be moving {n} {secs} from now?",
)

QUESTIONS: dict[str, tuple[str, ...]] = {
    "ego_distance_data": _Q_DISTANCE_NOW,
    "target_bearing_angle_data": _Q_BEARING_NOW,
    "target_speed_data": _Q_TARGET_SPEED_NOW,
    "ego_speed_data": _Q_EGO_SPEED_NOW,
    **{f"ego_distance_data_4d_t{t}": _Q_DISTANCE_FUTURE for t in HORIZONS_S},
    **{f"target_speed_data_4d_t{t}": _Q_TARGET_SPEED_FUTURE for t in HORIZONS_S},
    **{f"ego_speed_data_4d_t{t}": _Q_EGO_SPEED_FUTURE for t in HORIZONS_S},
}

ANSWERS: dict[str, tuple[str, ...]] = {
    ANS_DISTANCE: (
        "{region} is {dist} away.",
        "The ego vehicle is {dist} from {region}.",
        "{region} is {dist} from us right now.",
        "It is {dist} from the ego vehicle to {region}.",
        "The distance to {region} is {dist}.",
    ),
    ANS_BEARING: (
        "{region} is at {deg}, about {clock}.",
        "{region} lies at {deg}, that is {side}.",
        "The bearing of {region} is {deg} (the {clock} position).",
        "{region} is {deg} from our heading, roughly at {clock}.",
        "Seen from the ego vehicle, {region} is at {deg}.",
    ),
    ANS_TARGET_SPEED: (
        "{region} is moving at {speed}.",
        "The speed of {region} is {speed}.",
        "{region} travels at {speed} right now.",
        "The current speed of {region} is {speed}.",
    ),
    ANS_EGO_SPEED: (
        "The ego vehicle is travelling at {speed}.",
        "We are driving at {speed}.",
        "Our current speed is {speed}.",
        "The ego car's speed is {speed} right now.",
    ),
    ANS_DISTANCE_FUTURE: (
        "In {n} {secs}, {region} will be {dist} away at {deg}.",
        "{region} will be {dist} from the ego vehicle at {deg} (about {clock}) after {n} {secs}.",
        "After {n} {secs} it will be {dist} away, at {deg}, that is {side}.",
        "{n} {secs} from now, {region} will be at {dist} and {deg}, roughly {clock}.",
        "In {n} {secs} {region} is expected {dist} away, at {deg}.",
    ),
    ANS_TARGET_SPEED_FUTURE: (
        "In {n} {secs}, {region} will be moving at {speed}.",
        "{region} will travel at {speed} after {n} {secs}.",
        "The speed of {region} {n} {secs} from now will be {speed}.",
        "{n} {secs} later, the speed of {region} will be {speed}.",
    ),
    ANS_EGO_SPEED_FUTURE: (
        "In {n} {secs}, the ego vehicle will be travelling at {speed}.",
        "We will be driving at {speed} after {n} {secs}.",
        "Our speed {n} {secs} from now will be {speed}.",
        "{n} {secs} later, the ego car will move at {speed}.",
    ),
}

# predicate -> answer set
ANSWER_SET: dict[str, str] = {
    "ego_distance_data": ANS_DISTANCE,
    "target_bearing_angle_data": ANS_BEARING,
    "target_speed_data": ANS_TARGET_SPEED,
    "ego_speed_data": ANS_EGO_SPEED,
    **{f"ego_distance_data_4d_t{t}": ANS_DISTANCE_FUTURE for t in HORIZONS_S},
    **{f"target_speed_data_4d_t{t}": ANS_TARGET_SPEED_FUTURE for t in HORIZONS_S},
    **{f"ego_speed_data_4d_t{t}": ANS_EGO_SPEED_FUTURE for t in HORIZONS_S},
}

PHRASEBOOK = Phrasebook(QUESTIONS, ANSWERS)


def side_phrase(deg_rounded: float) -> str:
    """Words for a rounded ego-frame angle: "35 degrees to the left" (positive = counter-clockwise = left)."""
    if deg_rounded == 0.0:
        return "dead ahead"
    if deg_rounded == 180.0:
        return "directly behind"
    side = "left" if deg_rounded > 0.0 else "right"
    return f"{abs(deg_rounded):.0f} degrees to the {side}"


def seconds_word(n: int) -> str:
    return "second" if n == 1 else "seconds"
