"""generate_dataset: synthetic scenes -> a complete nuScenes-format dataset, plus the analytic truth API.

Per key frame (2 Hz) the generator evaluates every agent's analytic state, casts the LiDAR (``lidar.cast_lidar``)
and renders the six cameras (``render.render_camera``) against the same boxes, and annotates an agent when its
box centre lies within ``ANNOTATION_RANGE_M`` of the ego (bird's-eye view) and it has at least one LiDAR return
or at least one visible pixel in some camera. ``num_lidar_pts`` counts the key-frame LiDAR returns on the box; the
visibility bin comes from the visible fraction summed over all cameras (visible pixels / pixels the box would
cover with nothing in front of it).

Random draws: the scene composition uses ``default_rng([seed, scene_index])``; the LiDAR noise and dropout of
sweep j after key frame k use ``default_rng([seed, scene_index, 7, k, j])``; the opt-in static scenery
(``scenery``) draws from its own ``default_rng([seed, scene_index, scenery.SCENERY_RNG_TAG])``. So every file is a
pure function of (seed, scene_index, options).
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from stridegen.core.errors import LogFormatError, MissingFileError, StrideGenError
from stridegen.formats.textfile import load_json
from stridegen.logs.synthetic import writer as wr
from stridegen.logs.synthetic.scenario import (
    SyntheticScene,
    compose_scene,
    n_samples,
    scene_name,
)
from stridegen.logs.synthetic.version import GENERATOR_VERSION
from stridegen.logs.synthetic.world import RasterRoadShader

if TYPE_CHECKING:
    from stridegen.calibration.rig import CameraSpec, LidarSpec
    from stridegen.core.boxes import Boxes
    from stridegen.logs.synthetic.background import GroundShader
    from stridegen.logs.synthetic.lidar import LidarSweep, SweepTiming
    from stridegen.logs.synthetic.render import CameraRender
    from stridegen.logs.synthetic.scenery import StaticScenery

ANNOTATION_RANGE_M = 80.0
# The per-stage break-down (GenerationSummary.timings_s) is process CPU time: with one thread it is the stage's
# own cost, unaffected by other processes sharing the machine.
_cpu = time.process_time
SWEEP_HZ = 20.0
SCENERY_RENDER_RANGE_M = 200.0  # static scenery farther than this (BEV, from the camera) is not drawn
LIDAR_RNG_TAG = 7


class OutputExistsError(StrideGenError, FileExistsError):
    """The output folder exists and is not empty (pass overwrite=True / --overwrite to replace it)."""


@dataclass
class GenerationSummary:
    out_dir: Path
    scenes: list[str]
    samples: int
    sample_data: int
    annotations_per_class: dict[str, int]
    scenarios_present: list[str]
    seconds: float  # wall clock
    timings_s: dict[str, float] = field(default_factory=dict)  # CPU seconds per stage


@lru_cache(maxsize=1)
def default_ground_shader() -> RasterRoadShader:
    """The world's ground shader (its raster is built on first use and shared by every scene of the process)."""
    return RasterRoadShader()


