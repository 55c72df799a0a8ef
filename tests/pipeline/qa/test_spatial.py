"""Spatial QA generator: known answers, an independent scalar re-derivation of every item, phrasings, balance."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference.demo_contexts import demo_contexts  # the demo keyframe's QA contexts, shared with the benchmark
from stridegen.core.errors import ConfigError, GeometryError
from stridegen.pipeline.qa.base import (
    CATEGORY_EGO_SPATIAL,
    CATEGORY_OBJECT_SPATIAL,
    QAContext,
    QAItem,
    fmt_clock,
    fmt_degrees,
    fmt_metres,
    round_degrees,
    round_metres,
)
from stridegen.pipeline.qa.spatial import generate_spatial_qa, spatial_scene_generator
from stridegen.pipeline.qa.spatial_predicates import DEFAULT_PREDICATES, SPATIAL_PREDICATES, SpatialQAConfig
from stridegen.pipeline.qa.templates_spatial import ANSWERS, QUESTIONS, SPATIAL_PHRASEBOOK
from tests.shared_data import NUSCENES_DEMO, needs_nuscenes_demo

EGO_LWH = (4.084, 1.730, 1.562)
ALL = SpatialQAConfig(max_pairs_per_image=10_000, max_qa_per_image=0, predicates=frozenset(SPATIAL_PREDICATES))

YES_NO_PAIR = {  # predicate -> (quantity, sense): sense +1 "A's quantity is larger", -1 "A's is smaller"
    "left_of": ("x_cam", -1),
    "right_of": ("x_cam", 1),
    "in_front_of": ("z_cam", -1),
    "behind": ("z_cam", 1),
    "bigger": ("volume", 1),
    "smaller": ("volume", -1),
    "taller": ("h", 1),
    "shorter": ("h", -1),
    "wider": ("w", 1),
    "thinner": ("w", -1),
}
YES_NO_EGO = {
    "bigger_than_ego": ("volume", 1),
    "smaller_than_ego": ("volume", -1),
    "taller_than_ego": ("h", 1),
    "shorter_than_ego": ("h", -1),
    "wider_than_ego": ("w", 1),
    "thinner_than_ego": ("w", -1),
}
FAMILY_OF = {p: i // 2 for i, p in enumerate(YES_NO_PAIR)} | {p: 5 + i // 2 for i, p in enumerate(YES_NO_EGO)}
NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?")


# ---------------------------------------------------------------------------------------------- contexts


def cam_from_ego(center_ego: np.ndarray) -> np.ndarray:
    """A front camera 1 m ahead of and 1.5 m above the ego origin, looking along ego +x (x right, y down, z fwd)."""
    c = np.asarray(center_ego, dtype=float).reshape(-1, 3)
    return np.c_[-c[:, 1], 1.5 - c[:, 2], c[:, 0] - 1.0]


def make_ctx(center_ego, size_lwh, center_cam=None, region_id=None, classes=None, ego=EGO_LWH) -> QAContext:
    center_ego = np.asarray(center_ego, dtype=float).reshape(-1, 3)
    n = center_ego.shape[0]
    return QAContext(
        scene="scene-test",
        keyframe_index=0,
        frame_index=4,
        channel="CAM_FRONT",
        region_id=np.arange(n) if region_id is None else np.asarray(region_id),
        track_index=np.arange(n) * 7 + 3,
        object_class=np.array(classes if classes is not None else ["vehicle"] * n, dtype=object),
        center_ego=center_ego,
        size_lwh=np.asarray(size_lwh, dtype=float).reshape(-1, 3),
        yaw_ego=np.zeros(n),
        center_cam=cam_from_ego(center_ego) if center_cam is None else np.asarray(center_cam, float).reshape(-1, 3),
        ego_size_lwh=ego,
    )


def known_pair_ctx() -> QAContext:
    """A: car at ego (10, 3, 0.5); B: truck at ego (13, -1, 1.7). A left of B, nearer, smaller, lower, thinner."""
    return make_ctx(
        [[10.0, 3.0, 0.5], [13.0, -1.0, 1.7]], [[4.5, 1.9, 1.6], [8.0, 2.5, 3.2]], classes=["vehicle", "large vehicle"]
    )


def items_over_seeds(ctx: QAContext, seeds, config: SpatialQAConfig = ALL) -> list[QAItem]:
    out: list[QAItem] = []
    for s in seeds:
        out.extend(generate_spatial_qa(ctx, np.random.default_rng(s), config))
    return out


# ---------------------------------------------------------------------------------------------- scalar oracle


def _near_half(x: float, decimals: int) -> bool:
    """True when x lies within 1e-9 of a rounding tie at ``decimals`` (two float paths may then round apart)."""
    scaled = x * 10**decimals
    return abs(scaled - math.floor(scaled) - 0.5) < 1e-9 * max(1.0, abs(scaled))


def _clock_hour(x: float, y: float) -> int:
    """Nearest hour on a clock face with 12 ahead and 3 to the right: the k whose direction is circularly closest."""
    clockwise = -math.degrees(math.atan2(y, x))
    return min(range(1, 13), key=lambda k: abs((clockwise - 30.0 * k + 540.0) % 360.0 - 180.0))


def _region(ctx: QAContext, pos: int) -> dict[str, float]:
    l, w, h = (float(v) for v in ctx.size_lwh[pos])
    return {
        "x_cam": float(ctx.center_cam[pos][0]),
        "z_cam": float(ctx.center_cam[pos][2]),
        "l": l,
        "w": w,
        "h": h,
        "volume": l * w * h,
        "x": float(ctx.center_ego[pos][0]),
        "y": float(ctx.center_ego[pos][1]),
        "z": float(ctx.center_ego[pos][2]),
    }


def _pair_ambiguous(ra: dict, rb: dict, quantity: str, cfg: SpatialQAConfig) -> bool:
    qa, qb = ra[quantity], rb[quantity]
    if not (math.isfinite(qa) and math.isfinite(qb)) or qa == qb:
        return True
    if quantity == "x_cam":
        return abs(qa - qb) < cfg.lateral_min_m
    if quantity == "z_cam":
        return abs(qa - qb) < cfg.depth_min_m
    return abs(qa - qb) < cfg.size_rel_min * max(abs(qa), abs(qb))


def _ego_quantity(quantity: str, ego) -> float:
    return {"volume": ego[0] * ego[1] * ego[2], "h": ego[2], "w": ego[1]}[quantity]


def check_item(ctx: QAContext, item: QAItem, cfg: SpatialQAConfig) -> None:
    """Re-derive one item's truth from the context arrays with plain scalar code and compare."""
    pos = {int(r): i for i, r in enumerate(np.asarray(ctx.region_id).tolist())}
    regions = [_region(ctx, pos[r]) for r in item.region_ids]
    names = [f"Region [{r}]" for r in item.region_ids]
    assert item.track_indices == tuple(int(ctx.track_index[pos[r]]) for r in item.region_ids)
    assert item.object_class == str(ctx.object_class[pos[item.region_ids[0]]])
    # The question names the regions in order, the answer names them all.
    at = [item.question.index(n) for n in names]
    assert at == sorted(at), item.question
    assert all(n in item.answer for n in names), item.answer
    p = item.predicate
    ego_preds = {
        "ego_distance",
        "ego_heading_angle",
        "ego_clock_direction",
        "ego_left_right",
        "region_length",
        "region_width",
        "region_height",
        *YES_NO_EGO,
    }
    assert item.category == (CATEGORY_EGO_SPATIAL if p in ego_preds else CATEGORY_OBJECT_SPATIAL)
    assert (item.group_id, item.horizon_s, item.frame_indices, item.out_of_view) == ("", 0, (), -1)
    if p in YES_NO_PAIR or p in YES_NO_EGO:
        quantity, sense = (YES_NO_PAIR | YES_NO_EGO)[p]
        a = regions[0][quantity]
        if p in YES_NO_PAIR:
            assert len(regions) == 2 and item.region_ids[0] != item.region_ids[1]
            assert not _pair_ambiguous(regions[0], regions[1], quantity, cfg), (p, regions)
            b = regions[1][quantity]
        else:
            assert len(regions) == 1
            b = _ego_quantity(quantity, ctx.ego_size_lwh)
            assert math.isfinite(a) and a != b and abs(a - b) >= cfg.ego_size_rel_min * max(a, b), (p, a, b)
        holds = a > b if sense > 0 else a < b
        assert item.gt_label == ("yes" if holds else "no"), (p, a, b, item)
        assert math.isnan(item.gt_value) and item.unit == ""
        assert item.answer.split()[0].strip(",.").lower() in (
            ("yes", "correct", "indeed") if holds else ("no", "incorrect")
        )
        return
    if p == "ego_left_right":
        y = regions[0]["y"]
        assert abs(y) >= cfg.ego_lateral_min_m
        assert item.gt_label == ("left" if y > 0 else "right")
        assert item.gt_label in item.answer.lower() and math.isnan(item.gt_value)
        return
    r0 = regions[0]
    if p in ("direct_distance", "horizontal_distance", "vertical_distance"):
        r1 = regions[1]
        dx, dy, dz = r0["x"] - r1["x"], r0["y"] - r1["y"], r0["z"] - r1["z"]
        truth = {
            "direct_distance": math.sqrt(dx * dx + dy * dy + dz * dz),
            "horizontal_distance": math.sqrt(dx * dx + dy * dy),
            "vertical_distance": abs(dz),
        }[p]
    elif p in ("width", "region_width"):
        truth = r0["w"]
    elif p in ("height", "region_height"):
        truth = r0["h"]
    elif p == "region_length":
        truth = r0["l"]
    elif p == "ego_distance":
        truth = math.sqrt(r0["x"] ** 2 + r0["y"] ** 2)
    elif p == "ego_heading_angle":
        assert math.hypot(r0["x"], r0["y"]) >= cfg.heading_min_distance_m
        truth = math.degrees(math.atan2(r0["y"], r0["x"]))
        if not _near_half(truth, 0):
            assert item.gt_value == round_degrees(truth), (truth, item)
        assert item.unit == "deg" and item.gt_label == ""
        assert fmt_degrees(item.gt_value) in item.answer
        _assert_single_number(item, names, fmt_degrees(item.gt_value).split()[0])
        return
    elif p == "ego_clock_direction":
        assert math.hypot(r0["x"], r0["y"]) >= cfg.heading_min_distance_m
        clockwise = -math.degrees(math.atan2(r0["y"], r0["x"]))
        to_boundary = min(abs((clockwise - 15.0 - 30.0 * k + 540.0) % 360.0 - 180.0) for k in range(12))
        assert to_boundary >= cfg.clock_margin_deg - 1e-9
        assert item.gt_value == _clock_hour(r0["x"], r0["y"]) and item.unit == "o'clock"
        assert fmt_clock(int(item.gt_value)) in item.answer
        _assert_single_number(item, names, str(int(item.gt_value)))
        return
    else:
        raise AssertionError(f"unexpected predicate {p}")
    if not _near_half(truth, 2):
        assert item.gt_value == round_metres(truth), (p, truth, item)
    assert item.unit == "m" and item.gt_label == ""
    assert fmt_metres(item.gt_value) in item.answer
    _assert_single_number(item, names, f"{item.gt_value:.2f}")


