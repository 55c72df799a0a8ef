"""The ``sam2`` segmenter on a randomly initialised SAM 2.1 tiny model (sam2's own builder and config, CPU).

No official weights are used (none can be downloaded here): the model is built by ``build_sam2`` with
``torch.manual_seed(0)`` and saved as an official checkpoint is laid out (``{"model": state_dict}``). The known answer
is SAM 2's own ``SAM2ImagePredictor`` (set_image + predict with a batch of boxes) run on the in-memory model: the
backend, loaded from the checkpoint, must give the same masks bit for bit and the same predicted IoU.

``SAM2ImagePredictor`` imports torchvision, which does not import on the CPU build of torch (docs/sam2.md). When
it is not importable the predictor is given a stand-in ``torchvision.transforms`` holding the three transforms it
uses, written from torchvision's definitions: ToTensor (HWC uint8 -> CHW float / 255), Resize on a tensor
(``torch.nn.functional.interpolate(mode="bilinear", align_corners=False, antialias=True)``, torchvision
transforms/_functional_tensor.py ``resize``) and Normalize (``(x - mean) / std``). The stand-in is removed again.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from stridegen.core.errors import ConfigError, GeometryError, MissingExtraError, StrideGenError
from stridegen.pipeline.segment.base import SegmentRequest
from stridegen.pipeline.segment.sam2_backend import (
    SAM2P1_BASE_URL,
    CheckpointError,
    MissingCheckpointError,
    Sam2NotInstalledError,
    Sam2Segmenter,
)

TINY = "configs/sam2.1/sam2.1_hiera_t.yaml"
SMALL = "configs/sam2.1/sam2.1_hiera_s.yaml"
# A camera-like size: non-square (a swapped (H, W) would show) and wider than SAM 2's 1024 input, so that the
# resize downsamples in x and its antialiasing matters (upsampling is the same with or without it).
H, W = 720, 1280
BOXES = np.array([[80.0, 160.0, 480.0, 600.0], [560.0, 40.0, 1200.0, 400.0], [0.0, 0.0, 1279.0, 719.0]])
NEEDS_SAM2 = "needs torch and sam2: `make setup` installs them (EXTRAS=dev,sam2; docs/sam2.md)"
# SAM2ImagePredictor's transforms call torch.jit.script, which torch 2.13 marks deprecated (sam2's code, not ours).
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def _request(n: int = 3) -> SegmentRequest:
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    image[240:560, 320:880] = (200, 40, 40)  # a flat block, so that the image is not pure noise
    return SegmentRequest(image_rgb=image, box_xyxy=BOXES[:n].copy(), hull_uv=[], depth_m=np.arange(1.0, n + 1.0))


# ---------------------------------------------------------------------------------------------------------------
# Without the extra: the error names the extra and the recipe (these tests need neither torch nor sam2).


@pytest.mark.parametrize(
    ("blocked", "named"), [(("torch",), "torch"), (("sam2", "sam2.build_sam"), "sam2"), (("hydra",), "hydra")]
)
def test_missing_install_gives_one_line_recipe(monkeypatch, blocked, named):
    if named != "torch" and importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed, so torch is what the error names: the torch case covers this")
    for module in blocked:
        monkeypatch.setitem(sys.modules, module, None)  # "import of X halted": what a missing package raises
    if named == "hydra":  # hydra is imported by sam2's own modules: make them import again
        monkeypatch.delitem(sys.modules, "sam2.build_sam", raising=False)
        monkeypatch.delitem(sys.modules, "sam2", raising=False)
    with pytest.raises(MissingExtraError) as info:
        Sam2Segmenter(checkpoint="/nonexistent/sam2.1_hiera_large.pt")
    err = info.value
    assert isinstance(err, Sam2NotInstalledError) and isinstance(err, ImportError)
    assert err.extra == "sam2" and err.module == named
    message = str(err)
    assert "\n" not in message
    assert f"'{named}' is not installed" in message
    assert "pip install torch==2.13.0 'stridegen[sam2]'" in message
    assert "SAM2_BUILD_CUDA=0 pip install --no-deps --no-build-isolation sam2==1.1.0" in message


# ---------------------------------------------------------------------------------------------------------------
# With torch and sam2.


def _torchvision_stand_in(torch) -> dict[str, types.ModuleType]:
    """torchvision.transforms' ToTensor / Resize / Normalize for tensors (see the module docstring)."""

    class Resize(torch.nn.Module):
        def __init__(self, size):
            super().__init__()
            self.size = [int(size[0]), int(size[1])]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.interpolate(
                x[None], size=self.size, mode="bilinear", align_corners=False, antialias=True
            )[0]

    class Normalize(torch.nn.Module):
        def __init__(self, mean, std):
            super().__init__()
            self.mean = [float(m) for m in mean]
            self.std = [float(s) for s in std]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device).view(-1, 1, 1)
            std = torch.tensor(self.std, dtype=x.dtype, device=x.device).view(-1, 1, 1)
            return (x - mean) / std

    class ToTensor:
        def __call__(self, pic: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(pic.transpose((2, 0, 1))).contiguous().to(torch.get_default_dtype()).div(255)

    transforms = types.ModuleType("torchvision.transforms")
    transforms.Resize, transforms.Normalize, transforms.ToTensor = Resize, Normalize, ToTensor
    package = types.ModuleType("torchvision")
    package.transforms = transforms
    return {"torchvision": package, "torchvision.transforms": transforms}


def _official_predictions(torch, model, request: SegmentRequest) -> dict[bool, tuple[np.ndarray, np.ndarray]]:
    """SAM2ImagePredictor's masks [N, C, H, W] and IoU [N, C] for the request's boxes, single and multimask."""
    try:
        importlib.import_module("torchvision.transforms")
        stand_in: dict[str, types.ModuleType] = {}
    except Exception:  # not installed, or the CUDA-linked PyPI build on CPU torch
        stand_in = _torchvision_stand_in(torch)
    fresh = ("sam2.sam2_image_predictor", "sam2.utils.transforms")
    with pytest.MonkeyPatch.context() as mp:
        for name in (*stand_in, *fresh):
            mp.delitem(sys.modules, name, raising=False)
        for name, module in stand_in.items():
            mp.setitem(sys.modules, name, module)
        predictor_module = importlib.import_module("sam2.sam2_image_predictor")
        predictor = predictor_module.SAM2ImagePredictor(model)
        predictor.set_image(request.image_rgb)
        out = {multi: predictor.predict(box=request.box_xyxy, multimask_output=multi)[:2] for multi in (False, True)}
        for name in fresh:  # never leave a module bound to the stand-in behind
            sys.modules.pop(name, None)
            parent, _, attr = name.rpartition(".")
            if hasattr(sys.modules.get(parent), attr):
                delattr(sys.modules[parent], attr)
    return out


@pytest.fixture(scope="module")
def sam2_torch():
    pytest.importorskip("sam2.build_sam", reason=NEEDS_SAM2)
    return pytest.importorskip("torch", reason=NEEDS_SAM2)


@pytest.fixture(scope="module")
def tiny(sam2_torch, tmp_path_factory):
    """A seeded random SAM 2.1 tiny model and its checkpoint file, laid out as the official ones."""
    from sam2.build_sam import build_sam2

    sam2_torch.manual_seed(0)
    model = build_sam2(TINY, ckpt_path=None, device="cpu")
    path = tmp_path_factory.mktemp("sam2") / "sam2.1_hiera_tiny.pt"
    sam2_torch.save({"model": model.state_dict()}, path)
    return types.SimpleNamespace(model=model, path=path)


@pytest.fixture(scope="module")
def official(sam2_torch, tiny):
    """SAM 2's own predictor on the in-memory model: {multimask: (masks [N, C, H, W], iou [N, C])}."""
    return _official_predictions(sam2_torch, tiny.model, _request())


@pytest.fixture(scope="module")
def segmenter(tiny):
    return Sam2Segmenter(model_config=TINY, checkpoint=tiny.path, device="cpu")


def _assert_well_formed(result, n: int) -> None:
    assert result.masks.shape == (n, H, W) and result.masks.dtype == bool
    assert result.quality.shape == (n,) and result.quality.dtype == np.float64
    assert np.isfinite(result.quality).all() and (result.quality >= 0).all() and (result.quality <= 1).all()


@pytest.mark.slow
def test_checkpoint_model_equals_official_predictor_and_is_deterministic(official, segmenter):
    request = _request()
    start = time.perf_counter()
    result = segmenter.segment(request)
    seconds = time.perf_counter() - start
    _assert_well_formed(result, 3)
    masks, iou = official[False]
    assert masks.shape == (3, 1, H, W)
    # the model reloaded from the checkpoint gives exactly what SAM 2's predictor gives on the in-memory model
    np.testing.assert_array_equal(result.masks, masks[:, 0].astype(bool))
    np.testing.assert_array_equal(result.quality, np.clip(iou[:, 0].astype(np.float64), 0.0, 1.0))
    assert len({float(q) for q in result.quality}) == 3  # three boxes, three different prompts
    # a second run (through the two-step API) gives the same, bit for bit
    embedding = segmenter.embed(request.image_rgb)
    assert (embedding.height, embedding.width) == (H, W)
    again = segmenter.predict(embedding, request.box_xyxy)
    np.testing.assert_array_equal(again.masks, result.masks)
    np.testing.assert_array_equal(again.quality, result.quality)
    # multimask: the decoder's three masks, of which the one with the highest predicted IoU is kept
    multi = segmenter.predict(embedding, request.box_xyxy, multimask=True)
    _assert_well_formed(multi, 3)
    masks3, iou3 = official[True]
    assert masks3.shape == (3, 3, H, W)
    best = iou3.argmax(axis=1)
    np.testing.assert_array_equal(multi.masks, masks3[np.arange(3), best].astype(bool))
    np.testing.assert_array_equal(multi.quality, np.clip(iou3[np.arange(3), best].astype(np.float64), 0.0, 1.0))
    # boxes in another order and a subset: the same embedding, rows follow the request order
    subset = segmenter.predict(embedding, request.box_xyxy[[2, 0]])
    _assert_well_formed(subset, 2)
    assert (subset.masks == result.masks[[2, 0]]).mean() > 0.999  # batch size may change float rounding
    np.testing.assert_allclose(subset.quality, result.quality[[2, 0]], atol=1e-5)
    print(f"sam2 tiny, CPU, 3 boxes on {W}x{H}: {seconds:.2f} s per image")


def test_from_model_wraps_a_built_model(tiny):
    segmenter = Sam2Segmenter.from_model(tiny.model, multimask=True)
    assert segmenter.multimask and segmenter.resolution == 1024 and segmenter.device.type == "cpu"
    assert segmenter.name == "sam2" and not segmenter.model.training


def test_empty_request_gives_no_masks(segmenter):
    request = _request()
    request.box_xyxy = np.zeros((0, 4))
    result = segmenter.segment(request)
    assert result.masks.shape == (0, H, W) and result.masks.dtype == bool
    assert result.quality.shape == (0,)


def test_bad_boxes_and_images_are_typed_errors(segmenter):
    request = _request()
    request.box_xyxy = request.box_xyxy.copy()
    request.box_xyxy[1, 2] = np.nan
    with pytest.raises(GeometryError, match="box_xyxy"):
        segmenter.segment(request)
    request = _request()
    request.image_rgb = request.image_rgb.astype(np.float32)
    with pytest.raises(GeometryError, match="uint8"):
        segmenter.segment(request)


def test_missing_checkpoint_names_the_path_and_the_download(sam2_torch, tmp_path):
    missing = tmp_path / "nowhere" / "sam2.1_hiera_large.pt"
    with pytest.raises(MissingCheckpointError) as info:
        Sam2Segmenter(checkpoint=missing, device="cpu")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, StrideGenError)
    assert info.value.path == str(missing)
    assert str(missing) in str(info.value)
    assert f"{SAM2P1_BASE_URL}/sam2.1_hiera_large.pt" in str(info.value)
    with pytest.raises(ConfigError, match="checkpoint is required"):
        Sam2Segmenter(checkpoint=None, device="cpu")


