"""Shared by the predict tests: a predict spec over a source, and a loopback server that answers every question with
the dataset's own answer (it knows each request's content)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stridegen.predict.base import GenerationSettings
from stridegen.predict.job import PredictSpec, scene_requests
from stridegen.predict.openai_backend import chat_messages
from stridegen.predict.prompts import load_profile
from stridegen.predict.questions import QuestionSource
from tests.chat_server import Reply, completion_body

KEY_ENV = "STRIDEGEN_TEST_PREDICT_KEY"
SECRET = "sk-test-0123456789abcdefghijklmnop"  # key-shaped, so redaction also catches it by its prefix


def spec_for(source: Path, out: Path, base_url: str, **kw: Any) -> PredictSpec:
    options = {"model": "fake-vlm", "base_url": base_url, "api_key_env": KEY_ENV, "timeout_s": 2.0}
    options.update(kw.pop("options", {}))
    values: dict[str, Any] = {
        "source": str(source),
        "predictor": "openai",
        "options": options,
        "profile": load_profile(kw.pop("profile", "strideqa-bench")),
        "generation": GenerationSettings(max_new_tokens=64),
        "cache_dir": str(out / "cache"),
        "out_dir": str(out),
    }
    values.update(kw)
    return PredictSpec(**values)


def messages_key(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, sort_keys=True)


def truth_by_request(spec: PredictSpec, answers: dict[str, str]) -> dict[str, str]:
    """The messages each question of ``spec``'s source is sent with -> its true answer (``answers`` by id)."""
    source = QuestionSource(spec.source, spec.marks())
    table = {}
    for scene in source.scenes():
        with source.scene_questions(scene) as questions:
            questions = questions[: spec.limit]
            for q, request in zip(questions, scene_requests(spec, questions), strict=True):
                table[messages_key(chat_messages(request))] = answers[q.question_id]
    return table


def truthful(table: dict[str, str]):
    """A server script that answers each known request with its truth (a 404-like error for anything else)."""

    def script(body: dict[str, Any], seen: int) -> Reply:
        answer = table.get(messages_key(body["messages"]))
        if answer is None:
            return Reply(400, {"error": {"message": "unknown request"}})
        return Reply(200, completion_body(answer, model="fake-vlm"))

    return script


def dataset_answers(dataset: Path) -> dict[str, tuple[str, str]]:
    """question id -> (category, the dataset's answer)."""
    from stridegen.shards.reader import open_dataset

    out = {}
    with open_dataset(dataset) as ds:
        for name in ds.scenes:
            qa = ds.scene(name).qa
            if qa is None:
                continue
            for i in range(len(qa)):
                out[str(qa.question_id[i])] = (str(qa.category[i]), str(qa.answer[i]))
    return out


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
