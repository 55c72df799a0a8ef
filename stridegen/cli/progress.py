"""Rich progress bars of a scene run (build, augment): a run observer (stridegen.run.runner.RunObserver).

An overall "scenes (done n, failed m)" bar, and one bar per stage (build: ``bars="stages"``) or per job label
(augment: one bar per corruption).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stridegen.run.runner import SceneResult, StageEvent

REFRESH_PER_SECOND = 2  # progress redraws a second (bars advance per stage of a scene: seconds apart)


class SceneProgress:
    """``stages``: the stage names to show a bar for (their totals are the number of scenes to run); or
    ``job_labels``: the label of each job (jobs with one label share a bar, advanced when a scene finishes)."""

    def __init__(
        self,
        enabled: bool = True,
        console: Any = None,
        stages: Sequence[str] = (),
        job_labels: Sequence[str] = (),
        label_width: int = 28,
    ) -> None:
        self.enabled = enabled
        self.console = console
        self.stages = list(stages)
        self.job_labels = list(job_labels)
        self.label_width = label_width
        self.done = 0
        self.failed = 0
        self.progress: Any = None
        self.overall: Any = None
        self.bars: dict[str, Any] = {}

    def _overall_text(self) -> str:
        return f"scenes (done {self.done}, failed {self.failed})"

    def planned(self, tasks: Sequence[tuple[int, str]]) -> None:
        if not self.enabled or not tasks:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn(f"{{task.description:<{self.label_width}}}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
            # rich's default of 10 redraws a second costs ~5 % of a core in a terminal (12 bars; ~1.4 % at 2), paid
            # for the whole run however long the log (issue 35; benchmarks/bench_build.py measures the command)
            refresh_per_second=REFRESH_PER_SECOND,
        )
        self.overall = self.progress.add_task(self._overall_text(), total=len(tasks))
        totals: dict[str, int] = dict.fromkeys(self.stages, len(tasks))
        for job, _ in tasks:
            if job < len(self.job_labels):
                totals[self.job_labels[job]] = totals.get(self.job_labels[job], 0) + 1
        self.bars = {name: self.progress.add_task(f"  {name}", total=n) for name, n in totals.items() if n}
        self.progress.start()

    def event(self, event: StageEvent) -> None:
        if self.progress is not None and event.stage in self.stages:
            self.progress.advance(self.bars[event.stage])

    def finished(self, job: int, result: SceneResult) -> None:
        if result.ok:
            self.done += 1
        else:
            self.failed += 1
        if self.progress is None:
            return
        if job < len(self.job_labels):
            self.progress.advance(self.bars[self.job_labels[job]])
        self.progress.update(self.overall, advance=1, description=self._overall_text())

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def __enter__(self) -> SceneProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