def _assert_single_number(item: QAItem, names: list[str], canonical: str) -> None:
    rest = item.answer
    for n in names:
        rest = rest.replace(n, "")
    assert NUMBER_RE.findall(rest) == [canonical], (item.answer, canonical)


def expected_counts(ctx: QAContext, cfg: SpatialQAConfig) -> Counter:
    """Per (region pair or region, family): how many items a cap-free run must produce (0 or 1)."""
    n = len(ctx)
    regs = [_region(ctx, i) for i in range(n)]
    out: Counter = Counter()
    rid = [int(r) for r in ctx.region_id]
    for i in range(n):
        for j in range(i + 1, n):
            key = (min(rid[i], rid[j]), max(rid[i], rid[j]))
            for fam, quantity in enumerate(("x_cam", "z_cam", "volume", "h", "w")):
                out[(key, fam)] = 0 if _pair_ambiguous(regs[i], regs[j], quantity, cfg) else 1
            for name in ("direct_distance", "horizontal_distance", "vertical_distance"):
                out[(key, name)] = 1
    for i, r in enumerate(regs):
        d = math.hypot(r["x"], r["y"])
        for name in ("width", "height", "ego_distance", "region_length", "region_width", "region_height"):
            out[((rid[i],), name)] = 1
        out[((rid[i],), "ego_heading_angle")] = int(d >= cfg.heading_min_distance_m)
        clockwise = -math.degrees(math.atan2(r["y"], r["x"]))
        to_boundary = min(abs((clockwise - 15.0 - 30.0 * k + 540.0) % 360.0 - 180.0) for k in range(12))
        out[((rid[i],), "ego_clock_direction")] = int(
            d >= cfg.heading_min_distance_m and to_boundary >= cfg.clock_margin_deg
        )
        out[((rid[i],), "ego_left_right")] = int(abs(r["y"]) >= cfg.ego_lateral_min_m and r["y"] != 0)
        for fam, quantity in enumerate(("volume", "h", "w")):
            a, b = r[quantity], _ego_quantity(quantity, ctx.ego_size_lwh)
            out[((rid[i],), 5 + fam)] = int(a != b and abs(a - b) >= cfg.ego_size_rel_min * max(a, b))
    return out


