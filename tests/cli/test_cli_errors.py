"""One error style for every command (docs/cli.md): a corpus of bad inputs against every command of the CLI that
reads a user file, the guard that prints the errors, and the text-file reader behind the inputs.

The corpus (``VARIANTS``): a missing file, an empty file, bytes that are not UTF-8, a UTF-8 byte-order mark before
content of the wrong JSON type, UTF-16 with and without a byte-order mark, a JSON value of the wrong type, a ~5 MB
field, and a path holding Rich markup (``[/red]``). Every (command, input, variant) must end with exit code 1 or 2,
no traceback, nothing that looks like an error on stdout, and exactly one ``error:`` line on stderr that names the
file (verbatim, markup and all) and stays short. The commands come from the CLI's own registry
(stridegen.cli._COMMANDS / _EVAL_COMMANDS / _GROUPS): a new command without cases here fails
``test_every_command_has_bad_input_cases``.
"""

from __future__ import annotations

import importlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from stridegen.cli import app
from stridegen.cli import errors as cli_errors
from stridegen.core.errors import DataFormatError, StrideGenError
from stridegen.formats import textfile
from tests.shared_data import REPO

HUGE_CHARS = 5_000_000
MARKUP_DIR = "in [/red] a [bold]markup[/bold] folder"
runner = CliRunner()

# -------------------------------------------------------------------------------------------------- the corpus
VARIANTS: dict[str, bytes | None] = {
    "missing": None,
    "empty": b"",
    "not_utf8": b'{"question_id": "q\xff\xfe", "pred": "1 m"}\n',
    "bom_wrong_type": textfile.UTF8_BOM + b"[1, 2, 3]\n",
    "utf16": '{"question_id": "q", "pred": "1 m"}\n'.encode("utf-16"),
    "utf16_no_bom": '{"question_id": "q", "pred": "1 m"}\n'.encode("utf-16-le"),
    "wrong_type": b'"a JSON string, not an object or a list"\n',
    "huge_field": b'{"question_id": ["' + b"x" * HUGE_CHARS + b'"], "id": 7}\n',
    "markup_path": b"[/red] not JSON [nan, 1]\n",
}


@dataclass
class Inputs:
    """Valid inputs that go with the bad one (the other arguments of a command)."""

    root: Path
    log: Path
    items: Path
    pred: Path
    records: Path
    verdicts: Path
    image: Path


@dataclass(frozen=True)
class Case:
    """One file argument of one command. ``layout``: the bad bytes are the file itself (``file``), the
    ``scene.json`` table of a copy of a valid nuScenes log (``log``: the argument is the folder), a dataset's
    ``manifest.json`` (``dataset``) or the annotation file of a STRIDE-QA-Bench folder (``bench``).
    ``accepts``: variants that are valid input for this argument (an empty YAML config means the defaults); they
    must succeed, or are not run where a success is a long run (``run_accepted``)."""

    label: str
    argv: Callable[[Path, Inputs], list[str]]
    layout: str = "file"
    suffix: str = ".json"
    accepts: frozenset[str] = field(default_factory=frozenset)
    run_accepted: bool = True


EMPTY_YAML_IS_DEFAULTS = frozenset({"empty"})
# The nuScenes results readers (stridegen/formats/results_json.py, being reworked for results validation) read
# with Path.read_text(): UTF-16 and 0xFF bytes raise a UnicodeDecodeError that names no file. The fix there:
# ``text = textfile.read_text(path, "results file", PredictionFormatError)`` in read_results_json.


def _predict_args(inp: Inputs) -> list[str]:
    return ["-m", "m", "--base-url", "http://127.0.0.1:9/v1", "--out", _out(inp, "predict")]


def _out(inp: Inputs, name: str) -> str:
    return str(inp.root / "out" / name)


