"""The log check of sensor files: their sizes (``os.stat``; LiDAR files and sweeps must hold a whole number of
points as the reader reads them: ``LogReader.point_file_problem``) and, in a deep check, the header of one image per
camera (its stored size against the calibration) and every camera image decoded at reduced scale."""

from __future__ import annotations

import os
from pathlib import Path

from stridegen.formats.images import image_problem, stored_image_size
from stridegen.logs.base import Frame, Scene
from stridegen.logs.check.findings import ERROR, MISSING_FILE_CAUSE, WARNING, Finding
from stridegen.logs.check.settings import CheckContext


def file_findings(ctx: CheckContext, scene: Scene) -> list[Finding]:
    """Sizes (``os.stat``) of every sensor file of the scene's frames: camera and LiDAR key files (errors), sweeps
    and other modalities (a warning: the build's own stages never read them, a plugin detector may)."""
    out: list[Finding] = []
    empty: list[str] = []
    missing: list[str] = []
    optional_bad = 0
    sized: list[tuple[str, str]] = []  # (file, problem) of key LiDAR files whose size is no whole number of points
    sweeps_sized: list[tuple[str, str]] = []  # the same for sweeps
    reader = ctx.reader
    for frame in scene.frames:
        for sample in frame.sensors.values():
            size = reader.sample_size(sample)
            if sample.calibration.modality not in ("camera", "lidar"):
                optional_bad += not size
            elif size is None:
                missing.append(str(sample.path))
            elif size == 0:
                empty.append(str(sample.path))
            elif sample.calibration.modality == "lidar":
                problem = reader.point_file_problem(sample, size)
                if problem:
                    sized.append((str(sample.path), problem))
        for samples in frame.sweeps.values():
            for s in samples:
                size = reader.sample_size(s)
                if not size:
                    optional_bad += 1
                elif s.calibration.modality == "lidar":
                    problem = reader.point_file_problem(s, size)
                    if problem:
                        sweeps_sized.append((str(s.path), problem))
    for bad, severity, what in ((sized, ERROR, "key LiDAR file(s)"), (sweeps_sized, WARNING, "LiDAR sweep file(s)")):
        if bad:
            out.append(
                ctx.finding(
                    "point_cloud_size",
                    f"{len(bad)} {what} hold no whole number of points, e.g. {Path(bad[0][0]).name}: {bad[0][1]}",
                    "a file truncated while copying or downloading, or points written with another layout than the "
                    "reader's (e.g. 4 float32 per point where nuScenes .pcd.bin has 5)",
                    scene.name,
                    bad[0][0],
                    severity,
                )
            )
    if missing:
        out.append(
            ctx.finding(
                "missing_file",
                f"{len(missing)} sensor file(s) of the scene's frames are missing, e.g. {Path(missing[0]).name}",
                MISSING_FILE_CAUSE,
                scene.name,
                missing[0],
            )
        )
    if empty:
        out.append(
            ctx.finding(
                "empty_sensor_file",
                f"{len(empty)} sensor file(s) are empty (0 bytes), e.g. {Path(empty[0]).name}: an empty point cloud "
                "or image is no data",
                "the converter opened the output file but wrote nothing (an exception or a skipped frame)",
                scene.name,
                empty[0],
            )
        )
    if optional_bad:
        out.append(
            ctx.finding(
                "optional_files",
                f"{optional_bad} sweep or radar file(s) are missing or empty: detectors that read them will fail",
                "only the key camera and LiDAR files were downloaded or converted (samples/, not sweeps/ or radar)",
                scene.name,
            )
        )
    return out


def _size(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def image_header_findings(ctx: CheckContext, frame: Frame, scene: str) -> list[Finding]:
    """One image per camera: its header's size against the calibrated width x height."""
    out = []
    for channel in frame.camera_channels:
        sample = frame.sensors[channel]
        if not ctx.reader.sample_size(sample):
            continue  # the file findings report it
        stored = stored_image_size(ctx.reader.sample_head(sample, 1 << 16))
        size = None if stored is None else (stored[1], stored[0])
        cal = sample.calibration
        if size is None:
            out.append(
                ctx.finding(
                    "unreadable_image",
                    f"camera {channel}: {sample.path.name} has no JPEG or PNG header",
                    "the file is not an image (or another format: convert images to JPEG or PNG)",
                    scene,
                    str(sample.path),
                )
            )
        elif cal.width and cal.height and size != (cal.width, cal.height):
            out.append(
                ctx.finding(
                    "image_size_mismatch",
                    f"camera {channel}: the image is {size[0]}x{size[1]} but its record says "
                    f"{cal.width}x{cal.height}: boxes would be projected for the wrong size",
                    "images resized (or cropped) after calibration without scaling the intrinsics, or width and "
                    "height swapped in the sample_data record",
                    scene,
                    str(sample.path),
                )
            )
    return out


def image_data_findings(ctx: CheckContext, scene: Scene) -> list[Finding]:
    """Every camera image of the scene's frames decoded at reduced scale, libjpeg's warnings counted as errors
    (``stridegen.formats.images.image_problem``): garbled or truncated data anywhere in any image. The build's own
    check of stored images is the same function, so an image that passes here passes there."""
    bad: list[tuple[str, str]] = []
    for frame in scene.frames:
        for channel in frame.camera_channels:
            sample = frame.sensors[channel]
            if not ctx.reader.sample_size(sample):
                continue  # the file findings report it
            problem = image_problem(ctx.reader.load_bytes(sample))
            if problem is not None:
                bad.append((str(sample.path), problem))
    if not bad:
        return []
    return [
        ctx.finding(
            "corrupt_image",
            f"{len(bad)} camera image(s) cannot be decoded cleanly, e.g. {Path(bad[0][0]).name}: {bad[0][1]}",
            "a file damaged or cut short while copying or downloading (compare its checksum with the source)",
            scene.name,
            bad[0][0],
        )
    ]


def image_header_size(path: Path, limit: int = 1 << 16) -> tuple[int, int] | None:
    """(width, height) that the header of the JPEG or PNG file ``path`` stores (``stored_image_size``); None if no
    such header is found in the first ``limit`` bytes."""
    with open(path, "rb") as fh:
        size = stored_image_size(fh.read(limit))
    return None if size is None else (size[1], size[0])