def observed_counts(items: list[QAItem]) -> Counter:
    out: Counter = Counter()
    for it in items:
        key = tuple(sorted(it.region_ids))
        out[(key, FAMILY_OF.get(it.predicate, it.predicate))] += 1
    return out


# ---------------------------------------------------------------------------------------------- known answers


def test_known_pair_every_predicate():
    ctx = known_pair_ctx()
    items = items_over_seeds(ctx, range(40))
    truth = {  # (predicate, region_ids) -> label, from the hand-built geometry
        "left_of": "yes",
        "right_of": "no",
        "in_front_of": "yes",
        "behind": "no",
        "bigger": "no",
        "smaller": "yes",
        "taller": "no",
        "shorter": "yes",
        "wider": "no",
        "thinner": "yes",
    }
    seen: set[tuple[str, tuple[int, ...]]] = set()
    for it in items:
        seen.add((it.predicate, it.region_ids))
        if it.predicate in truth:
            expect = truth[it.predicate] if it.region_ids == (0, 1) else {"yes": "no", "no": "yes"}[truth[it.predicate]]
            assert it.gt_label == expect, it
    for p in truth:  # both orders of every yes/no predicate were drawn
        assert (p, (0, 1)) in seen and (p, (1, 0)) in seen, p
    by = {}
    for it in items:
        by.setdefault((it.predicate, tuple(sorted(it.region_ids))), set()).add((it.gt_value, it.gt_label))
    assert by[("direct_distance", (0, 1))] == {(5.14, "")}  # sqrt(4^2 + 3^2 ... ) = sqrt(26.44) = 5.142
    assert by[("horizontal_distance", (0, 1))] == {(5.0, "")}
    assert by[("vertical_distance", (0, 1))] == {(1.2, "")}
    assert by[("width", (0,))] == {(1.9, "")} and by[("width", (1,))] == {(2.5, "")}
    assert by[("height", (0,))] == {(1.6, "")} and by[("height", (1,))] == {(3.2, "")}
    assert by[("region_length", (0,))] == {(4.5, "")} and by[("region_length", (1,))] == {(8.0, "")}
    assert by[("ego_distance", (0,))] == {(10.44, "")}  # sqrt(109) = 10.4403
    assert by[("ego_distance", (1,))] == {(13.04, "")}  # sqrt(170) = 13.0384
    assert by[("ego_heading_angle", (0,))] == {(17.0, "")}  # atan2(3, 10) = 16.70 deg, to the left
    assert by[("ego_heading_angle", (1,))] == {(-4.0, "")}  # atan2(-1, 13) = -4.40 deg
    assert by[("ego_clock_direction", (0,))] == {(11.0, "")}  # 16.7 deg left of ahead: nearest hour 11
    assert by[("ego_clock_direction", (1,))] == {(12.0, "")}
    assert {lab for _, lab in by[("ego_left_right", (0,))]} == {"left"}
    assert {lab for _, lab in by[("ego_left_right", (1,))]} == {"right"}
    # Versus the ego (4.084 x 1.730 x 1.562, 11.04 m^3): A is 13.68 m^3 (24 % bigger), 1.6 m high (2 %: skipped),
    # 1.9 m wide (9 %: skipped); B is bigger, taller and wider.
    assert {
        lab for (p, r), v in by.items() if r == (0,) and p in ("bigger_than_ego", "smaller_than_ego") for _, lab in v
    } == {"yes", "no"}
    for p in ("taller_than_ego", "shorter_than_ego", "wider_than_ego", "thinner_than_ego"):
        assert (p, (0,)) not in by
    for it in items:
        if it.region_ids == (1,) and it.predicate in YES_NO_EGO:
            assert it.gt_label == (
                "yes" if it.predicate in ("bigger_than_ego", "taller_than_ego", "wider_than_ego") else "no"
            )
        if it.region_ids == (0,) and it.predicate in ("bigger_than_ego", "smaller_than_ego"):
            assert it.gt_label == ("yes" if it.predicate == "bigger_than_ego" else "no")
    for it in items:
        check_item(ctx, it, ALL)


