"""The log check of plausibility bounds (stridegen.logs.bounds, which cites the source of each): ego positions,
speeds and accelerations, box positions, sizes per class and speeds, timestamps, intrinsics and sensor offsets.
An impossible value is an ``out_of_bounds`` error (the build fails the scene, naming the file and the row: the
frame's index, token and time, or the box's), an unlikely one an ``unlikely_value`` warning. One finding per kind of
value and scene: the count and the worst case."""

from __future__ import annotations

import numpy as np

from stridegen.logs import bounds as b
from stridegen.logs.base import Annotations, Frame, Scene
from stridegen.logs.check.findings import ERROR, WARNING, Finding
from stridegen.logs.check.settings import CheckContext

_CAUSE_POSITION = (
    "a placeholder or overflowed value, coordinates in another unit (mm, or degrees mixed with metres), or poses "
    "of another frame than global"
)
_CAUSE_MOTION = (
    "a jump in the poses (a relocalisation, frames of two drives joined), timestamps that do not belong to the "
    "poses, or positions in another unit"
)
_CAUSE_SIZE = "sizes in another unit (cm, mm), a column shifted in the converter, or a wrong class"
_CAUSE_BOX_SPEED = "velocities in another unit (km/h, cm/s), or relative to a moving ego instead of the ground"
_CAUSE_TIME = "timestamps in ns (or ms) where microseconds are wanted, or an overflow in the converter"
_CAUSE_CAMERA = "intrinsics of another image size (not scaled with it), or focal lengths in mm instead of pixels"
_CAUSE_OFFSET = "extrinsics in mm, or T_sensor_from_ego written where T_ego_from_sensor is wanted"


def bounds_findings(ctx: CheckContext, scene: Scene, per_frame: list[Annotations] | None) -> list[Finding]:
    """Every bound of the scene's frames and, when given, their annotations (``per_frame``, one per frame)."""
    found = _Found(ctx, scene.name)
    ego_file = ctx.path("ego_pose") or _frames_file(ctx, scene)
    sample_file = ctx.path("sample") or _frames_file(ctx, scene)
    frames = scene.frames
    t_us = np.array([f.timestamp_us for f in frames], dtype=np.int64)
    spacing = np.diff(t_us)
    # Times in another unit or out of order are the time findings' (timestamp_unit, timestamps_not_increasing):
    # speeds and dates from them would only repeat it.
    times_ok = not spacing.size or bool(
        np.all(spacing > 0) and b.MIN_FRAME_SPACING_US <= float(np.median(spacing)) <= b.MAX_FRAME_SPACING_US
    )
    bad_t = np.flatnonzero((t_us < 0) | (t_us > b.MAX_TIMESTAMP_US))
    if bad_t.size and times_ok:
        i = int(bad_t[0])
        found.add(
            ERROR,
            f"{bad_t.size} frame timestamp(s) before 1970 or after 2100 (in microseconds), e.g. "
            f"{_frame(frames[i])}: {t_us[i]}",
            _CAUSE_TIME,
            sample_file,
        )
    position = np.array([f.T_global_from_ego[:3, 3] for f in frames], dtype=np.float64)
    far = np.flatnonzero(~b.coordinates_ok(position))
    if far.size:
        i = int(far[0])
        found.add(
            ERROR,
            f"{far.size} ego position(s) beyond {b.MAX_COORDINATE_M:g} m, e.g. {_frame(frames[i])}: "
            f"{position[i].tolist()}",
            _CAUSE_POSITION,
            ego_file,
        )
        return found.out  # speeds of such positions mean nothing
    time_s = (t_us - t_us[0]).astype(np.float64) * 1e-6
    if len(frames) >= 2 and times_ok:
        _ego_motion(found, frames, position, time_s, ego_file)
    _sensors(ctx, found, frames[0])
    if per_frame is not None:
        _boxes(found, frames, per_frame, ctx.path("sample_annotation") or _frames_file(ctx, scene), times_ok)
    return found.out


