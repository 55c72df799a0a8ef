"""What the privacy pass leaves in a dataset (``stridegen.pipeline.anonymize.scene``; docs/anonymize.md): three extra
shard tables per scene, ``anonymization`` (one row per region: ``image_index``, ``kind``, ``source``,
``box_xyxy``, ``score``), ``anonymization_images`` (per image: ``blurred_px``, ``regions``,
``metadata_removed``, ``reencoded``, ``faces_rejected``) and ``anonymization_qa_regions`` (per QA region:
``region_index``, ``image_index``, ``mask_px``, ``blurred_px``), and ``anonymization.json`` beside the manifest,
which lists them per image and totals them (the mean and largest blurred share of a QA region's mask).
``anonymize_record`` runs the pass over a stored scene (``read_stored_scene``): what ``stridegen anonymize`` does
to each scene of a built dataset (stridegen.jobs.anonymize), with the bytes the build's anonymize stage gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.pipeline.anonymize.faces import FaceDetector
from stridegen.pipeline.anonymize.image import AnonymizeOptions
from stridegen.pipeline.anonymize.scene import anonymize_scene
from stridegen.shards import adapters
from stridegen.shards.manifest import manifest_bytes
from stridegen.shards.reader import open_dataset
from stridegen.shards.schema import SceneRecord
from stridegen.shards.writer import atomic_write_bytes

SIDECAR_NAME = "anonymization.json"
SIDECAR_FORMAT = "stridegen-anonymization"
SIDECAR_VERSION = 1


def _score(value: float) -> float | None:
    return None if not np.isfinite(value) else round(float(value), 6)


def anonymization_summary(out_dir: str | Path, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``anonymization.json``: the settings (the build config's ``anonymize`` section as JSON data), the totals
    and, per image with regions, its regions (read back from the shards of ``out_dir``; deterministic)."""
    import cv2

    images_out: list[dict[str, Any]] = []
    totals = {"images": 0, "images_blurred": 0, "faces": 0, "plates": 0, "blurred_px": 0, "image_px": 0}
    totals["faces_rejected"] = 0
    shares: list[float] = []
    with open_dataset(out_dir) as dataset:
        for name in dataset.scenes:
            view = dataset.scene(name)
            if adapters.ANONYMIZATION_REGIONS_TABLE not in view.table_names:
                continue
            regions = view.table(adapters.ANONYMIZATION_REGIONS_TABLE)
            per_image = view.table(adapters.ANONYMIZATION_IMAGES_TABLE)
            images: Any = view.table("images")
            cameras: Any = view.table("cameras")
            assert isinstance(regions, dict) and isinstance(per_image, dict)
            channel = [str(c) for c in cameras.channel]
            area = np.asarray(cameras.width, dtype=np.int64) * np.asarray(cameras.height, dtype=np.int64)
            image_of = np.asarray(regions["image_index"], dtype=np.int64)
            qa: Any = view.table(adapters.ANONYMIZATION_QA_REGIONS_TABLE) if (
                adapters.ANONYMIZATION_QA_REGIONS_TABLE in view.table_names
            ) else None  # fmt: skip
            qa_image = np.asarray(qa["image_index"], dtype=np.int64) if qa is not None else np.zeros(0, np.int64)
            if "faces_rejected" in per_image:
                totals["faces_rejected"] += int(np.sum(per_image["faces_rejected"]))
            for i in range(len(per_image["blurred_px"])):
                c = int(images.channel_index[i])
                totals["images"] += 1
                totals["image_px"] += int(area[c])
                totals["blurred_px"] += int(per_image["blurred_px"][i])
                measured = []
                for q in np.flatnonzero(qa_image == i).tolist():
                    mask_px, hit = int(qa["mask_px"][q]), int(qa["blurred_px"][q])
                    share = hit / mask_px if mask_px else 0.0
                    shares.append(share)
                    measured.append({"region_index": int(qa["region_index"][q]), "mask_px": mask_px,
                                     "blurred_px": hit, "share": round(share, 6)})  # fmt: skip
                rows = np.flatnonzero(image_of == i)
                if not rows.size:
                    continue
                totals["images_blurred"] += 1
                entry = []
                for r in rows.tolist():
                    kind = str(regions["kind"][r])
                    totals["faces" if kind == "face" else "plates"] += 1
                    box = [round(float(v), 3) for v in regions["box_xyxy"][r]]
                    entry.append({"kind": kind, "source": str(regions["source"][r]), "box_xyxy": box,
                                  "score": _score(float(regions["score"][r]))})  # fmt: skip
                images_out.append(
                    {
                        "scene": name,
                        "image_index": i,
                        "channel": channel[c],
                        "frame_index": int(images.frame_index[i]),
                        "blurred_px": int(per_image["blurred_px"][i]),
                        "regions": entry,
                        "qa_regions": measured,
                    }
                )
    versions = {"opencv": cv2.__version__}
    if settings.get("faces") and settings.get("face_detector") == "centerface":
        import onnxruntime

        versions["onnxruntime"] = onnxruntime.__version__
    totals["blurred_fraction"] = round(totals["blurred_px"] / totals["image_px"], 8) if totals["image_px"] else 0.0  # type: ignore[assignment]
    # the evidence the blurring took: per QA region, the blurred share of its mask (docs/anonymize.md)
    totals["qa_regions"] = len(shares)
    totals["qa_region_blurred_share_mean"] = round(float(np.mean(shares)), 6) if shares else 0.0  # type: ignore[assignment]
    totals["qa_region_blurred_share_max"] = round(float(np.max(shares)), 6) if shares else 0.0  # type: ignore[assignment]
    return {
        "format": SIDECAR_FORMAT,
        "version": SIDECAR_VERSION,
        "settings": dict(settings),
        "versions": versions,
        "totals": totals,
        "images": images_out,
    }