def test_left_right_is_the_cameras_view():
    # A at ego y = +3 (left of the ego), B at y = -3: A is left of B in a front camera ...
    ctx = make_ctx([[20.0, 3.0, 1.0], [20.5, -3.0, 1.0]], [[4.5, 1.9, 1.6]] * 2)
    for it in items_over_seeds(ctx, range(10)):
        if it.predicate == "left_of":
            assert it.gt_label == ("yes" if it.region_ids == (0, 1) else "no")
        if it.predicate in ("in_front_of", "behind", "bigger", "smaller", "taller", "shorter", "wider", "thinner"):
            raise AssertionError(f"ambiguous pair produced {it.predicate}")  # 0.5 m depth apart, equal sizes
    # ... and in a rear camera (looking along ego -x) the image's left is the ego's right.
    rear_cam = np.c_[[12.0, -12.0], [0.5, 0.5], [19.0, 19.5]]
    ctx = make_ctx([[-20.0, 12.0, 1.0], [-20.5, -12.0, 1.0]], [[4.5, 1.9, 1.6]] * 2, center_cam=rear_cam)
    for it in items_over_seeds(ctx, range(10)):
        if it.predicate == "right_of":
            assert it.gt_label == ("yes" if it.region_ids == (0, 1) else "no")
        if it.predicate == "ego_left_right":
            assert it.gt_label == ("left" if it.region_ids == (0,) else "right")
        if it.predicate == "ego_clock_direction":
            assert it.gt_value == (7.0 if it.region_ids == (0,) else 5.0)  # behind-left: about 7 o'clock


