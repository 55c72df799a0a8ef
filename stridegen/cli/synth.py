"""`stridegen synth`: write a synthetic nuScenes-format dataset with exact ground truth."""

from __future__ import annotations

from pathlib import Path

import typer

from stridegen.cli.errors import guarded


@guarded
def synth(
    out: Path = typer.Argument(..., help="Output folder (the dataset root; refused if not empty, see --overwrite)."),
    scenes: int = typer.Option(2, "--scenes", min=1, help="Number of scenes (scene-0000, scene-0001, ...)."),
    seconds: float = typer.Option(20.0, "--seconds", min=0.5, help="Length of each scene; key frames at 2 Hz."),
    seed: int = typer.Option(0, "--seed", help="Random seed: the same seed gives byte-identical output."),
    width: int = typer.Option(800, "--width", min=16, help="Camera image width in pixels."),
    height: int = typer.Option(450, "--height", min=16, help="Camera image height in pixels."),
    rig: str = typer.Option(
        "nuscenes",
        "--rig",
        help="Sensor rig: a built-in name (nuscenes, stride-qa), a rig in ./calibration/, or a YAML path.",
    ),
    sweeps: bool = typer.Option(False, "--sweeps", help="Also write non-key LiDAR sweeps at 20 Hz."),
    privacy_patches: bool = typer.Option(
        False, "--privacy-patches", help="Draw licence plates and faces (tests of `stridegen anonymize`)."
    ),
    static_scenery: bool = typer.Option(
        False,
        "--static-scenery",
        help="Place unannotated buildings, poles and walls along the roads (LiDAR odometry, `calibrate poses`).",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a non-empty output folder."),
    log_format: str = typer.Option(
        "nuscenes",
        "--format",
        help="nuscenes, or a ROS recording per scene: ros2-mcap, ros1, ros2-sqlite3 (docs/ros.md).",
    ),
) -> None:
    """Generate a synthetic driving dataset in nuScenes format (tables in OUT/v1.0-synthetic).

    A four-lane road crosses a two-lane road at an intersection that the ego drives through.

    Cars, trucks, buses, motorcycles, cyclists and pedestrians produce the six STRIDE-QA relations.

    Sensors: six cameras, a ray-cast 32-beam LiDAR; per-pixel instance ids go to OUT/instance_ids/.

    Analytic truth: OUT/v1.0-synthetic/synthetic_truth.json (stridegen.logs.synthetic.load_synthetic_truth).

    See docs/synthetic.md.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from stridegen.logs.synthetic.generator import generate_dataset

    console = Console()
    if log_format != "nuscenes":
        from stridegen.logs.synthetic.ros_writer import synth_recordings

        written = synth_recordings(out, log_format, scenes, seconds, seed, width, height, rig, overwrite)
        for path in written.recordings:
            console.print(escape(str(path)))
        return
    summary = generate_dataset(
        out,
        scenes=scenes,
        seconds=seconds,
        seed=seed,
        width=width,
        height=height,
        rig=rig,
        sweeps=sweeps,
        privacy_patches=privacy_patches,
        static_scenery=static_scenery,
        progress=True,
        overwrite=overwrite,
    )
    table = Table(title=escape(f"synthetic dataset {summary.out_dir}"))
    table.add_column("item")
    table.add_column("value", justify="right")
    table.add_row("scenes", str(len(summary.scenes)))
    table.add_row("samples (key frames)", str(summary.samples))
    table.add_row("sample_data records", str(summary.sample_data))
    for cls, count in summary.annotations_per_class.items():
        table.add_row(f"annotations: {cls}", str(count))
    table.add_row("annotations: total", str(sum(summary.annotations_per_class.values())))
    table.add_row("scenarios present", ", ".join(summary.scenarios_present))
    table.add_row("seconds", f"{summary.seconds:.1f}")
    console.print(table)