CASES: dict[str, list[Case]] = {
    "synth": [
        Case(
            "--rig",
            lambda bad, inp: [
                "synth",
                _out(inp, "synth"),
                "--rig",
                str(bad),
                "--scenes",
                "1",
                "--seconds",
                "0.5",
                "--width",
                "16",
                "--height",
                "16",
            ],
            suffix=".yaml",
        )
    ],
    "convert": [Case("LOG", lambda bad, inp: ["convert", str(bad), "--out", _out(inp, "conv")], layout="log")],
    "check": [Case("LOG", lambda bad, inp: ["check", str(bad)], layout="log")],
    "build": [
        Case("LOG", lambda bad, inp: ["build", str(bad), "--out", _out(inp, "b")], layout="log"),
        Case(
            "--config",
            lambda bad, inp: ["build", str(inp.log), "--out", _out(inp, "b"), "--config", str(bad)],
            suffix=".yaml",
            accepts=EMPTY_YAML_IS_DEFAULTS,
            run_accepted=False,  # a build of the log
        ),
    ],
    "inspect": [Case("DIR", lambda bad, inp: ["inspect", str(bad)], layout="dataset")],
    "detect": [
        Case("LOG", lambda bad, inp: ["detect", str(bad), "--out", _out(inp, "d.json")], layout="log"),
        Case(
            "precomputed path",
            lambda bad, inp: [
                "detect",
                str(inp.log),
                "--out",
                _out(inp, "d.json"),
                "--detector",
                "precomputed",
                "--option",
                f"path={bad}",
            ],
        ),
    ],
    "track": [
        Case("LOG", lambda bad, inp: ["track", str(bad), "--out", _out(inp, "t.json")], layout="log"),
        Case(
            "precomputed path",
            lambda bad, inp: [
                "track",
                str(inp.log),
                "--out",
                _out(inp, "t.json"),
                "--tracker",
                "precomputed",
                "--tracker-option",
                f"path={bad}",
            ],
        ),
    ],
    "augment": [
        Case("DATASET", lambda bad, inp: ["augment", str(bad), "--out", _out(inp, "aug")], layout="dataset"),
        Case(
            "--preview",
            lambda bad, inp: ["augment", "--preview", str(bad), "--out", _out(inp, "sheet.png")],
            suffix=".png",
        ),
    ],
    "validate": [Case("--log-root", lambda bad, inp: ["validate", "--log-root", str(bad)], layout="log")],
    "render": [
        Case("DIR", lambda bad, inp: ["render", str(bad), "--qa", "q", "--out", _out(inp, "r")], layout="dataset")
    ],
    "export": [
        Case(
            "DIR",
            lambda bad, inp: ["export", str(bad), "--format", "answers", "--out", _out(inp, "x")],
            layout="dataset",
        )
    ],
    "predict": [
        Case("SOURCE", lambda bad, inp: ["predict", str(bad), *_predict_args(inp)], layout="dataset"),
        Case("SOURCE (bench)", lambda bad, inp: ["predict", str(bad), *_predict_args(inp)], layout="bench"),
        Case(
            "--profile",
            lambda bad, inp: ["predict", str(inp.root / "no-dataset"), *_predict_args(inp), "--profile", str(bad)],
            suffix=".yaml",
        ),
        Case(
            "--system-prompt-file",
            lambda bad, inp: [
                "predict",
                str(inp.root / "no-dataset"),
                *_predict_args(inp),
                "--system-prompt-file",
                str(bad),
            ],
            suffix=".txt",
            accepts=frozenset({"bom_wrong_type", "wrong_type", "huge_field", "markup_path"}),  # any UTF-8 text
            run_accepted=False,
        ),
    ],
    "report": [
        Case(
            "DIR",
            lambda bad, inp: ["report", str(bad), "--out", _out(inp, "r.html"), "--samples", "0"],
            layout="dataset",
        ),
        Case(
            "--eval",
            lambda bad, inp: ["report", str(inp.root / "no-dataset"), "--eval", str(bad), "--out", _out(inp, "r.html")],
        ),
    ],
    "anonymize": [
        Case("DATASET", lambda bad, inp: ["anonymize", str(bad), "--out", _out(inp, "anon")], layout="dataset")
    ],
    "calibrate poses": [
        Case("LOG", lambda bad, inp: ["calibrate", "poses", str(bad), "--out", _out(inp, "posed")], layout="log")
    ],
    "calibrate ground": [Case("LOG", lambda bad, inp: ["calibrate", "ground", str(bad)], layout="log")],
    "calibrate align": [
        Case("A", lambda bad, inp: ["calibrate", "align", str(bad), str(inp.log)], layout="log"),
        Case("B", lambda bad, inp: ["calibrate", "align", str(inp.log), str(bad)], layout="log"),
    ],
    "calibrate lidar-camera": [Case("LOG", lambda bad, inp: ["calibrate", "lidar-camera", str(bad)], layout="log")],
    "eval detection": [
        Case("--gt", lambda bad, inp: ["eval", "detection", "--gt", str(bad), "--pred", str(inp.pred)], layout="log"),
        Case(
            "--pred",
            lambda bad, inp: ["eval", "detection", "--gt", str(inp.log), "--pred", str(bad)],
        ),
        Case(
            "--config",
            lambda bad, inp: ["eval", "detection", "--gt", str(inp.log), "--pred", str(inp.pred), "--config", str(bad)],
            suffix=".yaml",
        ),
    ],
    "eval tracking": [
        Case("--gt", lambda bad, inp: ["eval", "tracking", "--gt", str(bad), "--pred", str(inp.pred)], layout="log"),
        Case(
            "--pred",
            lambda bad, inp: ["eval", "tracking", "--gt", str(inp.log), "--pred", str(bad)],
        ),
        Case(
            "--config",
            lambda bad, inp: ["eval", "tracking", "--gt", str(inp.log), "--pred", str(inp.pred), "--config", str(bad)],
            suffix=".yaml",
        ),
    ],
    "eval lsr": [
        Case(
            "--pred",
            lambda bad, inp: [
                "eval",
                "lsr",
                "--records",
                str(inp.records),
                "--pred",
                str(bad),
                "--out",
                _out(inp, "l"),
            ],
            suffix=".jsonl",
        ),
        Case(
            "--records",
            lambda bad, inp: ["eval", "lsr", "--records", str(bad), "--pred", str(inp.pred), "--out", _out(inp, "l")],
            suffix=".jsonl",
        ),
        Case(
            "--dataset",
            lambda bad, inp: ["eval", "lsr", "--dataset", str(bad), "--pred", str(inp.pred), "--out", _out(inp, "l")],
            layout="dataset",
        ),
        Case(
            "--sheet",
            lambda bad, inp: [
                "eval",
                "lsr",
                "--dataset",
                str(inp.root / "no-dataset"),
                "--sheet",
                str(bad),
                "--pred",
                str(inp.pred),
                "--out",
                _out(inp, "l"),
            ],
            suffix=".csv",
        ),
        Case(
            "--responses",
            lambda bad, inp: ["eval", "lsr", "--responses", str(bad), "--out", _out(inp, "l")],
            suffix="_t0.json",
        ),
        Case(
            "--bench-dir",
            lambda bad, inp: ["eval", "lsr", "--bench-dir", str(bad), "--pred", str(inp.pred), "--out", _out(inp, "l")],
            layout="bench",
        ),
        Case(
            "--profile",
            lambda bad, inp: [
                "eval",
                "lsr",
                "--records",
                str(inp.records),
                "--pred",
                str(inp.pred),
                "--profile",
                str(bad),
                "--out",
                _out(inp, "l"),
            ],
            suffix=".yaml",
        ),
    ],
    "eval spatial": [
        Case(
            "--pred",
            lambda bad, inp: [
                *("eval", "spatial", "--dataset", str(inp.root / "no-dataset"), "--pred", str(bad)),
                *("--out", _out(inp, "s")),
            ],
            suffix=".jsonl",
        ),
        Case(
            "--dataset",
            lambda bad, inp: [
                "eval",
                "spatial",
                "--dataset",
                str(bad),
                "--pred",
                str(inp.pred),
                "--out",
                _out(inp, "s"),
            ],
            layout="dataset",
        ),
    ],
    "judge run": [
        Case(
            "--input",
            lambda bad, inp: ["judge", "run", "-m", "general", "--input", str(bad), "--dry-run", "-o", _out(inp, "j")],
            suffix=".jsonl",
        ),
        Case(
            "--config",
            lambda bad, inp: [
                *("judge", "run", "-m", "general", "--input", str(inp.items), "--dry-run", "-o", _out(inp, "j")),
                *("--config", str(bad)),
            ],
            suffix=".yaml",
            accepts=EMPTY_YAML_IS_DEFAULTS,
        ),
        Case(
            "--pricing",
            lambda bad, inp: [
                *("judge", "run", "-m", "general", "--input", str(inp.items), "--dry-run", "-o", _out(inp, "j")),
                *("--pricing", str(bad)),
            ],
            suffix=".yaml",
            accepts=EMPTY_YAML_IS_DEFAULTS,
        ),
        Case(
            "--dataset",
            lambda bad, inp: [
                *("judge", "run", "-m", "general", "--dataset", str(bad), "--pred", str(inp.pred), "--dry-run"),
                *("-o", _out(inp, "j")),
            ],
            layout="dataset",
        ),
        Case(
            "--pred",
            lambda bad, inp: [
                *("judge", "run", "-m", "general", "--dataset", str(inp.root / "no-dataset"), "--pred", str(bad)),
                *("--dry-run", "-o", _out(inp, "j")),
            ],
            suffix=".jsonl",
        ),
    ],
    "judge agreement": [
        Case(
            "--judge",
            lambda bad, inp: ["judge", "agreement", "--judge", str(bad), "--human", str(inp.verdicts), "--n-boot", "0"],
            suffix=".jsonl",
        ),
        Case(
            "--human",
            lambda bad, inp: ["judge", "agreement", "--judge", str(inp.verdicts), "--human", str(bad), "--n-boot", "0"],
            suffix=".jsonl",
        ),
    ],
}
# Commands that read no user file (none today); each entry says why.
EXEMPT: dict[str, str] = {}