def test_ambiguity_thresholds_are_inclusive_at_the_limit():
    # lateral exactly 0.5 m apart, depth exactly 1.0 m apart: both qualify (strict "<" skips).
    ctx = make_ctx([[10.0, 0.25, 1.0], [11.0, -0.25, 1.0]], [[4.0, 2.0, 1.5], [4.0, 2.0, 1.5]])
    preds = {it.predicate for it in items_over_seeds(ctx, range(20))}
    assert {"left_of", "right_of", "in_front_of", "behind"} <= preds
    assert not preds & {"bigger", "smaller", "taller", "shorter", "wider", "thinner", "ego_left_right"}
    # 9 % apart in every dimension: no size comparison; 11 %: all of them.
    ctx = make_ctx([[10.0, 4.0, 1.0], [20.0, -4.0, 1.0]], [[4.0, 2.0, 1.5], [4.0, 2.0 * 1.09, 1.5 * 1.09]])
    preds = {it.predicate for it in items_over_seeds(ctx, range(20))}
    assert not preds & {"taller", "shorter", "wider", "thinner"} and preds & {"bigger", "smaller"}  # volume: 19 %
    ctx = make_ctx([[10.0, 4.0, 1.0], [20.0, -4.0, 1.0]], [[4.0, 2.0, 1.5], [4.0, 2.0 * 1.12, 1.5 * 1.12]])
    assert {"taller", "shorter", "wider", "thinner"} <= {it.predicate for it in items_over_seeds(ctx, range(20))}


def test_clock_margin_and_heading_distance():
    # 15 deg right of ahead is the 12 / 1 o'clock boundary: no clock item; 20 deg right: 1 o'clock.
    t15, t20 = math.radians(-15.0), math.radians(-20.0)
    ctx = make_ctx(
        [[10 * math.cos(t15), 10 * math.sin(t15), 1.0], [10 * math.cos(t20), 10 * math.sin(t20), 1.0], [0.5, 0.3, 1.0]],
        [[4.0, 2.0, 1.5]] * 3,
    )
    items = items_over_seeds(ctx, range(5))
    clock = {it.region_ids: it.gt_value for it in items if it.predicate == "ego_clock_direction"}
    assert clock == {(1,): 1.0}
    heading = {it.region_ids: it.gt_value for it in items if it.predicate == "ego_heading_angle"}
    assert heading == {(0,): -15.0, (1,): -20.0}  # region 2 is 0.58 m from the ego origin: no heading
    # Straight behind, a hair to the right: -179.7 deg rounds to -180, written as 180 (range (-180, 180]).
    ctx = make_ctx([[-20.0, -0.1, 1.0]], [[4.0, 2.0, 1.5]])
    heading = [
        it for it in generate_spatial_qa(ctx, np.random.default_rng(0), ALL) if it.predicate == "ego_heading_angle"
    ]
    assert [it.gt_value for it in heading] == [180.0] and "180 degrees" in heading[0].answer
    assert "-180" not in heading[0].answer


