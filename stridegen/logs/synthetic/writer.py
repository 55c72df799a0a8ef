"""nuScenes v1.0 tables and sensor files for synthetic scenes.

Layout written under the dataset root (``VERSION`` = "v1.0-synthetic"):

    <root>/v1.0-synthetic/{log,map,scene,sample,sample_data,ego_pose,calibrated_sensor,sensor,
                           sample_annotation,instance,category,attribute,visibility}.json
    <root>/v1.0-synthetic/synthetic_truth.json      generator version, seed, options, per-scene metadata
    <root>/maps/<map token>.png                     semantic prior mask (0.1 m / pixel, 255 = road or sidewalk)
    <root>/samples/<CHANNEL>/<log>__<CHANNEL>__<timestamp_us>.jpg|.pcd.bin
    <root>/sweeps/LIDAR_TOP/<log>__LIDAR_TOP__<timestamp_us>.pcd.bin     (with sweeps)
    <root>/instance_ids/<CHANNEL>/<same stem as the image>.png            uint16, 0 = background
    <root>/instance_ids/instances.json                                    per-scene integer id -> instance token

Tokens are md5 hex digests of (seed, table, names), so the same seed gives the same tokens. JSON is written with
sorted keys and a fixed float format (Python's shortest repr), so the same seed gives byte-identical tables.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import ArrayLike

from stridegen.core.transforms import rotmat_to_quat, yaw_to_quat
from stridegen.formats import images
from stridegen.logs.synthetic.agents import AGENT_CLASSES, ATTRIBUTES
from stridegen.logs.synthetic.scenario import SyntheticScene, make_token

VERSION = "v1.0-synthetic"
TRUTH_FILE = "synthetic_truth.json"
INSTANCE_DIR = "instance_ids"
MAP_RESOLUTION_M = 0.1
JPEG_QUALITY = 90
PNG_COMPRESSION = 1  # fast; the instance maps are mostly zeros and compress well anyway
# nuScenes visibility bins (visibility table): token, level, upper bound of the visible fraction.
VISIBILITY_BINS = (("1", "v0-40", 0.4), ("2", "v40-60", 0.6), ("3", "v60-80", 0.8), ("4", "v80-100", 1.0))


def visibility_token(fraction: float) -> str:
    """nuScenes visibility bin token of a visible fraction: "1" for [0, 0.4], "2" (0.4, 0.6], "3" (0.6, 0.8],
    "4" above 0.8."""
    for token, _, upper in VISIBILITY_BINS:
        if fraction <= upper:
            return token
    return VISIBILITY_BINS[-1][0]


def _floats(a: ArrayLike) -> list[float]:
    return [float(x) for x in np.asarray(a, dtype=np.float64).reshape(-1)]


def encode_jpeg(rgb: np.ndarray) -> bytes:
    return images.encode_jpeg(rgb, JPEG_QUALITY).tobytes()


def encode_png16(instance: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(
        ".png", np.ascontiguousarray(instance, dtype=np.uint16), [cv2.IMWRITE_PNG_COMPRESSION, PNG_COMPRESSION]
    )
    if not ok:
        raise RuntimeError("PNG encoding failed")
    return buf.tobytes()


@dataclass
class TableSet:
    """The nuScenes tables of one dataset, filled scene by scene and written as JSON at the end."""

    seed: int
    tables: dict[str, list[dict]] = field(default_factory=dict)
    instance_ids: dict[str, dict[str, dict]] = field(default_factory=dict)

    NAMES = (
        "category",
        "attribute",
        "visibility",
        "instance",
        "sensor",
        "calibrated_sensor",
        "ego_pose",
        "log",
        "scene",
        "sample",
        "sample_data",
        "sample_annotation",
        "map",
    )

    def __post_init__(self) -> None:
        for name in self.NAMES:
            self.tables.setdefault(name, [])
        self.tables["category"] = [
            {
                "token": self.token("category", c.category),
                "name": c.category,
                "description": f"synthetic {c.detection_class} (stridegen)",
            }
            for c in AGENT_CLASSES.values()
        ]
        self.tables["attribute"] = [
            {"token": self.token("attribute", a), "name": a, "description": f"nuScenes attribute {a}"}
            for a in ATTRIBUTES
        ]
        self.tables["visibility"] = [
            {
                "token": tok,
                "level": level,
                "description": f"visibility of whole object is between {level[1:].replace('-', ' and ')}%",
            }
            for tok, level, _ in VISIBILITY_BINS
        ]

    def token(self, *parts: object) -> str:
        return make_token("stridegen-synth", self.seed, *parts)

    def add(self, table: str, record: dict) -> dict:
        self.tables[table].append(record)
        return record

    def sensor_token(self, channel: str, modality: str) -> str:
        tok = self.token("sensor", channel)
        if not any(r["token"] == tok for r in self.tables["sensor"]):
            self.add("sensor", {"token": tok, "channel": channel, "modality": modality})
        return tok

    def write(self, root: Path, truth: dict) -> None:
        table_dir = root / VERSION
        table_dir.mkdir(parents=True, exist_ok=True)
        for name in self.NAMES:
            _write_json(table_dir / f"{name}.json", self.tables[name])
        _write_json(table_dir / TRUTH_FILE, truth)
        inst_dir = root / INSTANCE_DIR
        inst_dir.mkdir(parents=True, exist_ok=True)
        _write_json(
            inst_dir / "instances.json",
            {
                "format": "stridegen-instance-ids/1",
                "description": "PNG value (per-scene integer id) -> instance token; 0 is background. Agents never "
                "annotated (too far or never seen) have instance_token null.",
                "scenes": self.instance_ids,
            },
        )


def _write_json(path: Path, obj: object) -> None:
    path.write_text(json.dumps(obj, sort_keys=True, indent=1) + "\n")


@lru_cache(maxsize=1)
def _map_png() -> bytes:
    from stridegen.logs.synthetic.world import map_mask_image

    ok, buf = cv2.imencode(".png", map_mask_image(MAP_RESOLUTION_M), [cv2.IMWRITE_PNG_COMPRESSION, 6])
    if not ok:
        raise RuntimeError("map PNG encoding failed")
    return buf.tobytes()


def write_map(root: Path, tables: TableSet, log_tokens: list[str]) -> None:
    """One semantic-prior map (shared by every log, as nuScenes logs share a city map) as maps/<token>.png."""
    token = tables.token("map", "crossroads")
    (root / "maps").mkdir(parents=True, exist_ok=True)
    (root / "maps" / f"{token}.png").write_bytes(_map_png())
    tables.add(
        "map",
        {"token": token, "log_tokens": list(log_tokens), "category": "semantic_prior", "filename": f"maps/{token}.png"},
    )


@dataclass
class SceneWriter:
    """Writes one scene's records and files: call ``key_frame`` for every sample in time order, ``sweep`` for
    non-key LiDAR sweeps after their key frame, then ``finish``."""

    root: Path
    tables: TableSet
    scene: SyntheticScene
    channels: dict[str, tuple[str, np.ndarray, np.ndarray | None, tuple[int, int]]]  # ch -> (modality, T, K, wh)
    log_token: str = ""
    scene_token: str = ""
    _samples: list[dict] = field(default_factory=list)
    _sd_by_channel: dict[str, list[dict]] = field(default_factory=dict)
    _anns_by_agent: dict[int, list[dict]] = field(default_factory=dict)
    _cs_tokens: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        sc = self.scene
        self.log_name = f"stridegen-synth-s{sc.seed}-{sc.name}"
        self.log_token = self.tables.token("log", sc.name)
        self.scene_token = self.tables.token("scene", sc.name)
        date = "2020-09-13"
        self.tables.add(
            "log",
            {
                "token": self.log_token,
                "logfile": self.log_name,
                "vehicle": "stridegen-synth",
                "date_captured": date,
                "location": "synthetic-crossroads",
            },
        )
        for ch, (modality, T_ego_from_sensor, intrinsic, _) in self.channels.items():
            tok = self.tables.token("calibrated_sensor", sc.name, ch)
            self._cs_tokens[ch] = tok
            self.tables.add(
                "calibrated_sensor",
                {
                    "token": tok,
                    "sensor_token": self.tables.sensor_token(ch, modality),
                    "translation": _floats(T_ego_from_sensor[:3, 3]),
                    "rotation": _floats(rotmat_to_quat(T_ego_from_sensor[:3, :3])),
                    "camera_intrinsic": [] if intrinsic is None else [_floats(row) for row in intrinsic],
                },
            )
            self._sd_by_channel[ch] = []

    # ------------------------------------------------------------------ files
    def filename(self, folder: str, channel: str, ts: int) -> str:
        ext = "jpg" if self.channels[channel][0] == "camera" else "pcd.bin"
        return f"{folder}/{channel}/{self.log_name}__{channel}__{ts}.{ext}"

    def write_file(self, rel: str, data: bytes) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def instance_png_path(self, image_rel: str) -> str:
        """instance_ids/<CHANNEL>/<image stem>.png for an image at samples/<CHANNEL>/<stem>.jpg."""
        channel = Path(image_rel).parent.name
        return f"{INSTANCE_DIR}/{channel}/{Path(image_rel).stem}.png"

    # ------------------------------------------------------------------ records
    def _ego_pose(self, key: str, ts: int, T_global_from_ego: np.ndarray) -> str:
        tok = self.tables.token("ego_pose", self.scene.name, key)
        self.tables.add(
            "ego_pose",
            {
                "token": tok,
                "timestamp": ts,
                "rotation": _floats(rotmat_to_quat(T_global_from_ego[:3, :3])),
                "translation": _floats(T_global_from_ego[:3, 3]),
            },
        )
        return tok

    def sample_data(
        self, channel: str, sample_token: str, ts: int, T_global_from_ego: np.ndarray, rel: str, is_key_frame: bool
    ) -> dict:
        key = f"{channel}/{ts}"
        modality, _, _, (w, h) = self.channels[channel]
        rec = {
            "token": self.tables.token("sample_data", self.scene.name, key),
            "sample_token": sample_token,
            "ego_pose_token": self._ego_pose(key, ts, T_global_from_ego),
            "calibrated_sensor_token": self._cs_tokens[channel],
            "timestamp": ts,
            "fileformat": "jpg" if modality == "camera" else "pcd",
            "is_key_frame": is_key_frame,
            "height": h if modality == "camera" else 0,
            "width": w if modality == "camera" else 0,
            "filename": rel,
            "prev": "",
            "next": "",
        }
        self._sd_by_channel[channel].append(rec)
        return self.tables.add("sample_data", rec)

    def new_sample(self, index: int, t: float) -> dict:
        ts = self.scene.timestamp_us(t)
        rec = {
            "token": self.tables.token("sample", self.scene.name, index),
            "timestamp": ts,
            "prev": "",
            "next": "",
            "scene_token": self.scene_token,
        }
        self._samples.append(rec)
        return self.tables.add("sample", rec)

    def annotation(
        self,
        sample: dict,
        agent_index: int,
        center: np.ndarray,
        size_lwh: np.ndarray,
        yaw: float,
        num_lidar_pts: int,
        visible_fraction: float,
        attribute: str,
    ) -> dict:
        agent = self.scene.agents[agent_index]
        rec = {
            "token": self.tables.token("sample_annotation", self.scene.name, agent.agent_id, sample["token"]),
            "sample_token": sample["token"],
            "instance_token": agent.instance_token,
            "visibility_token": visibility_token(visible_fraction),
            "attribute_tokens": [self.tables.token("attribute", attribute)] if attribute else [],
            "translation": _floats(center),
            "size": _floats([size_lwh[1], size_lwh[0], size_lwh[2]]),
            "rotation": _floats(yaw_to_quat(yaw)),
            "prev": "",
            "next": "",
            "num_lidar_pts": int(num_lidar_pts),
            "num_radar_pts": 0,
        }
        self._anns_by_agent.setdefault(agent.agent_id, []).append(rec)
        return self.tables.add("sample_annotation", rec)

    def finish(self, description: str) -> None:
        _link(self._samples)
        for records in self._sd_by_channel.values():
            _link(sorted(records, key=lambda r: r["timestamp"]))
        ids: dict[str, dict] = {}
        for agent in self.scene.agents:
            anns = self._anns_by_agent.get(agent.agent_id, [])
            _link(anns)
            if anns:
                self.tables.add(
                    "instance",
                    {
                        "token": agent.instance_token,
                        "category_token": self.tables.token("category", agent.category),
                        "nbr_annotations": len(anns),
                        "first_annotation_token": anns[0]["token"],
                        "last_annotation_token": anns[-1]["token"],
                    },
                )
            ids[str(agent.agent_id)] = {
                "instance_token": agent.instance_token if anns else None,
                "category": agent.category,
                "scenario": agent.scenario,
            }
        self.tables.instance_ids[self.scene.name] = ids
        self.tables.add(
            "scene",
            {
                "token": self.scene_token,
                "log_token": self.log_token,
                "nbr_samples": len(self._samples),
                "first_sample_token": self._samples[0]["token"],
                "last_sample_token": self._samples[-1]["token"],
                "name": self.scene.name,
                "description": description,
            },
        )


def _link(records: list[dict]) -> None:
    for a, b in itertools.pairwise(records):
        a["next"] = b["token"]
        b["prev"] = a["token"]