def generate_dataset(
    out_dir: str | Path,
    scenes: int = 2,
    seconds: float = 20.0,
    seed: int = 0,
    width: int = 800,
    height: int = 450,
    rig: str = "nuscenes",
    sweeps: bool = False,
    progress: bool = True,
    overwrite: bool = False,
    privacy_patches: bool = False,
    static_scenery: bool = False,
    lidar_timing: dict[str, float] | None = None,
) -> GenerationSummary:
    """Write ``scenes`` synthetic scenes of ``seconds`` each as a nuScenes-format dataset under ``out_dir``.

    ``privacy_patches`` draws licence plates and face-like patches (stridegen.logs.synthetic.patches) for tests of
    the anonymization; off, the output is byte for byte what it was before the option existed.
    ``static_scenery`` places unannotated buildings, poles and low walls along the roads
    (stridegen.logs.synthetic.scenery) that the LiDAR and the cameras see, so that LiDAR odometry is well posed;
    off, the output is likewise unchanged.
    ``lidar_timing`` (``{"period_s": .., "end_s": ..}``, ``lidar.SweepTiming``) writes LiDAR sweeps that are not
    motion-compensated: each azimuth column meets the agents where they are at its firing time, relative to the
    sample time the cameras and annotations use, so a moving agent's points lag its annotated box; None (the
    default) keeps the instantaneous sweeps, byte for byte.

    The dataset is written into a temporary sibling folder and renamed into place at the end, so ``out_dir`` is
    either untouched or complete. A non-empty ``out_dir`` is refused unless ``overwrite``.
    """
    from stridegen.calibration.rig import load_rig

    start = time.perf_counter()  # wall clock for the summary
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise OutputExistsError(f"{out} exists and is not empty; pass --overwrite to replace it")
    if scenes < 1 or seconds <= 0:
        raise ValueError("scenes must be >= 1 and seconds > 0")
    rig_obj = load_rig(rig).with_camera_resolution(width, height)
    if not rig_obj.lidars:
        raise ValueError(f"rig {rig!r} has no LiDAR")
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    tables = wr.TableSet(seed)
    timings: defaultdict[str, float] = defaultdict(float)
    metas = []
    try:
        with _progress(progress) as prog:
            for index in range(scenes):
                t0 = _cpu()
                scene = compose_scene(seed, index, seconds)
                timings["scenario"] += _cpu() - t0
                task = prog.add_task(f"{scene.name}", total=n_samples(seconds)) if prog else None
                _write_scene(
                    tmp,
                    tables,
                    scene,
                    rig_obj,
                    sweeps,
                    timings,
                    (lambda task=task: prog.advance(task)) if prog else None,
                    privacy_patches,
                    static_scenery,
                    lidar_timing,
                )
                metas.append(scene.metadata())
        t0 = _cpu()
        wr.write_map(tmp, tables, [r["token"] for r in tables.tables["log"]])
        truth = {
            "generator": "stridegen.logs.synthetic",
            "generator_version": GENERATOR_VERSION,
            "seed": seed,
            "seconds": float(seconds),
            "options": {
                "width": width,
                "height": height,
                "rig": rig,
                "sweeps": sweeps,
                **({"privacy_patches": True} if privacy_patches else {}),  # recorded only when on
                **({"static_scenery": True} if static_scenery else {}),  # recorded only when on
                **({"lidar_timing": dict(lidar_timing)} if lidar_timing else {}),  # recorded only when set
            },
            "scenes": metas,
        }
        tables.write(tmp, truth)
        timings["write"] += _cpu() - t0
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _summary(out, tables, metas, time.perf_counter() - start, dict(timings))  # wall


def _progress(enabled: bool):
    import contextlib

    if not enabled:
        return contextlib.nullcontext(None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())


def _summary(
    out: Path, tables: wr.TableSet, metas: list[dict], seconds: float, timings: dict[str, float]
) -> GenerationSummary:
    cat_to_class = {a["instance_token"]: a["detection_class"] for m in metas for a in m["agents"]}
    scen = {a["instance_token"]: a["scenario"] for m in metas for a in m["agents"]}
    per_class = Counter(cat_to_class[r["instance_token"]] for r in tables.tables["sample_annotation"])
    present = sorted({scen[r["token"]] for r in tables.tables["instance"]})
    return GenerationSummary(
        out,
        [m["name"] for m in metas],
        len(tables.tables["sample"]),
        len(tables.tables["sample_data"]),
        dict(sorted(per_class.items())),
        present,
        seconds,
        timings,
    )


def _channel_table(rig) -> dict[str, tuple[str, np.ndarray, np.ndarray | None, tuple[int, int]]]:
    channels = {c.channel: ("camera", c.T_ego_from_sensor, c.intrinsic, (c.width, c.height)) for c in rig.cameras}
    lidar = rig.lidars[0]
    channels[lidar.channel] = ("lidar", lidar.T_ego_from_sensor, None, (0, 0))
    return channels