def test_non_finite_geometry_is_skipped_not_guessed():
    ctx = make_ctx([[10.0, 3.0, 1.0], [20.0, -3.0, 1.0], [30.0, 6.0, 1.0]], [[4.0, 2.0, 1.5], [8, 2.5, 3], [1, 1, 1]])
    ctx.center_cam[2, 0] = np.nan  # region 2 has no lateral camera coordinate
    ctx.size_lwh[1, 2] = np.nan  # region 1 has no height
    items = items_over_seeds(ctx, range(10))
    for it in items:
        check_item(ctx, it, ALL)
        if 2 in it.region_ids:
            assert it.predicate not in ("left_of", "right_of")
        if 1 in it.region_ids:
            assert it.predicate not in (
                "taller",
                "shorter",
                "bigger",
                "smaller",
                "height",
                "region_height",
                "taller_than_ego",
                "shorter_than_ego",
                "bigger_than_ego",
                "smaller_than_ego",
            )
    assert any(it.predicate in ("left_of", "right_of") for it in items)


def test_small_and_empty_contexts():
    assert generate_spatial_qa(make_ctx(np.zeros((0, 3)), np.zeros((0, 3))), np.random.default_rng(0)) == []
    one = generate_spatial_qa(make_ctx([[10.0, 3.0, 1.0]], [[4.0, 2.0, 1.5]]), np.random.default_rng(0))
    assert one and all(len(it.region_ids) == 1 for it in one)


def test_bad_context_raises_typed_error():
    ctx = known_pair_ctx()
    ctx.center_cam = ctx.center_cam[:1]
    with pytest.raises(GeometryError, match="center_cam"):
        generate_spatial_qa(ctx, np.random.default_rng(0))
    ctx = known_pair_ctx()
    ctx.ego_size_lwh = (4.0, 0.0, 1.5)
    with pytest.raises(GeometryError, match="ego_size_lwh"):
        generate_spatial_qa(ctx, np.random.default_rng(0))


def test_config_validation_and_switches():
    with pytest.raises(ConfigError, match="unknown"):
        SpatialQAConfig(predicates=frozenset({"left_of", "next_to"}))
    with pytest.raises(ConfigError):
        SpatialQAConfig(depth_min_m=-1.0)
    with pytest.raises(ConfigError):
        SpatialQAConfig(clock_margin_deg=15.0)
    with pytest.raises(ConfigError):
        SpatialQAConfig(max_qa_per_image=-1)
    assert "region_width" not in DEFAULT_PREDICATES and "width" in DEFAULT_PREDICATES
    ctx = known_pair_ctx()
    only_left = SpatialQAConfig(predicates=frozenset({"left_of"}))
    items = items_over_seeds(ctx, range(20), only_left)
    assert {it.predicate for it in items} == {"left_of"}
    assert {it.gt_label for it in items} == {"yes", "no"}  # the order alone still balances
    items = generate_spatial_qa(ctx, np.random.default_rng(0))
    assert not {it.predicate for it in items} & {"region_width", "region_height"}


def test_caps():
    rng = np.random.default_rng(3)
    ctx = random_ctx(rng, 9)
    cfg = SpatialQAConfig(max_pairs_per_image=5, max_qa_per_image=0)
    items = generate_spatial_qa(ctx, np.random.default_rng(0), cfg)
    assert len({tuple(sorted(it.region_ids)) for it in items if len(it.region_ids) == 2}) <= 5
    cfg = SpatialQAConfig(max_qa_per_image=17)
    items = generate_spatial_qa(ctx, np.random.default_rng(0), cfg)
    assert len(items) == 17
    for it in items:
        check_item(ctx, it, cfg)
    assert not [
        it
        for it in generate_spatial_qa(ctx, np.random.default_rng(0), SpatialQAConfig(max_pairs_per_image=0))
        if len(it.region_ids) == 2
    ]


