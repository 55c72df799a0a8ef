"""Pure-PyTorch stand-ins for BEVFusion's compiled ops, and the in-memory multi-view image loader of the ``mmdet3d``
detector. torch / mmcv / mmdet3d are imported inside the functions (the ``mmdet3d`` extra).

BEVFusion (open-mmlab/mmdetection3d v1.4.0, projects/BEVFusion) compiles two extensions that exist only as CUDA
code or need a build step: ``bevfusion/ops/bev_pool/bev_pool_ext`` (``bev_pool_forward`` / ``bev_pool_backward``,
CUDA only) and ``bevfusion/ops/voxel/voxel_layer`` (``hard_voxelize`` / ``dynamic_voxelize``). Where a checkout has
not built them, ``install_bevfusion_fallbacks`` puts modules with the same functions, written here in PyTorch,
under those import names, so the project's Python code runs unchanged on CPU (and on GPU, more slowly). What the
functions compute was learnt from the project's kernels (bev_pool_cuda.cu, voxelization_cpu.cpp /
voxelization_cuda.cu); the code is ours:

- ``bev_pool_forward(x [N, C], geom [N, 4] (ix, iy, iz, batch), interval_lengths, interval_starts, B, D, H, W)``
  -> [B, D, H, W, C]: out[b, iz, ix, iy] is the sum of the features of the points in that cell (the kernel sums each
  run of equal ranks, i.e. every point of one cell, since ``bev_pool`` sorts by a rank unique per cell);
- ``bev_pool_backward(grad [B, D, H, W, C], geom, ...)`` -> [N, C]: each point gets its cell's gradient;
- ``hard_voxelize(points, voxels, coors, num_points_per_voxel, voxel_size, coors_range, max_points, max_voxels,
  NDim=3, deterministic=True)`` -> number of voxels: a point's voxel is floor((p - range_min) / voxel_size) per
  axis (points outside the grid, grid = round((max - min) / size), are skipped); voxels are numbered in the order of
  their first point, at most ``max_voxels`` of them (later voxels are dropped); a voxel keeps its first
  ``max_points`` points in point order; ``coors`` are (ix, iy, iz) (NOT mmcv's (iz, iy, ix)); buffers are filled in
  place as the extension does;
- ``dynamic_voxelize(points, coors, voxel_size, coors_range, NDim=3)``: every point's (ix, iy, iz), -1 outside.
"""

from __future__ import annotations

import math
import sys
import types
from pathlib import Path
from typing import Any

BEV_POOL_EXT = "projects.BEVFusion.bevfusion.ops.bev_pool.bev_pool_ext"
VOXEL_LAYER = "projects.BEVFusion.bevfusion.ops.voxel.voxel_layer"
EXTENSION_DIRS = {
    BEV_POOL_EXT: Path("projects/BEVFusion/bevfusion/ops/bev_pool"),
    VOXEL_LAYER: Path("projects/BEVFusion/bevfusion/ops/voxel"),
}


# --------------------------------------------------------------------------------------------------- bev_pool
def _cell_index(geom: Any, B: int, D: int, H: int, W: int) -> Any:
    """Flat index of each point's cell in a [B, D, H, W] grid; geom columns (ix -> H, iy -> W, iz -> D, batch)."""
    g = geom.long()
    return ((g[:, 3] * D + g[:, 2]) * H + g[:, 0]) * W + g[:, 1]


def bev_pool_forward(
    x: Any, geom_feats: Any, interval_lengths: Any, interval_starts: Any, B: int, D: int, H: int, W: int
) -> Any:
    """Sum of point features per BEV cell, [B, D, H, W, C] (bev_pool_ext.bev_pool_forward)."""
    import torch

    out = torch.zeros((B * D * H * W, x.shape[1]), dtype=x.dtype, device=x.device)
    out.index_add_(0, _cell_index(geom_feats, B, D, H, W), x)
    return out.view(B, D, H, W, x.shape[1])


def bev_pool_backward(
    out_grad: Any, geom_feats: Any, interval_lengths: Any, interval_starts: Any, B: int, D: int, H: int, W: int
) -> Any:
    """Gradient of ``bev_pool_forward`` for its input features, [N, C] (bev_pool_ext.bev_pool_backward)."""
    flat = out_grad.reshape(B * D * H * W, out_grad.shape[-1])
    return flat[_cell_index(geom_feats, B, D, H, W)]


# ------------------------------------------------------------------------------------------------ voxelization
def _grid(voxel_size: Any, coors_range: Any, ndim: int) -> list[int]:
    """Cells per axis: C's round() of (max - min) / size, i.e. half away from zero (not Python's half to even)."""
    sizes = [(float(coors_range[ndim + i]) - float(coors_range[i])) / float(voxel_size[i]) for i in range(ndim)]
    return [math.floor(s + 0.5) for s in sizes]


