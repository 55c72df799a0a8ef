"""``write_report``: a built dataset (and optional evaluation results) -> one self-contained HTML file.

Steps, each timed: the evaluation files are read first (a bad ``--eval`` fails before the dataset is scanned);
one streaming pass over the dataset's tables gathers the counts, histograms and funnels (``stats``); the gallery
draws its sampled images (``gallery``); the worst answers of each result with a per-question file are ranked and
their questions drawn (``worst_answers``); the page is assembled and written atomically (a temporary file renamed).
The same dataset, results, sample count and seed give the same bytes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stridegen import __version__
from stridegen.shards.reader import open_dataset
from stridegen.viz.report.dataset_sections import distributions_section, overview_section, visibility_section
from stridegen.viz.report.eval_sections import BLOCKS, evaluations_section, shown_blocks
from stridegen.viz.report.gallery import build_gallery
from stridegen.viz.report.gallery_view import gallery_section
from stridegen.viz.report.markup import esc, fmt_int
from stridegen.viz.report.page import render_page
from stridegen.viz.report.results import EvalInputs, load_results
from stridegen.viz.report.stats import collect_stats
from stridegen.viz.report.validate_qa_section import validate_qa_section
from stridegen.viz.report.worst_answers import DEFAULT_WORST, attach_questions, worst_failures

DEFAULT_SAMPLES = 24
DEFAULT_IMAGE_WIDTH = 480


@dataclass
class ReportResult:
    """What was written: the file, its size, the time of each step (s) and what it holds."""

    path: Path
    bytes: int
    seconds: dict[str, float] = field(default_factory=dict)
    scenes: int = 0
    qa: int = 0
    samples: int = 0
    evaluations: list[str] = field(default_factory=list)


def _write_atomic(path: Path, text: str) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    data = text.encode("utf-8")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return len(data)


def write_report(
    dataset_dir: str | Path,
    out: str | Path,
    eval_paths: Sequence[str | Path] = (),
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    image_width: int = DEFAULT_IMAGE_WIDTH,
    on_scene: Callable[[int, int], None] | None = None,
    worst: int = DEFAULT_WORST,
) -> ReportResult:
    """Write the report of ``dataset_dir`` to ``out``. ``samples`` gallery samples (0: no gallery), drawn with
    ``seed``; images ``image_width`` pixels wide. ``on_scene(done, total)`` is called after each scene's tables
    are read. ``worst``: the failed answers listed per result that has a per-question file (0: none).

    Raises ShardError for an unreadable dataset and DataFormatError for an evaluation file it cannot use."""
    start = time.perf_counter()
    seconds: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        seconds[name] = round(now - since, 4)
        return now

    inputs: EvalInputs | None = load_results([Path(p) for p in eval_paths]) if eval_paths else None
    t = lap("evaluations", start)
    with open_dataset(dataset_dir) as dataset:
        stats = collect_stats(dataset, on_scene=on_scene)
        t = lap("stats", t)
        gallery = build_gallery(dataset, samples, seed=seed, width=image_width)
        t = lap("gallery", t)
        worst_answers = {}
        for r, _ in shown_blocks(inputs.results) if inputs else []:  # a paired blind baseline lists none
            found = worst_failures(r, worst)
            if found is not None:
                attach_questions(dataset, found[0], image_width)
                worst_answers[r.source] = found
        t = lap("worst_answers", t)
    sections = [
        overview_section(stats),
        distributions_section(stats),
        visibility_section(stats),
        gallery_section(gallery, len(stats.scenes)),
        evaluations_section(inputs, worst_answers),
    ]
    validate_qa = validate_qa_section(dataset_dir)  # present when `stridegen validate --qa` wrote its results here
    if validate_qa is not None:
        sections.append(validate_qa)
    name = Path(dataset_dir).resolve().name
    subtitle = f"{esc(name)} · {fmt_int(len(stats.scenes))} scenes · {fmt_int(stats.qa_total)} QA"  # no absolute path
    footer = (
        f"stridegen {esc(__version__)} · gallery seed {seed}, {len(gallery.cards)} samples · self-contained "
        "page: nothing is loaded from the network"
    )
    html = render_page(f"stridegen report: {name}", subtitle, sections, footer)
    size = _write_atomic(Path(out), html)
    lap("write", t)
    seconds["total"] = round(time.perf_counter() - start, 4)
    return ReportResult(
        Path(out),
        size,
        seconds,
        scenes=len(stats.scenes),
        qa=stats.qa_total,
        samples=len(gallery.cards),
        evaluations=sorted((r.kind for r in inputs.results), key=list(BLOCKS).index) if inputs else [],
    )
