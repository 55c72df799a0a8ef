"""`stridegen validate`: detector + tracker over a log with ground truth, printed like STRIDE-QA table 6."""

from __future__ import annotations

from pathlib import Path

import typer

from stridegen.cli.errors import guarded
from stridegen.eval.validate.scoring import detector_options, validate_log
from stridegen.pipeline.track import TrackerConfig


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
) -> None:
    """Detection and tracking quality on a log with ground truth, printed like STRIDE-QA table 6.

    Without LOG_ROOT the embedded synthetic default is used. --detector oracle must report perfect scores. Any
    detector backend is scored the same way (mmdet3d: pass its model and checkpoint with --option).
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from stridegen.logs import open_log
    from stridegen.pipeline.detect import make_detector
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
