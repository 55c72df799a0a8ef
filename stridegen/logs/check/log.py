"""The log check of a whole log (``check_log``), and its two halves as the build runs them: the findings about the
whole log before any scene (``check_log_wide``), then each scene's in its worker (``check_scene``)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from stridegen.core.errors import LogCheckError, LogFormatError, MissingFileError
from stridegen.logs import open_log
from stridegen.logs._common import shown_path
from stridegen.logs.base import KNOWN_MODALITIES, LogReader
from stridegen.logs.check.findings import (
    ERROR,
    WARNING,
    CheckReport,
    Finding,
    SceneSummary,
    error_finding,
    failure_reason,
    summarize_errors,
)
from stridegen.logs.check.scene import scene_findings
from stridegen.logs.check.settings import CheckContext, CheckSettings
from stridegen.logs.names import select_scenes


def check_log(
    reader_or_path: LogReader | str | Path,
    settings: CheckSettings,
    scenes: Sequence[str] | None = None,
    deep: bool = True,
) -> CheckReport:
    """Check a log (a reader, or a folder opened with ``settings.log_format`` / ``log_version``) against a build
    config's ``settings`` (``BuildConfig.check_settings()``).

    ``scenes``: names to check (default: ``settings.scenes``, else every scene). ``deep``: also read one image
    header per camera and scene. Never raises for a bad log (a log that cannot be opened is a ``log_unreadable``
    finding); a ``log.scenes`` entry that is not in the log is a ConfigError, as in ``build``.
    """
    start = time.perf_counter()
    if isinstance(reader_or_path, LogReader):
        reader = reader_or_path
    else:
        try:
            reader = open_log(reader_or_path, settings.log_format, settings.log_version)
        except LogFormatError as exc:
            finding = Finding(ERROR, "log_unreadable", str(exc), _open_cause(exc), None, exc.path)
            return CheckReport(
                shown_path(reader_or_path), settings.log_format or "", "", [], [finding], 0.0, _since(start)
            )
    open_s = time.perf_counter() - start
    ctx = CheckContext(reader, settings, deep)
    try:
        ids = reader.scene_ids()
    except Exception as exc:  # a reader that must build every scene to list them, and one is broken
        version = str(getattr(reader, "version", "") or "")
        return CheckReport(str(reader.root), reader.format_name, version, [], [error_finding(exc, None)], open_s)
    names = _selected(ids, settings, scenes)
    findings = _log_findings(ctx, ids)
    summaries = []
    modalities: dict[str, tuple[set[str], set[str]]] = {}  # unknown modality -> (its channels, scenes)
    for name, token in ((n, t) for n, t in ids if n in names):
        t0 = time.perf_counter()
        summary = SceneSummary(name, token)
        findings += scene_findings(ctx, summary, modalities)
        summary.check_s = time.perf_counter() - t0
        summaries.append(summary)
    for modality, (channels, in_scenes) in sorted(modalities.items()):
        findings.append(_unknown_modality(ctx, modality, channels, f"in {len(in_scenes)} scene(s)"))
    version = str(getattr(reader, "version", "") or "")
    return CheckReport(
        str(reader.root), reader.format_name, version, summaries, findings, open_s, time.perf_counter() - start
    )


def check_log_wide(reader: LogReader, settings: CheckSettings) -> CheckReport | None:
    """The findings about the whole log (``scene`` None) without building any scene, where the reader can list its
    sensors' unknown modalities so (``LogReader.unknown_modalities``); None where it cannot: ``check_log`` must
    walk the scenes then. With this report, each scene's own findings come from ``check_scene``, scene by scene
    (in the build's workers)."""
    start = time.perf_counter()
    try:
        unknown = reader.unknown_modalities()
        ids = reader.scene_ids()
    except Exception:  # a broken table (or a plugin's own error): check_log turns it into findings, scene by scene
        return None
    if unknown is None:
        return None
    ctx = CheckContext(reader, settings, deep=False)
    findings = _log_findings(ctx, ids)
    for modality, channels in sorted(unknown.items()):
        findings.append(_unknown_modality(ctx, modality, set(channels), "in the log's sensor list"))
    version = str(getattr(reader, "version", "") or "")
    return CheckReport(str(reader.root), reader.format_name, version, [], findings, 0.0, _since(start))


def check_scene(reader: LogReader, settings: CheckSettings, name: str, deep: bool = False) -> list[Finding]:
    """One scene's findings, as ``check_log`` gives them (without the whole-log ones: ``check_log_wide``)."""
    ctx = CheckContext(reader, settings, deep)
    return scene_findings(ctx, SceneSummary(name, ""), {})


def check_before_build(
    reader: LogReader, settings: CheckSettings, names: Sequence[str]
) -> tuple[CheckReport, dict[str, str] | None]:
    """The check a build runs before any stage (metadata only): LogCheckError for errors of the whole log. Returns
    the report and, where every scene had to be checked here, the failure reason of each of ``names`` with an
    error finding (None where each scene is checked in its worker: ``check_log_wide``)."""
    wide = check_log_wide(reader, settings)  # the names are the build's selection, checked there
    report = wide if wide is not None else check_log(reader, settings, scenes=names, deep=False)
    if report.log_errors:
        raise LogCheckError(
            f"{reader.root}: the log check found {len(report.log_errors)} error(s) that concern the whole log; "
            f"nothing was built:\n{summarize_errors(report.log_errors)}",
            report.log_errors,
        )
    if wide is not None:
        return report, None
    return report, {n: failure_reason(report.scene_errors(n)) for n in names if report.scene_errors(n)}


def scene_warnings(findings: list[Finding]) -> list[Finding]:
    """The warnings of one scene's check that a build reports: none where the scene has an error finding (it is
    a failed scene, or a resumed one whose warnings the check before the build left out too)."""
    if any(f.severity == ERROR for f in findings):
        return []
    return [f for f in findings if f.severity == WARNING]


def _unknown_modality(ctx: CheckContext, modality: str, channels: set[str], where: str) -> Finding:
    return ctx.finding(
        "unknown_modality",
        f"sensor(s) {sorted(channels)} have modality {modality!r} ({where}); the build knows "
        f"{list(KNOWN_MODALITIES)}, so their data are never used",
        f"the converter spelled the modality its own way (e.g. 'cam' for 'camera'); write one of "
        f"{', '.join(KNOWN_MODALITIES)} in the sensor table",
        None,
        ctx.path("sensor"),
    )


def _since(start: float) -> float:
    return time.perf_counter() - start


def _selected(ids: list[tuple[str, str]], settings: CheckSettings, scenes: Sequence[str] | None) -> set[str]:
    if scenes is not None:
        wanted = list(scenes)
    elif settings.scenes is not None:
        wanted = list(settings.scenes)
    else:
        return {n for n, _ in ids}
    return {n for n, _ in select_scenes(ids, wanted, "log.scenes:")}


def _log_findings(ctx: CheckContext, ids: list[tuple[str, str]]) -> list[Finding]:
    out = []
    if not ids:
        out.append(
            ctx.finding(
                "no_scenes",
                "the log has no scene",
                "the scene table is empty (the converter wrote no scene record)",
                None,
                ctx.path("scene"),
            )
        )
    counts = Counter(n for n, _ in ids)
    for name, n in sorted(counts.items()):
        if n > 1:
            out.append(
                ctx.finding(
                    "duplicate_scene_name",
                    f"{n} scenes are named {name!r}: their shards would overwrite each other",
                    "the converter named scenes by something that repeats (a log name, a date); make names unique",
                    None,
                    ctx.path("scene"),
                )
            )
    out += ctx.reader.log_findings()
    return out


def _open_cause(exc: LogFormatError) -> str:
    if "not UTF-8" in exc.reason:
        return "the folder was named on a system with another file-name encoding"
    if isinstance(exc, MissingFileError):
        return "a required table is missing, or the path is not the log root (it holds the version folder)"
    return "a table is not valid JSON or not a list of records with tokens, or the folder is no known layout"