def _corrupt(kind: str, path: Path, torch) -> None:
    if kind == "garbage":
        path.write_bytes(b"this is not a torch checkpoint\n" * 10)
    elif kind == "truncated":
        torch.save({"model": {"weight": torch.arange(4096, dtype=torch.float32)}}, path)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "no_model_entry":
        torch.save({"state_dict": {}}, path)
    elif kind == "other_keys":
        torch.save({"model": {"weight": torch.zeros(3)}}, path)


@pytest.mark.parametrize("kind", ["garbage", "truncated", "no_model_entry", "other_keys"])
def test_corrupted_checkpoint_is_a_typed_error(sam2_torch, tmp_path, kind):
    path = tmp_path / "sam2.1_hiera_tiny.pt"
    _corrupt(kind, path, sam2_torch)
    with pytest.raises(CheckpointError) as info:
        Sam2Segmenter(model_config=TINY, checkpoint=path, device="cpu")
    assert not isinstance(info.value, MissingCheckpointError)
    assert info.value.path == str(path) and str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_checkpoint_of_another_model_size_is_a_typed_error(tiny):
    with pytest.raises(CheckpointError, match=re.escape(f"not a SAM 2 checkpoint for config {SMALL}")):
        Sam2Segmenter(model_config=SMALL, checkpoint=tiny.path, device="cpu")


def test_unknown_config_and_device_are_config_errors(sam2_torch, tmp_path):
    checkpoint = tmp_path / "sam2.1_hiera_tiny.pt"  # never read: the options are checked first
    with pytest.raises(ConfigError, match=re.escape("sam2.1_hiera_xl.yaml")):
        Sam2Segmenter(model_config="configs/sam2.1/sam2.1_hiera_xl.yaml", checkpoint=checkpoint, device="cpu")
    with pytest.raises(ConfigError, match="bad device"):
        Sam2Segmenter(model_config=TINY, checkpoint=checkpoint, device="tpu:banana")
    if not sam2_torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA device"):
            Sam2Segmenter(model_config=TINY, checkpoint=checkpoint, device="cuda:0")
