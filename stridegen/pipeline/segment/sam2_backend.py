"""``sam2``: the SAM 2 image model (Ravi et al., "SAM 2: Segment Anything in Images and Videos", 2024) prompted with
each object's projected 3D box.

Per image: one image embedding (Hiera image encoder + FPN neck), then ALL boxes of the image as one batch of box
prompts through SAM 2's prompt encoder and mask decoder. The mask is the decoder's mask logits upsampled (bilinear)
to the original image size and thresholded at logit ``mask_threshold`` (0); the quality is the decoder's predicted
IoU, clipped to [0, 1].

The network code is SAM 2's own (``sam2.build_sam.build_sam2`` builds the model from its hydra config and loads the
checkpoint); this module only reproduces the few lines of glue that ``sam2.sam2_image_predictor.SAM2ImagePredictor``
(``set_image`` / ``_prep_prompts`` / ``_predict``) wraps around it, because that module imports torchvision, whose
PyPI build is linked against CUDA torch and fails to import on the CPU build of torch (docs/sam2.md). The glue:

- preprocessing (``sam2.utils.transforms.SAM2Transforms``): RGB uint8 [H, W, 3] -> float [0, 1] (``ToTensor``),
  bilinear resize with antialiasing to ``model.image_size`` squared, aspect ratio NOT kept (``Resize``), then
  ``(x - mean) / std`` with the ImageNet mean/std below (``Normalize``);
- box prompts: pixel coordinates divided by the original (W, H) and multiplied by ``model.image_size``
  (``transform_boxes``), given to the prompt encoder as two corner points with labels 2 and 3;
- masks: low-resolution logits [N, 1, image_size / 4, image_size / 4] upsampled bilinearly (align_corners=False)
  straight to (H, W) (``postprocess_masks`` without hole filling) and compared with ``mask_threshold``.

Coordinates: image pixels, x right, y down, pixel centres at integer coordinates (``SegmentRequest``). SAM 2's
prompt encoder adds 0.5 to every coordinate ("shift to center of pixel"), i.e. it reads a coordinate as a pixel
index, the same convention, so boxes are passed unchanged.

Checkpoints: official SAM 2.1 checkpoints are ``{"model": state_dict}`` files listed in the sam2 repository's
``checkpoints/download_ckpts.sh`` (``SAM2p1_BASE_URL`` below). Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib
import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.cache_dir import expand_cache_path
from stridegen.core.errors import ConfigError, GeometryError, MissingExtraError, StrideGenError
from stridegen.pipeline.segment.base import SegmentRequest, SegmentResult

DEFAULT_CONFIG = "configs/sam2.1/sam2.1_hiera_l.yaml"
DEFAULT_CHECKPOINT = "$STRIDEGEN_CACHE/sam2/sam2.1_hiera_large.pt"  # core.cache_dir.expand_cache_path

# facebookresearch/sam2, checkpoints/download_ckpts.sh (SAM 2.1 release of 2024-09-28): SAM2p1_BASE_URL and the
# four checkpoint names; each goes with the config of the same size in sam2/configs/sam2.1/.
SAM2P1_BASE_URL = "https://dl.fbaipublicfiles.com/segment_anything_2/092824"
SAM2P1_CHECKPOINTS = {
    "sam2.1_hiera_tiny.pt": "configs/sam2.1/sam2.1_hiera_t.yaml",
    "sam2.1_hiera_small.pt": "configs/sam2.1/sam2.1_hiera_s.yaml",
    "sam2.1_hiera_base_plus.pt": "configs/sam2.1/sam2.1_hiera_b+.yaml",
    "sam2.1_hiera_large.pt": "configs/sam2.1/sam2.1_hiera_l.yaml",
}

# sam2/utils/transforms.py (SAM2Transforms): the ImageNet mean / std of RGB in [0, 1].
PIXEL_MEAN = (0.485, 0.456, 0.406)
PIXEL_STD = (0.229, 0.224, 0.225)
BOX_CORNER_LABELS = (2, 3)  # sam2_image_predictor.py: a box is two points labelled 2 (top-left), 3 (bottom-right)
UPSAMPLE_CHUNK = 16  # masks upsampled to full resolution this many at a time (bounds float memory to 16 x H x W)

# How to install SAM 2 without torchvision (docs/sam2.md); `make setup` (EXTRAS with sam2) runs the same.
SAM2_INSTALL = (
    "pip install torch==2.13.0 'stridegen[sam2]' && "
    "SAM2_BUILD_CUDA=0 pip install --no-deps --no-build-isolation sam2==1.1.0"
)


@dataclass(frozen=True)
class Sam2Embedding:
    """One image through SAM 2's image encoder: ``image_embed`` [1, C, S/16, S/16], ``high_res_feats`` (the
    [1, C', S/4, S/4] and [1, C'', S/8, S/8] maps the decoder upsamples with), S = model.image_size; (height,
    width) of the original image in pixels, which box prompts refer to."""

    image_embed: Any
    high_res_feats: list[Any]
    height: int
    width: int


class Sam2NotInstalledError(MissingExtraError):
    """torch, sam2 or one of sam2's requirements is missing; the message is the install recipe (one line)."""

    def __init__(self, module: str) -> None:
        message = f"'{module}' is not installed (needed by the sam2 segmenter): {SAM2_INSTALL} (see docs/sam2.md)"
        super(MissingExtraError, self).__init__(message)
        self.extra = "sam2"
        self.module = module


