"""The ``ray`` executor (issue 16): same bytes as the local executor, on a local Ray and on a real two-node cluster
(two raylets on this machine, started with ``ray start``), with a node killed mid-build, a driver killed with
``kill -9``, and a scene that fails by itself recorded once.

All tests share one xdist group (``make test`` runs ``--dist loadgroup``): they start Ray processes and must not
run beside each other. The builds run in this process share one local Ray (``local_ray``): starting one per run
took most of their time.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from stridegen.core.errors import ConfigError
from stridegen.jobs.build import run_build
from stridegen.run.config import config_hash, load_build_config
from stridegen.run.runner import PAUSE_ENV
from stridegen.shards.journal import Journal
from tests.processes import pause_marker, wait_for_exit, wait_for_pause

HAS_RAY = importlib.util.find_spec("ray") is not None
pytestmark = [
    pytest.mark.xdist_group("ray"),
    pytest.mark.skipif(not HAS_RAY, reason="needs the ray extra (pip install 'stridegen[ray]')"),
]
REPO = Path(__file__).resolve().parents[2]
# Token authentication (Ray's default) needs the token on every node; this loopback cluster lives for one test.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
BUILD = [
    "import json, sys",
    "from stridegen.jobs.build import run_build",
    "from stridegen.run.config import load_build_config",
    "r = run_build(sys.argv[1], sys.argv[2], load_build_config(None, sys.argv[3:]))",
    "print(json.dumps([[x.scene, x.status, x.reason] for x in r.results]))",
]


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from stridegen.logs.synthetic.generator import generate_dataset

    root = tmp_path_factory.mktemp("ray-log") / "log"
    generate_dataset(root, scenes=4, seconds=7.0, seed=11, width=320, height=180, progress=False)
    return root


@pytest.fixture(scope="module")
def reference(log: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("ray-ref") / "ds"
    result = run_build(log, out, load_build_config(None, ["workers=1"]))
    assert result.ok, [r.reason for r in result.failed]
    return _shards(out)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray in this process, shared by the in-process tests: the executor joins a Ray that is already
    running (``RayExecutor._connect``) instead of starting and stopping its own for every run, which took most of
    their time; the builds in subprocesses below still start their own local Ray (the driver-killed test: twice)
    or join a cluster. Two CPUs, as ``workers=2`` starts; the workers get this process's ``STRIDEGEN_*`` variables,
    as the executor passes them."""
    import ray

    if ray.is_initialized():  # not started here: not ours to shut down
        yield
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    env_vars = {k: v for k, v in os.environ.items() if k.startswith("STRIDEGEN_")}
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="WARNING",
        log_to_driver=False,
        runtime_env={"env_vars": env_vars} if env_vars else {},
    )
    try:
        yield
    finally:
        ray.shutdown()


def _shards(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "shards").iterdir())}


