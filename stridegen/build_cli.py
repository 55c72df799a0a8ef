"""`stridegen build` and `stridegen inspect`.

``build [LOG_ROOT] --out DIR [--config FILE] [key=value ...]``: with no LOG_ROOT, the embedded default is used: a
synthetic log (``DEFAULT_SYNTHETIC``) generated once into a cache folder and reused. Exit code 1 when any scene
failed (the failed scenes are listed with their reasons), 2 for a configuration error.

Runnable on its own as ``python -m stridegen.build_cli build ...`` (the same functions the main CLI registers).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import typer

# The embedded default log: several scenes with every class and scenario of the synthetic world, sized so that
# `stridegen build` (generation + build) stays under two minutes on a 2-core machine.
DEFAULT_SYNTHETIC: dict[str, object] = {"scenes": 3, "seconds": 20.0, "seed": 0, "width": 800, "height": 450,
                                        "rig": "nuscenes", "sweeps": False}


def cache_root() -> Path:
    """$STRIDEGEN_CACHE_DIR, else $XDG_CACHE_HOME/stridegen, else ~/.cache/stridegen."""
    if os.environ.get("STRIDEGEN_CACHE_DIR"):
        return Path(os.environ["STRIDEGEN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stridegen"


def synthetic_cache_dir(params: dict[str, object]) -> Path:
    """~/.cache/stridegen/synthetic/<hash of the generator version and parameters>."""
    from stridegen.logs.synthetic.scenario import GENERATOR_VERSION

    key = json.dumps({"generator_version": GENERATOR_VERSION, **params}, sort_keys=True)
    return cache_root() / "synthetic" / hashlib.sha256(key.encode()).hexdigest()[:16]


def ensure_default_log(params: dict[str, object] | None = None, progress: bool = True) -> Path:
    """The cached synthetic log for ``params`` (the default ones when None), generated when absent.

    ``generate_dataset`` writes into a temporary sibling folder and renames it into place, so the cache entry is
    either complete or absent.
    """
    from stridegen.logs.synthetic.generator import generate_dataset

    params = dict(DEFAULT_SYNTHETIC if params is None else params)
    path = synthetic_cache_dir(params)
    if (path / "v1.0-synthetic" / "scene.json").is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    generate_dataset(path, progress=progress, overwrite=True, **params)  # type: ignore[arg-type]
    return path


def _split_arguments(log_root: Path | None, overrides: list[str] | None) -> tuple[Path | None, list[str]]:
    """Click hands the first positional to LOG_ROOT; a ``key=value`` there that is no existing path is an
    override (``stridegen build --out d workers=2`` has no LOG_ROOT)."""
    extra = list(overrides or [])
    if log_root is not None and "=" in str(log_root) and not log_root.exists():
        return None, [str(log_root), *extra]
    return log_root, extra


def build(
    log_root: Path | None = typer.Argument(None, help="Log folder (nuScenes or AV2 layout). Left out: build the "
                                                     "embedded synthetic default (generated once, cached)."),
    overrides: list[str] | None = typer.Argument(None, help="Config overrides key=value, e.g. "
                                                           "keyframes.start_s=0 detector.name=simulated.",
                                                 show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help="Output dataset folder (resumed if it holds a build with "
                                                      "the same config)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="Build config YAML (see configs/build.yaml)."),
    workers: int | None = typer.Option(None, "--workers", "-w", min=1, help="Worker processes (scene granularity)"
                                                                            "; default: the config's."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an output folder built with another "
                                                              "config."),
) -> None:
    """Build a sharded dataset: keyframes, detections, tracks, attributes and images per scene, one HDF5 shard
    per scene. A rerun resumes: finished scenes are kept."""
    from rich.console import Console

    from stridegen.build import run_build, summary_table
    from stridegen.config import load_build_config
    from stridegen.errors import StrideGenError

    console = Console()
    log_root, extra = _split_arguments(log_root, overrides)
    try:
        if workers is not None:
            extra.append(f"workers={workers}")
        cfg = load_build_config(config, extra)
        if log_root is None:
            console.print("[bold]no LOG_ROOT: using the embedded synthetic default[/bold] "
                          f"({', '.join(f'{k}={v}' for k, v in DEFAULT_SYNTHETIC.items())})")
            log_root = ensure_default_log()
            console.print(f"synthetic log: {log_root}")
        result = run_build(log_root, out, cfg, overwrite=overwrite, progress=True, console=console)
    except StrideGenError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(code=2) from None
    console.print(summary_table(result))
    console.print(f"manifest: {result.manifest_path}")
    if not result.ok:
        console.print(f"[red]{len(result.failed)} scene(s) failed:[/red]")
        for r in result.failed:
            console.print(f"  {r.scene}: {r.reason}")
        raise typer.Exit(code=1)


def inspect(
    dir: Path = typer.Argument(..., help="A dataset folder written by `stridegen build`."),
    verify: bool = typer.Option(False, "--verify", help="Also check every shard's sha256 against the manifest."),
) -> None:
    """Print a dataset's contents: source, config hash, per-scene counts, tables and failed scenes."""
    from rich.console import Console
    from rich.table import Table

    from stridegen.errors import StrideGenError
    from stridegen.shards.reader import open_dataset

    console = Console()
    try:
        ds = open_dataset(dir, verify=verify)
        m = ds.manifest
        console.print(f"[bold]{dir}[/bold]: schema v{m['schema_version']}, stridegen "
                      f"{m.get('versions', {}).get('stridegen', '?')}, config {m['config_hash'][:12]}...")
        src = m.get("source", {})
        console.print(f"source: {src.get('format', '?')} {src.get('version', '')} {src.get('root', '')}")
        table = Table(title=f"{len(ds)} scene(s)", caption="kf = keyframes, dets = detections, gt = ground-truth "
                                                           "boxes, vis = visible masks; classes: tracks per class")
        table.add_column("scene", overflow="fold")
        for col in ("frames", "kf", "dets", "tracks", "images", "gt", "masks", "vis", "qa"):
            table.add_column(col, justify="right", no_wrap=True)
        table.add_column("classes", overflow="fold", ratio=1)
        table.add_column("MB", justify="right", no_wrap=True)
        for shard in m["shards"]:
            for name in shard["scenes"]:
                view = ds.scene(name)
                labels = view.tracks.label
                classes = " ".join(f"{c}:{int((labels == c).sum())}" for c in sorted(set(labels.tolist())))
                c = shard["counts"]
                table.add_row(name, *(str(c.get(k, 0)) for k in ("frames", "keyframes", "detections", "tracks",
                                                                   "images", "ground_truth", "masks",
                                                                   "visible_masks", "qa")),
                              classes, f"{shard['bytes'] / 1e6:.1f}")
        console.print(table)
        totals = m["totals"]
        console.print("totals: " + ", ".join(f"{k} {v}" for k, v in totals.items() if "/" not in k))
        _print_vision_summary(console, m)
        if ds.scenes:
            first = ds.scene(ds.scenes[0])
            console.print(f"tables of {first.name}: {', '.join(first.table_names)}")
        if verify:
            console.print("[green]every shard matches its manifest sha256[/green]")
        for f in ds.failed_scenes:
            console.print(f"[red]failed[/red] {f['scene']}: {f['reason']}")
        ds.close()
    except StrideGenError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(code=2) from None


