"""The ``transformers`` predictor: a local Hugging Face vision-language model (Qwen2.5-VL / Qwen2-VL, InternVL
(``-hf`` checkpoints), LLaVA, or any model that ``AutoModelForImageTextToText`` loads and whose processor has a
chat template), answering in batches.

- The model folder (or hub id, read from the local Hugging Face cache only: ``local_files_only`` unless
  ``allow_download``) loads on the first request; the predictor is a backend of the worker's one backend cache
  (``stridegen.run.backends``), so the model stays loaded for the scenes that follow (one model per worker; on
  Ray, the actors of ``executor.options.actors`` keep theirs).
- Device and dtype are chosen when not given: the first CUDA device in bfloat16 where it is supported (float16
  otherwise), else the CPU in float32.
- Requests are answered ``batch_size`` at a time with left padding, so each prompt's last token sits at the end of
  its row; decoding is greedy unless the generation settings ask for sampling, and seeded before every batch. A
  batch answers exactly as its requests one by one would (tested with a tiny model on the CPU).
- The chat template receives ``[system, user: {image}... {text}]``; the images are the request's JPEG bytes,
  decoded.
"""

from __future__ import annotations

import io
import time
from collections.abc import Sequence
from typing import Any

from stridegen.core.errors import ConfigError, require
from stridegen.predict.base import GenerationSettings, PromptRequest, Reply, ReplyCallback


def pick_device(device: str | None, dtype: str | None) -> tuple[str, str]:
    """(device, dtype name): as given, or the first CUDA device in bfloat16 (float16 where bf16 is not
    supported), else the CPU in float32."""
    torch = require("torch", "torch,predict")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        if device.startswith("cuda"):
            dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        else:
            dtype = "float32"
    if not hasattr(torch, dtype) or not isinstance(getattr(torch, dtype), torch.dtype):
        raise ConfigError(f"dtype {dtype!r} is not a torch dtype (e.g. bfloat16, float16, float32)")
    return device, dtype


def load_model(model: str, device: str, dtype: str, trust_remote_code: bool, allow_download: bool) -> tuple[Any, Any]:
    """(processor, model) of ``model`` on ``device`` in ``dtype``, ready for left-padded batched generation."""
    torch = require("torch", "torch,predict")
    transformers = require("transformers", "predict")
    kwargs = {"trust_remote_code": trust_remote_code, "local_files_only": not allow_download}
    try:
        processor = transformers.AutoProcessor.from_pretrained(model, **kwargs)
        net = transformers.AutoModelForImageTextToText.from_pretrained(model, dtype=getattr(torch, dtype), **kwargs)
    except OSError as exc:  # no such folder / not in the local cache
        raise ConfigError(f"transformers model {model!r}: {' '.join(str(exc).split())[:300]}") from None
    net = net.to(device).eval()
    tokenizer = getattr(processor, "tokenizer", processor)
    tokenizer.padding_side = "left"  # generation continues every row from its own last token
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if getattr(processor, "chat_template", None) is None and getattr(tokenizer, "chat_template", None) is None:
        raise ConfigError(f"transformers model {model!r}: its processor has no chat template")
    return processor, net


def chat_of(request: PromptRequest) -> list[dict[str, Any]]:
    """The chat-template messages of a request (images as placeholders, passed to the processor apart)."""
    content: list[dict[str, Any]] = [{"type": "image"} for _ in request.images]
    content.append({"type": "text", "text": request.text})
    return [
        {"role": "system", "content": [{"type": "text", "text": request.system}]},
        {"role": "user", "content": content},
    ]


class TransformersPredictor:
    """Registry ``predictor`` ``transformers`` (module docstring)."""

    def __init__(
        self,
        model: str,
        batch_size: int = 8,
        device: str | None = None,
        dtype: str | None = None,
        trust_remote_code: bool = False,
        allow_download: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self.device, self.dtype = device, dtype
        self.trust_remote_code = trust_remote_code
        self.allow_download = allow_download
        self._loaded: tuple[Any, Any, str] | None = None  # (processor, model, device): loaded on first use

    def identity(self) -> dict[str, Any]:
        return {"backend": "transformers", "model": self.model}

    def predict(
        self, requests: Sequence[PromptRequest], generation: GenerationSettings, on_reply: ReplyCallback
    ) -> None:
        if not requests:
            return
        torch = require("torch", "torch,predict")
        if self._loaded is None:
            device, dtype = pick_device(self.device, self.dtype)
            processor, net = load_model(self.model, device, dtype, self.trust_remote_code, self.allow_download)
            self._loaded = (processor, net, device)
        processor, net, device = self._loaded
        for start in range(0, len(requests), self.batch_size):
            batch = list(requests[start : start + self.batch_size])
            t0 = time.perf_counter()
            texts, prompt_tokens = self._generate(torch, processor, net, device, batch, generation)
            latency = (time.perf_counter() - t0) / len(batch)
            for j, (text, (n_in, n_out)) in enumerate(zip(texts, prompt_tokens, strict=True)):
                on_reply(start + j, Reply(text, prompt_tokens=n_in, completion_tokens=n_out, latency_s=latency))

    def _generate(
        self,
        torch: Any,
        processor: Any,
        net: Any,
        device: str,
        batch: list[PromptRequest],
        generation: GenerationSettings,
    ) -> tuple[list[str], list[tuple[int, int]]]:
        from PIL import Image

        texts = [processor.apply_chat_template(chat_of(r), tokenize=False, add_generation_prompt=True) for r in batch]
        images = [Image.open(io.BytesIO(b)).convert("RGB") for r in batch for b in r.images]
        inputs = processor(text=texts, images=images or None, padding=True, return_tensors="pt").to(device)
        if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
            inputs["pixel_values"] = inputs["pixel_values"].to(net.dtype)
        sample = generation.temperature > 0.0
        options: dict[str, Any] = {"max_new_tokens": generation.max_new_tokens, "do_sample": sample}
        if sample:
            options.update(temperature=generation.temperature, top_p=generation.top_p)
        tokenizer = getattr(processor, "tokenizer", processor)
        torch.manual_seed(generation.seed)
        with torch.inference_mode():
            out = net.generate(**inputs, **options, pad_token_id=tokenizer.pad_token_id)
        new = out[:, inputs["input_ids"].shape[1] :]
        decoded = tokenizer.batch_decode(new, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        mask = inputs["attention_mask"]
        pad = tokenizer.pad_token_id
        counts = [(int(mask[i].sum()), int((new[i] != pad).sum())) for i in range(len(batch))]
        return [d.strip() for d in decoded], counts