def registered_commands() -> list[str]:
    """Every command path of the CLI, from the registry stridegen.cli builds the app from."""
    from stridegen.cli import _COMMANDS, _EVAL_COMMANDS, _GROUPS

    names = [name for _, _, name in _COMMANDS] + [f"eval {name}" for _, _, name in _EVAL_COMMANDS]
    for module, attr, group in _GROUPS:
        sub: typer.Typer = getattr(importlib.import_module(module), attr)
        for info in sub.registered_commands:
            assert info.name, f"{module}.{attr}: name every command of a group explicitly"
            names.append(f"{group} {info.name}")
    return names


def test_every_command_has_bad_input_cases() -> None:
    commands = set(registered_commands())
    assert commands == set(CASES) | set(EXEMPT), (
        f"commands without bad-input cases: {sorted(commands - set(CASES) - set(EXEMPT))}; "
        f"cases of unknown commands: {sorted(set(CASES) - commands)}"
    )
    assert not set(CASES) & set(EXEMPT)


# -------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    from stridegen.formats.images import write_rgb
    from stridegen.logs.synthetic import generate_dataset

    root = tmp_path_factory.mktemp("cli-errors")
    generate_dataset(root / "log", scenes=1, seconds=1.0, seed=3, width=32, height=18)
    items = root / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "question": "q?", "reference": "r", "answer": "x"}) + "\n")
    pred = root / "pred.jsonl"
    pred.write_text(json.dumps({"question_id": "q1_g1", "pred": "10 m"}) + "\n")
    records = root / "records.jsonl"
    record = {"question_id": "q1_g1", "group_id": "g1", "horizon_s": 0, "dimension": "target_distance"}
    records.write_text(json.dumps({**record, "gt_value": 10.0}) + "\n")
    verdicts = root / "verdicts.jsonl"
    verdicts.write_text("".join(json.dumps({"id": i, "score": s}) + "\n" for i, s in (("a", 3), ("b", 7))))
    import numpy as np

    image = write_rgb(root / "image.png", np.zeros((8, 8, 3), np.uint8))
    return Inputs(root, root / "log", items, pred, records, verdicts, image)