def _print_vision_summary(console, manifest: dict) -> None:
    """The visibility filter's rule counts and QA per category and class (schema v2 manifests)."""
    from rich.table import Table

    vis = manifest.get("visibility")
    if vis and vis.get("candidates"):
        passed = ", ".join(f"{rule} {n}" for rule, n in vis["pass"].items())
        console.print(f"visibility ({vis['segmenter']}): {vis['candidates']} candidates; passed {passed}; "
                      f"visible {vis['visible']}; regions {vis['regions']}")
    qa = manifest.get("qa")
    if not qa or not qa.get("total"):
        return
    by = qa["by_category_and_class"]
    classes = sorted({c for row in by.values() for c in row})
    table = Table(title=f"QA per category and class ({qa['total']} in all)")
    table.add_column("category")
    for c in classes:
        table.add_column(c, justify="right", no_wrap=True)
    table.add_column("total", justify="right", no_wrap=True)
    for cat, row in sorted(by.items()):
        table.add_row(cat, *(str(row.get(c, 0)) for c in classes), str(qa["by_category"].get(cat, 0)))
    console.print(table)


def _standalone_app() -> typer.Typer:
    app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False)
    app.command("build")(build)
    app.command("inspect")(inspect)
    return app


if __name__ == "__main__":
    _standalone_app()()