class CheckpointError(StrideGenError, ValueError):
    """A model checkpoint file is unreadable or does not fit the model. ``path`` names it, ``reason`` says why."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class MissingCheckpointError(CheckpointError, FileNotFoundError):
    """The checkpoint file does not exist."""


def download_hint(checkpoint: str | Path) -> str:
    """Where the official checkpoint of this file name (or of any size) can be downloaded."""
    name = Path(checkpoint).name
    if name in SAM2P1_CHECKPOINTS:
        return f"download it from {SAM2P1_BASE_URL}/{name} (config {SAM2P1_CHECKPOINTS[name]})"
    return (
        f"download an official SAM 2.1 checkpoint from {SAM2P1_BASE_URL}/<name>, <name> one of "
        f"{', '.join(SAM2P1_CHECKPOINTS)}"
    )


def import_sam2() -> tuple[Any, Any]:
    """(torch, sam2.build_sam.build_sam2), or Sam2NotInstalledError naming the missing module and the recipe."""
    try:
        torch = importlib.import_module("torch")
        build_sam = importlib.import_module("sam2.build_sam")
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "sam2"
        raise Sam2NotInstalledError(missing.split(".")[0]) from exc
    return torch, build_sam.build_sam2


def resolve_device(torch: Any, device: str) -> str:
    """'auto' -> 'cuda' when a CUDA device is usable, else 'cpu'; anything else is passed to torch as it is."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as exc:
        raise ConfigError(f"sam2 segmenter: bad device {device!r}: {exc}") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"sam2 segmenter: device {device!r} asked for, but torch sees no CUDA device (torch {torch.__version__})"
        )
    return device


def check_config(model_config: str) -> None:
    """The config must be one of the yaml files shipped in the sam2 package (hydra resolves it there)."""
    root = importlib.resources.files("sam2")
    if not root.joinpath(model_config).is_file():
        shipped = sorted(
            f"configs/{d.name}/{f.name}"
            for d in root.joinpath("configs").iterdir()
            if d.is_dir()
            for f in d.iterdir()
            if f.name.endswith(".yaml")
        )
        raise ConfigError(
            f"sam2 segmenter: model_config {model_config!r} is not a config of the installed sam2 "
            f"package; available: {shipped}"
        )


def build_model(build_sam2: Any, model_config: str, checkpoint: Path, device: str) -> Any:
    """SAM 2 built by sam2's own builder (hydra config + checkpoint, on the CPU), in eval mode, moved to ``device``."""
    check_config(model_config)
    if not checkpoint.is_file():
        raise MissingCheckpointError(checkpoint, f"SAM 2 checkpoint not found; {download_hint(checkpoint)}")
    hydra_errors = importlib.import_module("hydra.errors")
    omegaconf_errors = importlib.import_module("omegaconf.errors")
    try:
        model = build_sam2(model_config, ckpt_path=str(checkpoint), device="cpu", mode="eval")
    except (hydra_errors.HydraException, omegaconf_errors.OmegaConfBaseException) as exc:
        raise ConfigError(f"sam2 segmenter: config {model_config!r} failed: {exc}") from exc
    except Exception as exc:  # torch.load / load_state_dict: corrupt file, no "model" entry, other architecture
        detail = " ".join(f"{type(exc).__name__}: {exc}".split()).rstrip(":")  # one line
        if len(detail) > 300:
            detail = detail[:300] + " ..."
        raise CheckpointError(
            checkpoint, f"not a SAM 2 checkpoint for config {model_config} ({detail}); {download_hint(checkpoint)}"
        ) from exc
    return model.to(device).eval()  # moved here, so that a device failure is not reported as a bad checkpoint


