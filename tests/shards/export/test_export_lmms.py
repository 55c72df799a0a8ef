"""stridegen export --format lmms-eval: the task folder loaded by lmms-eval's own task loader, and scored by
stridegen's LSR evaluator through the task's functions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from stridegen.core.errors import ConfigError
from stridegen.eval.lsr.lmms_task import LmmsEvalTask
from stridegen.formats.lmms_task import DOC_FUNCTIONS, METRICS
from stridegen.jobs.export import run_export
from stridegen.shards.reader import open_dataset

TASK = "stridegen_spatiotemporal"


@pytest.fixture(scope="module")
def task_dir(dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lmms") / "out"
    result = run_export(dataset, out, "lmms-eval")
    assert result.ok, [r.reason for r in result.failed]
    return out


def _docs(task_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (task_dir / "data" / f"{TASK}.jsonl").read_text().splitlines()]


def _spatiotemporal(dataset: Path) -> dict[str, tuple[str, str]]:
    """question id -> (question, answer) of every spatiotemporal question of the dataset."""
    out = {}
    with open_dataset(dataset) as ds:
        for scene in ds:
            qa = scene.qa
            for q in np.flatnonzero(np.asarray(qa.category, dtype=object) == "spatiotemporal").tolist():
                out[str(qa.question_id[q])] = (str(qa.question[q]), str(qa.answer[q]))
    return out


def _function_loader() -> type[yaml.SafeLoader]:
    """A YAML loader that reads ``!function utils.f`` as the string ``"utils.f"``."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    return Loader


def _config(task_dir: Path, task: str = TASK) -> dict[str, Any]:
    config: dict[str, Any] = yaml.load((task_dir / f"{task}.yaml").read_text(), Loader=_function_loader())
    return config


def _score(
    process_results: Any, aggregations: dict[str, Any], docs: list[dict[str, Any]], answers: dict[str, str]
) -> dict[str, float]:
    """Every metric over ``docs`` answered by ``answers`` (question id -> text), through a task's process_results
    and aggregation functions (metric -> function)."""
    results = [process_results(doc, [answers[doc["question_id"]]]) for doc in docs]
    return {metric: aggregations[metric]([r[metric] for r in results]) for metric in METRICS}


@pytest.mark.slow  # exports the session's built dataset
def test_every_spatiotemporal_question_is_a_document_with_its_frames(dataset, task_dir):
    docs = _docs(task_dir)
    truth = _spatiotemporal(dataset)
    assert sorted(d["question_id"] for d in docs) == sorted(truth)  # each once, nothing else
    for doc in docs:
        assert (doc["question"], doc["answer"]) == truth[doc["question_id"]]
        assert len(doc["images"]) == 4 and all((task_dir / p).is_file() for p in doc["images"])
        records = json.loads(doc["lsr"])
        assert records and {r["question_id"] for r in records} == {doc["question_id"]}
        assert {r["horizon_s"] for r in records} == {doc["horizon_s"]}


@pytest.mark.slow  # exports the session's built dataset
def test_the_yaml_names_the_data_and_the_functions_of_utils(task_dir):
    """Without lmms-eval: the fields its loader reads (task, dataset_path / dataset_kwargs.data_files, test_split,
    output_type, the document functions, metric_list with aggregations) and the functions in utils.py."""
    config = _config(task_dir)
    assert config["task"] == TASK and config["test_split"] == "test" and config["output_type"] == "generate_until"
    assert config["dataset_path"] == "json"
    assert Path(config["dataset_kwargs"]["data_files"]["test"]) == (task_dir / "data" / f"{TASK}.jsonl").resolve()
    assert [config[name] for name in DOC_FUNCTIONS] == [f"utils.{name}" for name in DOC_FUNCTIONS]
    assert [(m["metric"], m["aggregation"]) for m in config["metric_list"]] == [
        (metric, f"utils.aggregate_{metric}") for metric in METRICS
    ]
    namespace: dict[str, Any] = {"__file__": str(task_dir / "utils.py")}
    exec(compile((task_dir / "utils.py").read_text(), str(task_dir / "utils.py"), "exec"), namespace)
    assert all(callable(namespace[f]) for f in (*DOC_FUNCTIONS, *(f"aggregate_{m}" for m in METRICS)))
    task = LmmsEvalTask(task_dir)
    doc = _docs(task_dir)[0]
    images = namespace["doc_to_visual"](doc, config["lmms_eval_specific_kwargs"]["default"])
    assert len(images) == 4 and all(image.mode == "RGB" for image in images)
    assert doc["question"] in namespace["doc_to_text"](doc, config["lmms_eval_specific_kwargs"]["default"])
    assert namespace["doc_to_text"](doc) == task.doc_to_text(doc)


