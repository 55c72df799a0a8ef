"""The ``mmdet3d`` detector backend (stridegen/pipeline/detect/mmdet3d_*.py) and its op fallbacks.

Without the extra: the input shaping (multi-sweep points, camera matrices), the class mapping, the box frame change,
the errors and the pure-PyTorch stand-ins for BEVFusion's ops are checked against known answers (torch only).

With mmdet3d installed (``make setup EXTRAS=dev,sam2,mmdet3d``; docs/mmdet3d.md): a small CenterPoint built by
mmdet3d's own builder from a shrunken copy of its nuScenes config, random weights (``torch.manual_seed``), saved
with mmengine's ``save_checkpoint`` and loaded back through ``detector.options.checkpoint``. The known answers are
mmdet3d's own code: its ``LoadPointsFromFile`` + ``LoadPointsFromMultiSweeps`` transforms on the log's files
(described as mmdet3d's nuScenes infos describe them) for the points, and ``mmdet3d.apis.init_model`` +
``inference_detector`` on those points for the boxes, moved to the global frame here with plain numpy.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stridegen.core import registry
from stridegen.core.angles import wrap_angle
from stridegen.core.errors import ConfigError, LogFormatError, MissingExtraError
from stridegen.core.transforms import invert_transform, transform_points
from stridegen.core.vocabulary import DETECTION_CLASSES, STRIDE_CLASSES
from stridegen.logs import open_log
from stridegen.logs.base import Frame, SensorCalibration, SensorSample
from stridegen.logs.synthetic.generator import generate_dataset
from stridegen.pipeline.detect import mmdet3d_backend as mb
from stridegen.pipeline.detect import mmdet3d_inputs as mi
from stridegen.pipeline.detect import mmdet3d_model as mm
from stridegen.pipeline.detect.mmdet3d_backend import DEFAULT_CLASS_MAP, Mmdet3dDetector
from stridegen.pipeline.detect.mmdet3d_inputs import MissingSweepsError, PointsSpec
from stridegen.pipeline.detect.mmdet3d_model import ModelCheckpointError

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_MMDET3D = all(importlib.util.find_spec(m) is not None for m in ("mmdet3d", "mmcv", "mmengine", "mmdet"))
NEEDS_MMDET3D = "needs the mmdet3d extra: make setup EXTRAS=dev,sam2,mmdet3d (docs/mmdet3d.md)"
NUSCENES_SWEEPS = PointsSpec(
    load_dim=5, use_dim=(0, 1, 2, 3, 4), sweeps_num=9, remove_close=True, pad_empty_sweeps=True
)
TARGET = "stridegen.pipeline.detect.mmdet3d_backend:Mmdet3dDetector"


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Any:
    """One torch thread: with several, spconv's / mmcv's CPU kernels accumulate in a varying order and scores vary
    in the 4th decimal from run to run (mmdet3d's own API included); with one, runs are bit-identical."""
    if not HAS_TORCH:
        yield
        return
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def log_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 2 s synthetic scene (4 frames) at 320x180 with 20 Hz LiDAR sweeps (frames 1-3 have 9+ earlier sweeps)."""
    root = tmp_path_factory.mktemp("mmdet3d_log") / "ds"
    generate_dataset(root, scenes=1, seconds=2.0, seed=3, width=320, height=180, sweeps=True, progress=False)
    return root


@pytest.fixture(scope="module")
def frames(log_root: Path) -> list[Frame]:
    return open_log(log_root).scenes()[0].frames


def _sample(token: str, t_us: int, T_global_from_ego: np.ndarray, channel: str = "LIDAR_TOP") -> SensorSample:
    calib = SensorCalibration(channel, "lidar", np.eye(4))
    return SensorSample(token, channel, t_us, Path(f"/nowhere/{token}.bin"), T_global_from_ego, calib)


def _rz(angle: float, t: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    m = np.eye(4)
    c, s = math.cos(angle), math.sin(angle)
    m[:2, :2] = [[c, -s], [s, c]]
    m[:3, 3] = t
    return m


# ---------------------------------------------------------------------------------------------- input shaping
def test_points_spec_and_inference_pipeline_of_a_nuscenes_config() -> None:
    pipeline = [
        {"type": "LoadPointsFromFile", "coord_type": "LIDAR", "load_dim": 5, "use_dim": 5},
        {
            "type": "LoadPointsFromMultiSweeps",
            "sweeps_num": 9,
            "use_dim": [0, 1, 2, 3, 4],
            "remove_close": True,
            "pad_empty_sweeps": True,
        },
        {"type": "BEVLoadMultiViewImageFromFiles", "to_float32": True, "color_type": "color", "backend_args": None},
        {"type": "PointsRangeFilter", "point_cloud_range": [-54, -54, -5, 54, 54, 3]},
        {"type": "Pack3DDetInputs", "keys": ["points", "img"]},
    ]
    spec = mi.points_spec(pipeline)
    assert spec == PointsSpec("LIDAR", 5, (0, 1, 2, 3, 4), 9, 5, (0, 1, 2, 3, 4), True, True)
    assert mi.image_loader(pipeline) is not None
    out = mi.inference_pipeline(pipeline, spec)
    assert [s["type"] for s in out] == [
        "LoadPointsFromDict",
        mi.IMAGE_TRANSFORM,
        "PointsRangeFilter",
        "Pack3DDetInputs",
    ]
    assert out[0]["use_dim"] == 5 and out[1] == {"type": mi.IMAGE_TRANSFORM, "to_float32": True, "color_type": "color"}
    lidar_only = [pipeline[0], pipeline[3]]
    assert mi.points_spec(lidar_only).sweeps_num == 0 and mi.image_loader(lidar_only) is None
    with pytest.raises(ConfigError, match="no LoadPointsFromFile"):
        mi.points_spec(pipeline[3:])
    with pytest.raises(ConfigError, match=r"\['norm_intensity'\] are not supported"):
        mi.points_spec([{**pipeline[0], "norm_intensity": True}])


def test_sweep_transform_known_answer() -> None:
    """Key LiDAR at the origin; a sweep LiDAR turned 90 degrees and 1 m ahead: the point (2, 0, 0) of the sweep is
    (1, 2, 0) in the key frame (R p + t); mmdet3d 1.x's infos make it R p + R^T t = (0, 1, 0)."""
    key = _sample("key", 1_000_000, np.eye(4))
    sweep = _sample("sweep", 950_000, _rz(math.pi / 2, (1.0, 0.0, 0.0)))
    p = np.array([2.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(mi.sweep_transform_matrix(key, sweep, "exact") @ p, [1.0, 2.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(mi.sweep_transform_matrix(key, sweep, "mmdet3d") @ p, [0.0, 1.0, 0.0, 1.0], atol=1e-12)
    with pytest.raises(ConfigError, match="sweep_transform"):
        mi.sweep_transform_matrix(key, sweep, "nearest")


def test_multi_sweep_points_known_answer() -> None:
    key = _sample("key", 2_000_000, _rz(0.0, (10.0, 0.0, 0.0)))
    sweep = _sample("sweep", 1_950_000, _rz(0.0, (9.0, 0.0, 0.0)))
    key_pts = np.array([[1.0, 2.0, 0.5, 7.0, 31.0]], dtype=np.float32)  # column 4: the ring index in nuScenes
    sweep_pts = np.array([[0.5, 0.5, 0.0, 3.0, 2.0], [5.0, 0.0, 1.0, 4.0, 9.0]], dtype=np.float32)
    out = mi.multi_sweep_points([(key_pts, key), (sweep_pts, sweep)], NUSCENES_SWEEPS)
    # The close point (|x|, |y| < 1 m) goes; the other moves 1 m back (the sweep LiDAR was 1 m behind) with lag 0.05 s.
    np.testing.assert_allclose(out, [[1.0, 2.0, 0.5, 7.0, 0.0], [4.0, 0.0, 1.0, 4.0, 0.05]], atol=1e-6)
    assert out.dtype == np.float32
    single = mi.multi_sweep_points([(key_pts, key)], PointsSpec(load_dim=5, use_dim=(0, 1, 2, 3)))
    np.testing.assert_array_equal(single, key_pts[:, :4])
    with pytest.raises(LogFormatError, match="newer than its key sample"):
        mi.multi_sweep_points([(key_pts, key), (sweep_pts, _sample("late", 2_050_000, np.eye(4)))], NUSCENES_SWEEPS)
    with pytest.raises(LogFormatError, match="3 values per point"):
        mi.multi_sweep_points([(key_pts[:, :3], key)], NUSCENES_SWEEPS)


def test_multi_sweep_points_of_a_log_agree_through_the_global_frame(frames: list[Frame]) -> None:
    frame = frames[2]
    sweeps = frame.lidar_sweeps(10)
    assert len(sweeps) == 10
    out = mi.multi_sweep_points(sweeps, NUSCENES_SWEEPS)
    key = sweeps[0][1]
    start = 0
    for j, (points, sample) in enumerate(sweeps):
        kept = points if j == 0 else mi.remove_close(points)
        block = out[start : start + len(kept)]
        start += len(kept)
        # The same world points, whichever LiDAR pose they are read from.
        np.testing.assert_allclose(
            transform_points(key.T_global_from_sensor, block[:, :3].astype(np.float64)),
            transform_points(sample.T_global_from_sensor, kept[:, :3].astype(np.float64)),
            atol=2e-3,
        )
        np.testing.assert_array_equal(block[:, 3], kept[:, 3])
        np.testing.assert_allclose(block[:, 4], 0.05 * j, atol=1e-6)  # the generator's sweeps are 20 Hz
    assert start == len(out)


def test_missing_sweeps_is_an_error_past_the_first_frame(frames: list[Frame]) -> None:
    one = frames[2].lidar_sweeps(1)
    with pytest.raises(MissingSweepsError, match=r"no LiDAR sweeps before its key sample.*require_sweeps=false"):
        mi.check_sweeps(frames[2], one, NUSCENES_SWEEPS)
    mi.check_sweeps(frames[2], one, NUSCENES_SWEEPS, require=False)
    mi.check_sweeps(frames[0], frames[0].lidar_sweeps(10), NUSCENES_SWEEPS)  # a scene's first frame has none
    mi.check_sweeps(frames[2], one, PointsSpec())  # a single-sweep model needs none


def test_camera_matrices_map_lidar_points_into_each_camera(frames: list[Frame]) -> None:
    frame = frames[1]
    key = frame.sensor("LIDAR_TOP")
    cams = mi.camera_matrices(frame, key, mi.NUSCENES_CAMERAS)
    assert [c["channel"] for c in cams] == list(mi.NUSCENES_CAMERAS)
    p_lidar = np.array([[5.0, 1.0, 0.5]])
    for cam in cams:
        sample = frame.sensors[cam["channel"]]
        direct = transform_points(
            invert_transform(sample.T_global_from_sensor), transform_points(key.T_global_from_sensor, p_lidar)
        )
        np.testing.assert_allclose(transform_points(cam["lidar2cam"], p_lidar), direct, atol=1e-9)
        np.testing.assert_array_equal(cam["cam2img"], sample.calibration.intrinsic)
    with pytest.raises(LogFormatError, match="no camera"):
        mi.camera_matrices(frame, key, ["CAM_FRONT", "CAM_ROOF"])


# ------------------------------------------------------------------------------------------------- classes
def test_default_class_map_is_total_over_nuscenes_and_stride_classes() -> None:
    nus = mb.resolve_class_map(DETECTION_CLASSES)
    assert nus == {c: c for c in DETECTION_CLASSES}
    stride = mb.resolve_class_map(STRIDE_CLASSES)
    assert set(stride) == set(STRIDE_CLASSES)
    assert all(t in DETECTION_CLASSES or t == "" for t in stride.values())
    assert stride["vehicle"] == "car" and stride["large vehicle"] == "truck" and stride["kick scooter"] == ""
    assert all(t in DETECTION_CLASSES or t == "" for t in DEFAULT_CLASS_MAP.values())


def test_class_map_errors_and_overrides() -> None:
    with pytest.raises(ConfigError, match=r"model classes \['forklift'\] have no detection class"):
        mb.resolve_class_map(["car", "forklift"])
    assert mb.resolve_class_map(["car", "forklift"], {"forklift": "construction_vehicle"})["forklift"] == (
        "construction_vehicle"
    )
    assert mb.resolve_class_map(["car", "forklift"], {"forklift": ""})["forklift"] == ""
    with pytest.raises(ConfigError, match="not detection classes"):
        mb.resolve_class_map(["car"], {"car": "automobile"})
    with pytest.raises(ConfigError, match="not classes of the model"):
        mb.resolve_class_map(["car"], {"tram": "bus"})


# ------------------------------------------------------------------------------------------------- boxes
def test_lidar_boxes_to_global_known_answer() -> None:
    """A box 10 m ahead of a LiDAR that faces +y at (100, 200, 1): bottom centre z=-1 -> gravity centre 0.75 up."""
    T = _rz(math.pi / 2, (100.0, 200.0, 1.0))
    bbox = np.array([[10.0, 0.0, -1.0, 4.0, 2.0, 1.5, 0.3, 1.0, 0.0]])
    boxes = mb.lidar_boxes_to_global(bbox, np.array([0.8]), np.array(["car"], dtype=object), T)
    assert boxes.frame == "global"
    np.testing.assert_allclose(boxes.center, [[100.0, 210.0, 0.75]], atol=1e-12)
    np.testing.assert_allclose(boxes.size_lwh, [[4.0, 2.0, 1.5]])
    np.testing.assert_allclose(boxes.yaw, [0.3 + math.pi / 2], atol=1e-12)
    np.testing.assert_allclose(boxes.velocity, [[0.0, 1.0, 0.0]], atol=1e-12)
    assert boxes.score.tolist() == [0.8] and boxes.label.tolist() == ["car"]
    empty = mb.lidar_boxes_to_global(np.zeros((0, 9), np.float32), np.zeros(0), np.zeros(0, dtype=object), T)
    assert len(empty) == 0 and empty.frame == "global"


# ---------------------------------------------------------------------------------------------- options / errors
@pytest.fixture
def registered() -> Any:
    """``mmdet3d`` registered as the lead will add it to the registry's BUILTIN table (removed afterwards)."""
    registry.register("detector", "mmdet3d", TARGET)
    yield "mmdet3d"
    registry.unregister("detector", "mmdet3d")


def test_registry_accepts_the_backend_options(registered: str) -> None:
    model = registry.options_model("detector", registered)
    opts = model(model="centerpoint", checkpoint="/x.pth", batch_size=2, class_map={"car": "car"}, cfg_options={})
    assert opts.batch_size == 2
    with pytest.raises(ConfigError, match="modle"):
        registry.make("detector", registered, {"modle": "centerpoint"})


def test_missing_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mmdet3d", None)  # import mmdet3d -> ImportError
    with pytest.raises(MissingExtraError, match=r"stridegen\[mmdet3d\]"):
        Mmdet3dDetector(model="centerpoint", checkpoint="/x.pth")


def test_option_errors_before_any_model_is_built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"needs detector\.options\.checkpoint"):
        Mmdet3dDetector(model="centerpoint")
    with pytest.raises(ConfigError, match="batch_size"):
        Mmdet3dDetector(checkpoint="/x.pth", batch_size=0)
    with pytest.raises(ConfigError, match="sweep_transform"):
        Mmdet3dDetector(checkpoint="/x.pth", sweep_transform="lerp")
    with pytest.raises(ConfigError, match="neither a built-in model"):
        mm.resolve_config_path(str(tmp_path / "nope.py"))
    monkeypatch.delenv(mm.REPO_ENV, raising=False)
    with pytest.raises(ConfigError, match="mmdet3d_repo"):
        mm.resolve_config_path("bevfusion")
    with pytest.raises(ConfigError, match=r"mmdetection3d v1\.4\.0 checkout"):
        mm.resolve_config_path("bevfusion", str(tmp_path))


def test_checkpoint_file_errors(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    with pytest.raises(ModelCheckpointError, match="does not exist"):
        mm.load_checkpoint_state(tmp_path / "none.pth")
    junk = tmp_path / "junk.pth"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ModelCheckpointError, match="not a readable PyTorch checkpoint"):
        mm.load_checkpoint_state(junk)
    import torch

    listed = tmp_path / "list.pth"
    torch.save([1, 2], listed)
    with pytest.raises(ModelCheckpointError, match="holds a list"):
        mm.load_checkpoint_state(listed)
    wrapped = tmp_path / "wrapped.pth"
    torch.save({"state_dict": {"module.w": torch.ones(2)}, "meta": {"dataset_meta": {"classes": ["car"]}}}, wrapped)
    state, meta = mm.load_checkpoint_state(wrapped)
    assert list(state) == ["w"] and meta["dataset_meta"]["classes"] == ["car"]


# ------------------------------------------------------------------------------- BEVFusion op stand-ins (torch)
def test_bev_pool_fallback_sums_features_per_cell() -> None:
    torch = pytest.importorskip("torch")
    from stridegen.pipeline.detect import mmdet3d_ops as ops

    B, D, H, W, C, N = 2, 2, 4, 5, 3, 200
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, C, generator=g, dtype=torch.float64)
    geom = torch.stack(
        [torch.randint(0, n, (N,), generator=g) for n in (H, W, D, B)], dim=1
    ).int()  # columns (ix, iy, iz, batch) as BEVFusion's bev_pool passes them
    out = ops.bev_pool_forward(x, geom, None, None, B, D, H, W)
    expected = torch.zeros(B, D, H, W, C, dtype=torch.float64)
    for i in range(N):
        ix, iy, iz, b = geom[i].tolist()
        expected[b, iz, ix, iy] += x[i]
    torch.testing.assert_close(out, expected)
    grad = torch.randn(B, D, H, W, C, generator=g, dtype=torch.float64)
    back = ops.bev_pool_backward(grad, geom, None, None, B, D, H, W)
    torch.testing.assert_close(back, torch.stack([grad[b, iz, ix, iy] for ix, iy, iz, b in geom.tolist()]))


def test_hard_voxelize_fallback_known_answer() -> None:
    torch = pytest.importorskip("torch")
    from stridegen.pipeline.detect import mmdet3d_ops as ops

    pts = torch.tensor(
        [
            [0.5, 0.5, 0.5, 10.0],  # voxel (0, 0, 0): the first voxel
            [3.5, 0.5, 0.5, 11.0],  # voxel (3, 0, 0): the second
            [0.2, 0.7, 0.1, 12.0],  # (0, 0, 0) again: its second point
            [9.0, 9.0, 9.0, 13.0],  # outside the grid
            [0.9, 0.9, 0.9, 14.0],  # (0, 0, 0): a third point, over max_points=2
            [1.5, 1.5, 1.5, 15.0],  # (1, 1, 1): a third voxel, over max_voxels=2
        ]
    )
    voxels, coors, num = torch.zeros(2, 2, 4), torch.zeros(2, 3, dtype=torch.int32), torch.zeros(2, dtype=torch.int32)
    n = ops.hard_voxelize(pts, voxels, coors, num, [1.0, 1.0, 1.0], [0, 0, 0, 4, 4, 2], 2, 2)
    assert n == 2
    assert coors.tolist() == [[0, 0, 0], [3, 0, 0]]  # (ix, iy, iz)
    assert num.tolist() == [2, 1]
    torch.testing.assert_close(voxels[0], pts[[0, 2]])
    torch.testing.assert_close(voxels[1], torch.stack([pts[1], torch.zeros(4)]))
    dyn = torch.zeros(6, 3, dtype=torch.int32)
    ops.dynamic_voxelize(pts, dyn, [1.0, 1.0, 1.0], [0, 0, 0, 4, 4, 2])
    assert dyn.tolist() == [[0, 0, 0], [3, 0, 0], [0, 0, 0], [-1, -1, -1], [0, 0, 0], [1, 1, 1]]


@pytest.mark.skipif(not HAS_MMDET3D, reason=NEEDS_MMDET3D)
def test_hard_voxelize_fallback_equals_mmcv_voxelization() -> None:
    """mmcv's deterministic hard voxelization (its CPU op) numbers voxels and fills them the same way; its
    coordinates are (iz, iy, ix)."""
    import torch
    from mmcv.ops import Voxelization

    from stridegen.pipeline.detect import mmdet3d_ops as ops

    g = torch.Generator().manual_seed(1)
    pts = torch.cat([torch.rand(5000, 3, generator=g) * 20 - 10, torch.rand(5000, 2, generator=g)], dim=1)
    size, rng, max_pts, max_vox = [0.5, 0.5, 0.4], [-8.0, -8.0, -3.0, 8.0, 8.0, 3.0], 5, 600
    ref_vox, ref_coors, ref_num = Voxelization(size, rng, max_pts, max_vox, deterministic=True).eval()(pts)
    voxels = torch.zeros(max_vox, max_pts, 5)
    coors = torch.zeros(max_vox, 3, dtype=torch.int32)
    num = torch.zeros(max_vox, dtype=torch.int32)
    n = ops.hard_voxelize(pts, voxels, coors, num, size, rng, max_pts, max_vox)
    assert n == ref_vox.shape[0] == max_vox
    torch.testing.assert_close(coors[:n].flip(1), ref_coors.int())
    torch.testing.assert_close(num[:n], ref_num.int())
    torch.testing.assert_close(voxels[:n], ref_vox)


def test_fallbacks_are_installed_only_where_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stridegen.pipeline.detect import mmdet3d_ops as ops

    for name in (ops.BEV_POOL_EXT, ops.VOXEL_LAYER):
        monkeypatch.delitem(sys.modules, name, raising=False)
        (tmp_path / ops.EXTENSION_DIRS[name]).mkdir(parents=True)
    (tmp_path / ops.EXTENSION_DIRS[ops.VOXEL_LAYER] / "voxel_layer.cpython-311-x86_64-linux-gnu.so").touch()
    assert ops.install_bevfusion_fallbacks(tmp_path) == [ops.BEV_POOL_EXT]
    module = sys.modules.pop(ops.BEV_POOL_EXT)
    assert module.bev_pool_forward is ops.bev_pool_forward
    assert ops.install_bevfusion_fallbacks(tmp_path / "elsewhere") == []
    with pytest.raises(NotImplementedError, match="DynamicScatter"):
        ops.fallback_module(ops.VOXEL_LAYER).dynamic_point_to_voxel_forward()


# ------------------------------------------------------------------------------ a small CenterPoint (mmdet3d)
CENTERPOINT = "centerpoint/centerpoint_voxel0075_second_secfpn_head-dcn-circlenms_8xb4-cyclic-20e_nus-3d.py"
NUS_CLASSES = [
    "car",
    "truck",
    "construction_vehicle",
    "bus",
    "trailer",
    "barrier",
    "motorcycle",
    "bicycle",
    "pedestrian",
    "traffic_cone",
]  # mmdet3d's nuScenes class order (its configs' class_names)

# The built-in ``centerpoint`` config (voxel 0.075 m, DCN heads, circle NMS) over a 51.2 m square at 0.2 m voxels,
# with a quarter of the channels; the test pipeline is the original's with the new range (mmengine resolves the
# base file's ``test_pipeline`` before this file overrides ``point_cloud_range``, so it is restated).
TINY_CENTERPOINT = """
_base_ = [{base!r}]
point_cloud_range = [-25.6, -25.6, -5.0, 25.6, 25.6, 3.0]
voxel_size = [0.2, 0.2, 0.2]
model = dict(
    data_preprocessor=dict(
        voxel_layer=dict(voxel_size=voxel_size, point_cloud_range=point_cloud_range, max_voxels=(30000, 40000))),
    pts_middle_encoder=dict(
        sparse_shape=[41, 256, 256], base_channels=4, output_channels=32,
        encoder_channels=((4, 4, 8), (8, 8, 16), (16, 16, 32), (32, 32))),
    pts_backbone=dict(in_channels=64, out_channels=[16, 32], layer_nums=[1, 1]),
    pts_neck=dict(in_channels=[16, 32], out_channels=[32, 32]),
    pts_bbox_head=dict(
        in_channels=64, share_conv_channel=16,
        separate_head=dict(dcn_config=dict(in_channels=16, out_channels=16, groups=4), head_conv=16),
        bbox_coder=dict(pc_range=point_cloud_range[:2], voxel_size=voxel_size[:2], score_threshold=0.0)),
    train_cfg=dict(pts=dict(grid_size=[256, 256, 40], voxel_size=voxel_size, point_cloud_range=point_cloud_range)),
    test_cfg=dict(pts=dict(pc_range=point_cloud_range[:2], voxel_size=voxel_size[:2], score_threshold=0.0)))
test_pipeline = [
    dict(type='LoadPointsFromFile', coord_type='LIDAR', load_dim=5, use_dim=5),
    dict(type='LoadPointsFromMultiSweeps', sweeps_num=9, use_dim=[0, 1, 2, 3, 4], pad_empty_sweeps=True,
         remove_close=True),
    dict(type='MultiScaleFlipAug3D', img_scale=(1333, 800), pts_scale_ratio=1, flip=False, transforms=[
        dict(type='GlobalRotScaleTrans', rot_range=[0, 0], scale_ratio_range=[1., 1.], translation_std=[0, 0, 0]),
        dict(type='RandomFlip3D'),
        dict(type='PointsRangeFilter', point_cloud_range=point_cloud_range)]),
    dict(type='Pack3DDetInputs', keys=['points'])]
test_dataloader = dict(dataset=dict(pipeline=test_pipeline))
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
"""


def _package_config(rel: str) -> Path:
    import mmdet3d

    return Path(mmdet3d.__file__).parent / ".mim" / "configs" / rel


def _save_random_model(config: Path, checkpoint: Path, seed: int = 0) -> None:
    """Build the config's model with mmdet3d's builder, random weights (BatchNorm statistics too), and save it as
    mmengine's runner does: {"meta": {"dataset_meta": ...}, "state_dict": ...}."""
    import torch
    from mmdet3d.registry import MODELS
    from mmengine.config import Config
    from mmengine.registry import init_default_scope

    init_default_scope("mmdet3d")
    cfg = Config.fromfile(str(config))
    torch.manual_seed(seed)
    model = MODELS.build(cfg.model)
    g = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.running_mean.copy_(torch.randn(module.running_mean.shape, generator=g) * 0.1)
            module.running_var.copy_(torch.rand(module.running_var.shape, generator=g) + 0.5)
    torch.save(
        {"meta": {"dataset_meta": {"classes": list(cfg.class_names)}}, "state_dict": model.state_dict()}, checkpoint
    )


@pytest.fixture(scope="module")
def tiny_centerpoint(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if not HAS_MMDET3D:
        pytest.skip(NEEDS_MMDET3D)
    folder = tmp_path_factory.mktemp("centerpoint")
    config = folder / "tiny_centerpoint.py"
    config.write_text(TINY_CENTERPOINT.format(base=str(_package_config(CENTERPOINT))))
    checkpoint = folder / "tiny_centerpoint.pth"
    _save_random_model(config, checkpoint)
    return config, checkpoint


def _mmdet3d_sweep_points(frame: Frame, config: Path, mode: str) -> np.ndarray:
    """mmdet3d's own LoadPointsFromFile + LoadPointsFromMultiSweeps (built from ``config``'s test pipeline) on the
    log's files, described as mmdet3d 1.x's nuScenes infos do (timestamps in seconds; each sweep's
    ``lidar2sensor``). ``mode="mmdet3d"``: the infos' [R^T | -R^T t] of sensor2lidar (R, t); ``"exact"``: the
    matrix whose use in LoadPointsFromMultiSweeps (p R^T - m[:3, 3]) gives R p + t, i.e. [R^T | -t]."""
    from mmdet3d.registry import TRANSFORMS
    from mmengine.config import Config
    from mmengine.registry import init_default_scope

    init_default_scope("mmdet3d")
    pipeline = Config.fromfile(str(config)).test_dataloader.dataset.pipeline
    steps = [TRANSFORMS.build(t) for t in pipeline if t["type"] in ("LoadPointsFromFile", "LoadPointsFromMultiSweeps")]
    sweeps = frame.lidar_sweeps(10)
    key = sweeps[0][1]
    infos = []
    for _, sample in sweeps[1:]:
        s2l = invert_transform(key.T_global_from_sensor) @ sample.T_global_from_sensor  # obtain_sensor2top
        r, t = s2l[:3, :3], s2l[:3, 3]
        m = np.eye(4)
        m[:3, :3] = r.T
        m[:3, 3] = -(r.T @ t) if mode == "mmdet3d" else -t
        infos.append(
            {
                "lidar_points": {"lidar_path": str(sample.path), "lidar2sensor": m.tolist()},
                "timestamp": sample.timestamp_us / 1e6,
            }
        )
    results: dict[str, Any] = {
        "lidar_points": {"lidar_path": str(key.path)},
        "timestamp": key.timestamp_us / 1e6,
        "lidar_sweeps": infos,
    }
    for step in steps:
        results = step(results)
    return results["points"].tensor.numpy()


@pytest.mark.slow  # builds a model or reads a multi-sweep log: over 5 s (make test-fast leaves it out)
@pytest.mark.parametrize("mode", ["exact", "mmdet3d"])
def test_points_equal_mmdet3d_multi_sweep_loading(
    tiny_centerpoint: tuple[Path, Path], frames: list[Frame], mode: str
) -> None:
    config, _ = tiny_centerpoint
    spec = mi.points_spec(mm.config_test_pipeline(mm.load_config(config)))
    assert spec.sweeps_num == 9 and spec.remove_close
    for frame in frames[:3]:
        ours = mi.multi_sweep_points(frame.lidar_sweeps(spec.sweeps_num + 1), spec, mode)
        ref = _mmdet3d_sweep_points(frame, config, mode)
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, rtol=0, atol=2e-5)


def _reference_boxes(config: Path, checkpoint: Path, points: np.ndarray, T_global_from_lidar: np.ndarray) -> dict:
    """mmdet3d.apis.init_model + inference_detector on ``points`` (the multi-sweep cloud: the config's
    LoadPointsFromMultiSweeps step is dropped, as it would re-pad an array input), boxes to the global frame."""
    from mmdet3d.apis import inference_detector, init_model
    from mmengine.config import Config

    cfg = Config.fromfile(str(config))
    for loader in (cfg.test_dataloader.dataset, cfg.val_dataloader.dataset):
        loader.pipeline = [t for t in loader.pipeline if t["type"] != "LoadPointsFromMultiSweeps"]
    model = init_model(cfg, str(checkpoint), device="cpu")
    result, _ = inference_detector(model, points)
    pred = result.pred_instances_3d
    boxes = pred.bboxes_3d
    center = boxes.gravity_center.numpy().astype(np.float64)
    r, t = T_global_from_lidar[:3, :3], T_global_from_lidar[:3, 3]
    vel = np.c_[boxes.tensor[:, 7:9].numpy(), np.zeros(len(center))]
    return {
        "center": center @ r.T + t,
        "size": boxes.dims.numpy(),
        "yaw": np.asarray(wrap_angle(boxes.yaw.numpy() + math.atan2(r[1, 0], r[0, 0]))),
        "velocity": vel @ r.T,
        "score": pred.scores_3d.numpy(),
        "label": np.array([model.dataset_meta["classes"][i] for i in pred.labels_3d.numpy()], dtype=object),
    }


def _by_score(boxes: Any) -> np.ndarray:
    return np.lexsort((boxes.center[:, 1], boxes.center[:, 0], -boxes.score))


def _by_place(boxes: Any) -> np.ndarray:
    c = np.round(boxes.center, 3)
    return np.lexsort((-boxes.score, c[:, 2], c[:, 1], c[:, 0]))


@pytest.mark.slow
def test_boxes_equal_mmdet3d_inference_api(tiny_centerpoint: tuple[Path, Path], frames: list[Frame]) -> None:
    config, checkpoint = tiny_centerpoint
    det = Mmdet3dDetector(model=str(config), checkpoint=str(checkpoint), score_threshold=0.0)
    assert det.loaded.classes == NUS_CLASSES
    for frame in frames[1:3]:
        ours = det.detect(frame)
        points, key = det.lidar_inputs(frame)
        ref = _reference_boxes(config, checkpoint, points, key.T_global_from_sensor)
        assert len(ours) == len(ref["score"]) > 0
        o = ours[_by_score(ours)]
        order = np.lexsort((ref["center"][:, 1], ref["center"][:, 0], -ref["score"]))
        np.testing.assert_allclose(o.score, ref["score"][order], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(o.center, ref["center"][order], rtol=0, atol=1e-4)
        np.testing.assert_allclose(o.size_lwh, ref["size"][order], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.cos(o.yaw - ref["yaw"][order]), 1.0, atol=1e-9)
        np.testing.assert_allclose(o.velocity, ref["velocity"][order], rtol=0, atol=1e-5)
        assert o.label.tolist() == ref["label"][order].tolist() == o.extras["model_label"].tolist()
        assert o.frame == "global"


@pytest.mark.slow
def test_detections_are_deterministic_and_batch_independent(
    tiny_centerpoint: tuple[Path, Path], frames: list[Frame]
) -> None:
    config, checkpoint = tiny_centerpoint
    one = Mmdet3dDetector(model=str(config), checkpoint=str(checkpoint), score_threshold=0.15)
    two = Mmdet3dDetector(model=str(config), checkpoint=str(checkpoint), score_threshold=0.15, batch_size=2)
    assert one.loaded is two.loaded  # one model per process
    first = [one.detect(f) for f in frames]
    again = [one.detect(f) for f in frames]
    batched = two.detect_batch(frames)
    for a, b, c in zip(first, again, batched, strict=True):
        np.testing.assert_array_equal(a.center, b.center)
        np.testing.assert_array_equal(a.score, b.score)
        assert (a.score >= 0.15).all()
        assert len(a) == len(c)
        a, c = a[_by_place(a)], c[_by_place(c)]  # near-equal scores may come out in another order in a batch
        np.testing.assert_allclose(a.center, c.center, atol=1e-4)
        np.testing.assert_allclose(a.score, c.score, atol=1e-5)


@pytest.mark.slow  # builds a model or reads a multi-sweep log: over 5 s (make test-fast leaves it out)
def test_class_map_applies_to_the_model_classes(tiny_centerpoint: tuple[Path, Path], frames: list[Frame]) -> None:
    config, checkpoint = tiny_centerpoint
    mapped = Mmdet3dDetector(
        model=str(config),
        checkpoint=str(checkpoint),
        score_threshold=0.0,
        class_map={"construction_vehicle": "truck", "barrier": "", "traffic_cone": ""},
    )
    boxes = mapped.detect(frames[1])
    assert len(boxes) > 0
    assert not {"barrier", "traffic_cone", "construction_vehicle"} & set(boxes.label.tolist())
    moved = boxes.extras["model_label"] == "construction_vehicle"
    assert (boxes.label[moved] == "truck").all()


@pytest.mark.slow
def test_validate_scores_the_backend(tiny_centerpoint: tuple[Path, Path], log_root: Path) -> None:
    """`stridegen validate --detector mmdet3d --option ...` runs the backend on every frame and prints the same
    figures as scoring its detections directly."""
    from typer.testing import CliRunner

    from stridegen.cli import app
    from stridegen.eval.validate.scoring import validate_log
    from stridegen.pipeline.detect import make_detector

    config, checkpoint = tiny_centerpoint
    options = {"model": str(config), "checkpoint": str(checkpoint), "score_threshold": 0.2}
    result = CliRunner().invoke(
        app,
        ["validate", "--log-root", str(log_root), "--detector", "mmdet3d"]
        + [arg for k, v in options.items() for arg in ("--option", f"{k}={v}")],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # the table title wraps at the table's width (long temporary paths)
    assert "mmdet3d on" in text and "(4 frames)" in text
    direct = validate_log(open_log(log_root), make_detector("mmdet3d", **options))
    printed = text.split("(4 frames)", 1)[1]
    assert f"{direct.detection['mAP']:.3f}" in printed and f"{direct.tracking['AMOTA']:.3f}" in printed
    assert f"NDS over all 10 classes: {direct.nds_all_classes:.3f}" in text


def test_wrong_checkpoint_and_config_errors(tiny_centerpoint: tuple[Path, Path], tmp_path: Path) -> None:
    import torch

    config, checkpoint = tiny_centerpoint
    other = tmp_path / "other.pth"
    state = torch.load(checkpoint, weights_only=False)
    state["state_dict"] = {k: v for k, v in state["state_dict"].items() if "pts_backbone" not in k}
    state["state_dict"]["pts_neck.extra.weight"] = torch.zeros(3)
    torch.save(state, other)
    with pytest.raises(ModelCheckpointError, match=r"does not fit the model of .*missing keys.*unexpected keys"):
        Mmdet3dDetector(model=str(config), checkpoint=str(other))
    reshaped = tmp_path / "reshaped.pth"
    state = torch.load(checkpoint, weights_only=False)
    name = next(k for k in state["state_dict"] if k.startswith("pts_neck") and k.endswith("weight"))
    state["state_dict"][name] = torch.zeros(*state["state_dict"][name].shape[:-1], 7)
    torch.save(state, reshaped)
    with pytest.raises(ModelCheckpointError, match=rf"1 keys of another shape \(e\.g\. size mismatch for {name}"):
        Mmdet3dDetector(model=str(config), checkpoint=str(reshaped))
    with pytest.raises(ModelCheckpointError, match="does not exist"):
        Mmdet3dDetector(model=str(config), checkpoint=str(tmp_path / "none.pth"))
    broken = tmp_path / "broken.py"
    broken.write_text("model = dict(type='CenterPoint'\n")
    with pytest.raises(ConfigError, match="not a loadable mmdet3d config"):
        Mmdet3dDetector(model=str(broken), checkpoint=str(checkpoint))
    unknown = tmp_path / "unknown.py"
    unknown.write_text(f"_base_ = [{str(config)!r}]\nmodel = dict(type='NoSuchDetector')\n")
    with pytest.raises(ConfigError, match=r"could not build the model.*NoSuchDetector"):
        Mmdet3dDetector(model=str(unknown), checkpoint=str(checkpoint))
    with pytest.raises(ConfigError, match="no CUDA device"):
        Mmdet3dDetector(model=str(config), checkpoint=str(checkpoint), device="cuda")


@pytest.mark.slow  # builds a model or reads a multi-sweep log: over 5 s (make test-fast leaves it out)
def test_a_log_without_sweeps_is_refused(tiny_centerpoint: tuple[Path, Path], tmp_path: Path) -> None:
    config, checkpoint = tiny_centerpoint
    root = tmp_path / "nosweeps"
    generate_dataset(root, scenes=1, seconds=1.0, seed=3, width=160, height=90, sweeps=False, progress=False)
    frame = open_log(root).scenes()[0].frames[1]
    det = Mmdet3dDetector(model=str(config), checkpoint=str(checkpoint))
    with pytest.raises(MissingSweepsError, match="require_sweeps=false"):
        det.detect(frame)
    lenient = Mmdet3dDetector(model=str(config), checkpoint=str(checkpoint), require_sweeps=False)
    assert lenient.detect(frame).frame == "global"


def test_cpu_seconds_per_frame_of_the_small_model(tiny_centerpoint: tuple[Path, Path], frames: list[Frame]) -> None:
    config, checkpoint = tiny_centerpoint
    det = Mmdet3dDetector(model=str(config), checkpoint=str(checkpoint))
    det.detect(frames[1])
    start = time.process_time()
    det.detect(frames[2])
    assert time.process_time() - start < 60.0  # benchmarks/bench_mmdet3d.py measures the full-size models


# ------------------------------------------------------------------------- a small BEVFusion (needs a checkout)
BEVFUSION = "projects/BEVFusion/configs/bevfusion_lidar-cam_voxel0075_second_secfpn_8xb4-cyclic-20e_nus-3d.py"
CHECKOUT = os.environ.get(mm.REPO_ENV, "")
NEEDS_CHECKOUT = (
    f"needs the mmdet3d extra and ${mm.REPO_ENV} = an open-mmlab/mmdetection3d v1.4.0 checkout (BEVFusion is in its "
    "projects/, not in the pip package)"
)

# BEVFusion (LiDAR + cameras) over a 51.2 m square at 0.2 m voxels, a 1-block Swin of width 24 on 128 x 352 images,
# a 0.8 m camera BEV grid pooled to the LiDAR's 32 x 32, a quarter of the channels and 50 proposals. The Swin's
# pretrained init_cfg (a URL) is dropped. ImageAug3D scales the 320 x 180 test images by 1.1 and crops 128 x 352.
TINY_BEVFUSION = """
_base_ = [{base!r}]
point_cloud_range = [-25.6, -25.6, -5.0, 25.6, 25.6, 3.0]
voxel_size = [0.2, 0.2, 0.2]
model = dict(
    data_preprocessor=dict(voxelize_cfg=dict(
        point_cloud_range=point_cloud_range, voxel_size=voxel_size, max_voxels=[30000, 40000])),
    pts_middle_encoder=dict(sparse_shape=[256, 256, 41], base_channels=4, output_channels=32,
                            encoder_channels=((4, 4, 8), (8, 8, 16), (16, 16, 32), (32, 32))),
    img_backbone=dict(embed_dims=24, depths=[1, 1, 1, 1], num_heads=[1, 2, 4, 8], init_cfg=None),
    img_neck=dict(in_channels=[48, 96, 192], out_channels=32),
    view_transform=dict(in_channels=32, out_channels=16, image_size=[128, 352], feature_size=[16, 44],
                        xbound=[-25.6, 25.6, 0.8], ybound=[-25.6, 25.6, 0.8], dbound=[1.0, 30.0, 1.0]),
    fusion_layer=dict(in_channels=[16, 64], out_channels=64),
    pts_backbone=dict(in_channels=64, out_channels=[16, 32], layer_nums=[1, 1]),
    pts_neck=dict(in_channels=[16, 32], out_channels=[32, 32]),
    bbox_head=dict(
        in_channels=64, hidden_channel=32, num_proposals=50,
        decoder_layer=dict(self_attn_cfg=dict(embed_dims=32, num_heads=2),
                           cross_attn_cfg=dict(embed_dims=32, num_heads=2),
                           ffn_cfg=dict(embed_dims=32, feedforward_channels=64),
                           pos_encoding_cfg=dict(input_channel=2, num_pos_feats=32)),
        train_cfg=dict(point_cloud_range=point_cloud_range, grid_size=[256, 256, 41], voxel_size=voxel_size),
        test_cfg=dict(grid_size=[256, 256, 41], voxel_size=voxel_size[:2], pc_range=point_cloud_range[:2]),
        bbox_coder=dict(pc_range=point_cloud_range[:2], voxel_size=voxel_size[:2],
                        post_center_range=[-30.0, -30.0, -10.0, 30.0, 30.0, 10.0])))
test_pipeline = [
    dict(type='BEVLoadMultiViewImageFromFiles', to_float32=True, color_type='color'),
    dict(type='LoadPointsFromFile', coord_type='LIDAR', load_dim=5, use_dim=5),
    dict(type='LoadPointsFromMultiSweeps', sweeps_num=9, load_dim=5, use_dim=5, pad_empty_sweeps=True,
         remove_close=True),
    dict(type='ImageAug3D', final_dim=[128, 352], resize_lim=[1.1, 1.1], bot_pct_lim=[0.0, 0.0], rot_lim=[0.0, 0.0],
         rand_flip=False, is_train=False),
    dict(type='PointsRangeFilter', point_cloud_range=point_cloud_range),
    dict(type='Pack3DDetInputs', keys=['img', 'points', 'gt_bboxes_3d', 'gt_labels_3d'],
         meta_keys=['cam2img', 'ori_cam2img', 'lidar2cam', 'lidar2img', 'cam2lidar', 'ori_lidar2img',
                    'img_aug_matrix', 'box_type_3d', 'sample_idx', 'lidar_path', 'img_path', 'num_pts_feats',
                    'num_views'])]
test_dataloader = dict(dataset=dict(pipeline=test_pipeline))
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
"""


@pytest.fixture(scope="module")
def tiny_bevfusion(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if not (HAS_MMDET3D and CHECKOUT and (Path(CHECKOUT) / BEVFUSION).is_file()):
        pytest.skip(NEEDS_CHECKOUT)
    mm.prepare_repo(Path(CHECKOUT).resolve())
    folder = tmp_path_factory.mktemp("bevfusion")
    config = folder / "tiny_bevfusion.py"
    config.write_text(TINY_BEVFUSION.format(base=str(Path(CHECKOUT) / BEVFUSION)))
    checkpoint = folder / "tiny_bevfusion.pth"
    _save_random_model(config, checkpoint)
    return config, checkpoint


def test_bevfusion_boxes_equal_the_projects_own_pipeline(
    tiny_bevfusion: tuple[Path, Path], frames: list[Frame]
) -> None:
    """Reference: ``init_model`` and the config's own test pipeline with the project's
    ``BEVLoadMultiViewImageFromFiles`` reading the camera files (the nuScenes-info fields ``img_path``, ``cam2img``,
    ``lidar2cam``); the points are the same multi-sweep cloud (``LoadPointsFromDict``, as inference_detector)."""
    import torch
    from mmdet3d.apis import init_model
    from mmengine.config import Config
    from mmengine.dataset import Compose, pseudo_collate

    config, checkpoint = tiny_bevfusion
    det = Mmdet3dDetector(model=str(config), checkpoint=str(checkpoint), score_threshold=0.0)
    assert det.loaded.images is not None
    cfg = Config.fromfile(str(config))
    steps = [t for t in cfg.test_dataloader.dataset.pipeline if t["type"] != "LoadPointsFromMultiSweeps"]
    steps = [dict(t, type="LoadPointsFromDict") if t["type"] == "LoadPointsFromFile" else t for t in steps]
    model = init_model(cfg, str(checkpoint), device="cpu")
    pipeline = Compose(steps)
    frame = frames[2]
    points, key = det.lidar_inputs(frame)
    images = {
        cam["channel"]: {
            "img_path": str(frame.sensors[cam["channel"]].path),
            "cam2img": cam["cam2img"].tolist(),
            "lidar2cam": cam["lidar2cam"].tolist(),
        }
        for cam in mi.camera_matrices(frame, key, mi.NUSCENES_CAMERAS)
    }
    data = pipeline(
        {
            "points": points,
            "images": images,
            "timestamp": 1,
            "box_type_3d": det.loaded.box_type_3d,
            "box_mode_3d": det.loaded.box_mode_3d,
            "axis_align_matrix": np.eye(4),
        }
    )
    with torch.no_grad():
        pred = model.test_step(pseudo_collate([data]))[0].pred_instances_3d
    ref = mb.lidar_boxes_to_global(
        pred.bboxes_3d.tensor.numpy(),
        pred.scores_3d.numpy(),
        np.array([NUS_CLASSES[i] for i in pred.labels_3d.numpy()], dtype=object),
        key.T_global_from_sensor,
    )
    ours = det.detect(frame)
    assert len(ours) == len(ref) > 0
    from stridegen.pipeline.detect import mmdet3d_ops as ops

    for name in (ops.BEV_POOL_EXT, ops.VOXEL_LAYER):  # an unbuilt checkout runs on the PyTorch stand-ins
        assert getattr(sys.modules[name], "__stridegen_fallback__", False) != ops._compiled(Path(CHECKOUT), name)
    o, r = ours[_by_score(ours)], ref[_by_score(ref)]
    np.testing.assert_allclose(o.score, r.score, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o.center, r.center, atol=1e-4)
    np.testing.assert_allclose(o.size_lwh, r.size_lwh, rtol=1e-5)
    assert o.label.tolist() == r.label.tolist()