# ---------------------------------------------------------------------------------------------- phrasings


def _slots(template: str) -> list[str]:
    return re.findall(r"{(\w*)}", template)


def test_phrasebook_sizes_and_slots():
    assert set(QUESTIONS) == set(SPATIAL_PREDICATES)
    for p in SPATIAL_PREDICATES:
        qs = QUESTIONS[p]
        assert len(qs) >= 8, p
        two = p in YES_NO_PAIR or p in ("direct_distance", "horizontal_distance", "vertical_distance")
        for q in qs:
            slots = _slots(q)
            assert slots == (["a", "b"] if two else ["a"]), (p, q)
            filled = q.format(a="Region [0]", b="Region [1]")
            assert "{" not in filled and "}" not in filled
    for name, answers in ANSWERS.items():
        assert len(answers) >= 4, name
        numeric = ":" not in name
        for a in answers:
            slots = set(_slots(a))
            assert ("value" in slots) == numeric and _slots(a).count("value") <= 1, (name, a)
            assert not re.search(r"\d", a.replace("{", "").replace("}", "")), (name, a)  # the value is the only number
            filled = a.format(a="Region [0]", b="Region [1]", value="1.00 m")
            assert "{" not in filled and "}" not in filled
    assert SPATIAL_PHRASEBOOK.questions == QUESTIONS


def _words(template: str) -> tuple[str, ...]:
    return tuple(re.findall(r"[a-z']+", re.sub(r"{\w+}", "", template.lower())))


def test_phrasings_really_differ():
    for name, options in list(QUESTIONS.items()) + list(ANSWERS.items()):
        words = [_words(t) for t in options]
        assert len(set(words)) == len(words), name  # not just punctuation
        bags = [frozenset(w) for w in words]
        assert len(set(bags)) == len(bags), name  # not just word order
    # The "no" answer of a predicate states the opposite relation, not the asked one.
    assert all("left" in a for a in ANSWERS["right_of:no"]) and all("right" in a for a in ANSWERS["left_of:no"])


def test_same_seed_same_items_other_seed_other_phrasing():
    ctx = known_pair_ctx()
    a = generate_spatial_qa(ctx, np.random.default_rng(7))
    b = generate_spatial_qa(ctx, np.random.default_rng(7))
    key = [(i.predicate, i.question, i.answer, i.region_ids, i.gt_label, repr(i.gt_value)) for i in a]
    assert key == [(i.predicate, i.question, i.answer, i.region_ids, i.gt_label, repr(i.gt_value)) for i in b]
    c = generate_spatial_qa(ctx, np.random.default_rng(8))
    assert [i.question for i in a] != [i.question for i in c]
    # every template of a predicate is reachable
    used = Counter(
        it.question
        for it in items_over_seeds(ctx, range(200))
        if it.predicate == "ego_distance" and it.region_ids == (0,)
    )
    assert len(used) == len(QUESTIONS["ego_distance"])


# ---------------------------------------------------------------------------------------------- property tests


def random_ctx(rng: np.random.Generator, n: int) -> QAContext:
    ce = np.c_[rng.uniform(-50, 50, n), rng.uniform(-15, 15, n), rng.uniform(0.2, 2.5, n)]
    size = rng.uniform(0.3, 10.0, (n, 3))
    return make_ctx(
        ce,
        size,
        center_cam=cam_from_ego(ce) + rng.normal(0, 0.3, (n, 3)),
        region_id=rng.permutation(n),
        classes=rng.choice(["vehicle", "pedestrian", "bus"], n),
    )


