"""stridegen.data.collator: samples of the session dataset through the tiny LLaVA's processor (reference/tiny_vlm.py)
give model inputs the model takes, with one image placeholder run per image and labels on the text only."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # the tests read the session's built dataset and build a tiny model

torch = pytest.importorskip("torch", reason="stridegen.data needs PyTorch (pip install 'stridegen[torch]')")
transformers = pytest.importorskip("transformers", reason="the collator's processor comes from transformers")

from reference.tiny_vlm import build_tiny_vlm  # noqa: E402
from stridegen.data import ProcessorCollator, QASampleDataset  # noqa: E402
from stridegen.data.collator import IGNORE_INDEX, chat_messages  # noqa: E402


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory):
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-vlm"))


def _one_of_each_kind(dataset) -> list[dict]:
    ds = QASampleDataset(dataset)
    spatial = next(i for i in range(len(ds)) if ds[i]["kind"] == "spatial")
    temporal = next(i for i in range(len(ds)) if ds[i]["kind"] == "spatiotemporal")
    return [ds[spatial], ds[temporal]]


def test_chat_messages_put_one_image_part_per_image_in_the_first_user_turn(dataset):
    for sample in _one_of_each_kind(dataset):
        messages = chat_messages(sample)
        assert [m["role"] for m in messages] == ["user", "assistant"] * len(sample["qa_info"])
        first = messages[0]["content"]
        assert [p["type"] for p in first] == ["image"] * len(sample["images"]) + ["text"]
        assert all(p["type"] == "text" and "<image>" not in p["text"] for m in messages[1:] for p in m["content"])
        assert messages[1]["content"][0]["text"] == sample["conversations"][1]["value"]


def test_a_batch_becomes_inputs_the_tiny_llava_trains_on(dataset, tiny_vlm):
    processor = transformers.AutoProcessor.from_pretrained(tiny_vlm)
    batch = _one_of_each_kind(dataset)
    inputs = ProcessorCollator(processor)(batch)
    ids, labels, mask = inputs["input_ids"], inputs["labels"], inputs["attention_mask"]
    assert ids.shape[0] == 2 and labels.shape == ids.shape == mask.shape
    n_images = [len(s["images"]) for s in batch]
    assert inputs["pixel_values"].shape[0] == sum(n_images) == 5
    image_id = processor.tokenizer.convert_tokens_to_ids("<image>")
    per_image = int((ids[0] == image_id).sum())  # the placeholder run of one image (here 1 + 2 x 2 patches)
    assert per_image > 0 and int((ids[1] == image_id).sum()) == 4 * per_image
    assert bool((labels[ids == image_id] == IGNORE_INDEX).all()) and bool((labels[mask == 0] == IGNORE_INDEX).all())
    kept = (labels != IGNORE_INDEX) & (mask == 1)
    assert bool((labels[kept] == ids[kept]).all()) and int(kept.sum()) > 0
    text = processor.tokenizer.decode(ids[1][mask[1] == 1].tolist())
    assert batch[1]["conversations"][-1]["value"] in text  # the last answer is in the rendered conversation
    model = transformers.AutoModelForImageTextToText.from_pretrained(tiny_vlm)
    loss = model(**inputs).loss
    assert torch.isfinite(loss)
    assert "labels" not in ProcessorCollator(processor, labels=False)(batch)