class Sam2Segmenter:
    """SAM 2 prompted with projected boxes; quality = SAM 2's predicted mask IoU clipped to [0, 1].

    ``model_config``: a config of the installed sam2 package (``configs/sam2.1/sam2.1_hiera_{t,s,b+,l}.yaml``);
    ``checkpoint``: the matching ``{"model": state_dict}`` file (``~`` expanded); ``device``: "auto" (cuda when
    available, else cpu), "cpu", "cuda", "cuda:1", ...; on CUDA the network runs under bfloat16 autocast as in
    SAM 2's examples. ``multimask``: ask the decoder for its three masks and keep the one with the highest
    predicted IoU (default False: the single-mask output, which SAM 2 replaces with the best of the three when
    it is unstable, ``dynamic_multimask_via_stability`` of ``build_sam2``). ``mask_threshold``: logit threshold.
    """

    name = "sam2"

    def __init__(
        self,
        model_config: str = DEFAULT_CONFIG,
        checkpoint: str | Path | None = DEFAULT_CHECKPOINT,
        device: str = "auto",
        multimask: bool = False,
        mask_threshold: float = 0.0,
    ) -> None:
        torch, build_sam2 = import_sam2()
        if checkpoint is None or str(checkpoint) == "":
            raise ConfigError(
                "sam2 segmenter: a checkpoint is required (randomly initialised weights give "
                f"meaningless masks); {download_hint(DEFAULT_CHECKPOINT)}"
            )
        device = resolve_device(torch, device)
        model = build_model(build_sam2, model_config, expand_cache_path(checkpoint), device)
        self._setup(torch, model, multimask, mask_threshold)
        self.model_config = model_config
        self.checkpoint = str(checkpoint)

    @classmethod
    def from_model(cls, model: Any, multimask: bool = False, mask_threshold: float = 0.0) -> Sam2Segmenter:
        """Wrap an already built ``sam2.modeling.sam2_base.SAM2Base`` (put in eval mode; kept on its device)."""
        torch, _ = import_sam2()
        self = cls.__new__(cls)
        self._setup(torch, model.eval(), multimask, mask_threshold)
        self.model_config = ""
        self.checkpoint = ""
        return self

    def _setup(self, torch: Any, model: Any, multimask: bool, mask_threshold: float) -> None:
        self._torch = torch
        self.model = model
        self.device = model.device
        self.multimask = bool(multimask)
        self.mask_threshold = float(mask_threshold)
        self.resolution = int(model.image_size)

    def _autocast(self) -> Any:
        """bfloat16 autocast on CUDA (SAM 2's own examples do this); a no-op context on the CPU."""
        import contextlib

        if self.device.type == "cuda":
            return self._torch.autocast("cuda", dtype=self._torch.bfloat16)
        return contextlib.nullcontext()

    def segment(self, request: SegmentRequest) -> SegmentResult:
        """Masks [N, H, W] bool and quality [N] float64 for the request's boxes, in request order."""
        image = _check_image(request.image_rgb)
        boxes = _check_boxes(request.box_xyxy)
        if boxes.shape[0] == 0:
            return SegmentResult(np.zeros((0, *image.shape[:2]), dtype=bool), np.zeros(0, dtype=np.float64))
        return self.predict(self.embed(image), boxes)

    def embed(self, image_rgb: np.ndarray) -> Sam2Embedding:
        """The image encoder's output for one RGB uint8 image [H, W, 3] (SAM2ImagePredictor.set_image)."""
        image = _check_image(image_rgb)
        torch = self._torch
        with torch.inference_mode():
            x = self._preprocess(image)
            with self._autocast():
                backbone_out = self.model.forward_image(x)
                _, vision_feats, _, feat_sizes = self.model._prepare_backbone_features(backbone_out)
                if self.model.directly_add_no_mem_embed:  # as set_image: the "no memory" embedding of one image
                    vision_feats[-1] = vision_feats[-1] + self.model.no_mem_embed
                feats = [
                    f.permute(1, 2, 0).reshape(1, -1, *size) for f, size in zip(vision_feats, feat_sizes, strict=True)
                ]
        return Sam2Embedding(feats[-1], feats[:-1], int(image.shape[0]), int(image.shape[1]))

    def _preprocess(self, image: np.ndarray) -> Any:
        """uint8 [H, W, 3] -> normalised float32 [1, 3, S, S] on the device (SAM2Transforms: ToTensor, Resize,
        Normalize; torchvision's Resize of a tensor is bilinear interpolation with align_corners=False and
        antialias=True). Always float32, also on CUDA (outside autocast), as the predictor does it."""
        torch = self._torch
        x = torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1))).to(self.device, torch.float32) / 255.0
        x = torch.nn.functional.interpolate(
            x[None], size=(self.resolution, self.resolution), mode="bilinear", align_corners=False, antialias=True
        )
        mean = torch.tensor(PIXEL_MEAN, device=self.device).view(1, 3, 1, 1)
        std = torch.tensor(PIXEL_STD, device=self.device).view(1, 3, 1, 1)
        return (x - mean) / std

    def predict(self, embedding: Sam2Embedding, box_xyxy: np.ndarray, multimask: bool | None = None) -> SegmentResult:
        """Masks and quality for boxes [N, 4] (pixels of the embedded image) in one batch; ``multimask`` None
        means the segmenter's own setting."""
        boxes = _check_boxes(box_xyxy)
        height, width = embedding.height, embedding.width
        if boxes.shape[0] == 0:
            return SegmentResult(np.zeros((0, height, width), dtype=bool), np.zeros(0, dtype=np.float64))
        multi = self.multimask if multimask is None else bool(multimask)
        with self._torch.inference_mode(), self._autocast():
            low_res_logits, iou = self._decode(embedding, boxes, multi)
            masks = self._upsample(low_res_logits, height, width)
        quality = np.clip(np.nan_to_num(iou.float().cpu().numpy().astype(np.float64), nan=0.0), 0.0, 1.0)
        return SegmentResult(masks, quality)

    def _decode(self, embedding: Sam2Embedding, boxes: np.ndarray, multimask: bool) -> tuple[Any, Any]:
        """All boxes as one batch of prompts -> low-res mask logits [N, 1, S/4, S/4] and predicted IoU [N]
        (SAM2ImagePredictor._prep_prompts + _predict)."""
        torch = self._torch
        n = boxes.shape[0]
        height, width = embedding.height, embedding.width
        corners = torch.as_tensor(boxes, dtype=torch.float32, device=self.device).reshape(n, 2, 2).clone()
        corners[..., 0] = corners[..., 0] / width * self.resolution  # SAM2Transforms.transform_coords
        corners[..., 1] = corners[..., 1] / height * self.resolution
        labels = torch.tensor([BOX_CORNER_LABELS], dtype=torch.int, device=self.device).repeat(n, 1)
        sparse, dense = self.model.sam_prompt_encoder(points=(corners, labels), boxes=None, masks=None)
        logits, iou, _, _ = self.model.sam_mask_decoder(
            image_embeddings=embedding.image_embed,
            image_pe=self.model.sam_prompt_encoder.get_dense_pe(),
            sparse_prompt_embeddings=sparse,
            dense_prompt_embeddings=dense,
            multimask_output=multimask,
            repeat_image=n > 1,
            high_res_features=embedding.high_res_feats,
        )
        best = iou.argmax(dim=1)  # one column unless multimask
        rows = torch.arange(n, device=self.device)
        return logits[rows, best][:, None], iou[rows, best]

    def _upsample(self, low_res_logits: Any, height: int, width: int) -> np.ndarray:
        """Logits [N, 1, s, s] -> bool masks [N, H, W] at the original image size (SAM2Transforms.postprocess_masks)."""
        torch = self._torch
        out = np.empty((low_res_logits.shape[0], height, width), dtype=bool)
        for start in range(0, low_res_logits.shape[0], UPSAMPLE_CHUNK):
            chunk = low_res_logits[start : start + UPSAMPLE_CHUNK].float()
            up = torch.nn.functional.interpolate(chunk, (height, width), mode="bilinear", align_corners=False)
            out[start : start + chunk.shape[0]] = (up[:, 0] > self.mask_threshold).cpu().numpy()
        return out


def _check_image(image_rgb: np.ndarray) -> np.ndarray:
    image = np.asarray(image_rgb)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8 or min(image.shape[:2]) < 1:
        raise GeometryError(f"sam2 segmenter: image must be uint8 [H, W, 3], got {image.dtype} {image.shape}")
    return image


def _check_boxes(box_xyxy: np.ndarray) -> np.ndarray:
    boxes = np.asarray(box_xyxy, dtype=np.float64)
    if boxes.size == 0:
        return np.zeros((0, 4))
    if boxes.ndim != 2 or boxes.shape[1] != 4 or not np.isfinite(boxes).all():
        raise GeometryError(f"sam2 segmenter: box_xyxy must be finite [N, 4], got shape {boxes.shape}")
    return boxes