def _place(case: Case, variant: str, where: Path, inp: Inputs) -> Path:
    """Write the variant's bytes where the case reads them; the argument to pass (a file or a folder)."""
    content = VARIANTS[variant]
    if variant == "markup_path":
        where = where / MARKUP_DIR
    where.mkdir(parents=True, exist_ok=True)
    if case.layout == "file":
        target = argument = where / f"input{case.suffix}"
    elif case.layout == "log":
        argument = where / "log"
        if content is not None:
            shutil.copytree(inp.log / "v1.0-synthetic", argument / "v1.0-synthetic")
            for entry in inp.log.iterdir():
                if entry.name != "v1.0-synthetic":
                    (argument / entry.name).symlink_to(entry)
        target = argument / "v1.0-synthetic" / "scene.json"
    elif case.layout == "dataset":
        argument = where / "dataset"
        target = argument / "manifest.json"
    else:  # bench
        argument = where / "bench"
        target = argument / "strideqa_bench_t0.json"
    if content is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return argument


def _params() -> list:
    params = []
    for command, cases in CASES.items():
        for case in cases:
            for variant in VARIANTS:
                if variant in case.accepts and not case.run_accepted:
                    continue
                params.append(pytest.param(command, case, variant, id=f"{command}|{case.label}|{variant}"))
    return params