def _write_scene(
    root: Path,
    tables: wr.TableSet,
    scene: SyntheticScene,
    rig,
    sweeps: bool,
    timings: defaultdict[str, float],
    advance,
    privacy_patches: bool = False,
    static_scenery: bool = False,
    lidar_timing: dict[str, float] | None = None,
) -> None:
    from stridegen.logs.synthetic.render import render_camera

    shader = default_ground_shader()
    writer = wr.SceneWriter(root, tables, scene, _channel_table(rig))
    lidar = rig.lidars[0]
    colors = np.array([a.color_rgb for a in scene.agents], dtype=np.uint8).reshape(-1, 3)
    times = scene.sample_times
    n_agents = len(scene.agents)
    patches: dict = {}
    if privacy_patches:
        from stridegen.logs.synthetic.patches import privacy_decals

        patches = {"decals": privacy_decals(scene)}
    world = _SceneryWorld.of(scene) if static_scenery else None
    for k, t in enumerate(times):
        boxes = scene.agent_states(t)
        T_global_from_ego = scene.ego_pose(t)
        sample = writer.new_sample(k, t)
        ts = sample["timestamp"]

        t0 = _cpu()
        sweep = _cast(lidar, T_global_from_ego, boxes, scene, k, 0, world, lidar_timing)
        timings["lidar"] += _cpu() - t0
        rel = writer.filename("samples", lidar.channel, ts)
        t0 = _cpu()
        writer.write_file(rel, sweep.points_sensor.astype(np.float32).tobytes())
        writer.sample_data(lidar.channel, sample["token"], ts, T_global_from_ego, rel, True)
        timings["write"] += _cpu() - t0

        visible = np.zeros(n_agents, dtype=np.int64)
        unoccluded = np.zeros(n_agents, dtype=np.int64)
        for cam in rig.cameras:
            t0 = _cpu()
            if world is None:
                out = render_camera(
                    cam,
                    T_global_from_ego @ cam.T_ego_from_sensor,
                    boxes.center,
                    boxes.size_lwh,
                    boxes.yaw,
                    colors,
                    shader,
                    **patches,
                )
            else:
                out = world.render(cam, T_global_from_ego, boxes, colors, shader, patches)
            timings["render"] += _cpu() - t0
            visible += out.visible_pixels
            unoccluded += out.unoccluded_pixels
            t0 = _cpu()
            jpg, png = wr.encode_jpeg(out.rgb), wr.encode_png16(out.instance)
            timings["encode"] += _cpu() - t0
            t0 = _cpu()
            rel = writer.filename("samples", cam.channel, ts)
            writer.write_file(rel, jpg)
            writer.write_file(writer.instance_png_path(rel), png)
            writer.sample_data(cam.channel, sample["token"], ts, T_global_from_ego, rel, True)
            timings["write"] += _cpu() - t0

        t0 = _cpu()
        _annotate(writer, scene, sample, boxes, T_global_from_ego, sweep.hits_per_box, visible, unoccluded)
        timings["write"] += _cpu() - t0

        if sweeps and k + 1 < len(times):
            _write_sweeps(writer, scene, k, t, sample["token"], lidar, timings, world, lidar_timing)
        if advance is not None:
            advance()
    writer.finish(_describe(scene))


def annotated_mask(
    boxes, T_global_from_ego: np.ndarray, lidar_hits: np.ndarray, visible_pixels: np.ndarray
) -> np.ndarray:
    """The annotation rule: within ANNOTATION_RANGE_M (BEV, from the ego origin) and seen by a sensor."""
    dist = np.hypot(boxes.center[:, 0] - T_global_from_ego[0, 3], boxes.center[:, 1] - T_global_from_ego[1, 3])
    return (dist <= ANNOTATION_RANGE_M) & ((lidar_hits >= 1) | (visible_pixels > 0))


def _annotate(
    writer: wr.SceneWriter,
    scene: SyntheticScene,
    sample: dict,
    boxes,
    T_global_from_ego: np.ndarray,
    hits: np.ndarray,
    visible: np.ndarray,
    unoccluded: np.ndarray,
) -> None:
    keep = annotated_mask(boxes, T_global_from_ego, hits, visible)
    frac = np.divide(
        visible.astype(np.float64), unoccluded.astype(np.float64), out=np.zeros(len(visible)), where=unoccluded > 0
    )
    speed = boxes.extras["speed"]
    for i in np.nonzero(keep)[0]:
        agent = scene.agents[i]
        writer.annotation(
            sample,
            int(i),
            boxes.center[i],
            boxes.size_lwh[i],
            float(boxes.yaw[i]),
            int(hits[i]),
            float(frac[i]),
            agent.attribute(float(speed[i])),
        )


