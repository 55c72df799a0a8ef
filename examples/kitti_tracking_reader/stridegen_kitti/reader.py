"""A stridegen ``log_reader`` for the KITTI tracking benchmark layout (the worked example of docs/own-logs.md).

Layout of one split (KITTI tracking devkit readme, https://www.cvlibs.net/datasets/kitti/eval_tracking.php)::

    <split>/image_02/<seq>/<frame:06d>.png   left colour camera, rectified PNG         -> channel "image_02"
    <split>/velodyne/<seq>/<frame:06d>.bin   float32 x, y, z, reflectance (velodyne)    -> channel "velodyne"
    <split>/calib/<seq>.txt                  P0..P3, R_rect, Tr_velo_cam, Tr_imu_velo
    <split>/oxts/<seq>.txt                   one GPS/IMU line (30 values) per frame      -> ego poses
    <split>/label_02/<seq>.txt               one line per object and frame               -> annotations
    <split>/times/<seq>.txt                  optional, not in the release: one time in seconds per frame (the
                                             format of KITTI odometry's times.txt); without it frames are 10 Hz

A sequence is a scene, a frame a Frame. Frames: ego = the OXTS IMU (x forward, y left, z up; Geiger et al., "Vision
meets robotics", IJRR 2013, sensor-setup figure). Global = a local east-north-up frame per sequence: the devkit's
Mercator plane (scale from the first frame's latitude) shifted so that the first frame's IMU is at the origin.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from stridegen.core.boxes import Boxes
from stridegen.core.errors import InvalidPoseError, LogFormatError, MissingFileError, PointCloudSizeError
from stridegen.core.transforms import invert_transform, make_transform, quat_to_yaw, rotmat_to_quat, transform_points
from stridegen.core.vocabulary import KITTI_TO_DETECTION
from stridegen.logs.base import Annotations, Frame, LogReader, Scene, SensorCalibration, SensorSample

CAMERA, LIDAR = "image_02", "velodyne"
FRAME_RATE_HZ = 10.0  # KITTI cameras are triggered by the velodyne at ~10 Hz (raw-data readme)
EARTH_RADIUS_M = 6378137.0  # devkit latlonToMercator: equatorial radius of WGS84
MAX_TIME_DIFF_S = 1.5  # nuscenes-devkit box_velocity: neighbours further apart give no velocity
LABEL_FIELDS = 17  # frame, track id, type, truncated, occluded, alpha, bbox[4], h w l, x y z, rotation_y (+ score)

# KITTI type -> nuScenes detection class: stridegen.core.vocabulary.KITTI_TO_DETECTION ("" = none). nuScenes
# vehicle.car includes vans; a KITTI Cyclist box holds rider and bicycle, as a nuScenes bicycle box with the
# cycle.with_rider attribute. DontCare rows are regions, not objects: they are dropped.
KITTI_ATTRIBUTE = {"Person_sitting": "pedestrian.sitting_lying_down", "Cyclist": "cycle.with_rider"}
# KITTI occluded (0 fully visible, 1 partly, 2 largely occluded, 3 unknown) -> nuScenes visibility bin
# (4: 80-100 %, 2: 40-60 %, 1: 0-40 %, 0: unknown). An approximation: KITTI's flag is an annotator's judgement.
OCCLUDED_TO_VISIBILITY = {0: 4, 1: 2, 2: 1, 3: 0}


# ------------------------------------------------------------------------------------------------------ oxts poses
def mercator(lat_deg: np.ndarray, lon_deg: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """KITTI raw devkit latlonToMercator: metres east / north on a Mercator plane scaled by ``scale``."""
    mx = scale * np.radians(lon_deg) * EARTH_RADIUS_M
    my = scale * EARTH_RADIUS_M * np.log(np.tan(np.radians(90.0 + lat_deg) / 2.0))
    return mx, my


def oxts_poses(oxts: np.ndarray) -> np.ndarray:
    """``T_global_from_ego`` [N, 4, 4] of OXTS rows (lat, lon, alt, roll, pitch, yaw, ...).

    As the raw devkit's convertOxtsToPose: Mercator scale cos(lat) of the first row, R = Rz(yaw) Ry(pitch) Rx(roll)
    (yaw 0 = east, counter-clockwise; dataformat.txt). Unlike the devkit, only the first translation is removed,
    not its rotation, so that global stays east-north-up.
    """
    lat, lon, alt, roll, pitch, yaw = (oxts[:, i] for i in range(6))
    mx, my = mercator(lat, lon, float(np.cos(np.radians(lat[0]))))
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    rotation = np.stack(
        [
            np.stack([cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr], -1),
            np.stack([sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr], -1),
            np.stack([-sp, cp * sr, cp * cr], -1),
        ],
        -2,
    )
    translation = np.stack([mx - mx[0], my - my[0], alt - alt[0]], -1)
    return make_transform(rotation, translation)


# ------------------------------------------------------------------------------------------------------ calibration
@dataclass(frozen=True)
class KittiCalibration:
    """One sequence's calibration as ``T_ego_from_*`` (ego = IMU) and camera 2's pinhole matrix."""

    T_ego_from_velo: np.ndarray
    T_ego_from_rect: np.ndarray  # the rectified reference camera: frame of the label_02 boxes
    T_ego_from_cam2: np.ndarray
    intrinsic: np.ndarray  # 3x3 of the rectified (undistorted) image_02


def _rigid(matrix: np.ndarray, path: Path, key: str) -> np.ndarray:
    """4x4 of a 3x4 [R|t] (or 3x3 R), R replaced by the nearest rotation (KITTI prints ~7 significant digits)."""
    rotation = matrix[:3, :3]
    if not np.all(np.isfinite(matrix)) or np.abs(rotation @ rotation.T - np.eye(3)).max() > 1e-3:
        raise InvalidPoseError(path, f"{key} is not a rotation (or is not finite)")
    u, _, vt = np.linalg.svd(rotation)
    translation = matrix[:3, 3] if matrix.shape[1] == 4 else np.zeros(3)
    return make_transform(u @ vt, translation)


def read_calibration(path: Path) -> KittiCalibration:
    """calib/<seq>.txt; keys with or without a colon, tracking (R_rect, Tr_velo_cam, Tr_imu_velo) or object
    benchmark spellings (R0_rect, Tr_velo_to_cam, Tr_imu_to_velo). Chain (tracking readme):
    x_image2 = P2 * R_rect * Tr_velo_cam * x_velo, and x_velo = Tr_imu_velo * x_imu."""
    if not path.is_file():
        raise MissingFileError(path, "calibration file is missing")
    values: dict[str, np.ndarray] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        key, *numbers = line.split()
        try:
            values[key.rstrip(":")] = np.array(numbers, dtype=np.float64)
        except ValueError:
            raise LogFormatError(path, f"line {n}: {key} has a value that is not a number") from None
    shapes = {"P2": (3, 4), "R_rect": (3, 3), "Tr_velo_cam": (3, 4), "Tr_imu_velo": (3, 4)}
    aliases = {"R_rect": "R0_rect", "Tr_velo_cam": "Tr_velo_to_cam", "Tr_imu_velo": "Tr_imu_to_velo"}
    m: dict[str, np.ndarray] = {}
    for key, shape in shapes.items():
        found = values.get(key, values.get(aliases.get(key, key)))
        if found is None or found.size != shape[0] * shape[1]:
            raise LogFormatError(path, f"{key} missing or not {shape[0] * shape[1]} numbers")
        m[key] = found.reshape(shape)
    p2 = m["P2"]  # = K [I | t]: camera 2 is the rectified reference camera moved by t
    k = p2[:, :3]
    if abs(k[2, 2] - 1.0) > 1e-9 or np.abs(k[[1, 2, 2], [0, 0, 1]]).max() > 1e-9:
        raise LogFormatError(path, "P2's left 3x3 is not a pinhole matrix [[fx, s, cx], [0, fy, cy], [0, 0, 1]]")
    T_cam2_from_rect = make_transform(np.eye(3), np.linalg.solve(k, p2[:, 3]))
    T_rect_from_imu = (
        _rigid(m["R_rect"], path, "R_rect") @ _rigid(m["Tr_velo_cam"], path, "Tr_velo_cam")
        @ _rigid(m["Tr_imu_velo"], path, "Tr_imu_velo")
    )  # fmt: skip
    T_ego_from_rect = invert_transform(T_rect_from_imu)
    return KittiCalibration(
        T_ego_from_velo=invert_transform(_rigid(m["Tr_imu_velo"], path, "Tr_imu_velo")),
        T_ego_from_rect=T_ego_from_rect,
        T_ego_from_cam2=T_ego_from_rect @ invert_transform(T_cam2_from_rect),
        intrinsic=k.copy(),
    )


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk (https://www.w3.org/TR/png/#11IHDR), without decoding it."""
    if not path.is_file():
        raise MissingFileError(path, "image is missing")
    with path.open("rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise LogFormatError(path, "not a PNG file")
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def read_table(path: Path, min_fields: int) -> list[list[str]]:
    """Whitespace-separated rows of a text file, each with at least ``min_fields`` values."""
    if not path.is_file():
        raise MissingFileError(path, "file is missing")
    rows = [line.split() for line in path.read_text().splitlines()]
    for n, row in enumerate(rows, 1):
        if len(row) < min_fields:
            raise LogFormatError(path, f"line {n} has {len(row)} values, expected at least {min_fields}")
    return rows


# ------------------------------------------------------------------------------------------------------ labels
@dataclass
class Labels:
    """A sequence's label_02 objects (DontCare rows dropped), boxes in the rectified camera frame."""

    frame: np.ndarray  # [N] KITTI frame number
    track: np.ndarray  # [N] track id, unique within the sequence
    kitti_type: np.ndarray  # [N] object array of str
    occluded: np.ndarray  # [N] 0..3
    center_rect: np.ndarray  # [N, 3] box centre (KITTI's location is the centre of the bottom face)
    size_lwh: np.ndarray  # [N, 3] from KITTI's (h, w, l)
    rotation_y: np.ndarray  # [N] about the camera y axis; 0 = length along camera x

    def rotation_rect_from_box(self) -> np.ndarray:
        """[N, 3, 3]: columns are the box's length, width and height axes (x forward, y left, z up) in the camera
        frame; the devkit's corners put the length along R_y(ry) x and the height along -y."""
        c, s, zero = np.cos(self.rotation_y), np.sin(self.rotation_y), np.zeros_like(self.rotation_y)
        return np.stack([np.stack([c, zero, -s], 1), np.stack([s, zero, c], 1), np.stack([zero, zero - 1, zero], 1)], 2)


def read_labels(path: Path) -> Labels:
    """label_02/<seq>.txt (17 values a line, 18 with a score): frame, track id, type, truncated, occluded, alpha,
    bbox (4), dimensions h w l, location x y z, rotation_y. A missing file is a sequence without labels."""
    types: list[str] = []
    values: list[list[float]] = []  # frame, track id, occluded, h, w, l, x, y, z, rotation_y
    for n, line in enumerate(path.read_text().splitlines() if path.is_file() else [], 1):
        row = line.split()
        if not row or row[2:3] == ["DontCare"]:
            continue
        if len(row) < LABEL_FIELDS or row[2] not in KITTI_TO_DETECTION:
            raise LogFormatError(path, f"line {n}: expected {LABEL_FIELDS} values with a KITTI type, got {line!r}")
        try:
            values.append([int(row[0]), int(row[1]), int(row[4]), *map(float, row[10:17])])
        except ValueError:
            raise LogFormatError(path, f"line {n}: a value is not a number: {line!r}") from None
        types.append(row[2])
    v = np.array(values, dtype=np.float64).reshape(-1, 10)
    h, w, length, x, y, z = v[:, 3:9].T
    return Labels(
        frame=v[:, 0].astype(np.int64),
        track=v[:, 1].astype(np.int64),
        kitti_type=_objects(types),
        occluded=v[:, 2].astype(np.int64),
        center_rect=np.stack([x, y - h / 2, z], 1),
        size_lwh=np.stack([length, w, h], 1),
        rotation_y=v[:, 9],
    )


def points_in_boxes_rect(points_rect: np.ndarray, labels: Labels, rows: np.ndarray) -> np.ndarray:
    """How many camera-frame points lie inside each of the boxes ``rows`` (boundary inclusive)."""
    counts = np.zeros(len(rows), dtype=np.int64)
    rotation = labels.rotation_rect_from_box()
    for k, row in enumerate(rows):
        local = (points_rect - labels.center_rect[row]) @ rotation[row]  # coordinates along the box axes
        counts[k] = np.count_nonzero(np.all(np.abs(local) <= labels.size_lwh[row] / 2, axis=1))
    return counts


def track_velocity(track: np.ndarray, time_s: np.ndarray, center: np.ndarray) -> np.ndarray:
    """[N, 3] velocities by the nuscenes-devkit box_velocity rule: centred difference of the track's previous and
    next boxes (one-sided at its ends), NaN when alone or further apart than MAX_TIME_DIFF_S (doubled if centred)."""
    n = len(track)
    order = np.lexsort((time_s, track))
    same = track[order][1:] == track[order][:-1]
    prev, nxt = np.full(n, -1), np.full(n, -1)
    prev[order[1:][same]] = order[:-1][same]
    nxt[order[:-1][same]] = order[1:][same]
    first, last = np.where(prev >= 0, prev, np.arange(n)), np.where(nxt >= 0, nxt, np.arange(n))
    span = time_s[last] - time_s[first]
    ok = (span > 0) & (span <= np.where((prev >= 0) & (nxt >= 0), 2 * MAX_TIME_DIFF_S, MAX_TIME_DIFF_S))
    velocity = np.full((n, 3), np.nan)
    velocity[ok] = (center[last[ok]] - center[first[ok]]) / span[ok, None]
    return velocity


# ------------------------------------------------------------------------------------------------------ the reader
@dataclass
class _Sequence:
    name: str
    scene: Scene
    calib: KittiCalibration
    position: dict[int, int]  # KITTI frame number -> index in scene.frames
    labels: tuple[Labels, np.ndarray, np.ndarray, np.ndarray] | None = None  # + global centre, rotation, velocity


class KittiTrackingReader(LogReader):
    """``root`` is a split folder (holding image_02/) or its parent; ``split`` picks training / testing there.
    Opening reads the calibrations; a sequence's image list, oxts and times files are read when its scene is first
    asked for (``scene``, or every one through ``scenes()``; ``scene_ids()`` reads nothing); labels are read on the
    first ``annotations()`` call of a sequence, point clouds and images when asked for."""

    format_name = "kitti-tracking"

    def __init__(self, root: str | Path, split: str | None = None) -> None:
        super().__init__(root)
        self.split_dir = self.root if (self.root / CAMERA).is_dir() else self.root / (split or "training")
        if not (self.split_dir / CAMERA).is_dir():
            raise LogFormatError(self.root, f"no KITTI tracking split: looked for {CAMERA}/ here and in {split!r}")
        self.version = self.split_dir.name
        self.sequences = sorted(d.name for d in (self.split_dir / CAMERA).iterdir() if d.is_dir())
        self._calib = {seq: read_calibration(self.split_dir / "calib" / f"{seq}.txt") for seq in self.sequences}
        self._by_token: dict[str, _Sequence] = {}
        self._lidar_counts: dict[str, np.ndarray] = {}

    def scenes(self) -> list[Scene]:
        return [self._sequence(seq).scene for seq in self.sequences]

    def scene_ids(self) -> list[tuple[str, str]]:
        """(name, token) of every sequence from the folder names alone: nothing is read, so a build's driver lists
        the log at once and one unreadable sequence fails only its own scene."""
        return [(seq, self._token(seq)) for seq in self.sequences]

    def scene(self, name_or_token: str) -> Scene:
        """One sequence, built on its own (a build's worker reads only the sequence it builds)."""
        for seq in self.sequences:
            if name_or_token in (seq, self._token(seq)):
                return self._sequence(seq).scene
        raise LogFormatError(self.root, f"no scene named {name_or_token!r}")

    def _token(self, seq: str) -> str:
        return f"{self.version}_{seq}"

    def _sequence(self, seq: str) -> _Sequence:
        found = self._by_token.get(self._token(seq))
        if found is None:
            found = self._by_token[self._token(seq)] = self._make_sequence(seq)
        return found

    def unknown_modalities(self) -> dict[str, list[str]]:
        """{}: the rig is fixed (the left colour camera and the Velodyne), so the build checks scenes in workers."""
        return {}

    def _make_sequence(self, seq: str) -> _Sequence:
        images = sorted((self.split_dir / CAMERA / seq).glob("*.png"))
        if not images:
            raise LogFormatError(self.split_dir / CAMERA / seq, "sequence has no PNG images")
        bad = [p.name for p in images if not p.stem.isdigit()]
        if bad:
            raise LogFormatError(self.split_dir / CAMERA / seq, f"image names must be frame numbers, got {bad[:3]}")
        numbers = [int(p.stem) for p in images]
        calib = self._calib[seq]
        width, height = png_size(images[0])
        camera = SensorCalibration(CAMERA, "camera", calib.T_ego_from_cam2, calib.intrinsic, width, height)
        lidar = SensorCalibration(LIDAR, "lidar", calib.T_ego_from_velo)
        poses, times = self._poses(seq, numbers), self._timestamps_us(seq, numbers)
        scene = Scene(self, self._token(seq), seq, [], f"KITTI tracking {self.version} sequence {seq}", seq)
        for i, image in enumerate(images):
            token = f"{scene.token}_{image.stem}"
            sensors = {CAMERA: SensorSample(f"{token}_{CAMERA}", CAMERA, times[i], image, poses[i], camera)}
            velo = self.split_dir / LIDAR / seq / f"{image.stem}.bin"
            if velo.is_file():
                sensors[LIDAR] = SensorSample(f"{token}_{LIDAR}", LIDAR, times[i], velo, poses[i], lidar)
            scene.frames.append(Frame(self, token, scene.token, i, times[i], poses[i], sensors))
        return _Sequence(seq, scene, calib, {n: i for i, n in enumerate(numbers)})

    def _poses(self, seq: str, numbers: list[int]) -> np.ndarray:
        path = self.split_dir / "oxts" / f"{seq}.txt"
        rows = read_table(path, 6)
        if max(numbers) >= len(rows):
            raise LogFormatError(path, f"{len(rows)} lines, but image_02/{seq} has frame {max(numbers)}")
        try:
            oxts = np.array([r[:6] for r in rows], dtype=np.float64)
        except ValueError:
            raise LogFormatError(path, "lat, lon, alt, roll, pitch, yaw must be numbers") from None
        bad = np.flatnonzero(~np.isfinite(oxts).all(axis=1))
        if bad.size:
            raise InvalidPoseError(path, f"line {int(bad[0]) + 1} is not finite")
        return oxts_poses(oxts)[numbers]

    def _timestamps_us(self, seq: str, numbers: list[int]) -> list[int]:
        path = self.split_dir / "times" / f"{seq}.txt"
        if not path.is_file():
            return [round(n * 1e6 / FRAME_RATE_HZ) for n in numbers]
        rows = read_table(path, 1)
        try:  # Decimal: exact microseconds from the text
            times = [int(Decimal(rows[n][0]) * 1_000_000) for n in numbers]
        except (IndexError, InvalidOperation):
            raise LogFormatError(path, f"needs one time in seconds for each of {max(numbers) + 1} frames") from None
        if np.any(np.diff(times) <= 0):
            raise LogFormatError(path, "times do not increase")
        return times

    # -------------------------------------------------------------------------------------------------- data
    def load_points(self, sample: SensorSample) -> np.ndarray:
        """Velodyne sweep [N, 4] float32 (x, y, z, reflectance) in the velodyne frame."""
        if not sample.path.is_file():
            raise MissingFileError(sample.path, "velodyne file is missing")
        size = sample.path.stat().st_size
        if size % 16:
            raise PointCloudSizeError(sample.path, f"size {size} bytes is not a multiple of 16 (4 float32 per point)")
        return np.fromfile(sample.path, dtype="<f4").reshape(-1, 4)

    def load_annotations(self, frame: Frame) -> Annotations:
        seq = self._by_token[frame.scene_token]  # the frame's sequence was built with its scene
        labels, center, rotation, velocity = self._labelled(seq)
        rows = np.flatnonzero(labels.frame == int(frame.token.rsplit("_", 1)[1]))
        types = labels.kitti_type[rows]
        boxes = Boxes(
            center[rows],
            labels.size_lwh[rows],
            quat_to_yaw(rotation[rows]),  # heading of the length axis about global z
            velocity[rows],
            label=_objects([KITTI_TO_DETECTION[t] for t in types]),
            track_id=_objects([f"{seq.name}:{t}" for t in labels.track[rows]]),
            frame="global",
            extras={"rotation_global": rotation[rows]},  # KITTI boxes tilt with the car's pitch and roll
        )
        return Annotations(
            boxes=boxes,
            category=types,
            token=_objects([f"{frame.token}_{t}" for t in labels.track[rows]]),
            num_lidar_pts=self._lidar_count(frame, seq, labels, rows),
            num_radar_pts=np.zeros(len(rows), dtype=np.int64),
            visibility=np.array([OCCLUDED_TO_VISIBILITY.get(o, 0) for o in labels.occluded[rows]], dtype=np.int64),
            attribute=_objects([KITTI_ATTRIBUTE.get(t, "") for t in types]),
        )

    def _labelled(self, seq: _Sequence) -> tuple[Labels, np.ndarray, np.ndarray, np.ndarray]:
        """The sequence's labels (read once) with every box's centre, rotation and velocity in the global frame."""
        if seq.labels is None:
            path = self.split_dir / "label_02" / f"{seq.name}.txt"
            labels = read_labels(path)
            unknown = sorted(set(labels.frame.tolist()) - set(seq.position))
            if unknown:
                raise LogFormatError(path, f"labels of frames {unknown[:5]} that have no image in {CAMERA}/{seq.name}")
            frames = [seq.scene.frames[seq.position[f]] for f in labels.frame.tolist()]
            T = np.array([f.T_global_from_ego for f in frames]).reshape(-1, 4, 4) @ seq.calib.T_ego_from_rect
            center = np.einsum("nij,nj->ni", T[:, :3, :3], labels.center_rect) + T[:, :3, 3]
            rotation = rotmat_to_quat(T[:, :3, :3] @ labels.rotation_rect_from_box()).reshape(-1, 4)
            time_s = np.array([f.timestamp_us for f in frames], dtype=np.float64) * 1e-6
            seq.labels = (labels, center, rotation, track_velocity(labels.track, time_s, center))
        return seq.labels

    def _lidar_count(self, frame: Frame, seq: _Sequence, labels: Labels, rows: np.ndarray) -> np.ndarray:
        """Velodyne points inside each box (KITTI labels carry no count; detectors' min_lidar_points use one)."""
        if frame.token not in self._lidar_counts:
            counts = np.zeros(len(rows), dtype=np.int64)
            if LIDAR in frame.sensors and len(rows):
                T_rect_from_velo = invert_transform(seq.calib.T_ego_from_rect) @ seq.calib.T_ego_from_velo
                counts = points_in_boxes_rect(
                    transform_points(T_rect_from_velo, frame.lidar(LIDAR)[:, :3]), labels, rows
                )
            self._lidar_counts[frame.token] = counts
        return self._lidar_counts[frame.token]


def _objects(values: list[str]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def open_kitti_tracking(root: Path, version: str | None = None) -> KittiTrackingReader:
    """The ``kitti-tracking`` log reader; ``version`` names the split (training, testing) under ``root``."""
    return KittiTrackingReader(root, split=version)


def is_kitti_tracking(root: Path) -> bool:
    """Whether ``root`` looks like a KITTI tracking split (or holds ``training/``): an image_02/ folder next to
    calib/. ``stridegen`` asks this when no built-in reader recognises a folder (``open_log`` without a format)."""
    root = Path(root)
    return any((d / CAMERA).is_dir() and (d / "calib").is_dir() for d in (root, root / "training", root / "testing"))


# A reader factory may carry ``detect``: stridegen.logs.detect_format then finds this format without --format.
open_kitti_tracking.detect = is_kitti_tracking  # type: ignore[attr-defined]