@pytest.mark.slow  # 386 commands run through the CLI
@pytest.mark.parametrize(("command", "case", "variant"), _params())
def test_bad_input_gives_one_error_line(command: str, case: Case, variant: str, inputs: Inputs, tmp_path: Path):
    argument = _place(case, variant, tmp_path, inputs)
    result = runner.invoke(app, case.argv(argument, inputs))
    output = result.stdout + result.stderr
    where = f"{command} {case.label} on {variant}:\n{output[-3000:]}"
    assert "Traceback" not in output, where
    assert result.exception is None or isinstance(result.exception, SystemExit), f"{where}\n{result.exception!r}"
    if variant in case.accepts:
        assert result.exit_code == 0, where
        return
    assert result.exit_code in (cli_errors.EXIT_FAILED, cli_errors.EXIT_BAD_INPUT), where
    assert "error:" not in result.stdout, where
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, where
    assert str(argument) in errors[0], where  # the path verbatim: no markup eaten, no line break inside
    assert len(errors[0]) <= cli_errors.MAX_LINE_CHARS + 100, where


# ------------------------------------------------------------------------------------------ the cases
def _invoke(*args: str):
    return runner.invoke(app, list(args))


def _one_error(result) -> str:
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    return errors[0]


def test_lsr_reads_bom_and_integer_question_ids(inputs: Inputs, tmp_path: Path) -> None:
    """A byte-order mark on line 1 and an integer question_id are read; the scores equal the plain file's."""
    records = tmp_path / "records.jsonl"
    rows = [
        {"question_id": 7, "group_id": "g", "horizon_s": 0, "dimension": "target_distance", "gt_value": 10.0},
        {"question_id": "8", "group_id": "g", "horizon_s": 1, "dimension": "target_distance", "gt_value": 20.0},
    ]
    records.write_bytes(textfile.UTF8_BOM + "".join(json.dumps(r) + "\n" for r in rows).encode())
    pred = tmp_path / "pred.jsonl"
    pred.write_bytes(textfile.UTF8_BOM + b'{"question_id": 7, "pred": "10 m"}\n{"question_id": 8, "pred": "90 m"}\n')
    result = _invoke("eval", "lsr", "--records", str(records), "--pred", str(pred), "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
    # question 7 right (10 m), question 8 wrong (90 m against 20 m): one of two
    assert [row["success_rate"] for row in metrics["target_distance"]] == [1.0, 0.0, 0.5]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            b'{"question_id": 7.5, "pred": "1 m"}',
            "line 1: question_id must be a non-empty string or an integer, got 7.5",
        ),
        (b'{"question_id": "", "pred": "1 m"}', "line 1: question_id must be a non-empty string or an integer, got ''"),
        (b'{"pred": "1 m"}', "line 1: missing question id"),
        (b'{"question_id": "a"}', "line 1: no 'pred' (or 'value') field"),
        (b'{"question_id": "a", "pred": "1"}\n{"question_id": "a", "pred": "2"}', "line 2: duplicate question id 'a'"),
        (b"[1, 2]", "line 1: expected a JSON object, got list"),
        (b'{"question_id": "a", "pred": }', "line 1: not valid JSON at column 30 (Expecting value)"),
        (b"\xef\xbb\xbf\xef\xbb\xbf{}", "line 1: not valid JSON at column 1"),  # one mark is dropped, not two
    ],
)
def test_lsr_prediction_lines_are_reported_precisely(inputs: Inputs, tmp_path: Path, line: bytes, reason: str):
    pred = tmp_path / "pred.jsonl"
    pred.write_bytes(line + b"\n")
    result = _invoke("eval", "lsr", "--records", str(inputs.records), "--pred", str(pred), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert _one_error(result).startswith(f"error: {pred}: {reason}"), result.stderr


def test_lsr_unknown_id_names_its_line(inputs: Inputs, tmp_path: Path) -> None:
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"question_id": "q1_g1", "pred": "10 m"}\n\n{"question_id": "nope", "pred": "1 m"}\n')
    result = _invoke("eval", "lsr", "--records", str(inputs.records), "--pred", str(pred), "--out", str(tmp_path))
    assert result.exit_code == 2
    assert _one_error(result) == f"error: {pred}: line 3: question 'nope': unknown question id"


