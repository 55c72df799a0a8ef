"""Test-side readers of the trainer formats, written from what each tool's own data loader does (read, not copied):

- **LLaVA / LLaVA-NeXT** (llava/train/train.py, ``LazySupervisedDataset``): ``json.load`` of the data file; a
  record with an ``image`` key is multimodal; ``image`` is one path or (LLaVA-NeXT, OneVision) a list of paths, each
  opened with PIL at ``os.path.join(image_folder, path)``; the turns are ``conversations``, ``from`` ``human`` /
  ``gpt`` alternating from the human side; the model replaces each ``<image>`` token of the text by the features of
  the next image, so the tokens must match the images one to one.
- **LLaMA-Factory** (src/llamafactory/data/parser.py, converter.py, mm_plugin.py): the dataset is looked up by name
  in ``<dataset_dir>/dataset_info.json``; ``file_name`` is read relative to ``dataset_dir`` (``.json`` / ``.jsonl``:
  the ``json`` builder); ``formatting: sharegpt`` reads the turns from ``columns.messages`` (default
  ``conversations``) with the role under ``tags.role_tag`` and the text under ``tags.content_tag`` (defaults
  ``from`` / ``value`` / ``human`` / ``gpt``), turn i must carry the user tag when i is even and the assistant tag
  when odd, and their number must be even, or the sample is dropped as broken; ``columns.images`` names the image
  list, each path joined to ``media_dir`` (default ``dataset_dir``); the multimodal plugin raises when the number
  of ``<image>`` tokens in the messages differs from the number of images.

Each reader raises AssertionError where the tool would fail or silently drop a sample.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

IMAGE_TOKEN = "<image>"
SHAREGPT_DEFAULT_TAGS = {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt"}


def llava_paths(record: dict[str, Any]) -> list[str]:
    """A LLaVA record's image paths as LLaVA-NeXT reads ``image``: a list as it is, a string as a list of one."""
    image = record["image"]
    return list(image) if isinstance(image, list) else [image]


def _open_rgb(path: str) -> tuple[int, int]:
    """Open an image as the loaders do (PIL, converted to RGB); its (width, height)."""
    from PIL import Image

    with Image.open(path) as image:
        return image.convert("RGB").size


def load_llava(data_path: Path, image_folder: Path) -> list[dict[str, Any]]:
    """Every record of a LLaVA data file as LazySupervisedDataset would serve it: {turns, images (sizes)}."""
    records = json.loads(Path(data_path).read_text())
    assert isinstance(records, list)
    samples = []
    for record in records:
        assert "image" in record, f"{record.get('id')}: no image key: LLaVA would train it as text only"
        paths = llava_paths(record)
        assert all(isinstance(p, str) for p in paths)
        sizes = [_open_rgb(os.path.join(image_folder, p)) for p in paths]
        turns = record["conversations"]
        assert turns and len(turns) % 2 == 0
        for n, turn in enumerate(turns):
            assert turn["from"] == ("human" if n % 2 == 0 else "gpt"), turn
            assert isinstance(turn["value"], str)
        tokens = sum(turn["value"].count(IMAGE_TOKEN) for turn in turns)
        assert tokens == len(paths), f"{record.get('id')}: {tokens} <image> tokens for {len(paths)} images"
        samples.append({"turns": [(t["from"], t["value"]) for t in turns], "images": sizes})
    return samples


def load_llamafactory(dataset_dir: Path, dataset: str) -> list[dict[str, Any]]:
    """The dataset ``dataset`` of ``dataset_dir`` as LLaMA-Factory's sharegpt converter aligns it:
    {prompt, response (role/content), images (sizes)} per sample."""
    info = json.loads((Path(dataset_dir) / "dataset_info.json").read_text())
    assert dataset in info, f"{dataset!r} is not in dataset_info.json"
    entry = info[dataset]
    assert entry.get("formatting", "alpaca") == "sharegpt"
    file_name = entry["file_name"]
    assert Path(file_name).suffix in (".json", ".jsonl")
    text = (Path(dataset_dir) / file_name).read_text()
    rows = json.loads(text) if file_name.endswith(".json") else [json.loads(line) for line in text.splitlines()]
    columns = {"messages": "conversations", **entry.get("columns", {})}
    tags = {**SHAREGPT_DEFAULT_TAGS, **entry.get("tags", {})}
    assert "images" in columns, "no images column: LLaMA-Factory would read the samples as text only"
    roles = {tags["user_tag"]: "user", tags["assistant_tag"]: "assistant"}
    samples = []
    for row in rows:
        messages = row[columns["messages"]]
        aligned = []
        for n, message in enumerate(messages):
            expected = tags["user_tag"] if n % 2 == 0 else tags["assistant_tag"]
            assert message[tags["role_tag"]] == expected, f"invalid role tag: {message}"
            aligned.append({"role": roles[message[tags["role_tag"]]], "content": message[tags["content_tag"]]})
        assert aligned and len(aligned) % 2 == 0, "invalid message count"
        images = row[columns["images"]]
        images = images if isinstance(images, list) else [images]
        paths = [os.path.join(dataset_dir, p) for p in images]  # media_dir defaults to dataset_dir
        assert all(os.path.isfile(p) for p in paths), "an image is not under media_dir"
        tokens = sum(m["content"].count(IMAGE_TOKEN) for m in aligned)
        assert tokens == len(paths), f"the number of images does not match the number of {IMAGE_TOKEN} tokens"
        samples.append({"prompt": aligned[:-1], "response": aligned[-1:], "images": [_open_rgb(p) for p in paths]})
    return samples