_coord = st.one_of(st.integers(-8, 8).map(lambda k: k * 0.25), st.floats(-40, 40, allow_nan=False))
_size = st.one_of(st.integers(1, 12).map(lambda k: k * 0.5), st.floats(0.1, 15, allow_nan=False))
_region_strategy = st.tuples(
    st.tuples(_coord, _coord, _coord), st.tuples(_coord, _coord, _coord), st.tuples(_size, _size, _size)
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    regions=st.lists(_region_strategy, min_size=0, max_size=7),
    seed=st.integers(0, 2**32 - 1),
    ego=st.sampled_from([EGO_LWH, (4.5, 2.0, 1.5), (2.0, 1.0, 1.0)]),
)
def test_every_item_matches_an_independent_rederivation(regions, seed, ego):
    ctx = make_ctx(
        [r[0] for r in regions] or np.zeros((0, 3)),
        [r[2] for r in regions] or np.zeros((0, 3)),
        center_cam=[r[1] for r in regions] or np.zeros((0, 3)),
        region_id=np.random.default_rng(seed).permutation(len(regions)),
        ego=ego,
    )
    items = generate_spatial_qa(ctx, np.random.default_rng(seed), ALL)
    for it in items:
        check_item(ctx, it, ALL)
    # complete: every unambiguous (pair, family) gives exactly one item, every ambiguous one none
    expected = expected_counts(ctx, ALL)
    observed = observed_counts(items)
    assert {k: v for k, v in expected.items() if v} == dict(observed)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 12))
def test_random_scenes_with_default_config(seed, n):
    ctx = random_ctx(np.random.default_rng(seed), n)
    cfg = SpatialQAConfig()
    items = generate_spatial_qa(ctx, np.random.default_rng(seed + 1), cfg)
    assert len(items) <= cfg.max_qa_per_image
    for it in items:
        check_item(ctx, it, cfg)


def test_balance_of_answers_and_orders():
    rng = np.random.default_rng(0)
    answers: dict[int, Counter] = {}
    orders: dict[str, Counter] = {}
    for _ in range(300):
        ctx = random_ctx(rng, int(rng.integers(2, 9)))
        for it in generate_spatial_qa(ctx, rng, ALL):
            if it.gt_label in ("yes", "no"):
                answers.setdefault(FAMILY_OF[it.predicate], Counter())[it.gt_label] += 1
            if len(it.region_ids) == 2:
                orders.setdefault(it.predicate, Counter())[it.region_ids[0] < it.region_ids[1]] += 1
    for fam, c in answers.items():
        assert 0.44 < c["yes"] / (c["yes"] + c["no"]) < 0.56, (fam, c)
    for p, c in orders.items():
        assert 0.42 < c[True] / (c[True] + c[False]) < 0.58, (p, c)
    assert len(answers) == 8 and len(orders) == 13


# ---------------------------------------------------------------------------------------------- real geometry


@needs_nuscenes_demo
def test_real_nuscenes_keyframe_rederived():
    contexts = demo_contexts(NUSCENES_DEMO)
    assert sum(len(c) for c in contexts) >= 20
    total = 0
    for i, ctx in enumerate(contexts):
        items = generate_spatial_qa(ctx, np.random.default_rng(i), ALL)
        for it in items:
            check_item(ctx, it, ALL)
        assert {k: v for k, v in expected_counts(ctx, ALL).items() if v} == dict(observed_counts(items))
        total += len(items)
    assert total > 500


def test_scene_generator_equals_one_image_at_a_time():
    """The scene-wide geometry pass (``spatial_scene_generator``) gives every image exactly the items of
    ``generate_spatial_qa`` on that image alone, with the same draws: images of 0, 1, 3 and 9 regions (9: more
    pairs than ``max_pairs_per_image``, a pair subset is drawn), a non-positive size, another ego size."""
    rng = np.random.default_rng(11)
    contexts = []
    for n, ego in ((3, EGO_LWH), (0, EGO_LWH), (9, EGO_LWH), (1, EGO_LWH), (3, (5.0, 2.0, 1.9)), (9, EGO_LWH)):
        center = np.c_[rng.uniform(3, 40, n), rng.uniform(-10, 10, n), rng.uniform(0.3, 1.5, n)]
        size = rng.uniform(0.4, 8.0, (n, 3))
        if n == 3:
            size[1, 2] = 0.0  # no height: the comparisons that need it are dropped
        contexts.append(make_ctx(center, size, ego=ego))
    cfg = SpatialQAConfig(max_qa_per_image=40)
    alone_rng, scene_rng = np.random.default_rng(5), np.random.default_rng(5)
    alone = [generate_spatial_qa(ctx, alone_rng, cfg) for ctx in contexts]
    generate = spatial_scene_generator(contexts, cfg)
    together = [generate(i, scene_rng) for i in range(len(contexts))]
    assert together == alone
    assert len(alone[1]) == 0 and len(alone[2]) == 40  # no regions; capped
    assert scene_rng.random() == alone_rng.random()  # the same number of draws
