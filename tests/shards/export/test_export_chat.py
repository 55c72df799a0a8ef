"""stridegen export --format llava | messages: every QA row comes back as one turn, images are the Set-of-Mark
renders of the dataset's own images and masks, and the two syntaxes hold the same samples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stridegen.formats.images import decode_image, encode_jpeg
from stridegen.jobs.export import run_export
from stridegen.pipeline.som import draw_set_of_marks
from stridegen.shards.reader import open_dataset
from tests.shards.export.schemas import jsonschema, validate
from tests.shards.export.trainer_loaders import llava_paths

pytestmark = pytest.mark.slow  # the tests export the session's built dataset


def _check_llava_record(rec: dict) -> None:
    """The LLaVA conversation schema the exporter promises (docs/export.md, stridegen/resources/schemas)."""
    validate(rec, "llava")
    assert set(rec) == {"id", "kind", "image", "conversations", "qa_info", "meta"}
    assert rec["kind"] in ("spatial", "spatiotemporal") and isinstance(rec["id"], str)
    # one key, as LLaVA reads it: a string for the one keyframe image, a list for the four context frames
    assert isinstance(rec["image"], str) if rec["kind"] == "spatial" else len(rec["image"]) == 4
    paths = llava_paths(rec)
    assert paths and all(isinstance(p, str) and p.startswith("images/") for p in paths)
    conv = rec["conversations"]
    assert len(conv) == 2 * len(rec["qa_info"]) > 0
    assert [c["from"] for c in conv] == ["human", "gpt"] * len(rec["qa_info"])
    assert all(isinstance(c["value"], str) and c["value"] for c in conv)
    assert conv[0]["value"].count("<image>") == len(paths)
    assert all("<image>" not in c["value"] for c in conv[1:])
    for info in rec["qa_info"]:
        assert set(info) == {
            "question_id",
            "category",
            "predicate",
            "gt_value",
            "unit",
            "gt_label",
            "gt_extra",
            "region_ids",
            "scenario",
        }
        assert info["scenario"] == rec["meta"]["scenario"]  # the group's stored label, "" for spatial
        assert info["gt_value"] is None or isinstance(info["gt_value"], float)


@pytest.fixture(scope="module")
def llava(dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("llava") / "out"
    assert run_export(dataset, out, "llava").ok
    return out


def test_llava_round_trip(dataset, llava):
    records = json.loads((llava / "llava.json").read_text())
    turns: dict[str, tuple[str, str, dict]] = {}
    for rec in records:
        _check_llava_record(rec)
        for n, info in enumerate(rec["qa_info"]):
            question = rec["conversations"][2 * n]["value"].replace("<image>\n", "")
            assert info["question_id"] not in turns
            turns[info["question_id"]] = (question, rec["conversations"][2 * n + 1]["value"], rec)
    rendered = 0
    with open_dataset(dataset) as ds:
        for name in ds.scenes:
            view = ds.scene(name)
            qa = view.qa
            for q in range(len(qa)):
                question, answer, rec = turns.pop(str(qa.question_id[q]))
                assert (question, answer) == (qa.question[q], qa.answer[q])
                if qa.category[q] == "spatiotemporal" or rendered >= 3:
                    continue
                # the keyframe image: the dataset's image with every region of that image marked, re-rendered here
                k, c = int(qa.keyframe_index[q]), int(qa.channel_index[q])
                regions = view.regions
                sel = np.flatnonzero((regions.keyframe_index == k) & (regions.channel_index == c))
                channel = str(view.cameras.channel[c])
                frame = int(view.keyframes.frame_index[k])
                rgb = decode_image(view.image_bytes(channel, frame), "test")
                masks = np.stack([view.mask(int(m)) for m in regions.mask_index[sel]])
                expected = encode_jpeg(draw_set_of_marks(rgb, masks, [int(r) for r in regions.region_id[sel]]), 92)
                assert (llava / rec["image"]).read_bytes() == expected.tobytes()
                rendered += 1
    assert not turns and rendered == 3  # nothing extra, and the image check really ran


def test_messages_hold_the_same_samples_as_llava(dataset, llava, tmp_path):
    assert run_export(dataset, tmp_path / "m", "messages").ok
    lines = (tmp_path / "m" / "messages.jsonl").read_text().splitlines()
    by_id = {r["id"]: r for r in json.loads((llava / "llava.json").read_text())}
    assert len(lines) == len(by_id)
    for line in lines:
        rec = json.loads(line)
        ref = by_id[rec["id"]]
        msgs = rec["messages"]
        assert [m["role"] for m in msgs] == ["user", "assistant"] * len(ref["qa_info"])
        images = [part["image_url"]["url"] for part in msgs[0]["content"] if part["type"] == "image_url"]
        assert images == llava_paths(ref)
        texts = [next(p["text"] for p in m["content"] if p["type"] == "text") for m in msgs[0::2]]
        assert texts == [c["value"].replace("<image>\n", "") for c in ref["conversations"][0::2]]
        assert [m["content"] for m in msgs[1::2]] == [c["value"] for c in ref["conversations"][1::2]]
        assert rec["qa_info"] == ref["qa_info"] and rec["meta"] == ref["meta"]
        assert all((tmp_path / "m" / p).is_file() for p in images)


def test_the_llava_schema_rejects_broken_records(llava):
    record = json.loads((llava / "llava.json").read_text())[0]
    validate(record, "llava")
    broken = [
        {**record, "kind": "video"},
        {**record, "conversations": [{"from": "user", "value": "x"}]},
        {k: v for k, v in record.items() if k != "meta"},
        {**record, "qa_info": [{**record["qa_info"][0], "region_ids": [-1]}]},
        {**record, "images": ["images/a.jpg"]},
        {k: v for k, v in record.items() if k != "image"},
        {**record, "image": ["images/a.jpg"] * 4},  # a spatial record shows one image
        {**record, "kind": "spatiotemporal"},  # ... and a spatiotemporal one several
    ]
    for rec in broken:
        with pytest.raises(jsonschema.ValidationError):
            validate(rec, "llava")