def _write_sweeps(
    writer: wr.SceneWriter,
    scene: SyntheticScene,
    k: int,
    t_key: float,
    sample_token: str,
    lidar,
    timings: defaultdict[str, float],
    world: _SceneryWorld | None = None,
    lidar_timing: dict[str, float] | None = None,
) -> None:
    """Non-key LiDAR sweeps at 20 Hz between key frame k and k + 1 (sample_token: key frame k)."""
    per_key = round(SWEEP_HZ / 2.0)
    for j in range(1, per_key):
        t = t_key + j / SWEEP_HZ
        boxes = scene.agent_states(t)
        T_global_from_ego = scene.ego_pose(t)
        t0 = _cpu()
        sweep = _cast(lidar, T_global_from_ego, boxes, scene, k, j, world, lidar_timing)
        timings["lidar"] += _cpu() - t0
        t0 = _cpu()
        ts = scene.timestamp_us(t)
        rel = writer.filename("sweeps", lidar.channel, ts)
        writer.write_file(rel, sweep.points_sensor.astype(np.float32).tobytes())
        writer.sample_data(lidar.channel, sample_token, ts, T_global_from_ego, rel, False)
        timings["write"] += _cpu() - t0


def _cast(
    lidar: LidarSpec,
    T_global_from_ego: np.ndarray,
    boxes: Boxes,
    scene: SyntheticScene,
    k: int,
    j: int,
    world: _SceneryWorld | None,
    lidar_timing: dict[str, float] | None = None,
) -> LidarSweep:
    """Sweep j after key frame k against the agents (and the scenery when ``world`` is given); ``hits_per_box``
    of the result covers the agents only. ``lidar_timing``: not motion-compensated (``generate_dataset``)."""
    from stridegen.logs.synthetic.lidar import SweepTiming, cast_lidar

    rng = np.random.default_rng([scene.seed, scene.scene_index, LIDAR_RNG_TAG, k, j])
    T_global_from_sensor = T_global_from_ego @ lidar.T_ego_from_sensor
    timing = SweepTiming(**lidar_timing) if lidar_timing else None
    if world is None:
        return cast_lidar(
            T_global_from_sensor,
            lidar,
            boxes.center,
            boxes.size_lwh,
            boxes.yaw,
            rng,
            velocity_global=boxes.velocity if timing else None,
            timing=timing,
        )
    return world.cast(lidar, T_global_from_sensor, boxes, rng, timing)