def test_lsr_missing_prediction_file_is_one_line(inputs: Inputs, tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    result = _invoke("eval", "lsr", "--records", str(inputs.records), "--pred", str(missing), "--out", str(tmp_path))
    assert result.exit_code == 2 and result.stderr == f"error: {missing}: predictions file does not exist\n"


def test_bracketed_values_and_markup_survive(inputs: Inputs, tmp_path: Path) -> None:
    """A results box with a NaN translation: the message keeps ``[nan, ...]``, and a path holding Rich markup is
    printed as it is (nothing is parsed as markup)."""
    folder = tmp_path / "[/red]x[bold]"  # a "[" folder holding "red]x[bold]"
    folder.mkdir(parents=True)
    results = folder / "det.json"
    tokens = [s["token"] for s in json.loads((inputs.log / "v1.0-synthetic" / "sample.json").read_text())]
    token = tokens[0]
    box = {
        "sample_token": token,
        "translation": [float("nan"), 0.0, 0.0],
        "size": [1.0, 1.0, 1.0],
        "rotation": [1.0, 0.0, 0.0, 0.0],
        "velocity": [0.0, 0.0],
        "detection_name": "car",
        "detection_score": 0.5,
        "attribute_name": "",
    }
    flags = ("use_camera", "use_lidar", "use_radar", "use_map", "use_external")
    meta = {flag: flag == "use_lidar" for flag in flags}
    results.write_text(json.dumps({"meta": meta, "results": {t: [box] if t == token else [] for t in tokens}}))
    result = _invoke("eval", "detection", "--gt", str(inputs.log), "--pred", str(results))
    line = _one_error(result)
    assert result.exit_code == 2 and str(results) in line and "[nan" in line, line


def test_augment_preview_to_a_text_file_is_refused_before_any_work(inputs: Inputs, tmp_path: Path) -> None:
    out = tmp_path / "x.txt"
    result = _invoke("augment", "--preview", str(inputs.image), "--out", str(out))
    assert result.exit_code == 2 and not out.exists()
    assert _one_error(result) == f"error: {out}: cannot write an image with suffix '.txt'; use .png or .jpg"


def test_judge_missing_config_and_pricing_files(inputs: Inputs, tmp_path: Path) -> None:
    base = ("judge", "run", "-m", "general", "--input", str(inputs.items), "--dry-run", "-o", str(tmp_path))
    for option, what in (("--config", "judge config file"), ("--pricing", "pricing file")):
        missing = tmp_path / f"missing{option}.yaml"
        result = _invoke(*base, option, str(missing))
        assert result.exit_code == 2 and result.stderr == f"error: {missing}: {what} does not exist\n", result.output


def test_judge_agreement_non_numeric_score(inputs: Inputs, tmp_path: Path) -> None:
    human = tmp_path / "human.jsonl"
    human.write_text('{"id": "a", "score": 4}\n{"id": "b", "score": "high"}\n')
    result = _invoke("judge", "agreement", "--judge", str(inputs.verdicts), "--human", str(human), "--n-boot", "0")
    assert result.exit_code == 2
    assert _one_error(result) == f"error: {human}: line 2: 'score' is not a number: 'high'"


def test_usage_errors_of_a_command_are_one_line() -> None:
    result = _invoke("eval", "lsr", "--out", "o", "--on-invalid", "maybe")
    assert result.exit_code == 2
    assert _one_error(result) == "error: Invalid value for '--on-invalid': must be error, skip or fail, got 'maybe'"


# ------------------------------------------------------------------------------------------------- the guard
def _guarded_app(body: Callable[[], None]) -> typer.Typer:
    demo = typer.Typer()

    @demo.command()
    @cli_errors.guarded
    def run() -> None:
        body()

    @demo.command()
    def other() -> None:  # a second command keeps `run` a named sub-command
        pass

    return demo


def _raise(exc: BaseException) -> Callable[[], None]:
    def body() -> None:
        raise exc

    return body


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [
        (DataFormatError("a/b.json", "line 3: bad [nan, 1]"), 2, "error: a/b.json: line 3: bad [nan, 1]"),
        (
            FileNotFoundError(2, "No such file or directory", "x[/red].json"),
            2,
            "error: x[/red].json: No such file or directory",
        ),
        (ValueError("odd"), 2, f"error: ValueError: odd ({cli_errors.DEBUG_HINT})"),
        (
            KeyError("k"),
            4,
            f"error: internal error, KeyError: 'k' (a bug: please report it; {cli_errors.DEBUG_HINT})",
        ),
        (KeyboardInterrupt(), 130, "error: interrupted"),
        (StrideGenError("a\x1b[31m\tb\r\nc"), 2, "error: a [31m b\n  c"),
    ],
)
def test_guard_prints_one_line_and_the_exit_code(exc: BaseException, code: int, line: str) -> None:
    result = runner.invoke(_guarded_app(_raise(exc)), ["run"])
    assert result.exit_code == code and result.stderr == line + "\n" and result.stdout == "", result.output