class _Found:
    """The findings of one scene, added by severity."""

    def __init__(self, ctx: CheckContext, scene: str) -> None:
        self.ctx, self.scene = ctx, scene
        self.out: list[Finding] = []

    def add(self, severity: str, message: str, cause: str, file: str | None) -> None:
        code = "out_of_bounds" if severity == ERROR else "unlikely_value"
        self.out.append(self.ctx.finding(code, message, cause, self.scene, file))


def _frames_file(ctx: CheckContext, scene: Scene) -> str | None:
    """The file that holds a scene's frames where the reader has no table for it (stridegen-log: frames.jsonl)."""
    scene_dir = getattr(ctx.reader, "scene_dir", None)
    return str(scene_dir(scene.name) / "frames.jsonl") if callable(scene_dir) else None


def _frame(frame: Frame) -> str:
    return f"frame {frame.index} (token {frame.token}, t={frame.timestamp_us} us)"


def _ego_motion(found: _Found, frames: list[Frame], position: np.ndarray, time_s: np.ndarray, file: str | None) -> None:
    speed, accel = b.span_rates(position, time_s)
    for values, error, warn, what, unit in (
        (speed, b.MAX_SPEED_MPS, b.UNLIKELY_SPEED_MPS, "ego speed", "m/s"),
        (accel, b.MAX_ACCEL_MPS2, b.UNLIKELY_ACCEL_MPS2, "ego acceleration", "m/s^2"),
    ):
        if not values.size:
            continue
        i = int(np.argmax(values))
        start = frames[min(i, len(frames) - 1)]  # value i is taken from frame i onwards
        where = f"{what} up to {values[i]:.4g} {unit} (over >= {b.SPAN_S:g} s, from {_frame(start)})"
        if values[i] > error:
            found.add(ERROR, f"{where}: above {error:g} {unit}, which no road vehicle reaches", _CAUSE_MOTION, file)
        elif values[i] > warn:
            found.add(WARNING, f"{where}: above {warn:g} {unit}", _CAUSE_MOTION, file)


def _sensors(ctx: CheckContext, found: _Found, frame: Frame) -> None:
    """Sensor offsets and camera intrinsics of the scene's first frame: one finding per kind and severity."""
    file = ctx.path("calibrated_sensor")
    problems: dict[tuple[str, str], list[str]] = {}  # (severity, cause) -> messages
    for channel, sample in frame.sensors.items():
        cal = sample.calibration
        offset = float(np.linalg.norm(cal.T_ego_from_sensor[:3, 3]))
        if offset > b.UNLIKELY_SENSOR_OFFSET_M:
            severity = ERROR if offset > b.MAX_SENSOR_OFFSET_M else WARNING
            problems.setdefault((severity, _CAUSE_OFFSET), []).append(
                f"sensor {channel} is {offset:.4g} m from the ego origin"
            )
        k = cal.intrinsic
        if not cal.is_camera or k is None or k.shape != (3, 3) or not np.all(np.isfinite(k)) or k[0, 0] <= 0:
            continue  # invalid_intrinsics
        width = cal.width or 2.0 * k[0, 2]
        height = cal.height or 2.0 * k[1, 2]
        if width <= 0 or height <= 0:
            continue
        fov = float(np.degrees(2.0 * np.arctan(width / (2.0 * k[0, 0]))))
        outside = not (-width <= k[0, 2] <= 2.0 * width and -height <= k[1, 2] <= 2.0 * height)
        what = (
            f"camera {channel}: fx {k[0, 0]:.6g} px, cx, cy {k[0, 2]:.6g}, {k[1, 2]:.6g} for {width:g}x{height:g}, "
            f"a horizontal field of view of {fov:.3g} degrees"
        )
        if k[0, 0] > b.MAX_FOCAL_PER_WIDTH * width or k[1, 1] > b.MAX_FOCAL_PER_WIDTH * width or outside:
            problems.setdefault((ERROR, _CAUSE_CAMERA), []).append(
                what + f" (no camera has one below {np.degrees(2 * np.arctan(0.5 / b.MAX_FOCAL_PER_WIDTH)):.2g}, "
                "nor its principal point an image size outside the image)"
            )
        elif not b.UNLIKELY_FOV_DEG[0] <= fov <= b.UNLIKELY_FOV_DEG[1]:
            problems.setdefault((WARNING, _CAUSE_CAMERA), []).append(what)
    for (severity, cause), messages in problems.items():
        more = f" (and {len(messages) - 1} more sensor(s))" if len(messages) > 1 else ""
        found.add(severity, messages[0] + more, cause, file)


