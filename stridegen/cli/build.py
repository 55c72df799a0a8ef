"""`stridegen build` and `stridegen inspect`.

``build [LOG_ROOT] --out DIR [--config FILE] [key=value ...]``: with no LOG_ROOT, the embedded default is used: a
synthetic log (``DEFAULT_SYNTHETIC``) generated once into a cache folder and reused. The log check's warnings
(``stridegen check``: no keyframes, constant ego poses, no annotations, ...) are printed with their likely causes.
Exit code 1 when any scene failed (the failed scenes are listed on stderr with their reasons), 2 for a
configuration error or an error of the whole log, 3 when the dataset has no QA although the config asks for QA
(``--allow-empty`` accepts it; the message says why, from the warnings). docs/cli.md has the table.

Runnable on its own as ``python -m stridegen.cli.build build ...`` (the same functions the main CLI registers).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from stridegen.cli.errors import EXIT_EMPTY, EXIT_FAILED, guarded, one_line

if TYPE_CHECKING:
    from rich.console import Console

    from stridegen.jobs.build import BuildResult
    from stridegen.run.config import BuildConfig


def _split_arguments(log_root: Path | None, overrides: list[str] | None) -> tuple[Path | None, list[str]]:
    """Click hands the first positional to LOG_ROOT; a ``key=value`` there that is no existing path is an
    override (``stridegen build --out d workers=2`` has no LOG_ROOT)."""
    extra = list(overrides or [])
    if log_root is not None and "=" in str(log_root) and not log_root.exists():
        return None, [str(log_root), *extra]
    return log_root, extra


@guarded
def build(
    log_root: Path | None = typer.Argument(
        None,
        help="Log folder (nuScenes or AV2 layout). Left out: build the "
        "embedded synthetic default (generated once, cached).",
    ),
    overrides: list[str] | None = typer.Argument(
        None, help="Config overrides key=value, e.g. keyframes.start_s=0 detector.name=simulated.", show_default=False
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Output dataset folder (resumed if it holds a build with the same config)."
    ),
    config: Path | None = typer.Option(None, "--config", "-c", help="Build config YAML (see configs/build.yaml)."),
    workers: int | None = typer.Option(
        None, "--workers", "-w", min=1, help="Worker processes (scene granularity); default: the config's."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an output folder built with another config."),
    allow_empty: bool = typer.Option(
        False, "--allow-empty", help="Exit 0 even when the dataset has no QA (otherwise exit 3, saying why)."
    ),
) -> None:
    """Build a sharded dataset: keyframes, detections, tracks, attributes and images per scene, one HDF5 shard
    per scene. A rerun resumes: finished scenes are kept."""
    from rich.console import Console
    from rich.markup import escape

    from stridegen.cli.progress import SceneProgress
    from stridegen.jobs.build import STAGES, run_build
    from stridegen.logs.synthetic.default import DEFAULT_SYNTHETIC, ensure_default_log
    from stridegen.run.config import load_build_config

    console = Console()
    log_root, extra = _split_arguments(log_root, overrides)
    if workers is not None:
        extra.append(f"workers={workers}")
    cfg = load_build_config(config, extra)
    if log_root is None:
        console.print(
            "[bold]no LOG_ROOT: using the embedded synthetic default[/bold] "
            f"({escape(', '.join(f'{k}={v}' for k, v in DEFAULT_SYNTHETIC.items()))})"
        )
        log_root = ensure_default_log()
        console.print(f"synthetic log: {log_root}", markup=False)
    with SceneProgress(console=console, stages=STAGES) as progress:
        result = run_build(log_root, out, cfg, overwrite=overwrite, observer=progress)
    console.print(summary_table(result))
    console.print(f"manifest: {result.manifest_path}", markup=False)
    print_warnings(result)  # warnings go to stderr (docs/cli.md)
    if not result.ok:
        typer.echo(f"{len(result.failed)} scene(s) failed:", err=True)
        for r in result.failed:
            typer.echo(f"error: {one_line(f'{r.scene}: {r.reason}')}", err=True)
    empty = result.qa == 0 and makes_qa(cfg)
    if empty:
        typer.echo(f"{'warning' if allow_empty else 'error'}: the dataset has 0 QA: {empty_reason(result)}", err=True)
    if not result.ok:
        raise typer.Exit(code=EXIT_FAILED)
    if empty and not allow_empty:
        typer.echo("(pass --allow-empty to accept an empty dataset)", err=True)
        raise typer.Exit(code=EXIT_EMPTY)


def print_warnings(result: BuildResult) -> None:
    """The log check's warnings on stderr: ``warning: <scene>: [code] message; likely cause: ...``, one line each
    (never wrapped to the terminal's width), the format of every warning the CLI prints."""
    for w in result.warnings:
        where = w.scene or "log"
        typer.echo(f"warning: {one_line(f'{where}: {w.text()}')}", err=True)


def makes_qa(config: BuildConfig) -> bool:
    """Whether the config asks for QA at all (segmenter.name=none makes no masks, hence no QA)."""
    qa = config.qa
    return config.segmenter.name != "none" and bool(
        qa.object_spatial or qa.ego_spatial or qa.spatiotemporal or qa.families
    )


def empty_reason(result: BuildResult) -> str:
    """Why a dataset has no QA, from what the build knows: failed scenes, then the check's warnings, then counts."""
    parts = []
    built = [r for r in result.results if r.ok]
    if not built:
        parts.append("no scene was built")
    codes = sorted({w.code for w in result.warnings})
    if codes:
        parts.append(f"the log check warned: {', '.join(codes)} (above)")
    counts = [r.shard.counts for r in built if r.shard is not None]
    if counts and not parts:
        keyframes = sum(int(c.get("keyframes", 0)) for c in counts)
        visible = sum(int(c.get("visible_masks", 0)) for c in counts)
        parts.append(f"{keyframes} keyframes and {visible} visible masks in the built scenes (the kf and vis columns)")
    return "; ".join(parts)


def summary_table(result: BuildResult) -> Any:
    """One row per scene with its status and counts (failure reasons: ``BuildResult.failed``): a rich Group of
    tables led by the scene column, split to fit the terminal (``stridegen.cli.terminal_tables``)."""
    from rich.console import Group
    from rich.markup import escape

    from stridegen.cli.terminal_tables import fitted_tables

    columns = (
        ("frames", "frames"),
        ("kf", "keyframes"),
        ("dets", "detections"),
        ("tracks", "tracks"),
        ("images", "images"),
        ("vis", "visible_masks"),
        ("qa", "qa"),
    )
    rows = []
    for r in result.results:
        counts = r.shard.counts if r.shard is not None else {}
        style = {"built": "green", "resumed": "cyan", "failed": "red"}[r.status]
        cells = [f"[{style}]{r.status}[/{style}]", *(str(counts.get(k, "")) for _, k in columns)]
        cells.append(f"{sum(r.timings_s.values()):.1f}" if r.timings_s else "")
        rows.append((escape(r.scene), cells))
    n = {status: sum(r.status == status for r in result.results) for status in ("built", "resumed", "failed")}
    caption = (
        f"{len(result.results)} scenes: {n['built']} built, {n['resumed']} resumed, "
        f"{n['failed']} failed (kf = keyframes, vis = visible masks, s = seconds of work)"
    )
    headers = ["status", *(h for h, _ in columns), "s"]
    title = escape(f"build {result.out_dir}  ({result.wall_s:.1f} s)")
    justify = ["left"] + ["right"] * (len(headers) - 1)
    return Group(*fitted_tables(title, "scene", headers, rows, caption=caption, justify=justify))


@guarded
def inspect(
    dir: Path = typer.Argument(..., help="A dataset folder written by `stridegen build`."),
    verify: bool = typer.Option(False, "--verify", help="Also check every shard's sha256 against the manifest."),
) -> None:
    """Print a dataset's contents: source, config hash, per-scene counts, tables and failed scenes."""
    from collections import Counter

    from rich.console import Console
    from rich.markup import escape

    from stridegen.cli.terminal_tables import fitted_tables
    from stridegen.shards.manifest import qa_summary, visibility_summary
    from stridegen.shards.reader import open_dataset
    from stridegen.shards.schema import qa_breakdown

    console = Console()
    ds = open_dataset(dir, verify=verify)
    m = ds.manifest
    console.print(
        f"[bold]{escape(str(dir))}[/bold]: schema v{m['schema_version']}, stridegen "
        f"{m.get('versions', {}).get('stridegen', '?')}, config {m['config_hash'][:12]}..."
    )
    src = m.get("source", {})
    console.print(f"source: {src.get('format', '?')} {src.get('version', '')} {src.get('root', '')}", markup=False)
    keys = ("frames", "keyframes", "detections", "tracks", "images", "ground_truth", "masks", "visible_masks", "qa")
    rows, per_class = [], []
    totals: Counter = Counter()  # counts read from the shards, never the manifest's (checked against it on open)
    for shard in m["shards"]:
        for name in shard["scenes"]:
            view = ds.scene(name)
            view.check(images=False)  # every table against its checksums (the images: --verify)
            per_class.append(Counter(str(x) for x in view.tracks.label))
            c = view.counts
            if view.qa is not None:
                c.update(qa_breakdown(view.qa))
            totals.update(c)
            rows.append((escape(name), [*(str(c.get(k, 0)) for k in keys), f"{shard['bytes'] / 1e6:.1f}"]))
    headers = ["frames", "kf", "dets", "tracks", "images", "gt", "masks", "vis", "qa", "MB"]
    caption = "kf = keyframes, dets = detections, gt = ground-truth boxes, vis = visible masks"
    for table in fitted_tables(f"{len(ds)} scene(s)", "scene", headers, rows, caption=caption):
        console.print(table)
    classes = sorted(set().union(*per_class)) if per_class else []
    if classes:
        class_rows = [(head, [str(n[c]) for c in classes]) for (head, _), n in zip(rows, per_class, strict=True)]
        for table in fitted_tables("tracks per class", "scene", classes, class_rows):
            console.print(table)
    totals.update(scenes=len(ds), shards=len(m["shards"]), bytes=sum(int(s["bytes"]) for s in m["shards"]))
    console.print("totals: " + ", ".join(f"{k} {totals[k]}" for k in sorted(totals) if "/" not in k))
    config = m.get("config", {})
    vis = visibility_summary(dict(totals), config) if {"segmenter", "visibility"} <= set(config) else None
    _print_vision_summary(console, {"visibility": vis, "qa": qa_summary(dict(totals))})
    if ds.scenes:
        first = ds.scene(ds.scenes[0])
        console.print(f"tables of {first.name}: {', '.join(first.table_names)}", markup=False)
    if verify:
        console.print("[green]every shard matches its manifest sha256[/green]")
    for f in ds.failed_scenes:
        console.print(f"[red]failed[/red] {escape(str(f['scene']))}: {escape(str(f['reason']))}")
    ds.close()


def _print_vision_summary(console: Console, manifest: dict[str, Any]) -> None:
    """The visibility filter's rule counts and QA per category and class (schema v2 manifests)."""
    from rich.markup import escape

    from stridegen.cli.terminal_tables import fitted_tables

    vis = manifest.get("visibility")
    if vis and vis.get("candidates"):
        passed = ", ".join(f"{rule} {n}" for rule, n in vis["pass"].items())
        console.print(  # per-rule counts, not the report's funnel, which counts the masks left after each rule
            f"visibility ({vis['segmenter']}): {vis['candidates']} candidates; passing each rule on its own: {passed}; "
            f"visible (passing all) {vis['visible']}; regions {vis['regions']} "
            f"({vis.get('regions_too_small', 0)} too small)"
        )
    qa = manifest.get("qa")
    if not qa or not qa.get("total"):
        return
    by = qa["by_category_and_class"]
    classes = sorted({c for row in by.values() for c in row})
    rows = [
        (escape(cat), [*(str(row.get(c, 0)) for c in classes), str(qa["by_category"].get(cat, 0))])
        for cat, row in sorted(by.items())
    ]
    title = f"QA per category and class ({qa['total']} in all)"
    for table in fitted_tables(title, "category", [*(escape(c) for c in classes), "total"], rows):
        console.print(table)


def _standalone_app() -> typer.Typer:
    app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False)
    app.command("build")(build)
    app.command("inspect")(inspect)
    return app


if __name__ == "__main__":
    _standalone_app()()
