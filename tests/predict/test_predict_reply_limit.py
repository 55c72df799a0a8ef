"""`stridegen predict` against a server that answers with megabytes (issue 33): each such reply fails its question
with ``reply_too_large`` (one line in failures.jsonl), is not retried and is stored nowhere; the other questions
are answered as usual."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from predict_helpers import KEY_ENV, SECRET, read_jsonl, spec_for

from stridegen.predict.job import run_predict
from tests.chat_server import Reply, ScriptedServer, completion_body

pytestmark = [pytest.mark.openai, pytest.mark.slow]


def test_huge_replies_fail_their_question_and_are_stored_nowhere(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    huge = "Region [0] is 12.5 meters away. " * 200  # 6,400 characters, over the 5,000 allowed below

    def script(body: dict, seen: int) -> Reply:
        return Reply(200, completion_body(huge if len(json.dumps(body)) % 2 else "Region [0] is 3 meters away."))

    with ScriptedServer(script) as server:
        spec = spec_for(dataset, tmp_path / "run", server.base_url, limit=8, options={"max_reply_chars": 5000})
        run_predict(spec)
        sent = len(server.requests)
    answered = read_jsonl(tmp_path / "run" / "predictions.jsonl")
    failed = read_jsonl(tmp_path / "run" / "failures.jsonl")
    assert failed and answered and len(answered) + len(failed) == 16
    assert {f["error_kind"] for f in failed} == {"reply_too_large"}
    assert all("6,400 characters, over the limit of 5,000" in f["error"] for f in failed)
    assert sent == 16  # none retried
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert b"12.5 meters away. Region" not in path.read_bytes(), path
