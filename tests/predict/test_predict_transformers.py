"""The ``transformers`` predictor end to end on the CPU with a tiny model built from the library's own config
classes (random weights, saved to a folder and loaded from it): batched and one-by-one answers are the same, and a
predict run over a dataset writes its answers and answers a rerun from the cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from predict_helpers import read_jsonl

from reference.tiny_vlm import build_tiny_vlm
from stridegen.core import registry
from stridegen.formats.images import encode_jpeg
from stridegen.predict.base import GenerationSettings, PromptRequest, Reply
from stridegen.predict.images import render_frame
from stridegen.predict.job import PredictSpec, run_predict
from stridegen.predict.prompts import load_profile

pytest.importorskip("torch", reason="needs torch (extra `torch`)")
pytest.importorskip("transformers", reason="needs transformers (extra `predict`)")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-vlm"))


def _requests() -> list[PromptRequest]:
    import numpy as np

    rng = np.random.default_rng(3)
    frames = [
        render_frame(
            encode_jpeg(rng.integers(0, 255, (90, 160, 3), dtype=np.uint8), 90).tobytes(),
            np.zeros((0, 90, 160), dtype=bool),
            [],
            (56, 42),
            0.2,
            90,
        )
        for _ in range(4)
    ]
    return [
        PromptRequest("Answer briefly.", "How far is Region [0]?", tuple(frames)),
        PromptRequest("Answer briefly.", "Is Region [1] to the left of Region [2]?", (frames[0],)),
        PromptRequest("Answer briefly.", "What is the ego speed in 2 seconds?", tuple(frames[1:])),
        PromptRequest("Answer briefly.", "x", ()),  # a blind request: no image at all
    ]


def _answers(model: Path, batch_size: int, requests: list[PromptRequest]) -> list[Reply]:
    predictor = registry.make("predictor", "transformers", {"model": str(model), "batch_size": batch_size})
    replies: list[Reply | None] = [None] * len(requests)

    def on_reply(i: int, reply: Reply) -> None:
        replies[i] = reply

    predictor.predict(requests, GenerationSettings(max_new_tokens=10), on_reply)
    assert all(r is not None for r in replies)
    return [r for r in replies if r is not None]


def test_batched_and_one_by_one_answers_are_the_same(tiny_model: Path) -> None:
    requests = _requests()
    batched = _answers(tiny_model, 4, requests)
    single = _answers(tiny_model, 1, requests)
    assert [r.text for r in batched] == [r.text for r in single]
    assert all(r.ok and r.text for r in batched)
    assert all(r.completion_tokens > 0 and r.prompt_tokens > r.completion_tokens for r in batched)


def test_missing_model_folder_is_a_config_error(tmp_path: Path) -> None:
    from stridegen.core.errors import ConfigError

    predictor = registry.make("predictor", "transformers", {"model": str(tmp_path / "absent")})
    with pytest.raises(ConfigError, match="absent"):
        predictor.predict(_requests()[:1], GenerationSettings(), lambda i, r: None)


@pytest.mark.slow
def test_predict_run_over_a_dataset_with_a_local_model(tiny_model: Path, dataset: Path, tmp_path: Path) -> None:
    spec = PredictSpec(
        source=str(dataset),
        predictor="transformers",
        options={"model": str(tiny_model), "batch_size": 3},
        profile=load_profile("strideqa-bench"),
        generation=GenerationSettings(max_new_tokens=6),
        limit=4,
        cache_dir=str(tmp_path / "run" / "cache"),
        out_dir=str(tmp_path / "run"),
    )
    result = run_predict(spec)
    assert result.ok and result.answered == 8 and result.summary["sent"] == 8
    preds = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    assert len(preds) == 8 and all(isinstance(p["pred"], str) for p in preds)
    # a run into another folder sharing the cache answers everything from it, the same bytes
    again = run_predict(spec.model_copy(update={"out_dir": str(tmp_path / "again")}))
    assert again.summary["cached"] == 8 and again.summary["sent"] == 0
    assert (tmp_path / "again" / "predictions.jsonl").read_bytes() == (
        tmp_path / "run" / "predictions.jsonl"
    ).read_bytes()
