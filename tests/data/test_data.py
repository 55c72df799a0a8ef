"""stridegen.data: the QA samples of a built dataset as PyTorch datasets, through a DataLoader with two workers."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # the tests read the session's built dataset

torch = pytest.importorskip("torch", reason="stridegen.data needs PyTorch (pip install 'stridegen[torch]')")

from stridegen.data import IterableQASamples, QASampleDataset, collate_samples  # noqa: E402
from stridegen.shards.reader import open_dataset  # noqa: E402
from stridegen.shards.samples import SceneIndex, frame_image, som_image  # noqa: E402


def test_samples_hold_every_question_with_its_images_and_masks(dataset):
    ds = QASampleDataset(dataset)
    raw = QASampleDataset(dataset, images="raw")
    assert len(ds) == len(raw) > 0
    seen: dict[str, tuple[str, str]] = {}
    checked = 0
    with open_dataset(dataset) as source:
        for i in range(len(ds)):
            sample = ds[i]
            n_images = 1 if sample["kind"] == "spatial" else 4
            assert sample["images"].shape[0] == n_images and sample["images"].dtype == torch.uint8
            assert len(sample["masks"]) == len(sample["region_ids"]) == n_images
            conv = sample["conversations"]
            assert conv[0]["value"].count("<image>") == n_images
            for n, info in enumerate(sample["qa_info"]):
                seen[info["question_id"]] = (conv[2 * n]["value"].replace("<image>\n", ""), conv[2 * n + 1]["value"])
            if checked < 4:  # pixels: the Set-of-Mark render and the stored image, frame by frame
                index = SceneIndex(source.scene(sample["meta"]["scene"]))
                k = sample["meta"]["keyframe_index"]
                c = [str(ch) for ch in index.scene.cameras.channel].index(sample["meta"]["camera"])
                frames = [int(index.scene.frames.token.tolist().index(t)) for t in sample["meta"]["frame_tokens"]]
                for j, frame in enumerate(frames):
                    assert np.array_equal(sample["images"][j].numpy(), som_image(index, k, c, frame))
                    assert np.array_equal(raw[i]["images"][j].numpy(), frame_image(index, c, frame))
                checked += 1
        expected = {}
        for name in source.scenes:
            qa = source.scene(name).qa
            expected.update(
                {str(q): (str(a), str(b)) for q, a, b in zip(qa.question_id, qa.question, qa.answer, strict=True)}
            )
    assert seen == expected and checked == 4


def test_dataloader_with_two_workers_and_the_iterable_form_give_the_same_samples(dataset):
    ds = QASampleDataset(dataset, kind="spatiotemporal", images="raw")
    loader = torch.utils.data.DataLoader(ds, batch_size=3, num_workers=2, collate_fn=collate_samples)
    ids = [s["id"] for batch in loader for s in batch]
    assert ids == [ds[i]["id"] for i in range(len(ds))] and len(set(ids)) == len(ids) > 0
    stream = IterableQASamples(dataset, kind="spatiotemporal", images="raw")
    streamed = [
        s["id"]
        for batch in torch.utils.data.DataLoader(stream, batch_size=2, num_workers=2, collate_fn=collate_samples)
        for s in batch
    ]
    assert sorted(streamed) == sorted(ids)


def test_bad_arguments_are_config_errors(dataset):
    from stridegen.core.errors import ConfigError

    with pytest.raises(ConfigError, match="kind must be one of"):
        QASampleDataset(dataset, kind="temporal")
    with pytest.raises(ConfigError, match="images must be one of"):
        QASampleDataset(dataset, images="png")
