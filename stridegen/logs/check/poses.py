"""The log check of rotations: ego poses (their motion too), camera calibrations and box rotations, each tested for
the conversion mistakes that show in them.

Thresholds: a rotation is *tilted* when the body's up axis is more than ``MAX_TILT_DEG`` = 30 degrees from the
vertical. The steepest public streets have grades of about 35 % (19 degrees), cars bank a few degrees, and the ego
poses and boxes of nuScenes are within ~2-3 degrees of level, so 30 degrees is beyond anything a road vehicle or a
road user does, with room for annotation noise. A [w, x, y, z] quaternion stored as [x, y, z, w] and read back as
[w, x, y, z] turns a heading of ``yaw`` into a 180-degree rotation whose up axis is tilted by ``|yaw|`` and whose
forward axis points backwards along the global x axis; so the mistake shows as tilted poses (most headings) or as an
ego that drives backwards (headings near 0). The check confirms the cause by reading the same numbers in the other
order.
"""

from __future__ import annotations

import numpy as np

from stridegen.core.transforms import quat_to_rotmat, rotmat_to_quat
from stridegen.logs.base import Annotations, Frame, Scene
from stridegen.logs.check.findings import ERROR, WARNING, Finding, SceneSummary
from stridegen.logs.check.settings import CheckContext

MAX_TILT_DEG = 30.0
EGO_TILTED_SHARE = 0.5  # "most frames"
BOX_TILTED_SHARE = 0.2  # real logs have none; with the [x, y, z, w] mistake every box not heading ~0 deg is tilted
BACKWARDS_SHARE = 0.5  # share of the moving steps (> MOVING_MPS) with the ego going backwards
MOVING_MPS = 1.0
MIN_BOXES = 5


def ego_findings(ctx: CheckContext, scene: Scene, summary: SceneSummary) -> list[Finding]:
    poses = np.array([f.T_global_from_ego for f in scene.frames], dtype=np.float64)
    t_s = np.array([f.timestamp_us for f in scene.frames], dtype=np.float64) * 1e-6
    steps = np.diff(poses[:, :3, 3], axis=0)
    summary.ego_path_m = float(np.linalg.norm(steps[:, :2], axis=1).sum())
    if summary.duration_s > 0:
        summary.ego_speed_mps = summary.ego_path_m / summary.duration_s
    file = ctx.path("ego_pose")
    out: list[Finding] = []
    if constant_poses(scene):
        return out  # constant_pose_findings, which needs the annotations and the sweeps
    rot = poses[:, :3, :3]
    tilted = _tilt_deg(rot) > MAX_TILT_DEG
    backwards, moving = _backwards(rot, steps, np.diff(t_s))
    alt = quat_to_rotmat(_other_order(rotmat_to_quat(rot)))
    alt_backwards, _ = _backwards(alt, steps, np.diff(t_s))
    problem = ""
    if tilted.mean() > EGO_TILTED_SHARE:
        problem = f"the ego is tilted more than {MAX_TILT_DEG:g} degrees in {tilted.mean():.0%} of the frames"
    elif moving >= 3 and backwards > BACKWARDS_SHARE:
        problem = f"the ego drives backwards in {backwards:.0%} of the {moving} moving steps"
    if not problem:
        return out
    explained = (_tilt_deg(alt) > MAX_TILT_DEG).mean() <= 0.1 and (moving < 3 or alt_backwards <= BACKWARDS_SHARE)
    if explained:
        out.append(
            ctx.finding(
                "quaternion_order",
                problem + "; read as [x, y, z, w] the ego is level and drives forwards",
                "ego_pose rotations stored as [x, y, z, w] (scipy / ROS order); nuScenes wants [w, x, y, z]",
                scene.name,
                file,
            )
        )
    else:
        out.append(
            ctx.finding(
                "implausible_orientation",
                problem,
                "poses that are not T_global_from_ego (inverted: T_ego_from_global), or a heading off by 180 degrees",
                scene.name,
                file,
            )
        )
    return out


def _tilt_deg(rot: np.ndarray) -> np.ndarray:
    """Angle between the body's up axis and the global vertical, per rotation [N, 3, 3]."""
    return np.asarray(np.degrees(np.arccos(np.clip(rot[:, 2, 2], -1.0, 1.0))))


def _backwards(rot: np.ndarray, steps: np.ndarray, dt: np.ndarray) -> tuple[float, int]:
    """(share of the moving steps whose motion is more than 120 degrees from the body's forward axis, number of
    moving steps). A step is moving above ``MOVING_MPS``."""
    if not len(steps):
        return 0.0, 0
    dist = np.linalg.norm(steps[:, :2], axis=1)
    moving = (dt > 0) & (dist > MOVING_MPS * np.where(dt > 0, dt, np.inf))
    if not moving.any():
        return 0.0, 0
    local = np.einsum("nji,nj->ni", rot[:-1][moving], steps[moving])  # R^T d: the step in the body frame
    forward = local[:, 0] / np.maximum(np.linalg.norm(local, axis=1), 1e-12)
    return float(np.mean(forward < -0.5)), int(moving.sum())