@dataclass(frozen=True)
class _SceneryWorld:
    """The agents' boxes joined with the scene's static scenery (agents first, so agent i stays box i)."""

    scenery: StaticScenery

    @classmethod
    def of(cls, scene: SyntheticScene) -> _SceneryWorld:
        from stridegen.logs.synthetic.scenery import compose_scenery

        return cls(compose_scenery(scene.seed, scene.scene_index))

    def _join(self, boxes: Boxes, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(centre [N + M, 3], size_lwh [N + M, 3], yaw [N + M]) of the N agents and the scenery boxes ``idx``."""
        s = self.scenery
        return (
            np.concatenate([boxes.center, s.center[idx]]),
            np.concatenate([boxes.size_lwh, s.size_lwh[idx]]),
            np.concatenate([boxes.yaw, s.yaw[idx]]),
        )

    def cast(
        self,
        lidar: LidarSpec,
        T_global_from_sensor: np.ndarray,
        boxes: Boxes,
        rng: np.random.Generator,
        timing: SweepTiming | None = None,
    ) -> LidarSweep:
        """``cast_lidar`` against agents + scenery within the LiDAR's range: ``hits_per_box`` covers the agents
        only, ``hit_box`` is -2 on a scenery return (-1 ground, i agent i)."""
        from stridegen.logs.synthetic.lidar import BOX_REFLECTIVITY, LidarSweep, cast_lidar

        n = len(boxes.yaw)
        idx = self.scenery.near(T_global_from_sensor[:2, 3], float(lidar.max_range_m))
        refl = np.concatenate([np.full(n, BOX_REFLECTIVITY), self.scenery.reflectivity[idx]])
        # the scenery stands still
        velocity = np.concatenate([boxes.velocity, np.zeros((len(idx), 3))]) if timing else None
        sweep = cast_lidar(
            T_global_from_sensor,
            lidar,
            *self._join(boxes, idx),
            rng,
            reflectivity=refl,
            velocity_global=velocity,
            timing=timing,
        )
        hit_box = np.where(sweep.hit_box >= n, -2, sweep.hit_box)  # -2: scenery
        return LidarSweep(sweep.points_sensor, sweep.hits_per_box[:n], hit_box)

    def render(
        self,
        cam: CameraSpec,
        T_global_from_ego: np.ndarray,
        boxes: Boxes,
        colors: np.ndarray,
        shader: GroundShader,
        patches: dict,
    ) -> CameraRender:
        """``render_camera`` of agents + scenery within ``SCENERY_RENDER_RANGE_M``; the scenery's pixels get
        instance id 0 (background) and the per-box counts cover the agents only."""
        from stridegen.logs.synthetic.render import CameraRender, render_camera

        n = len(boxes.yaw)
        T_global_from_cam = T_global_from_ego @ cam.T_ego_from_sensor
        idx = self.scenery.near(T_global_from_cam[:2, 3], SCENERY_RENDER_RANGE_M)
        all_colors = np.concatenate([colors, self.scenery.color_rgb[idx]])
        out = render_camera(cam, T_global_from_cam, *self._join(boxes, idx), all_colors, shader, **patches)
        instance = np.where(out.instance > n, np.uint16(0), out.instance).astype(np.uint16)
        return CameraRender(
            out.rgb,
            instance,
            out.depth_m,
            out.visible_pixels[:n],
            out.unoccluded_pixels[:n],
            out.decal_boxes_xyxy,
            out.decal_pixels,
        )


def _describe(scene: SyntheticScene) -> str:
    scen = sorted({a.scenario for a in scene.agents})
    return f"stridegen synthetic crossroads, seed {scene.seed}, ego {scene.ego_profile_kind}; {', '.join(scen)}"


# ---------------------------------------------------------------------------------------------- truth API


def read_truth_metadata(dataset_root: str | Path) -> dict:
    path = Path(dataset_root) / wr.VERSION / wr.TRUTH_FILE
    if not path.is_file():
        raise MissingFileError(path, "not a stridegen synthetic dataset (no truth metadata)")
    meta = load_json(path, "truth metadata", LogFormatError)  # within the limits on inputs (docs/cli.md)
    if not isinstance(meta, dict):
        raise LogFormatError(path, "truth metadata is not a JSON object")
    return meta


def load_synthetic_truth(dataset_root: str | Path, scene: str) -> SyntheticScene:
    """Rebuild the analytic truth of a written scene (by name, e.g. "scene-0000") from its metadata JSON.

    Raises LogFormatError if the dataset was written by another generator version or if the rebuilt agents do
    not match the recorded ones.
    """
    meta = read_truth_metadata(dataset_root)
    path = Path(dataset_root) / wr.VERSION / wr.TRUTH_FILE
    if meta.get("generator_version") != GENERATOR_VERSION:
        raise LogFormatError(
            path,
            f"written by generator version {meta.get('generator_version')!r}, this is "
            f"{GENERATOR_VERSION!r}: the analytic truth cannot be rebuilt",
        )
    for entry in meta["scenes"]:
        if entry["name"] == scene:
            rebuilt = compose_scene(int(meta["seed"]), int(entry["scene_index"]), float(entry["seconds"]))
            if [a.instance_token for a in rebuilt.agents] != [a["instance_token"] for a in entry["agents"]]:
                raise LogFormatError(path, f"scene {scene}: rebuilt agents differ from the recorded ones")
            return rebuilt
    raise LogFormatError(path, f"no scene named {scene!r}; scenes: {[e['name'] for e in meta['scenes']]}")


__all__ = [
    "ANNOTATION_RANGE_M",
    "GenerationSummary",
    "OutputExistsError",
    "annotated_mask",
    "generate_dataset",
    "load_synthetic_truth",
    "read_truth_metadata",
    "scene_name",
]
