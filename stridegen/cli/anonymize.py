"""`stridegen anonymize DIR --out DIR2`: blur faces and licence plates of a built dataset, drop absolute times.

The copy equals a build of the source's log with the ``anonymize`` section given here (stridegen.jobs.anonymize;
docs/anonymize.md). ``--in-place`` writes the copy beside DIR and then replaces DIR with it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from stridegen.cli import executor_options
from stridegen.cli.errors import EXIT_FAILED, guarded, one_line
from stridegen.run.anonymize_defaults import SECTION_DEFAULTS

# The options' defaults are the build config's anonymize section's (one source of each default:
# stridegen.run.anonymize_defaults, which imports nothing, so this command's help does not import the config),
# except --faces / --plates: the section's None means auto (on for a real log, off for a synthetic one), while this
# command, asked for explicitly, blurs both unless told not to.


def _swap_in(src: Path, tmp: Path) -> None:
    """Replace the folder ``src`` by ``tmp`` (renames; the old one is removed last)."""
    old = src.with_name(f".{src.name}.pre-anonymize")
    if old.exists():
        shutil.rmtree(old)
    src.rename(old)
    tmp.rename(src)
    shutil.rmtree(old)


@guarded
def anonymize(
    dataset: Path = typer.Argument(..., help="Built dataset folder (manifest.json, shards/)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Folder of the anonymized copy."),
    in_place: bool = typer.Option(False, "--in-place", help="Replace DATASET by its anonymized copy."),
    faces: bool = typer.Option(True, "--faces/--no-faces", help="Blur faces."),
    plates: bool = typer.Option(True, "--plates/--no-plates", help="Blur licence plates."),
    face_detector: str = typer.Option(SECTION_DEFAULTS["face_detector"], "--face-detector", help="centerface | haar."),
    face_threshold: float = typer.Option(
        SECTION_DEFAULTS["face_threshold"], "--face-threshold", help="CenterFace score threshold."
    ),
    plate_detector: str = typer.Option(
        SECTION_DEFAULTS["plate_detector"], "--plate-detector", help="haar | none (besides the geometric bands)."
    ),
    method: str = typer.Option(SECTION_DEFAULTS["method"], "--method", help="blur | pixelate."),
    jpeg_quality: int = typer.Option(
        SECTION_DEFAULTS["jpeg_quality"], "--jpeg-quality", min=1, max=100, help="Quality of re-encoded JPEGs."
    ),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Worker processes (one scene each)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an --out folder made with other settings."),
    executor: str = executor_options.EXECUTOR,
    executor_address: str = executor_options.ADDRESS,
    executor_option: list[str] | None = executor_options.OPTION,
) -> None:
    """Blur faces (CenterFace) and licence plates (vehicle boxes + Haar cascade) in every stored image, strip EXIF
    and absolute timestamps (STRIDE-QA appendix A.4); masks, boxes and QA stay as they are."""
    from pydantic import ValidationError

    from stridegen.jobs.anonymize import anonymize_dataset
    from stridegen.run.config import AnonymizeSection

    if (out is None) == (not in_place):
        raise typer.BadParameter("give either --out DIR2 or --in-place")
    try:
        section = AnonymizeSection(
            faces=faces,
            plates=plates,
            face_detector=face_detector,
            face_threshold=face_threshold,
            plate_detector=plate_detector,
            method=method,
            jpeg_quality=jpeg_quality,
        )
    except ValidationError as exc:
        raise typer.BadParameter(one_line(str(exc))) from None
    target = out if out is not None else dataset.with_name(f".{dataset.name}.anonymize-tmp")
    if in_place and target.exists():
        shutil.rmtree(target)
    result = anonymize_dataset(
        dataset,
        target,
        section,
        workers=workers,
        overwrite=overwrite,
        executor=executor_options.executor_section(executor, executor_address, executor_option),
    )
    built = sum(r.status == "built" for r in result.results)
    resumed = sum(r.status == "resumed" for r in result.results)
    if result.failed:
        for r in result.failed:
            typer.echo(f"error: {one_line(f'{r.scene}: {r.reason}')}", err=True)
        raise typer.Exit(EXIT_FAILED)
    if in_place:
        _swap_in(dataset, target)
    where = dataset if in_place else target
    typer.echo(f"anonymized {built} scene(s) ({resumed} resumed) into {where} in {result.wall_s:.1f} s")
