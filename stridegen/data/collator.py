"""A collator for a Hugging Face processor: a batch of stridegen.data samples turned into model inputs.

    from transformers import AutoProcessor
    from stridegen.data import QASampleDataset
    from stridegen.data.collator import ProcessorCollator

    processor = AutoProcessor.from_pretrained("llava-hf/llava-1.5-7b-hf")
    loader = DataLoader(QASampleDataset("out/demo"), batch_size=4, collate_fn=ProcessorCollator(processor))
    loss = model(**next(iter(loader))).loss

Each sample's ``conversations`` become the processor's chat messages: the first user message holds one
``{"type": "image"}`` part per image (in ``images`` order, where the sample's ``<image>`` lines stood) and the
question's text, later user messages the question's text, each assistant message the answer. The processor's own
chat template renders them (``apply_chat_template(..., tokenize=False)``), and the processor tokenizes the texts
with the batch's images (padded, PyTorch tensors). ``labels`` are the input ids with the padding and the image
placeholder tokens set to -100, so the loss covers the conversation text (the usual supervised fine-tuning setup of
transformers' and TRL's vision-language examples); set ``labels=False`` for inference-only inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stridegen.shards.export.chat import IMAGE_TOKEN

IGNORE_INDEX = -100  # the label value PyTorch's cross-entropy (and transformers' models) leave out of the loss


def chat_messages(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """A sample's ``conversations`` as chat messages with typed content parts (module docstring)."""
    messages: list[dict[str, Any]] = []
    for n, turn in enumerate(sample["conversations"]):
        if turn["from"] == "human":
            text = turn["value"]
            content: list[dict[str, Any]] = []
            if n == 0:
                content = [{"type": "image"} for _ in range(len(sample["images"]))]
                text = text.replace(f"{IMAGE_TOKEN}\n", "")
            messages.append({"role": "user", "content": [*content, {"type": "text", "text": text}]})
        else:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": turn["value"]}]})
    return messages


class ProcessorCollator:
    """Batch of samples -> the processor's model inputs (``input_ids``, ``attention_mask``, ``pixel_values``, ...,
    and ``labels``); module docstring."""

    def __init__(self, processor: Any, labels: bool = True) -> None:
        self.processor = processor
        self.labels = labels

    def images(self, sample: dict[str, Any]) -> list[Any]:
        """The sample's images (uint8 [N, H, W, 3]) as RGB PIL images, in order."""
        from PIL import Image

        return [Image.fromarray(np.asarray(image)) for image in sample["images"]]

    def __call__(self, batch: Sequence[dict[str, Any]]) -> Any:
        texts = [
            self.processor.apply_chat_template(chat_messages(s), tokenize=False, add_generation_prompt=False)
            for s in batch
        ]
        images = [image for s in batch for image in self.images(s)]
        inputs = self.processor(text=texts, images=images or None, padding=True, return_tensors="pt")
        if self.labels:
            labels = inputs["input_ids"].clone()
            labels[inputs["attention_mask"] == 0] = IGNORE_INDEX
            image_token_id = getattr(self.processor, "image_token_id", None)
            if image_token_id is None:
                image_token_id = self.processor.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
            labels[labels == image_token_id] = IGNORE_INDEX
            inputs["labels"] = labels
        return inputs
