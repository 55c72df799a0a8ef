"""PyTorch datasets over a built stridegen dataset: the QA samples (stridegen.shards.samples) with their images.

    from torch.utils.data import DataLoader
    from stridegen.data import QASampleDataset, collate_samples

    ds = QASampleDataset("out/demo", kind="spatiotemporal", images="som")
    loader = DataLoader(ds, batch_size=4, num_workers=2, collate_fn=collate_samples)

A sample is a dict:

- ``id``, ``kind`` ("spatial" | "spatiotemporal"), ``meta`` (scene, camera, keyframe sample token, frame tokens,
  regions with their track ids and classes);
- ``images``: uint8 tensor [N, H, W, 3] (N = 1 for spatial samples, 4 context frames oldest first for
  spatiotemporal ones), the Set-of-Mark render (``images="som"``) or the stored image (``"raw"``);
- ``masks``: one bool tensor [M, H, W] per image, the marked regions' masks, and ``region_ids``: their ids;
- ``conversations``: [{"from": "human" | "gpt", "value"}, ...] (the first human turn starts with one ``<image>``
  token per image; the key and turns of every export), and ``qa_info``: the structured truth of each turn pair.

``collate_samples`` keeps a batch as a list; ``ProcessorCollator(processor)`` (stridegen.data.collator) turns it
into a Hugging Face processor's model inputs with labels.

``QASampleDataset`` is map-style: it indexes the samples once (reading only the QA tables) and reads a sample's
images on demand; each worker process opens the HDF5 shards itself (handles are never pickled).
``IterableQASamples`` streams scene by scene, the scenes split across the DataLoader's workers.
torch is imported only here (``pip install stridegen[torch]``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core.errors import ConfigError
from stridegen.data.collator import ProcessorCollator
from stridegen.shards.export.chat import sharegpt_turns
from stridegen.shards.reader import Dataset, open_dataset
from stridegen.shards.samples import SceneIndex, frame_image, frame_marks, scene_samples

KINDS = ("all", "spatial", "spatiotemporal")
IMAGE_MODES = ("som", "raw")


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ConfigError("stridegen.data needs PyTorch: pip install 'stridegen[torch]'") from None
    return torch


class _Reader:
    """Turns indexed samples into tensors; opens the dataset lazily, once per process."""

    def __init__(self, root: str | Path, kind: str, images: str, alpha: float) -> None:
        if kind not in KINDS:
            raise ConfigError(f"kind must be one of {KINDS}, got {kind!r}")
        if images not in IMAGE_MODES:
            raise ConfigError(f"images must be one of {IMAGE_MODES}, got {images!r}")
        self.root = str(root)
        self.kind = kind
        self.images = images
        self.alpha = alpha
        self._dataset: Dataset | None = None
        self._indexes: dict[str, SceneIndex] = {}
        self._samples: dict[str, list[dict[str, Any]]] = {}

    def __getstate__(self) -> dict[str, Any]:  # a DataLoader worker gets its own handles
        return {**self.__dict__, "_dataset": None, "_indexes": {}, "_samples": {}}

    def dataset(self) -> Dataset:
        if self._dataset is None:
            self._dataset = open_dataset(self.root)
        return self._dataset

    def index(self, scene: str) -> SceneIndex:
        if scene not in self._indexes:
            self._indexes[scene] = SceneIndex(self.dataset().scene(scene))
        return self._indexes[scene]

    def samples(self, scene: str) -> list[dict[str, Any]]:
        if scene not in self._samples:
            out = scene_samples(self.index(scene))
            self._samples[scene] = out if self.kind == "all" else [s for s in out if s["kind"] == self.kind]
        return self._samples[scene]

    def tensors(self, scene: str, sample: dict[str, Any]) -> dict[str, Any]:
        from stridegen.pipeline.som import draw_set_of_marks

        torch = _torch()
        index = self.index(scene)
        k, c = sample["keyframe_index"], sample["channel_index"]
        images, masks, ids = [], [], []
        for frame in sample["frames"]:
            rgb = frame_image(index, c, frame)
            frame_masks, frame_ids = frame_marks(index, k, c, frame)
            if self.images == "som":
                rgb = draw_set_of_marks(rgb, frame_masks, frame_ids, alpha=self.alpha)
            images.append(rgb)
            masks.append(torch.from_numpy(np.ascontiguousarray(frame_masks)))
            ids.append(frame_ids)
        return {
            "id": sample["id"],
            "kind": sample["kind"],
            "images": torch.from_numpy(np.stack(images)),
            "masks": masks,
            "region_ids": ids,
            "conversations": sharegpt_turns(sample),
            "qa_info": [t["qa_info"] for t in sample["turns"]],
            "meta": sample["meta"],
        }


def _dataset_base() -> Any:
    return _torch().utils.data.Dataset


def _iterable_base() -> Any:
    return _torch().utils.data.IterableDataset


class QASampleDataset(_dataset_base()):  # type: ignore[misc]
    """Map-style dataset of QA samples (module docstring)."""

    def __init__(self, root: str | Path, kind: str = "all", images: str = "som", alpha: float = 0.4) -> None:
        super().__init__()
        self.reader = _Reader(root, kind, images, alpha)
        self.items: list[tuple[str, int]] = []
        with open_dataset(root) as ds:
            scenes = list(ds.scenes)
        for scene in scenes:
            self.items += [(scene, n) for n in range(len(self.reader.samples(scene)))]
        self.reader = _Reader(root, kind, images, alpha)  # drop the indexing handles before workers copy it

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, Any]:
        scene, n = self.items[i]
        return self.reader.tensors(scene, self.reader.samples(scene)[n])


class IterableQASamples(_iterable_base()):  # type: ignore[misc]
    """Iterable dataset of QA samples, scene by scene; each DataLoader worker takes every n-th scene."""

    def __init__(self, root: str | Path, kind: str = "all", images: str = "som", alpha: float = 0.4) -> None:
        super().__init__()
        self.reader = _Reader(root, kind, images, alpha)
        with open_dataset(root) as ds:
            self.scenes = list(ds.scenes)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = _torch().utils.data.get_worker_info()
        scenes = self.scenes if info is None else self.scenes[info.id :: info.num_workers]
        for scene in scenes:
            for sample in self.reader.samples(scene):
                yield self.reader.tensors(scene, sample)


def collate_samples(batch: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep a batch as a list of samples (images of different samples may differ in count and size)."""
    return list(batch)


__all__ = ["IterableQASamples", "ProcessorCollator", "QASampleDataset", "collate_samples"]