def voxel_coordinates(points: Any, voxel_size: Any, coors_range: Any, ndim: int = 3) -> Any:
    """[N, ndim] int32 (ix, iy, iz) of every point, -1 in every column for points outside the grid."""
    import torch

    lo = torch.tensor([float(c) for c in coors_range[:ndim]], dtype=points.dtype, device=points.device)
    size = torch.tensor([float(s) for s in voxel_size[:ndim]], dtype=points.dtype, device=points.device)
    grid = torch.tensor(_grid(voxel_size, coors_range, ndim), device=points.device)
    c = torch.floor((points[:, :ndim] - lo) / size).to(torch.int64)
    inside = ((c >= 0) & (c < grid)).all(dim=1)
    c[~inside] = -1
    return c.to(torch.int32)


def dynamic_voxelize(points: Any, coors: Any, voxel_size: Any, coors_range: Any, NDim: int = 3) -> None:
    """Every point's voxel coordinates into ``coors`` (voxel_layer.dynamic_voxelize)."""
    coors.copy_(voxel_coordinates(points, voxel_size, coors_range, NDim))


def hard_voxelize(
    points: Any,
    voxels: Any,
    coors: Any,
    num_points_per_voxel: Any,
    voxel_size: Any,
    coors_range: Any,
    max_points: int,
    max_voxels: int,
    NDim: int = 3,
    deterministic: bool = True,
) -> int:
    """Voxels in order of their first point (voxel_layer.hard_voxelize); returns how many were made."""
    import torch

    c = voxel_coordinates(points, voxel_size, coors_range, NDim).to(torch.int64)
    valid = torch.nonzero(c[:, 0] >= 0).squeeze(1)  # point indices, ascending
    if valid.numel() == 0:
        return 0
    grid = _grid(voxel_size, coors_range, NDim)
    cv = c[valid]
    key = (cv[:, 0] * grid[1] + cv[:, 1]) * grid[2] + cv[:, 2]
    uniq, inverse = torch.unique(key, return_inverse=True)
    order = torch.arange(valid.numel(), device=points.device)
    first = torch.full((uniq.numel(),), valid.numel(), dtype=torch.int64, device=points.device)
    first.scatter_reduce_(0, inverse, order, reduce="amin")
    rank = torch.empty_like(first)
    rank[torch.argsort(first)] = torch.arange(uniq.numel(), device=points.device)
    voxel_of_point = rank[inverse]  # voxel number of each valid point, numbered by first appearance
    n_voxels = min(uniq.numel(), max_voxels) if max_voxels != -1 else uniq.numel()
    kept = voxel_of_point < n_voxels
    vp, pidx = voxel_of_point[kept], valid[kept]
    # Slot of each point in its voxel: its position among the voxel's points, in point order (stable sort).
    perm = torch.sort(vp, stable=True).indices
    vp_sorted, pidx_sorted = vp[perm], pidx[perm]
    counts = torch.bincount(vp_sorted, minlength=n_voxels)
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(vp_sorted.numel(), device=points.device) - starts[vp_sorted]
    fits = slot < max_points if max_points != -1 else torch.ones_like(slot, dtype=torch.bool)
    voxels[vp_sorted[fits], slot[fits]] = points[pidx_sorted[fits]].to(voxels.dtype)
    first_point = valid[torch.sort(first).values[:n_voxels]]  # each kept voxel's first point, in voxel order
    coors[:n_voxels] = c[first_point].to(coors.dtype)
    cap = counts if max_points == -1 else counts.clamp(max=max_points)
    num_points_per_voxel[:n_voxels] = cap.to(num_points_per_voxel.dtype)
    return int(n_voxels)


