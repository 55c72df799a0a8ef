"""The ``ray`` executor: scenes on a Ray cluster, a local one started for the run or an existing one (docs/scale.md).

``executor.name=ray`` with ``executor.address`` empty starts a local Ray with ``workers`` CPUs for the run and stops
it at the end; ``auto`` joins the cluster of this machine (``ray start --head``), ``ray://host:10001`` a remote one
through Ray Client. A Ray already initialised by the caller's own program is used as it is and left running.

Scenes run in one of two shapes:

- **tasks** (the default): one Ray task per scene asking ``num_cpus`` CPUs. Ray reuses its worker processes, so a
  worker keeps its open logs and models between scenes, as a local worker does.
- **actors** (``actors=true``, and always when ``num_gpus`` > 0): a pool of ``workers`` long-lived actors, each
  holding ``num_gpus`` GPUs and ``num_cpus`` CPUs, fed one scene at a time. A detector or SAM 2 model is loaded
  once per actor (the build's per-process backend caches) and stays on its GPU for every later scene. Ray would
  start a fresh process for every GPU *task* (its ``max_calls`` is 1 for GPU tasks), reloading the model each time.

At most ``max_in_flight`` scenes (default ``workers``) are submitted at once; a scene's payload and result are a
few kilobytes (the worker writes its shard to the output folder itself), so the object store stays flat however
many scenes a run has. The output folder must be a path every node can write (a shared file system).

Faults: a scene whose worker process or node dies is resubmitted by Ray (``max_retries`` times for tasks; an actor
is restarted and its scene retried the same number of times), and writes the same bytes again. A scene that fails
by itself comes back as a failed ``SceneResult`` (the workers never raise), so Ray never retries it: it is recorded
once in the journal. When the retries run out, the scene is failed with Ray's reason. The journal is written by
this process alone, so a driver killed with ``kill -9`` is resumed by running the same command again (a local Ray
started here dies with the driver).

Stage events reach the progress display through a small event actor the workers post to (fire and forget).
Environment variables named ``STRIDEGEN_*`` of this process are passed to the workers (``runtime_env``), beside
the ``runtime_env`` option's own (e.g. ``{"pip": [...], "working_dir": ...}`` for a cluster without stridegen).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from stridegen.core import registry
from stridegen.core.errors import ConfigError, MissingExtraError
from stridegen.run.executors import limit_native_threads
from stridegen.run.ray_events import EventLog as _EventLog
from stridegen.run.runner import EventCallback, SceneResult, StageEvent, Worker

EVENT_POLL_S = 0.1
EVENT_AWAIT_S = 60.0  # the most a scene waits for its start event to reach the event actor


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "ray") from None
    return ray


def _run_scene(
    worker: Worker, job: int, scene: str, payload: Any, registrations: dict[str, dict[str, Any]], events: Any
) -> SceneResult:
    """One scene on a Ray worker: the driver's run-time registrations, stage events to the event actor, OpenCV's
    threads capped at the CPUs Ray gave the scene (Ray caps OpenMP itself, ``OMP_NUM_THREADS``)."""
    registry.restore(registrations)
    limit_native_threads(max(1, int(float(os.environ.get("OMP_NUM_THREADS", "1")))))

    def report(scene_name: str, stage: str) -> None:
        events.put.remote((job, scene_name, stage))

    # The start event is awaited: the journal must learn of every attempt, also of one whose node dies a moment later
    # (a fire-and-forget call can die unsent with its worker). Stage events stay fire and forget.
    ray = import_ray()
    try:
        ray.get(events.put.remote((job, scene, "start")), timeout=EVENT_AWAIT_S)
    except Exception as exc:  # the event actor lost with its node and not yet back: a progress event, never the scene
        print(f"stridegen: {scene}: start event not delivered ({type(exc).__name__}: {exc})", file=sys.stderr)
    return worker(payload, report)


class _SceneActor:
    """A long-lived worker (actors mode): its process keeps the backends it loads for every later scene."""

    def run(
        self,
        worker: Worker,
        job: int,
        scene: str,
        payload: Any,
        registrations: dict[str, dict[str, Any]],
        events: Any,
    ) -> SceneResult:
        return _run_scene(worker, job, scene, payload, registrations, events)


class RayExecutor:
    """Scenes as Ray tasks or on a pool of Ray actors (module docstring)."""

    def __init__(
        self,
        workers: int = 1,
        address: str = "",
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        actors: bool = False,
        max_in_flight: int = 0,
        max_retries: int = 3,
        object_store_mb: int = 0,
        runtime_env: dict[str, Any] | None = None,
    ) -> None:
        if int(workers) < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        if num_cpus < 0 or num_gpus < 0:
            raise ConfigError(f"executor ray: num_cpus and num_gpus must be >= 0, got {num_cpus}, {num_gpus}")
        if int(max_retries) < 0 or int(max_in_flight) < 0:
            raise ConfigError("executor ray: max_retries and max_in_flight must be >= 0")
        self.workers = int(workers)
        self.address = address
        self.num_cpus = float(num_cpus)
        self.num_gpus = float(num_gpus)
        self.actors = bool(actors) or self.num_gpus > 0
        self.max_in_flight = int(max_in_flight) or self.workers
        self.max_retries = int(max_retries)
        self.object_store_mb = int(object_store_mb)
        self.runtime_env = dict(runtime_env or {})

    # ------------------------------------------------------------------------------------------------ connection
    def _runtime_env(self) -> dict[str, Any]:
        env_vars = {k: v for k, v in os.environ.items() if k.startswith("STRIDEGEN_")}
        out = dict(self.runtime_env)
        if env_vars:
            out["env_vars"] = {**env_vars, **out.get("env_vars", {})}
        return out

    def _connect(self, ray: Any) -> bool:
        """Initialise Ray for the run; True when this call started it (and so must shut it down)."""
        if ray.is_initialized():
            return False
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        kwargs: dict[str, Any] = {
            "runtime_env": self._runtime_env(),
            "logging_level": "WARNING",
            "log_to_driver": False,
        }
        if self.address:
            kwargs["address"] = self.address
        else:
            kwargs.update(num_cpus=max(self.workers, 1), include_dashboard=False)
            if self.object_store_mb:
                kwargs["object_store_memory"] = self.object_store_mb * 2**20
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = self.address or "a local Ray"
            raise ConfigError(f"executor ray: could not start or join {where}: {exc}") from None
        return True

    # ------------------------------------------------------------------------------------------------------ run
    def run(
        self,
        worker: Worker,
        tasks: Sequence[tuple[int, str, Any]],
        finish: Callable[[int, SceneResult], None],
        on_event: EventCallback,
    ) -> None:
        if not tasks:
            return
        ray = import_ray()
        started_here = self._connect(ray)
        try:
            self._run(ray, worker, tasks, finish, on_event)
        finally:
            if started_here:
                ray.shutdown()

    def _submitter(self, ray: Any) -> Callable[..., Any]:
        """A function (task index, *args) -> ObjectRef that runs one scene as a task or on the next free actor."""
        resources = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus}
        if not self.actors:
            remote = ray.remote(_run_scene).options(**resources, max_retries=self.max_retries, retry_exceptions=False)
            return lambda index, *args: remote.remote(*args)
        actor_class = ray.remote(_SceneActor).options(
            **resources, max_restarts=self.max_retries, max_task_retries=self.max_retries
        )
        pool = [actor_class.remote() for _ in range(min(self.workers, self.max_in_flight))]
        busy: dict[int, Any] = {}  # task index -> its actor

        def submit(index: int, *args: Any) -> Any:
            free = [a for a in pool if not any(a is b for b in busy.values())]
            busy[index] = free[0]
            return free[0].run.remote(*args)

        submit.release = lambda index: busy.pop(index, None)  # type: ignore[attr-defined]
        return submit

    def _run(
        self,
        ray: Any,
        worker: Worker,
        tasks: Sequence[tuple[int, str, Any]],
        finish: Callable[[int, SceneResult], None],
        on_event: EventCallback,
    ) -> None:
        events = self._event_log(ray)
        registrations = ray.put(registry.snapshot())
        submit = self._submitter(ray)
        release = getattr(submit, "release", lambda index: None)
        slots = min(self.max_in_flight, self.workers if self.actors else self.max_in_flight)
        by_task = {(job, scene): k for k, (job, scene, _) in enumerate(tasks)}
        pending = list(range(len(tasks)))[::-1]
        running: dict[Any, int] = {}  # ObjectRef -> task index
        finished: set[int] = set()
        started: set[int] = set()

        def forward() -> None:
            try:
                items = ray.get(events.drain.remote(), timeout=30)
            except Exception:  # the event actor restarting: only progress events are lost, never a result
                return
            for job, scene, stage in items:
                k = by_task.get((job, scene))
                if k is not None and k not in finished:  # a late event of a finished scene is dropped
                    started.add(k)
                    on_event(StageEvent(job, scene, stage))

        while pending or running:
            while pending and len(running) < slots:
                k = pending.pop()
                job, scene, payload = tasks[k]
                running[submit(k, worker, job, scene, payload, registrations, events)] = k
            done, _ = ray.wait(list(running), num_returns=1, timeout=EVENT_POLL_S)
            forward()
            for ref in done:
                k = running.pop(ref)
                release(k)
                result = self._result(ray, ref, tasks[k][1])
                if k not in started:  # its start event is still on its way: the journal records the start first
                    on_event(StageEvent(tasks[k][0], tasks[k][1], "start"))
                finished.add(k)
                finish(k, result)
        forward()

    @staticmethod
    def _event_log(ray: Any) -> Any:
        """The event actor, on this driver's node (a node lost mid-run must not take the progress events with it)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        # Restarted wherever it can run if its node dies; calls made meanwhile wait for it instead of failing.
        options = {"num_cpus": 0, "max_restarts": -1, "max_task_retries": -1, "scheduling_strategy": here}
        return ray.remote(_EventLog).options(**options).remote()

    def _result(self, ray: Any, ref: Any, scene: str) -> SceneResult:
        try:
            result = ray.get(ref)
        except Exception as exc:  # the worker or its node died past the retries, or Ray failed the task
            return SceneResult(
                scene,
                "failed",
                reason=f"ray worker failed after {self.max_retries} retries: {type(exc).__name__}: {exc}",
                error_type=type(exc).__name__,
            )
        if not isinstance(result, SceneResult):
            return SceneResult(scene, "failed", reason=f"ray worker returned {type(result).__name__}", error_type="")
        return result
