"""stridegen export --format strideqa: the STRIDE-QA training layout read back gives the dataset's QA, images
(bytes), masks and boxes exactly; shards split as asked; reruns and worker counts give the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.core.errors import ConfigError, DataFormatError
from stridegen.formats.rle import decode_rle
from stridegen.formats.strideqa_training import TASKS, iter_images, read_annotations
from stridegen.jobs.export import run_export
from stridegen.shards.reader import open_dataset
from tests.shards.export.schemas import jsonschema, validate
from tests.shards.export.trainer_loaders import llava_paths

pytestmark = pytest.mark.slow  # the tests export the session's built dataset

FIELDS_SPATIAL = {
    "id",
    "image",
    "conversations",
    "qa_info",
    "region",
    "category",
    "bbox",
    "rle",
    "image_info",
    "token_info",
    "split",
}
FIELDS_TEMPORAL = (FIELDS_SPATIAL - {"image"}) | {"images"}
TASK_OF = {
    "object_spatial": "object_centric_spatial_qa",
    "ego_spatial": "ego_centric_spatial_qa",
    "spatiotemporal": "ego_centric_spatiotemporal_qa",
}


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _finals(out: Path) -> dict[str, bytes]:
    return {k: v for k, v in _tree(out).items() if k.startswith("train/") or k == "export.json"}


@pytest.fixture(scope="module")
def strideqa(dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("strideqa") / "out"
    result = run_export(dataset, out, "strideqa")
    assert result.ok, [r.reason for r in result.failed]
    return out


def _records(out: Path, split: str = "train") -> dict[str, list[dict]]:
    return {task: read_annotations(out / split, task) for task in TASKS}


def test_every_question_image_and_mask_round_trips(dataset, strideqa):
    images = dict(iter_images(strideqa / "train"))
    turns: dict[str, tuple[str, str, str, dict]] = {}
    for task, records in _records(strideqa).items():
        for rec in records:
            spatial = task != "ego_centric_spatiotemporal_qa"
            validate(rec, "strideqa")
            assert set(rec) == (FIELDS_SPATIAL if spatial else FIELDS_TEMPORAL), rec.keys()
            names = [rec["image"]] if spatial else rec["images"]
            assert len(names) == (1 if spatial else 4) and all(n in images for n in names)
            conv = rec["conversations"]
            assert [c["from"] for c in conv] == ["human", "gpt"] * len(rec["qa_info"])
            assert conv[0]["value"].startswith("<image>\n" * len(names)) and rec["split"] == "train"
            for n, info in enumerate(rec["qa_info"]):
                assert info["question_id"] not in turns
                question = conv[2 * n]["value"].replace("<image>\n", "")
                turns[info["question_id"]] = (task, question, conv[2 * n + 1]["value"], rec)
    checked_masks = 0
    with open_dataset(dataset) as ds:
        for scene_name in ds.scenes:
            view = ds.scene(scene_name)
            qa, masks, regions = view.qa, view.masks, view.regions
            frame_of = {str(t): f for f, t in enumerate(view.frames.token)}
            for q in range(len(qa)):
                task, question, answer, rec = turns.pop(str(qa.question_id[q]))
                assert (task, question, answer) == (TASK_OF[str(qa.category[q])], qa.question[q], qa.answer[q])
                token = rec["token_info"]
                assert token["scene"] == scene_name and token["camera"] == str(
                    view.cameras.channel[qa.channel_index[q]]
                )
                infos = [rec["image_info"]] if "image" in rec else rec["image_info"]
                names = [rec["image"]] if "image" in rec else rec["images"]
                for info, name in zip(infos, names, strict=True):
                    # raw images: the camera file's bytes, unchanged
                    assert images[name] == view.image_bytes(info["camera"], frame_of[info["frame_token"]])
                assert infos[-1]["frame_token"] == token["sample_token"]  # the current frame is the last one
                # the regions of the keyframe image: ids, classes, masks and boxes at the keyframe
                k, c = int(qa.keyframe_index[q]), int(qa.channel_index[q])
                sel = np.flatnonzero((regions.keyframe_index == k) & (regions.channel_index == c))
                assert rec["region"] == [int(r) for r in regions.region_id[sel]]
                assert rec["token_info"]["track_ids"] == [
                    str(view.tracks.track_id[t]) for t in regions.track_index[sel]
                ]
                rles = rec["rle"] if "image" in rec else rec["rle"][-1]
                boxes = rec["bbox"] if "image" in rec else rec["bbox"][-1]
                for rle, box, m in zip(rles, boxes, regions.mask_index[sel], strict=True):
                    np.testing.assert_array_equal(decode_rle(rle["counts"], *rle["size"]), view.mask(int(m)))
                    np.testing.assert_allclose(box, masks.mask_box_xyxy[m], atol=0.005)
                    checked_masks += 1
    assert not turns  # nothing extra
    assert checked_masks > 0


def test_spatiotemporal_masks_follow_the_track(dataset, strideqa):
    records = read_annotations(strideqa / "train", "ego_centric_spatiotemporal_qa")
    assert records
    with open_dataset(dataset) as ds:
        for rec in records[:20]:
            view = ds.scene(rec["token_info"]["scene"])
            frame_of = {str(t): f for f, t in enumerate(view.frames.token)}
            c = list(view.cameras.channel).index(rec["token_info"]["camera"])
            images = view.array("images/frame_index"), view.array("images/channel_index")
            masks = view.masks
            for info, rles in zip(rec["image_info"], rec["rle"], strict=True):
                f = frame_of[info["frame_token"]]
                row = int(np.flatnonzero((images[0] == f) & (images[1] == c))[0])
                for track_id, rle in zip(rec["token_info"]["track_ids"], rles, strict=True):
                    t = list(view.tracks.track_id).index(track_id)
                    m = np.flatnonzero((masks.image_index == row) & (masks.track_index == t))
                    if rle is None:
                        assert m.size == 0
                    else:
                        np.testing.assert_array_equal(decode_rle(rle["counts"], *rle["size"]), view.mask(int(m[0])))


def test_shard_sizes_workers_and_reruns_give_the_same_content(dataset, strideqa, tmp_path):
    out = tmp_path / "small"
    options = {"records_per_shard": 5, "images_per_shard": 7}
    assert run_export(dataset, out, "strideqa", options, workers=2).ok
    tars = sorted((out / "train" / "images").glob("images-*.tar"))
    assert len(tars) > 1 and all(len(list(iter_images_of(t))) <= 7 for t in tars)
    assert _records(out) == _records(strideqa)  # same records, whatever the shard size
    assert list(iter_images(out / "train")) == list(iter_images(strideqa / "train"))
    before = _finals(out)
    assert run_export(dataset, out, "strideqa", options, workers=1).ok  # a rerun resumes: every scene is done
    assert _finals(out) == before
    again = tmp_path / "again"
    assert run_export(dataset, again, "strideqa", options, workers=1).ok
    assert _finals(again) == before  # byte-reproducible with any number of workers


def iter_images_of(tar: Path):
    from stridegen.formats.strideqa_training import iter_tar

    return iter_tar(tar)


def test_som_images_are_the_llava_renders(dataset, tmp_path):
    out, llava = tmp_path / "som", tmp_path / "llava"
    assert run_export(dataset, out, "strideqa", {"images": "som"}).ok
    assert run_export(dataset, llava, "llava").ok
    images = dict(iter_images(out / "train"))
    by_id = {r["id"]: r for r in json.loads((llava / "llava.json").read_text())}
    compared = 0
    for rec in read_annotations(out / "train", "ego_centric_spatiotemporal_qa")[:5]:
        sample = by_id[rec["token_info"]["group_id"]]
        for name, path in zip(rec["images"], llava_paths(sample), strict=True):
            assert images[name] == (llava / path).read_bytes()
            compared += 1
    assert compared


def test_a_changed_scene_image_tar_is_an_error(dataset, tmp_path):
    out = tmp_path / "x"
    assert run_export(dataset, out, "strideqa").ok
    tar = sorted((out / "parts").glob("*.images.tar"))[0]
    tar.write_bytes(tar.read_bytes()[:-1024])
    with pytest.raises(DataFormatError, match=r"images\.tar.*delete parts/.*\.jsonl and rerun"):
        run_export(dataset, out, "strideqa")


def test_bad_options_fail_before_any_work(dataset, tmp_path):
    with pytest.raises(ConfigError, match="images="):
        run_export(dataset, tmp_path / "a", "strideqa", {"images": "png"})
    with pytest.raises(ConfigError, match="split"):
        run_export(dataset, tmp_path / "b", "strideqa", {"split": "../x"})
    assert not (tmp_path / "a").exists()


def test_cli_with_options(dataset, tmp_path):
    out = tmp_path / "cli"
    result = CliRunner().invoke(
        app, ["export", str(dataset), "--format", "strideqa", "--out", str(out), "-O", "split=val"]
    )
    assert result.exit_code == 0, result.output
    assert {task: len(r) for task, r in _records(out, "val").items()} == {
        task: len(read_annotations(out / "val", task)) for task in TASKS
    }
    assert all(rec["split"] == "val" for recs in _records(out, "val").values() for rec in recs)
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["exporter"] == "strideqa" and manifest["options"] == {"split": "val"}
    assert any(f["file"].startswith("val/images/images-") for f in manifest["files"])


def test_the_strideqa_schema_rejects_broken_records(strideqa):
    spatial = read_annotations(strideqa / "train", "object_centric_spatial_qa")[0]
    temporal = read_annotations(strideqa / "train", "ego_centric_spatiotemporal_qa")[0]
    validate(spatial, "strideqa")
    validate(temporal, "strideqa")
    broken = [
        {**spatial, "id": "not-hex"},
        {**spatial, "bbox": [[1, 2, 3]]},
        {**spatial, "images": [spatial["image"]]},
        {**temporal, "image_info": temporal["image_info"][0]},
        {**temporal, "rle": [[{"size": [0, 4], "counts": ""}]]},
        {k: v for k, v in spatial.items() if k != "token_info"},
    ]
    for rec in broken:
        with pytest.raises(jsonschema.ValidationError):
            validate(rec, "strideqa")
