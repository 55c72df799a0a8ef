"""The checks of issue 32 on the privacy pass, on synthetic logs with plates and faces drawn (``--privacy-patches``)
and the real-log defaults (CenterFace faces, the Haar plate cascade besides the plate localisation):

- >= 99% of the drawn plates and faces (at least 6 visible pixels) lie inside a blurred region of their kind;
- the blurred share of the QA regions' masks is at most 5% on average (the measure the pass records);
- no plate is recorded twice in one image (no two plate records overlap at IoU >= 0.5, and no drawn plate lies
  inside two plate records);
- no face is recorded on the ego body (``search.ego_body_mask`` of its camera).

The truth is the generator's: the renderer's visible pixel box of every patch (``render_camera(..., decals=...)``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stridegen.jobs.build import run_build
from stridegen.run.config import load_build_config

pytestmark = pytest.mark.slow  # two 640 x 360 scenes built with CenterFace (tens of seconds)
SYNTH = {"scenes": 2, "seconds": 6.0, "seed": 11, "width": 640, "height": 360}
CONFIG = [
    "segmenter.name=projected_box",
    "keyframes.start_s=1",
    "keyframes.end_s=5",
    "anonymize.faces=true",
    "anonymize.plates=true",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    pytest.importorskip("onnxruntime")
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("privacy")
    generate_dataset(root / "log", progress=False, overwrite=True, privacy_patches=True, **SYNTH)
    result = run_build(root / "log", root / "on", load_build_config(None, CONFIG))
    assert result.ok, [r.reason for r in result.failed]
    return root / "log", root / "on"


_TRUTH: dict[tuple[str, str], tuple] = {}


def _records(out: Path):
    from stridegen.shards.reader import open_dataset

    with open_dataset(out) as ds:
        return [ds.scene(name).record() for name in ds.scenes]


def _drawn(log: Path, record, image: int) -> list[tuple[str, np.ndarray, int]]:
    """(kind, visible pixel box, visible pixels) of the patches the image shows (the generator's truth)."""
    from stridegen.calibration.rig import load_rig
    from stridegen.logs.synthetic import load_synthetic_truth
    from stridegen.logs.synthetic.generator import default_ground_shader
    from stridegen.logs.synthetic.patches import privacy_decals
    from stridegen.logs.synthetic.render import render_camera

    key = (str(log), record.meta.name)
    if key not in _TRUTH:  # the scene's truth and patches, read once
        scene = load_synthetic_truth(log, record.meta.name)
        _TRUTH[key] = (scene, privacy_decals(scene), load_rig("nuscenes"))
    scene, decals, rig = _TRUTH[key]
    rig = rig.with_camera_resolution(SYNTH["width"], SYNTH["height"])
    channel = str(record.cameras.channel[int(record.images.channel_index[image])])
    cam = next(c for c in rig.cameras if c.channel == channel)
    t = scene.sample_times[int(record.images.frame_index[image])]
    boxes = scene.agent_states(t)
    colors = np.array([a.color_rgb for a in scene.agents], dtype=np.uint8)
    out = render_camera(
        cam, scene.ego_pose(t) @ cam.T_ego_from_sensor, boxes.center, boxes.size_lwh, boxes.yaw, colors,
        default_ground_shader(), decals=decals,
    )  # fmt: skip
    assert out.decal_boxes_xyxy is not None and out.decal_pixels is not None
    return [(d.kind, out.decal_boxes_xyxy[k], int(out.decal_pixels[k])) for k, d in enumerate(decals)]


def _inside(regions: np.ndarray, box: np.ndarray) -> np.ndarray:
    return (regions[:, :2] <= box[:2] + 0.5).all(axis=1) & (regions[:, 2:] >= box[2:] - 0.5).all(axis=1)


def test_drawn_plates_and_faces_are_blurred_once(built) -> None:
    log, out = built
    seen = {"plate": 0, "face": 0}
    covered = {"plate": 0, "face": 0}
    twice = 0
    for record in _records(out):
        regions = record.extra["anonymization"]
        image_of = np.asarray(regions["image_index"])
        kinds = np.asarray(regions["kind"]).astype(str)
        for i in range(len(record.images)):
            mine = image_of == i
            for kind, box, pixels in _drawn(log, record, i):
                if pixels < 6:
                    continue
                seen[kind] += 1
                hits = _inside(regions["box_xyxy"][mine & (kinds == kind)], box)
                covered[kind] += bool(hits.any())
                twice += kind == "plate" and int(hits.sum()) > 1
    print(f"drawn and blurred: {covered} of {seen}")
    assert seen["plate"] >= 20 and seen["face"] >= 10, seen
    for kind in ("plate", "face"):
        assert covered[kind] >= 0.99 * seen[kind], (kind, covered[kind], seen[kind])
    assert twice == 0


def test_no_duplicate_plate_records(built) -> None:
    from stridegen.core.iou import iou_2d

    for record in _records(built[1]):
        regions = record.extra["anonymization"]
        plates = np.asarray(regions["kind"]).astype(str) == "plate"
        for i in np.unique(regions["image_index"][plates]).tolist():
            boxes = regions["box_xyxy"][plates & (regions["image_index"] == i)]
            iou = iou_2d(boxes, boxes)
            np.fill_diagonal(iou, 0.0)
            assert iou.max(initial=0.0) < 0.5, (record.meta.name, i, boxes)


def test_blurred_share_of_qa_region_masks_is_small_and_recorded(built) -> None:
    import json

    from stridegen.formats.rle import decode_rle

    shares = []
    for record in _records(built[1]):
        qa = record.extra["anonymization_qa_regions"]
        assert len(qa["region_index"]) == len(record.regions)  # every QA region measured
        regions = record.extra["anonymization"]
        for r, image, mask_px, blurred in zip(
            qa["region_index"], qa["image_index"], qa["mask_px"], qa["blurred_px"], strict=True
        ):
            m = int(record.regions.mask_index[r])
            assert int(record.masks.image_index[m]) == image
            c = int(record.images.channel_index[image])
            w, h = int(record.cameras.width[c]), int(record.cameras.height[c])
            mask = decode_rle(str(record.masks.rle_counts[m]), h, w)
            assert int(mask.sum()) == mask_px
            # an upper bound from the records: the mask pixels inside any region's box (faces blur an ellipse)
            union = np.zeros((h, w), dtype=bool)
            for box in regions["box_xyxy"][regions["image_index"] == image]:
                x0, y0, x1, y1 = box
                union[int(np.floor(y0)) : int(np.ceil(y1)), int(np.floor(x0)) : int(np.ceil(x1))] = True
            assert blurred <= int((mask & union).sum())
            shares.append(blurred / max(mask_px, 1))
    mean = float(np.mean(shares))
    print(f"{len(shares)} QA regions: blurred share mean {mean:.4f}, max {max(shares):.4f}")
    assert len(shares) >= 10
    assert mean <= 0.05
    totals = json.loads((built[1] / "anonymization.json").read_text())["totals"]
    assert totals["qa_regions"] == len(shares)
    assert totals["qa_region_blurred_share_mean"] == pytest.approx(mean, abs=1e-6)


def test_no_face_on_the_ego_body(built) -> None:
    from stridegen.pipeline.anonymize.search import ego_body_mask

    faces = 0
    for record in _records(built[1]):
        regions = record.extra["anonymization"]
        cams = record.cameras
        masks = {
            c: ego_body_mask(cams.T_ego_from_sensor[c], cams.intrinsic[c], (int(cams.width[c]), int(cams.height[c])))
            for c in range(len(cams.channel))
        }
        for k in np.flatnonzero(np.asarray(regions["kind"]).astype(str) == "face").tolist():
            faces += 1
            c = int(record.images.channel_index[int(regions["image_index"][k])])
            x0, y0, x1, y1 = regions["box_xyxy"][k]
            assert not masks[c][int((y0 + y1) / 2), int((x0 + x1) / 2)], (record.meta.name, k)
    assert faces > 0