def test_guard_cuts_long_messages_and_lists_extra_lines() -> None:
    long = StrideGenError("x" * 5000 + "\n" + "\n".join(f"detail {i}" for i in range(30)))
    result = runner.invoke(_guarded_app(_raise(long)), ["run"])
    lines = result.stderr.splitlines()
    assert lines[0] == "error: " + "x" * cli_errors.MAX_LINE_CHARS + "... (4000 more characters)"
    assert lines[1:3] == ["  detail 0", "  detail 1"] and lines[-1] == "  ... (10 more lines)"
    assert len(lines) == 2 + cli_errors.MAX_DETAIL_LINES


def test_guard_lets_exits_through_and_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    assert runner.invoke(_guarded_app(_raise(typer.Exit(1))), ["run"]).exit_code == 1
    monkeypatch.setenv(cli_errors.DEBUG_ENV, "1")
    result = runner.invoke(_guarded_app(_raise(KeyError("k"))), ["run"])
    assert isinstance(result.exception, KeyError)  # propagated unchanged: the traceback is the runner's to show


def test_every_registered_command_is_guarded() -> None:
    import typer.main

    def callbacks(group) -> list:
        out = []
        for command in group.commands.values():
            out += callbacks(command) if hasattr(command, "commands") else [command.callback]
        return out

    found = callbacks(typer.main.get_command(app))
    assert len(found) == len(registered_commands())
    for callback in found:  # typer wraps callbacks; the guard is beneath
        inner = callback
        while not cli_errors.is_guarded(inner) and hasattr(inner, "__wrapped__"):
            inner = inner.__wrapped__
        assert cli_errors.is_guarded(inner), callback