def _build_subprocess(log: Path, out: Path, *overrides: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", "\n".join(BUILD), str(log), str(out), *overrides],
        cwd=REPO,
        env={**os.environ, **RAY_ENV, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(marker: Path, proc: subprocess.Popen, seconds: float = 180) -> str:
    """The text ("<pid> <scene>") the paused worker wrote into ``marker`` (a FIFO: tests.processes)."""
    paused = wait_for_pause(marker, proc, seconds)
    if paused is None:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the pause point was never reached (exit {proc.returncode}): {out[-2000:]} {err[-2000:]}")
    return paused


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------------------------------- config
def test_executor_section_names_checks_and_stays_out_of_the_hash() -> None:
    local = load_build_config(None)
    ray = load_build_config(None, ["executor.name=ray", "executor.address=auto", "executor.options.max_retries=1"])
    assert ray.executor.name == "ray" and ray.executor.address == "auto"
    assert load_build_config(None, ["executor=ray"]).executor.name == "ray"  # a plain name still works
    assert config_hash(ray) == config_hash(local)
    with pytest.raises(ConfigError, match=r"max_retrys.*it takes"):
        load_build_config(None, ["executor.name=ray", "executor.options.max_retrys=1"])
    with pytest.raises(ConfigError, match="address"):
        load_build_config(None, ["executor.address=auto"])  # the local executor has no cluster to join


# ------------------------------------------------------------------------------------------------ a local Ray
@pytest.mark.slow
@pytest.mark.parametrize("shape", ["tasks", "actors"])
def test_local_ray_build_equals_the_local_executor(
    log: Path, reference: dict[str, bytes], tmp_path: Path, shape: str, local_ray: None
) -> None:
    """Four scenes as Ray tasks or on Ray actors: the local executor's bytes. In this process, on the module's
    local Ray (a fresh build that starts and stops its own is the driver-killed test's rerun)."""
    out = tmp_path / "ds"
    overrides = ["executor.name=ray", "workers=2", f"executor.options.actors={shape == 'actors'}"]
    result = run_build(log, out, load_build_config(None, overrides))
    assert [r.status for r in result.results] == ["built"] * 4, [r.reason for r in result.failed]
    assert _shards(out) == reference
    assert not [p for p in (out / "shards").iterdir() if p.name.startswith(".")]


@pytest.mark.slow
def test_driver_killed_then_rerun_resumes_byte_identical(
    log: Path, reference: dict[str, bytes], tmp_path: Path
) -> None:
    out, marker = tmp_path / "ds", pause_marker(tmp_path / "paused")
    overrides = ["executor.name=ray", "workers=2"]
    proc = _build_subprocess(log, out, *overrides, env={PAUSE_ENV: f"scene-0002:detect:{marker}"})
    worker_pid = int(_wait_for(marker, proc).split()[0])
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    wait_for_exit([worker_pid], 30)  # the local Ray this driver started goes with it, paused worker included
    assert not _alive(worker_pid), "the driver's local Ray outlived it"
    assert "scene-0002" not in Journal(out).completed()  # it starts once one of the first two is done

    again = _build_subprocess(log, out, *overrides)
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr[-3000:]
    statuses = dict((scene, status) for scene, status, _ in json.loads(stdout.splitlines()[-1]))
    assert statuses["scene-0002"] == "built" and "resumed" in statuses.values()
    assert _shards(out) == reference


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


@pytest.mark.slow
def test_a_scene_that_fails_by_itself_is_recorded_once(log: Path, tmp_path: Path, local_ray: None) -> None:
    broken = tmp_path / "log"
    shutil.copytree(log, broken)
    for victim in (broken / "samples" / "LIDAR_TOP").glob("*scene-0002__LIDAR_TOP*"):
        victim.write_bytes(victim.read_bytes()[:402])  # a torn point record: the scene fails the same way every time
    out = tmp_path / "ds"
    result = run_build(broken, out, load_build_config(None, ["executor.name=ray", "workers=2"]))
    assert [r.scene for r in result.failed] == ["scene-0002"]
    assert "LIDAR_TOP" in result.failed[0].reason
    events = Counter((e["event"], e.get("scene")) for e in Journal(out).events())
    assert events[("failed", "scene-0002")] == 1 and events[("started", "scene-0002")] == 1
    assert sum(n for (kind, _), n in events.items() if kind == "done") == 3


# ------------------------------------------------------------------------------------------ a two-node cluster
class TwoNodes:
    """``ray start --head`` plus a second node (``ray start --address``), both on this machine, one CPU each. The
    second node's workers inherit its environment: ``pause`` makes the first scene that runs there stop after its
    detect stage and say so in a marker file."""

    def __init__(self, pause_marker: Path) -> None:
        self.ray = str(Path(sys.executable).with_name("ray"))
        self.port, self.node2_port = _free_port(), _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp = Path(tempfile.mkdtemp(prefix="sg-ray-", dir="/tmp"))  # Ray's socket paths must stay short
        self.env = {**os.environ, **RAY_ENV}
        common = ["--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats"]
        self._start(
            [
                "--head",
                f"--port={self.port}",
                "--node-ip-address=127.0.0.1",
                "--include-dashboard=false",
                f"--temp-dir={self.temp}",
                *common,
            ],
            self.env,
        )
        self._start(
            [f"--address={self.address}", f"--node-manager-port={self.node2_port}", *common],
            {**self.env, PAUSE_ENV: f"*:detect:{pause_marker}"},
        )

    def _start(self, args: list[str], env: dict[str, str]) -> None:
        done = subprocess.run([self.ray, "start", *args], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    def alive_nodes(self) -> int:
        code = (
            "import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
            "print(sum(n['Alive'] for n in ray.nodes()))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, self.address], env=self.env, capture_output=True, text=True, timeout=120
        )
        return int(done.stdout.strip().splitlines()[-1])

    def kill_node2(self) -> None:
        """SIGKILL the second node's raylet (its workers go with it)."""
        subprocess.run(["pkill", "-9", "-f", f"raylet.*node_manager_port={self.node2_port}"], check=False)

    def stop(self) -> None:
        """Every process of this cluster: its command lines name its session folder or its GCS port."""
        for pattern in (str(self.temp), f"127.0.0.1:{self.port}", f"node_manager_port={self.node2_port}"):
            subprocess.run(["pkill", "-9", "-f", pattern], check=False)
        shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[TwoNodes, Path]]:
    marker = pause_marker(tmp_path / "paused-on-node2")
    nodes = TwoNodes(marker)
    try:
        yield nodes, marker
    finally:
        nodes.stop()


@pytest.mark.slow
def test_a_node_killed_mid_build_is_retried_and_the_build_is_byte_identical(
    cluster: tuple[TwoNodes, Path], log: Path, reference: dict[str, bytes], tmp_path: Path
) -> None:
    nodes, marker = cluster
    assert nodes.alive_nodes() == 2
    out = tmp_path / "ds"
    proc = _build_subprocess(log, out, "executor.name=ray", f"executor.address={nodes.address}", "workers=2")
    paused_pid, paused_scene = _wait_for(marker, proc).split()
    nodes.kill_node2()
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    results = json.loads(stdout.splitlines()[-1])
    assert [status for _, status, _ in results] == ["built"] * 4, results
    assert _shards(out) == reference
    started = Counter(e.get("scene") for e in Journal(out).events() if e["event"] == "started")
    assert started[paused_scene] == 2  # the scene of the dead node ran again elsewhere
    assert not _alive(int(paused_pid))  # its first worker went down with the node's raylet


# ------------------------------------------------------------------------------------- augment and export on Ray
@pytest.mark.slow
def test_augment_and_export_on_ray_equal_the_local_executor(dataset: Path, tmp_path: Path, local_ray: None) -> None:
    """`stridegen augment` and `stridegen export` with --executor ray write the same bytes as with the local one
    (on the module's local Ray)."""
    from typer.testing import CliRunner

    from stridegen.cli import app

    def tree(root: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in ("journal.jsonl", "build_report.json")
        }

    runner = CliRunner()
    for command in (
        ["augment", str(dataset), "--corruptions", "fog,gaussian_noise", "--severity", "3"],
        ["export", str(dataset), "--format", "llava"],
    ):
        outputs = []
        for executor in ("local", "ray"):
            out = tmp_path / f"{command[0]}-{executor}"
            result = runner.invoke(app, [*command, "--out", str(out), "-w", "2", "--executor", executor])
            assert result.exit_code == 0, result.output
            outputs.append(tree(out))
        assert outputs[0] == outputs[1] and outputs[0]
    bad = runner.invoke(
        app,
        [
            "export",
            str(dataset),
            "--format",
            "llava",
            "--out",
            str(tmp_path / "x"),
            "--executor",
            "ray",
            "--executor-option",
            "max_retrys=2",
        ],
    )
    assert bad.exit_code == 2 and "max_retrys" in bad.output
