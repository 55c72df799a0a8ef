"""The llava and llamafactory exports read by loaders written from LLaVA's and LLaMA-Factory's own reading code
(tests/shards/export/trainer_loaders.py): every sample loads, its images open from the folder the tool would use,
its <image> tokens match its images, and every QA row of the dataset comes back once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stridegen.core.errors import ConfigError
from stridegen.jobs.export import run_export
from stridegen.shards.export.base import make_exporter
from stridegen.shards.reader import open_dataset
from tests.shards.export.trainer_loaders import load_llamafactory, load_llava

pytest.importorskip("PIL", reason="the loaders open the images with PIL, as the trainers do")
pytestmark = pytest.mark.slow  # the tests export the session's built dataset


def _dataset_turns(dataset: Path) -> list[tuple[str, str]]:
    """Every QA row of the dataset as (question, answer), in scene and row order."""
    turns = []
    with open_dataset(dataset) as source:
        for name in source.scenes:
            qa = source.scene(name).qa
            turns += [(str(qa.question[q]), str(qa.answer[q])) for q in range(len(qa))]
    return turns


def _questions(turns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(question without its <image> lines, answer) per turn pair of alternating (role, text) turns."""
    return [(turns[n][1].replace("<image>\n", ""), turns[n + 1][1]) for n in range(0, len(turns), 2)]


def test_llava_loads_as_llava_reads_it(dataset, tmp_path):
    out = tmp_path / "llava"
    assert run_export(dataset, out, "llava").ok
    samples = load_llava(out / "llava.json", image_folder=out)  # image paths are relative to the export folder
    assert sorted(len(s["images"]) for s in samples)[0] == 1 and max(len(s["images"]) for s in samples) == 4
    loaded = [pair for s in samples for pair in _questions(s["turns"])]
    assert sorted(loaded) == sorted(_dataset_turns(dataset))


def test_llamafactory_loads_as_llamafactory_reads_it(dataset, tmp_path):
    out, llava = tmp_path / "lf", tmp_path / "llava"
    assert run_export(dataset, out, "llamafactory").ok
    info = json.loads((out / "dataset_info.json").read_text())
    assert info == {
        "stridegen": {
            "file_name": "stridegen.jsonl",
            "formatting": "sharegpt",
            "columns": {"messages": "conversations", "images": "images"},
            "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt"},
        }
    }
    samples = load_llamafactory(out, "stridegen")
    loaded = [
        (m["content"].replace("<image>\n", ""), r["content"])
        for s in samples
        for m, r in zip(s["prompt"][0::2], [*s["prompt"][1::2], *s["response"]], strict=True)
    ]
    assert sorted(loaded) == sorted(_dataset_turns(dataset))
    # the same samples and images as the llava export
    assert run_export(dataset, llava, "llava").ok
    refs = json.loads((llava / "llava.json").read_text())
    rows = [json.loads(line) for line in (out / "stridegen.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [r["id"] for r in refs]
    for row, ref in zip(rows, refs, strict=True):
        assert row["conversations"] == ref["conversations"]
        assert row["images"] == (ref["image"] if isinstance(ref["image"], list) else [ref["image"]])
        assert all((out / p).read_bytes() == (llava / p).read_bytes() for p in row["images"])


def test_the_llamafactory_loader_rejects_what_llamafactory_rejects(dataset, tmp_path):
    out = tmp_path / "lf"
    assert run_export(dataset, out, "llamafactory", {"dataset_name": "drive_qa"}).ok
    assert load_llamafactory(out, "drive_qa")
    rows = (out / "drive_qa.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    for broken in (
        {**row, "images": [*row["images"], row["images"][0]]},  # one image more than <image> tokens
        {**row, "conversations": row["conversations"][1:]},  # starts with the assistant
        {**row, "images": ["images/missing.jpg"] * len(row["images"])},
    ):
        (out / "drive_qa.jsonl").write_text(json.dumps(broken) + "\n")
        with pytest.raises(AssertionError):
            load_llamafactory(out, "drive_qa")


def test_llamafactory_options_are_checked():
    with pytest.raises(ConfigError, match="dataset_name"):
        make_exporter("llamafactory", {"dataset_name": "a/b"})