def test_docs_list_every_exit_code() -> None:
    text = (REPO / "docs" / "cli.md").read_text()
    for name in ("EXIT_OK", "EXIT_FAILED", "EXIT_BAD_INPUT", "EXIT_EMPTY", "EXIT_INTERNAL", "EXIT_INTERRUPTED"):
        assert f"| `{getattr(cli_errors, name)}` |" in text, name
    assert cli_errors.DEBUG_ENV in text


# ------------------------------------------------------------------------------------------ the text reader
@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("[1]".encode("utf-16"), "is UTF-16 LE (byte-order mark FF FE) text"),
        ("[1]".encode("utf-16-be"), "is UTF-16 BE (no byte-order mark) text"),
        ("[1]".encode("utf-16-le"), "is UTF-16 LE (no byte-order mark) text"),
        ("[1]".encode("utf-32"), "is UTF-32 LE (byte-order mark FF FE 00 00) text"),
        ("[1]".encode("utf-32-be"), "is UTF-32 BE (no byte-order mark) text"),
        (b'["a",\n "b\xffc"]', "line 2: file is not UTF-8 text: byte 0xFF at column 4 (byte offset 9)"),
        (b"", "file is empty; expected JSON"),
        (b"\n[1,\n 2,,]", "line 3: not valid JSON at column 4 (Expecting value)"),
    ],
)
def test_text_reader_names_the_encoding_or_the_place(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(data)
    with pytest.raises(DataFormatError) as info:
        textfile.load_json(path)
    assert info.value.path == str(path) and reason in info.value.reason, info.value.reason


def test_text_reader_drops_one_bom_and_keeps_json_line_separators(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(textfile.UTF8_BOM + '{"a": "x\u2028y"}\n\n[2]\n'.encode())
    assert list(textfile.iter_jsonl(path)) == [(1, {"a": "x\u2028y"}), (3, [2])]
    path.write_bytes(b"\n \n")
    with pytest.raises(DataFormatError, match="is empty: no JSON lines"):
        list(textfile.iter_jsonl(path))
    with pytest.raises(DataFormatError, match="is a folder; expected a file"):
        textfile.read_text(tmp_path)


def test_yaml_errors_name_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\nb: [1, 2\nc: 3\n")
    with pytest.raises(DataFormatError, match=r"line 3: invalid YAML at column 2 \(while parsing a flow sequence"):
        textfile.load_yaml(path)
    assert textfile.shown("x" * 500).endswith("... (422 more characters)")


def test_text_reader_counts_columns_in_characters_after_the_bom(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(textfile.UTF8_BOM + '"é'.encode() + b"\xff")
    with pytest.raises(
        DataFormatError, match=r"line 1: file is not UTF-8 text: byte 0xFF at column 3 \(byte offset 6\)"
    ):
        textfile.read_text(path)
