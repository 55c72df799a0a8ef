"""`stridegen validate`: detector + tracker over a log with ground truth, printed like STRIDE-QA table 6; with
``--qa``, what that perception does to the dataset's answers (stridegen/eval/validate/qa_evaluate.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from stridegen.cli.errors import guarded
from stridegen.core.errors import UsageError


@guarded
def validate(
    log_root: Path | None = None,
    detector: str = "simulated",
    profile: str = "bevfusion",
    seed: int = 0,
    max_age: int = 3,
    option: list[str] | None = typer.Option(
        None,
        "--option",
        help="Detector option key=value (YAML value), repeatable; over the defaults, e.g. --option model=centerpoint "
        "--option checkpoint=ckpt.pth for --detector mmdet3d.",
        show_default=False,
    ),
    qa: bool = typer.Option(
        False,
        "--qa",
        help="Build the log with the oracle and with this detector (and --set overrides), then compare the two "
        "datasets' answers per QA category and predicate (docs/validate-qa.md).",
    ),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="--qa: folder for the two builds (OUT/oracle, OUT/candidate; resumed when there)."
    ),
    reference: Path | None = typer.Option(
        None, "--reference", help="--qa: an oracle build of the log to use instead of building one."
    ),
    candidate: Path | None = typer.Option(
        None, "--candidate", help="--qa: a build of the log to compare instead of building one."
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="--qa: the base build config of both builds."),
    set_: list[str] | None = typer.Option(
        None,
        "--set",
        help="--qa: a build override key=value for the candidate only, repeatable (e.g. --set segmenter.name=sam2).",
        show_default=False,
    ),
    tolerance: str = typer.Option(
        "paper",
        "--tolerance",
        help="--qa: LSR tolerance profile of the spatiotemporal answers (paper | strideqa-bench | FILE).",
    ),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="--qa: write the error histograms (matplotlib)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="--qa: replace builds made with another config."),
    as_json: bool = typer.Option(
        False, "--json", help="--qa: print the results as JSON (rates 0-1) instead of tables."
    ),
) -> None:
    """Detection and tracking quality on a log with ground truth, printed like STRIDE-QA table 6.

    Without LOG_ROOT the embedded synthetic default is used. --detector oracle must report perfect scores. Any
    detector backend is scored the same way (mmdet3d: pass its model and checkpoint with --option).

    With --qa: the log is built twice, with the oracle and with the detector (and --set overrides), and the share
    of answers that move beyond the bench's tolerance, the error distribution and the questions gained or lost
    are printed per QA category and predicate and written to CANDIDATE/validate_qa.json.
    """
    if qa:
        from stridegen.cli.validate_qa import validate_qa_command

        validate_qa_command(
            log_root,
            detector,
            profile,
            seed,
            option,
            out,
            reference,
            candidate,
            config,
            set_,
            tolerance,
            plots,
            overwrite,
            as_json,
        )
        return
    for name, value in (
        ("--out", out),
        ("--reference", reference),
        ("--candidate", candidate),
        ("--config", config),
        ("--set", set_),
        ("--json", as_json or None),
        ("--overwrite", overwrite or None),
    ):
        if value:
            raise UsageError(f"{name} is an option of validate --qa")
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from stridegen.eval.validate.scoring import detector_options, validate_log  # on use only (start-up, issue 35)
    from stridegen.logs import open_log
    from stridegen.pipeline.detect import make_detector
    from stridegen.pipeline.track import TrackerConfig
    from stridegen.run.config import parse_override

    if log_root is None:
        from stridegen.logs.synthetic.default import ensure_default_log

        log_root = ensure_default_log()
    options = detector_options(detector, profile, seed)
    options.update(parse_override(item) for item in option or [])
    report = validate_log(open_log(log_root), make_detector(detector, **options), TrackerConfig(max_age=max_age))
    table = Table(
        title=escape(
            f"{detector}{' (' + str(options['profile']) + ')' if 'profile' in options else ''} on {log_root} "
            f"({report.n_frames} frames)"
        )
    )
    cells = {**report.detection, **report.tracking}
    for key in cells:
        table.add_column(key, justify="right")
    table.add_row(*(f"{v:.0f}" if k == "IDSW" else f"{v:.3f}" for k, v in cells.items()))
    Console().print(table)
    Console().print(
        f"means over the classes present in the ground truth; NDS over all 10 classes: {report.nds_all_classes:.3f}\n"
        "classes absent from the ground truth are left out of mAP; `stridegen eval detection` counts them as AP 0 "
        "(the nuScenes devkit's rule), so its mAP is lower on the same data",
        highlight=False,
    )