def camera_orientation_findings(ctx: CheckContext, frame: Frame, scene: str) -> list[Finding]:
    """Car cameras look roughly sideways (optical axis within 45 degrees of the horizon) with the image upright
    (image down = ego down). Surround-view fisheyes can look further down, so this alone is only a warning."""
    channels = frame.camera_channels
    if not channels:
        return []
    rot = np.array([frame.sensors[c].calibration.T_ego_from_sensor[:3, :3] for c in channels])
    bad = _implausible_cameras(rot)
    if not bad.any():
        return []
    alt_bad = _implausible_cameras(quat_to_rotmat(_other_order(rotmat_to_quat(rot))))
    names = [c for c, b in zip(channels, bad, strict=True) if b]
    message = f"cameras {names} look more than 45 degrees up or down, or their images are upside down"
    if bad.mean() >= 0.5 and not alt_bad.any():
        return [
            ctx.finding(
                "quaternion_order",
                message + "; read as [x, y, z, w] every camera is upright and level",
                "calibrated_sensor rotations stored as [x, y, z, w] (scipy / ROS order); nuScenes wants [w, x, y, z]",
                scene,
                ctx.path("calibrated_sensor"),
            )
        ]
    return [
        ctx.finding(
            "implausible_orientation",
            message,
            "a camera-to-ego rotation that is not T_ego_from_sensor (inverted, or in another camera convention "
            "than x right / y down / z forward)",
            scene,
            ctx.path("calibrated_sensor"),
        )
    ]


def _implausible_cameras(rot: np.ndarray) -> np.ndarray:
    axis, down = rot[:, :, 2], rot[:, :, 1]  # camera z (optical axis) and y (image down) in the ego frame
    elevation = np.degrees(np.arcsin(np.clip(axis[:, 2], -1.0, 1.0)))
    return np.asarray((np.abs(elevation) > 45.0) | (down[:, 2] > 0.0))


def _other_order(q: np.ndarray) -> np.ndarray:
    """The rotations [w, x, y, z] a reader got from stored numbers, read in the other order: the numbers were
    [x, y, z, w], so w is the last one read as z."""
    return np.asarray(q)[..., [3, 0, 1, 2]]


def box_orientation_findings(ctx: CheckContext, q: np.ndarray, scene: str, file: str | None) -> list[Finding]:
    q = np.asarray(q, dtype=np.float64).reshape(-1, 4)
    q = q[np.all(np.isfinite(q), axis=1)]
    if len(q) < MIN_BOXES:
        return []
    tilted = _tilt_deg(quat_to_rotmat(q)) > MAX_TILT_DEG
    if tilted.mean() <= BOX_TILTED_SHARE:
        return []
    alt_tilted = _tilt_deg(quat_to_rotmat(_other_order(q))) > MAX_TILT_DEG
    message = f"{tilted.mean():.0%} of the {len(q)} boxes are tilted more than {MAX_TILT_DEG:g} degrees"
    if alt_tilted.mean() <= 0.05:
        return [
            ctx.finding(
                "quaternion_order",
                message + "; read as [x, y, z, w] they are level",
                "sample_annotation rotations stored as [x, y, z, w] (scipy / ROS order); nuScenes wants [w, x, y, z]",
                scene,
                file,
            )
        ]
    return [
        ctx.finding(
            "implausible_orientation",
            message,
            "box rotations in another frame than global (ego or sensor frame), or Euler angles converted wrongly",
            scene,
            file,
        )
    ]


# Constant ego poses. Road furniture never moves, nor does a vehicle annotated as parked: in a scene whose ego poses
# never change, such boxes moving in the "global" frame (which is then the ego's) mean the ego moved.
STATIC_LABELS = ("traffic_cone", "barrier")
STATIC_ATTRIBUTES = ("vehicle.parked",)
STATIC_MOVING_MPS = 1.0  # median speed of the static boxes above which the ego moved (annotation noise: cm per s)
MIN_TRACK_S = 1.0  # a box's track must span this long for its speed to count
SHARED_MOTION_SHARE = 0.6  # ... or this share of the tracked boxes (at least 3) share one velocity within 1 m/s
SHARED_MOTION_TOLERANCE_MPS = 1.0


def constant_poses(scene: Scene) -> bool:
    """Whether the ego pose is the same in every frame (two or more), e.g. all the identity."""
    poses = np.array([f.T_global_from_ego for f in scene.frames], dtype=np.float64)
    return len(poses) >= 2 and bool(np.allclose(poses, poses[0], atol=1e-6))


