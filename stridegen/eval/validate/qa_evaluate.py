"""``validate --qa``: build one log twice, with the oracle and with a configured detector / tracker / segmenter, and
say what the candidate's perception does to the dataset's answers (``qa_compare``).

Both builds are ordinary builds (``stridegen.jobs.build.run_build``: resumable, any executor) of one base config;
the reference takes the ``oracle`` detector (ground-truth boxes), the candidate the detector asked for and the
candidate-only overrides (``tracker.*``, ``segmenter.*``, ...). Everything else, seeds included, is shared, so the
two differ only by what perception gives the later stages. Already built folders can be given instead.

Files, in the candidate's dataset folder (so that ``stridegen report`` on it shows them): ``validate_qa.json``
(the summary, the two builds, the largest changes) and ``validate_qa_errors.png`` (error histograms; needs
matplotlib, the ``plots`` extra).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stridegen.core import registry
from stridegen.eval.validate.qa_compare import (
    QAComparison,
    QATolerances,
    changed_examples,
    compare_questions,
    kinds_present,
    summarize,
)
from stridegen.eval.validate.qa_data import KIND_UNIT, MATCH_GATE_M, read_pair
from stridegen.jobs.build import BuildResult, run_build
from stridegen.run.config import BuildConfig, load_build_config
from stridegen.run.runner import RunObserver
from stridegen.viz.report.validate_qa_section import PLOT_NAME, RESULTS_NAME

REFERENCE_SUBDIR = "oracle"
CANDIDATE_SUBDIR = "candidate"
REFERENCE_DETECTOR = "oracle"
RESULTS_VERSION = 1
# Histogram bins per panel of the error plot.
PLOT_BINS = 40


def build_configs(
    config_path: str | Path | None,
    detector: str,
    detector_options: dict[str, Any],
    candidate_overrides: list[str] | tuple[str, ...] = (),
    common_overrides: list[str] | tuple[str, ...] = (),
) -> tuple[BuildConfig, BuildConfig]:
    """(reference, candidate) build configs from one base config (a YAML file or the defaults): the reference with
    the oracle detector and no detector options, the candidate with ``detector`` and ``detector_options`` (over
    none of the base's), then ``candidate_overrides`` (``key=value``); ``common_overrides`` apply to both, first."""

    def detector_overrides(name: str, options: dict[str, Any]) -> list[str]:
        # JSON is YAML: the override parser reads each value back as the same type
        return [f"detector.name={name}", "detector.options={}"] + [
            f"detector.options.{k}={json.dumps(v)}" for k, v in options.items()
        ]

    common = list(common_overrides)
    reference = load_build_config(config_path, [*common, *detector_overrides(REFERENCE_DETECTOR, {})])
    candidate = load_build_config(
        config_path, [*common, *detector_overrides(detector, detector_options), *candidate_overrides]
    )
    return reference, candidate


def candidate_detector_options(detector: str, profile: str, seed: int) -> dict[str, Any]:
    """``profile`` and ``seed`` for a detector whose factory takes them (the simulated detector's error profile
    and seed), read from the registry without building it."""
    return {k: v for k, v in (("profile", profile), ("seed", seed)) if registry.accepts("detector", detector, k)}


def _perception(dataset_dir: Path) -> dict[str, Any]:
    """What a build's manifest says about its perception: detector (name, options), tracker and segmenter names,
    and its config hash."""
    from stridegen.shards.manifest import read_manifest

    manifest = read_manifest(dataset_dir)
    config = manifest.get("config", {})
    return {
        "detector": config.get("detector", {}),
        "tracker": config.get("tracker", {}).get("name", ""),
        "segmenter": config.get("segmenter", {}).get("name", ""),
        "config_hash": manifest.get("config_hash", ""),
        "failed_scenes": [f.get("scene", "") for f in manifest.get("failed_scenes", [])],
    }


@dataclass
class QAValidation:
    """What ``validate_qa`` did and found."""

    reference_dir: Path
    candidate_dir: Path
    results_path: Path
    plot_path: Path | None
    summary: dict[str, Any]
    comparison: QAComparison
    builds: dict[str, BuildResult] = field(default_factory=dict)  # the builds it ran, by role


def validate_qa(
    reference_dir: str | Path,
    candidate_dir: str | Path,
    tolerances: QATolerances | None = None,
    plots: bool = True,
    builds: dict[str, BuildResult] | None = None,
) -> QAValidation:
    """Compare two built datasets of one log and write the results file (and the plot) into ``candidate_dir``."""
    ref_dir, cand_dir = Path(reference_dir), Path(candidate_dir)
    reference, candidate = read_pair(ref_dir, cand_dir)
    comparison = compare_questions(reference, candidate, tolerances)
    summary = summarize(comparison)
    plot_path = plot_errors(comparison, cand_dir / PLOT_NAME) if plots and len(comparison.matched) else None
    doc = {
        "version": RESULTS_VERSION,
        "reference": {"dataset": os.path.relpath(ref_dir.resolve(), cand_dir.resolve()), **_perception(ref_dir)},
        "candidate": {"dataset": ".", **_perception(cand_dir)},
        "matching": {
            "gate_m": MATCH_GATE_M,
            "rule": "candidate tracks present at a keyframe's frame matched one-to-one to the reference's by least "
            f"total BEV centre distance, pairs at {MATCH_GATE_M:g} m or more never matching; questions paired by "
            "(scene, keyframe, camera, category, canonical predicate, objects)",
        },
        "scenes": {"reference": reference.scenes, "candidate": candidate.scenes},
        **summary,
        "examples": changed_examples(comparison),
        "plot": PLOT_NAME if plot_path is not None else None,
    }
    results_path = cand_dir / RESULTS_NAME
    tmp = results_path.with_name(f".{RESULTS_NAME}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, results_path)
    return QAValidation(ref_dir, cand_dir, results_path, plot_path, doc, comparison, dict(builds or {}))


def build_and_validate(
    log_root: str | Path,
    out_dir: str | Path | None,
    reference: BuildConfig,
    candidate: BuildConfig,
    reference_dir: str | Path | None = None,
    candidate_dir: str | Path | None = None,
    tolerances: QATolerances | None = None,
    overwrite: bool = False,
    plots: bool = True,
    observe: Callable[[str], AbstractContextManager[RunObserver | None]] | None = None,
) -> QAValidation:
    """Build what is not given (``out_dir/oracle`` with ``reference``, ``out_dir/candidate`` with ``candidate``;
    resumed when already there with the same config), then ``validate_qa``. A scene that fails in a build is
    compared as absent (its questions are lost or gained); a build error of the whole log raises. ``observe(role)``
    gives a context manager around each build yielding its observer (a progress display), role ``reference`` or
    ``candidate``."""
    if (reference_dir is None or candidate_dir is None) and out_dir is None:
        raise ValueError("an output folder is needed to build the datasets that are not given")
    builds: dict[str, BuildResult] = {}
    dirs: dict[str, Path] = {}
    for role, given, sub, config in (
        ("reference", reference_dir, REFERENCE_SUBDIR, reference),
        ("candidate", candidate_dir, CANDIDATE_SUBDIR, candidate),
    ):
        if given is not None:
            dirs[role] = Path(given)
            continue
        assert out_dir is not None
        dirs[role] = Path(out_dir) / sub
        with (observe or _no_observer)(role) as observer:
            builds[role] = run_build(log_root, dirs[role], config, overwrite=overwrite, observer=observer)
    return validate_qa(dirs["reference"], dirs["candidate"], tolerances, plots, builds)


def _no_observer(role: str) -> AbstractContextManager[RunObserver | None]:
    return nullcontext(None)


def plot_errors(comparison: QAComparison, path: str | Path) -> Path | None:
    """Histograms of the absolute error of the matched numeric answers, one panel per kind (log-scaled counts),
    the share beyond tolerance in each title. None when no numeric answer was matched."""
    from stridegen.core.errors import require

    m = comparison.matched
    kinds = kinds_present(comparison)
    if not kinds:
        return None
    mpl = require("matplotlib", "plots")
    mpl.use("Agg")
    plt = require("matplotlib.pyplot", "plots")
    kind_arr = np.asarray(m.kind, dtype=object)
    cols = min(3, len(kinds))
    rows = -(-len(kinds) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.8 * rows), squeeze=False)
    for ax, kind in zip(axes.flat, kinds, strict=False):
        sel = kind_arr == kind
        err = m.abs_error[sel]
        err = err[np.isfinite(err)]
        beyond = int(m.changed[sel].sum())
        # integer degrees / hours over a short range: one bar per value
        whole = err.size > 0 and bool(np.all(err == np.round(err))) and float(err.max()) <= 60.0
        bins = np.arange(0.0, float(err.max()) + 2.0) - 0.5 if whole else PLOT_BINS
        ax.hist(err, bins=bins, color="tab:blue", alpha=0.8, log=True)
        ax.set_xlim(left=-0.5 if whole else 0.0)
        ax.set_title(
            f"{kind} (n={int(sel.sum())}, beyond tolerance {100.0 * beyond / max(1, sel.sum()):.1f}%)", fontsize=9
        )
        ax.set_xlabel(f"|candidate - oracle| ({KIND_UNIT[kind]})", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(kinds) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("answers")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