def write_anonymization_sidecar(out_dir: str | Path, settings: Mapping[str, Any]) -> Path:
    """Write ``anonymization.json`` beside the manifest (``settings``: the active ``anonymize`` section as JSON)."""
    path = Path(out_dir) / SIDECAR_NAME
    atomic_write_bytes(path, manifest_bytes(anonymization_summary(out_dir, settings)))
    return path


def _qa_skipped(manifest: dict[str, Any], scene_name: str) -> dict[str, int]:
    """The scene's spatiotemporal groups not made, by reason: kept in the manifest only (not in the shard)."""
    prefix = "qa_skipped_group/"
    for shard in manifest.get("shards", []):
        if scene_name in shard.get("scenes", []):
            counts = shard.get("counts", {})
            return {k[len(prefix) :]: int(v) for k, v in counts.items() if k.startswith(prefix)}
    return {}


def read_stored_scene(src_dir: str | Path, scene_name: str) -> SceneRecord:
    """The record of one scene of the dataset ``src_dir`` (its shard checked against the manifest first), with the
    QA groups not made that only the manifest keeps: what a rewrite of the scene writes back."""
    with open_dataset(src_dir) as source:
        source.verify([scene_name])
        record = source.scene(scene_name).record()
        return replace(record, qa_skipped=_qa_skipped(source.manifest, scene_name))


def anonymize_record(record: SceneRecord, options: AnonymizeOptions, face_detector: FaceDetector | None) -> SceneRecord:
    """A stored scene through the privacy pass (``face_detector`` used when ``options.faces``): the same bytes as
    the build's anonymize stage gives."""
    out = anonymize_scene(
        record.meta.name,
        record.meta.log_name,
        record.frames.timestamp_us,
        record.cameras,
        record.images,
        [record.detections, record.ground_truth],
        options,
        face_detector,
        record.masks,
        record.regions,
    )
    frames, images, extra = adapters.anonymized_tables(record.frames, record.images, out)
    return replace(
        record,
        meta=replace(record.meta, log_name=out.log_name),
        frames=frames,
        images=images,
        extra={**record.extra, **extra},
    )