def constant_pose_findings(
    ctx: CheckContext, scene: Scene, summary: SceneSummary, per_frame: list[Annotations] | None
) -> list[Finding]:
    """A scene whose ego never moves: an error where its boxes say the ego did move (``scene_motion``: static boxes
    that move, or most boxes sharing one motion), since every ego speed would read 0.00 m/s and every target speed
    be relative. Where the boxes do not say so (or there are none: a raw log), its LiDAR sweeps decide
    (``lidar_motion.lidar_scene_motion``): an error where the LiDAR scene moves, a warning where it stands still
    (a parked car) or where the sweeps cannot tell (the reason given). ``log.parked_ego=true``
    (``CheckSettings.parked_ego``) accepts a truly parked ego: no finding, no sweep read."""
    if not constant_poses(scene) or ctx.settings.parked_ego:
        return []
    poses = scene.frames[0].T_global_from_ego
    identity = np.allclose(poses, np.eye(4), atol=1e-9)
    what = (
        "every ego pose is the identity" if identity else "the ego pose is the same in every frame"
    ) + f" over {summary.duration_s:.2f} s: ego speeds would be 0.00 m/s, and target speeds relative to the ego"
    file = ctx.path("ego_pose")
    evidence = scene_motion(scene, per_frame)
    if evidence is None:
        # imported here: the comparison pulls in the calibration code, which only logs with constant poses need
        from stridegen.logs.check.lidar_motion import MOVED, STILL, lidar_scene_motion

        lidar = lidar_scene_motion(scene)
        if lidar.verdict == MOVED:
            evidence = lidar.reason
        elif lidar.verdict == STILL:
            return [
                ctx.finding(
                    "constant_ego_pose",
                    f"{what}; nothing in the annotations says the ego moved, and the LiDAR agrees the car stood "
                    f"still: {lidar.reason}",
                    "a parked car (log.parked_ego=true accepts it without this warning); if it did move, recover "
                    "poses with `stridegen calibrate poses LOG --out NEW_LOG`",
                    scene.name,
                    file,
                    WARNING,
                )
            ]
        else:
            return [
                ctx.finding(
                    "constant_ego_pose",
                    f"{what}; nothing in the annotations says the ego moved, and the LiDAR cannot tell: {lidar.reason}",
                    "the log has no ego poses (the converter wrote a constant placeholder) or the car stood still "
                    "(log.parked_ego=true says so); recover poses with `stridegen calibrate poses LOG --out NEW_LOG`",
                    scene.name,
                    file,
                    WARNING,
                )
            ]
    return [
        ctx.finding(
            "constant_ego_pose",
            f"{what}, while {evidence}: the ego moved",
            "the log has no ego poses (a constant placeholder): recover them from the LiDAR with `stridegen "
            "calibrate poses LOG --out NEW_LOG` and build NEW_LOG; if the car truly stood still, set "
            "log.parked_ego=true",
            scene.name,
            file,
            ERROR,
        )
    ]


def scene_motion(scene: Scene, per_frame: list[Annotations] | None) -> str | None:
    """What in the annotations says the ego moved although its poses are constant (so the boxes are in the ego's
    frame), or None: the boxes of static things (``STATIC_LABELS``, ``STATIC_ATTRIBUTES``) move at a median speed
    above ``STATIC_MOVING_MPS``, or at least ``SHARED_MOTION_SHARE`` of the tracked boxes (3 or more) move with one
    velocity (within ``SHARED_MOTION_TOLERANCE_MPS``) faster than that: the ego's own motion, seen in everything
    that stands still. Speeds are each box track's displacement over its time span (at least ``MIN_TRACK_S``)."""
    if not per_frame:
        return None
    first: dict[str, tuple[float, np.ndarray, bool]] = {}  # track -> (time, centre, static)
    last: dict[str, tuple[float, np.ndarray]] = {}
    for frame, ann in zip(scene.frames, per_frame, strict=True):
        boxes = ann.boxes
        for k in range(len(ann)):
            track = str(boxes.track_id[k])
            still = str(boxes.label[k]) in STATIC_LABELS or str(ann.attribute[k]) in STATIC_ATTRIBUTES
            first.setdefault(track, (frame.timestamp_s, boxes.center[k, :2].copy(), still))
            last[track] = (frame.timestamp_s, boxes.center[k, :2].copy())
    velocity: list[np.ndarray] = []
    static: list[bool] = []
    for track, (t0, c0, still) in first.items():
        t1, c1 = last[track]
        if t1 - t0 >= MIN_TRACK_S and np.all(np.isfinite(c1 - c0)):
            velocity.append((c1 - c0) / (t1 - t0))
            static.append(still)
    if not velocity:
        return None
    v = np.array(velocity)
    speed = np.linalg.norm(v, axis=1)
    is_static = np.array(static)
    if is_static.any() and float(np.median(speed[is_static])) > STATIC_MOVING_MPS:
        return (
            f"{int(is_static.sum())} static box(es) (cones, barriers, parked vehicles) move at a median "
            f"{float(np.median(speed[is_static])):.2f} m/s in the global frame"
        )
    if len(v) >= 3:
        centre = np.median(v, axis=0)
        shared = np.linalg.norm(v - centre, axis=1) <= SHARED_MOTION_TOLERANCE_MPS
        if shared.mean() >= SHARED_MOTION_SHARE and np.linalg.norm(centre) > STATIC_MOVING_MPS:
            return (
                f"{int(shared.sum())} of {len(v)} boxes move together at {np.linalg.norm(centre):.2f} m/s in the "
                "global frame"
            )
    return None