def _boxes(found: _Found, frames: list[Frame], per_frame: list[Annotations], file: str | None, times_ok: bool) -> None:
    """Box centres, sizes per class and (where the frame times are usable: readers derive velocities from them)
    speeds."""
    rows = [(f, a) for f, a in zip(frames, per_frame, strict=True) if len(a)]
    if not rows:
        return
    where = [f"box {j} of {_frame(f)}" for f, a in rows for j in range(len(a))]
    center = np.concatenate([a.boxes.center for _, a in rows])
    ego = np.concatenate([np.repeat(f.T_global_from_ego[None, :3, 3], len(a), axis=0) for f, a in rows])
    size = np.concatenate([a.boxes.size_lwh for _, a in rows])
    label = np.concatenate([np.asarray(a.boxes.label, dtype=object) for _, a in rows])
    velocity = np.concatenate([a.boxes.velocity for _, a in rows])
    far = ~b.coordinates_ok(center)
    if far.any():
        i = int(np.flatnonzero(far)[0])
        found.add(ERROR, f"{int(far.sum())} box centre(s) beyond {b.MAX_COORDINATE_M:g} m, e.g. {where[i]}: "
                  f"{center[i].tolist()}", _CAUSE_POSITION, file)  # fmt: skip
        return
    distance = np.linalg.norm(center - ego, axis=1)
    remote = distance > b.UNLIKELY_BOX_DISTANCE_M
    if remote.any():
        i = int(np.argmax(distance))
        found.add(WARNING, f"{int(remote.sum())} box(es) more than {b.UNLIKELY_BOX_DISTANCE_M:g} m from the ego, "
                  f"e.g. {where[i]}: {distance[i]:.4g} m", _CAUSE_POSITION, file)  # fmt: skip
    valid = np.all(np.isfinite(size) & (size > 0), axis=1)  # others: invalid_box_size
    unlikely, impossible = b.size_limits(label)
    for severity, sides, kind in ((ERROR, impossible, "impossible"), (WARNING, unlikely, "unlikely")):
        over = valid & np.any(size > sides, axis=1)
        if severity == WARNING:
            over |= valid & np.any(size < b.MIN_BOX_SIDE_M, axis=1)
        if over.any():
            i = int(np.flatnonzero(over)[0])
            found.add(severity, f"{int(over.sum())} box size(s) {kind} for their class, e.g. {where[i]}: "
                      f"{label[i]} of length x width x height {size[i].tolist()} m (limits {sides[i].tolist()} m)",
                      _CAUSE_SIZE, file)  # fmt: skip
            if severity == ERROR:
                break
    if not times_ok:
        return
    speed = np.linalg.norm(np.where(np.isfinite(velocity), velocity, 0.0)[:, :2], axis=1)
    walker = label == "pedestrian"
    speed_checks: tuple[tuple[str, np.ndarray, float | None], ...] = (
        (ERROR, speed > b.MAX_SPEED_MPS, b.MAX_SPEED_MPS),
        (WARNING, (speed > b.UNLIKELY_SPEED_MPS) | (walker & (speed > b.UNLIKELY_PEDESTRIAN_SPEED_MPS)), None),
    )
    for severity, over, limit in speed_checks:
        if over.any():
            i = int(np.argmax(np.where(over, speed, -1.0)))
            bound = f"{limit:g} m/s" if limit else "a plausible speed for its class"
            found.add(severity, f"{int(over.sum())} box velocit(ies) above {bound}, e.g. {where[i]}: {label[i]} at "
                      f"{speed[i]:.4g} m/s", _CAUSE_BOX_SPEED, file)  # fmt: skip
            break