@pytest.mark.slow  # exports the session's built dataset
def test_the_datasets_own_answers_score_one_and_a_wrong_answer_lowers_its_dimension(task_dir):
    docs = _docs(task_dir)
    task = LmmsEvalTask(task_dir)
    aggregations = {metric: task.aggregation(metric) for metric in METRICS}
    answers = {d["question_id"]: d["answer"] for d in docs}
    assert _score(task.process_results, aggregations, docs, answers) == dict.fromkeys(METRICS, 1.0)
    distance = next(d for d in docs if d["predicate"] == "ego_distance_data")  # a target distance at t = 0
    wrong = {**answers, distance["question_id"]: "I cannot tell."}
    scores = _score(task.process_results, aggregations, docs, wrong)
    # the localization (distance and direction) of that group at t = 0 fails: LSR, its distance rate, TLC, MLSR
    assert max(scores["lsr_target_distance"], scores["lsr"], scores["tlc"], scores["mlsr"]) < 1.0
    assert scores["lsr_target_direction"] == scores["lsr_ego_velocity"] == scores["lsr_target_velocity"] == 1.0
    with pytest.raises(ValueError, match="unknown metric"):
        task.aggregation("accuracy")


@pytest.mark.slow  # exports the session's built dataset
def test_a_group_asked_in_part_is_left_out_of_tlc_and_mlsr(task_dir):
    """lmms-eval's --limit runs the first documents only: a group cut short is no failure of TLC / MLSR."""
    docs = _docs(task_dir)
    groups = list(dict.fromkeys(d["group_id"] for d in docs))
    run = [d for d in docs if d["group_id"] in groups[:2]] + [d for d in docs if d["group_id"] == groups[2]][:3]
    assert all(d["group_size"] == sum(e["group_id"] == d["group_id"] for e in docs) for d in docs)
    task = LmmsEvalTask(task_dir)
    answers = {d["question_id"]: d["answer"] for d in docs}
    aggregations = {metric: task.aggregation(metric) for metric in METRICS}
    assert _score(task.process_results, aggregations, run, answers) == dict.fromkeys(METRICS, 1.0)
    counts = task.evaluate([task.process_results(d, [answers[d["question_id"]]])["lsr"] for d in run])["counts"]
    assert (counts["groups"], counts["consistency_groups"], counts["partial_groups"]) == (3, 2, 1)


@pytest.mark.slow  # exports the session's built dataset
def test_lmms_evals_own_task_loader_accepts_the_export(dataset, task_dir, tmp_path, monkeypatch):
    tasks = pytest.importorskip(
        "lmms_eval.tasks",
        reason="lmms-eval is not installed (pip install --no-deps lmms-eval==0.7.3 and its loader's imports: "
        "docs/export.md)",
    )
    monkeypatch.setenv("LMMS_EVAL_DATASETS_CACHE", str(tmp_path / "datasets-cache"))
    manager = tasks.TaskManager(include_path=str(task_dir), include_defaults=False)
    assert TASK in manager.all_tasks
    task = manager.load_task_or_group([TASK])[TASK]
    docs = list(task.test_docs())
    assert sorted(d["question_id"] for d in docs) == sorted(_spatiotemporal(dataset))
    images = task.doc_to_visual(docs[0])
    assert len(images) == 4 and images[0].size == (320, 180)
    assert docs[0]["question"] in task.doc_to_text(docs[0])
    # lmms-eval's own process_results and aggregations: the dataset's answers score 1.0 on every metric
    answers = {d["question_id"]: d["answer"] for d in docs}
    assert _score(task.process_results, task.aggregation(), docs, answers) == dict.fromkeys(METRICS, 1.0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"task": "stridegen-st"}, "lmms-eval task"),
        ({"location": "relative/folder"}, "absolute folder path"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"profile": ""}, "profile"),
    ],
)
def test_bad_options_fail_before_any_work(tmp_path, options, message):
    with pytest.raises(ConfigError, match=message):
        run_export(tmp_path / "missing", tmp_path / "x", "lmms-eval", options)


@pytest.mark.slow  # exports the session's built dataset
def test_location_and_task_name_are_written(dataset, tmp_path):
    out = tmp_path / "named"
    assert run_export(dataset, out, "lmms-eval", {"task": "my_task", "location": "/data/tasks/my_task"}).ok
    config = _config(out, "my_task")
    assert config["task"] == "my_task"
    assert config["dataset_kwargs"]["data_files"]["test"] == "/data/tasks/my_task/data/my_task.jsonl"
    assert (out / "data" / "my_task.jsonl").is_file()