def _unsupported(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError(
        "BEVFusion's dynamic_point_to_voxel (DynamicScatter) has no CPU fallback in stridegen: build the project's "
        "extension (python projects/BEVFusion/setup.py develop) or use a hard-voxelization config"
    )


# ------------------------------------------------------------------------------------------------- installing
def _compiled(root: Path, module: str) -> bool:
    folder = root / EXTENSION_DIRS[module]
    stem = module.rsplit(".", 1)[1]
    return any(folder.glob(f"{stem}*.so")) or any(folder.glob(f"{stem}*.pyd"))


def fallback_module(name: str) -> types.ModuleType:
    """A module object with the functions of the compiled extension ``name`` (BEV_POOL_EXT or VOXEL_LAYER)."""
    module = types.ModuleType(name, "stridegen's pure-PyTorch stand-in for a BEVFusion extension")
    if name == BEV_POOL_EXT:
        module.bev_pool_forward = bev_pool_forward  # type: ignore[attr-defined]
        module.bev_pool_backward = bev_pool_backward  # type: ignore[attr-defined]
    elif name == VOXEL_LAYER:
        module.hard_voxelize = hard_voxelize  # type: ignore[attr-defined]
        module.dynamic_voxelize = dynamic_voxelize  # type: ignore[attr-defined]
        module.dynamic_point_to_voxel_forward = _unsupported  # type: ignore[attr-defined]
        module.dynamic_point_to_voxel_backward = _unsupported  # type: ignore[attr-defined]
    else:
        raise KeyError(name)
    module.__stridegen_fallback__ = True  # type: ignore[attr-defined]
    return module


def install_bevfusion_fallbacks(root: Path) -> list[str]:
    """Register the stand-ins for the extensions that ``root`` (an mmdetection3d checkout) has not built; returns
    the names installed. Must run before ``projects.BEVFusion.bevfusion`` is imported."""
    if not (root / "projects" / "BEVFusion").is_dir():
        return []
    installed = []
    for name in (BEV_POOL_EXT, VOXEL_LAYER):
        if name in sys.modules or _compiled(root, name):
            continue
        sys.modules[name] = fallback_module(name)
        installed.append(name)
    return installed


# ------------------------------------------------------------------------------------------------ image loader
def register_image_transform() -> None:
    """Register ``StrideGenMultiViewImages`` in mmdet3d's TRANSFORMS (once)."""
    from mmdet3d.registry import TRANSFORMS

    if TRANSFORMS.get("StrideGenMultiViewImages") is None:
        TRANSFORMS.register_module(name="StrideGenMultiViewImages", module=_image_transform_class())


def _image_transform_class() -> type:
    import mmcv
    import numpy as np
    from mmcv.transforms import BaseTransform

    class StrideGenMultiViewImages(BaseTransform):
        """The outputs of BEVFusion's ``BEVLoadMultiViewImageFromFiles`` (one frame, no reference frames) from
        ``results["stridegen_cameras"]``: per camera its encoded image bytes, ``cam2img`` 3x3 and ``lidar2cam``."""

        def __init__(self, to_float32: bool = False, color_type: str = "unchanged", num_views: int = 5) -> None:
            self.to_float32 = to_float32
            self.color_type = color_type
            self.num_views = num_views

        def transform(self, results: dict) -> dict:
            cams = results.pop("stridegen_cameras")
            cam2img, lidar2cam, cam2lidar, lidar2img = [], [], [], []
            for cam in cams:
                l2c = np.asarray(cam["lidar2cam"], dtype=np.float32)
                c2l = np.eye(4)
                c2l[:3, :3] = l2c[:3, :3].T
                c2l[:3, 3] = -(l2c[:3, :3].T @ l2c[:3, 3])
                k = np.eye(4, dtype=np.float32)
                k[:3, :3] = np.asarray(cam["cam2img"], dtype=np.float32)
                lidar2cam.append(np.asarray(cam["lidar2cam"], dtype=np.float64))
                cam2lidar.append(c2l)
                cam2img.append(k)
                lidar2img.append(k @ l2c)
            images = [
                mmcv.imfrombytes(cam["image_bytes"], flag=self.color_type, backend="pillow", channel_order="rgb")
                for cam in cams
            ]
            shapes = np.stack([im.shape for im in images])
            if not (shapes == shapes.max(axis=0)).all():
                images = [mmcv.impad(im, shape=tuple(shapes.max(axis=0)[:2]), pad_val=0) for im in images]
            img = np.stack(images, axis=-1)
            if self.to_float32:
                img = img.astype(np.float32)
            results["img_path"] = [cam["img_path"] for cam in cams]
            results["filename"] = list(results["img_path"])
            results["cam2img"] = np.stack(cam2img)
            results["ori_cam2img"] = np.stack(cam2img).copy()
            results["lidar2cam"] = np.stack(lidar2cam)
            results["cam2lidar"] = np.stack(cam2lidar)
            results["lidar2img"] = np.stack(lidar2img)
            results["img"] = [img[..., i] for i in range(img.shape[-1])]
            results["img_shape"] = img.shape[:2]
            results["ori_shape"] = img.shape[:2]
            results["pad_shape"] = img.shape[:2]
            results["scale_factor"] = 1.0
            channels = 1 if img.ndim < 4 else img.shape[2]
            results["img_norm_cfg"] = {
                "mean": np.zeros(channels, dtype=np.float32),
                "std": np.ones(channels, dtype=np.float32),
                "to_rgb": False,
            }
            results["num_views"] = self.num_views
            results["num_ref_frames"] = -1
            return results

    return StrideGenMultiViewImages
