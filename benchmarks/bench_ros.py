"""ROS recordings: read throughput of the ``ros`` reader against rosbags' own message iteration on the same file,
the first open (the recording's index: what the first ``stridegen check`` pays), and a build worker's peak memory
against the recording's length.

Recordings are written with ``stridegen.logs.synthetic.ros_writer.write_recording``: a LiDAR at 10 Hz
(``--points`` points of x, y, z, intensity, ring, t: 24 bytes each, each point's time from its azimuth, or with
``--columns C`` its azimuth column's of C a turn, stored column after column: a LiDAR firing its channels together),
``--cameras`` JPEG cameras of 320x180 with CameraInfo at 10 Hz, ``/tf`` at 10 Hz and ``/tf_static``; the ego drives
at 10 m/s on a circle of 50 m radius (0.2 rad/s of yaw: every sweep is de-skewed with a turn, not only a shift).

Timing (the project's rule): CPU time (``time.process_time``: user + system of this process) of the code under
test, single-threaded (OMP / OpenBLAS / MKL threads set to 1 before NumPy loads), rounds alternated between the
sides, min / median / max over ``--repeats`` rounds.

- throughput: MB of recording per CPU-second. rosbags: ``AnyReader.messages()`` over every message, each
  deserialised (its open included). ours: a fresh ``RosReader`` (index already built), every frame of every scene:
  its sweep (decoded, de-skewed) and its camera bytes (scene set-up included: tf, poses, CameraInfo); and the
  same without de-skew (mapping ``deskew: false``). The reader reads MCAP through the chunk index (``mcapfile``)
  and SQLite directly (``sqlitefile``), ROS 1 through rosbags; its tf and CameraInfo types are compiled once per
  process (``Recording.deserialize_topic``), where rosbags' pass compiles the recording's types at each open.
  floor: what our output cannot do without, done with rosbags
  and NumPy directly: the sensor topics' messages read in one pass and deserialised, each sweep copied into the
  [N, 5] float32 array, each image's bytes copied (no tf, no poses, no de-skew). Ratio: rosbags' median CPU time
  over ours (goal: ours >= 0.8x rosbags).
- first open: building the index (one pass over the recording), once, CPU time.
- first check: ``stridegen check`` of the longest recording with no index yet (index, then every scene's check),
  CPU time of the child process.
- ``--keep-freed-memory``: glibc's trim and mmap thresholds raised first (``keep_freed_memory``, as augment workers
  do), for both sides: the sides' fresh arrays then reuse freed pages instead of page-faulting new ones.
- memory: in a fresh process per length, ``RosReader(root).scene(<middle scene>)`` and every sweep and image of
  it read; peak RSS (``VmHWM``, the child's own) minus the peak after imports. Goal: flat in the length.

    .venv/bin/python benchmarks/bench_ros.py [--container ros2-mcap] [--minutes 1 3 10] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy loads: single-threaded both sides

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RADIUS_M = 50.0
SPEED_MPS = 10.0


def write_recording_of(path: Path, container: str, seconds: float, points: int, cameras: int, columns: int = 0) -> None:
    """A recording of ``seconds`` (module docstring); ``columns``: column-stamped times (``--columns``)."""
    from stridegen.core.transforms import make_transform
    from stridegen.formats.images import encode_jpeg
    from stridegen.logs.ros.types import make
    from stridegen.logs.synthetic.ros_writer import _header, _transform, column_times, write_recording

    rng = np.random.default_rng(0)
    t0 = 1_700_000_000_000_000_000
    period = 100_000_000
    n = int(seconds * 10)
    xyz = rng.normal(0.0, 20.0, (points, 3)).astype(np.float32)
    record = np.zeros(
        points,
        dtype=np.dtype(
            {
                "names": ["x", "y", "z", "intensity", "ring", "t"],
                "formats": ["<f4"] * 4 + ["<u2", "<f4"],
                "offsets": [0, 4, 8, 12, 16, 20],
                "itemsize": 24,
            }
        ),
    )
    record["x"], record["y"], record["z"] = xyz.T
    record["intensity"] = rng.uniform(0, 100, points)
    record["ring"] = rng.integers(0, 32, points)
    record["t"] = -np.mod(np.arctan2(xyz[:, 1], xyz[:, 0]), 2 * np.pi) / (2 * np.pi) * 0.1
    if columns:  # one time per azimuth column, the points stored column after column
        times, order = column_times(xyz.astype(np.float64), 0.1, columns)
        record = record[order]
        record["t"] = times
    cloud = np.frombuffer(record.tobytes(), dtype=np.uint8)
    image = rng.integers(0, 256, (180, 320, 3), dtype=np.uint8)
    jpeg = np.frombuffer(encode_jpeg(image, 90).tobytes(), dtype=np.uint8)
    K = np.array([[200.0, 0, 160], [0, 200.0, 90], [0, 0, 1]])
    cams = [f"CAM_{i}" for i in range(cameras)]
    statics = [("base_link", "LIDAR", make_transform(np.eye(3), np.array([1.0, 0.0, 1.8])))]
    for i, cam in enumerate(cams):
        yaw = 2 * np.pi * i / max(cameras, 1)
        R = np.array([[0, 0, 1], [-1, 0, 0], [0, -1, 0]], dtype=float)  # camera z forward, x right, y down
        Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
        statics.append(("base_link", cam, make_transform(Rz @ R, np.array([1.5, 0.0, 1.6]))))
    fields = [("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("intensity", 12, 7), ("ring", 16, 4), ("t", 20, 7)]
    messages = [
        (
            "/tf_static",
            "tf2_msgs/msg/TFMessage",
            t0,
            lambda st: make(
                st, "tf2_msgs/msg/TFMessage", transforms=[_transform(st, t0, p, c, T) for p, c, T in statics]
            ),
        )
    ]
    for k in range(n + 2):  # poses one period beyond the last sweep: a circle of RADIUS_M at SPEED_MPS
        ns = t0 + k * period
        yaw = SPEED_MPS / RADIUS_M * k * period * 1e-9
        Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0.0], [np.sin(yaw), np.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
        T = make_transform(Rz, RADIUS_M * np.array([np.sin(yaw), 1.0 - np.cos(yaw), 0.0]))
        messages.append(
            (
                "/tf",
                "tf2_msgs/msg/TFMessage",
                ns,
                lambda st, ns=ns, T=T: make(
                    st, "tf2_msgs/msg/TFMessage", transforms=[_transform(st, ns, "map", "base_link", T)]
                ),
            )
        )
    for k in range(1, n + 1):
        ns = t0 + k * period
        messages.append(
            (
                "/lidar/points",
                "sensor_msgs/msg/PointCloud2",
                ns,
                lambda st, ns=ns: make(
                    st,
                    "sensor_msgs/msg/PointCloud2",
                    header=_header(st, ns, "LIDAR"),
                    height=1,
                    width=points,
                    fields=[
                        make(st, "sensor_msgs/msg/PointField", name=a, offset=o, datatype=d, count=1)
                        for a, o, d in fields
                    ],
                    is_bigendian=False,
                    point_step=24,
                    row_step=24 * points,
                    data=cloud,
                    is_dense=True,
                ),
            )
        )
        for cam in cams:
            messages.append(
                (
                    f"/{cam}/image/compressed",
                    "sensor_msgs/msg/CompressedImage",
                    ns + 1_000_000,
                    lambda st, ns=ns, cam=cam: make(
                        st,
                        "sensor_msgs/msg/CompressedImage",
                        header=_header(st, ns + 1_000_000, cam),
                        format="jpeg",
                        data=jpeg,
                    ),
                )
            )
            messages.append(
                (
                    f"/{cam}/camera_info",
                    "sensor_msgs/msg/CameraInfo",
                    ns + 1_000_000,
                    lambda st, ns=ns, cam=cam: make(
                        st,
                        "sensor_msgs/msg/CameraInfo",
                        header=_header(st, ns + 1_000_000, cam),
                        height=180,
                        width=320,
                        distortion_model="plumb_bob",
                        d=np.zeros(5),
                        k=K.reshape(-1),
                        r=np.eye(3).reshape(-1),
                        p=np.hstack([K, np.zeros((3, 1))]).reshape(-1),
                        binning_x=0,
                        binning_y=0,
                        roi=make(
                            st,
                            "sensor_msgs/msg/RegionOfInterest",
                            x_offset=0,
                            y_offset=0,
                            height=0,
                            width=0,
                            do_rectify=False,
                        ),
                    ),
                )
            )
    write_recording(path, container, messages)


def size_mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.iterdir() if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6


def rosbags_pass(path: Path) -> float:
    """CPU seconds of rosbags' own iteration: every message read and deserialised."""
    from rosbags.highlevel import AnyReader

    from stridegen.logs.ros.types import typestore

    start = time.process_time()
    with AnyReader([path], default_typestore=typestore(path.suffix == ".bag")) as reader:
        for conn, _ts, raw in reader.messages():
            reader.deserialize(raw, conn.msgtype)
    return time.process_time() - start


def our_pass(root: Path, deskew: bool = True) -> float:
    """CPU seconds of the ros reader over every frame: sweep and camera bytes."""
    from stridegen.logs.ros.reader import RosReader

    reader = RosReader(root, {"deskew": deskew})
    start = time.process_time()
    for name, _ in reader.scene_ids():
        for frame in reader.scene(name):
            frame.lidar()
            for channel in frame.camera_channels:
                frame.image_bytes(channel)
    return time.process_time() - start


def floor_pass(path: Path) -> float:
    """CPU seconds of the work our output cannot skip (module docstring: floor)."""
    from rosbags.highlevel import AnyReader

    from stridegen.logs.ros.pointcloud2 import cloud_dtype
    from stridegen.logs.ros.types import typestore

    start = time.process_time()
    with AnyReader([path], default_typestore=typestore(path.suffix == ".bag")) as reader:
        conns = [c for c in reader.connections if c.msgtype.endswith(("PointCloud2", "CompressedImage"))]
        for conn, _ts, raw in reader.messages(connections=conns):
            msg = reader.deserialize(raw, conn.msgtype)
            if conn.msgtype.endswith("CompressedImage"):
                bytes(msg.data)
                continue
            fields = [(f.name, f.offset, f.datatype, f.count) for f in msg.fields]
            records = np.frombuffer(msg.data, cloud_dtype(fields, msg.point_step, msg.is_bigendian))
            points = np.empty((records.size, 5), dtype=np.float32)
            for column, name in enumerate(("x", "y", "z", "intensity", "ring")):
                points[:, column] = records[name]
    return time.process_time() - start


def spread(values: list[float], mb: float) -> str:
    """MB per CPU-second: median (min, max)."""
    rates = sorted(mb / v for v in values)
    return f"{statistics.median(rates):6.0f} MB/s (min {rates[0]:.0f}, max {rates[-1]:.0f})"


MEMORY_CHILD = """
import json, resource, sys
from stridegen.logs.ros.reader import RosReader
import rosbags.highlevel, numpy, scipy.spatial.transform, cv2
def peak_kb():  # this process's own peak RSS: VmHWM (ru_maxrss keeps the parent's peak across exec on Linux)
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
base = peak_kb()
reader = RosReader(sys.argv[1])
ids = reader.scene_ids()
scene = reader.scene(ids[len(ids) // 2][0])
for frame in scene:
    frame.lidar()
    for channel in frame.camera_channels:
        frame.image_bytes(channel)
peak = peak_kb()
print(json.dumps({"scenes": len(ids), "frames": len(scene.frames), "base_mb": base / 1024, "peak_mb": peak / 1024}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--container", default="ros2-mcap", choices=["ros2-mcap", "ros1", "ros2-sqlite3"])
    parser.add_argument("--minutes", type=float, nargs="*", default=[1.0, 3.0, 10.0])
    parser.add_argument("--throughput-seconds", type=float, default=60.0)
    parser.add_argument("--points", type=int, default=20000)
    parser.add_argument("--cameras", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--columns", type=int, default=0, help="column-stamped sweeps: C columns a turn (0: per point)")
    parser.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="glibc keeps freed memory (augment's keep_freed_memory, both sides): no page faults from trimming",
    )
    args = parser.parse_args()
    print("$ .venv/bin/python benchmarks/bench_ros.py " + shlex.join(sys.argv[1:]))
    if args.keep_freed_memory:
        from stridegen.augment.corruptions.base import keep_freed_memory

        print(f"  keep_freed_memory: {keep_freed_memory()}")
    with tempfile.TemporaryDirectory(prefix="bench-ros-") as tmp:
        root = Path(tmp) / "throughput"
        root.mkdir()
        name = "rec.bag" if args.container == "ros1" else "rec"
        write_recording_of(
            root / name, args.container, args.throughput_seconds, args.points, args.cameras, args.columns
        )
        mb = size_mb(root / name)
        from stridegen.logs.ros.reader import RosReader

        start = time.process_time()
        RosReader(root)
        first_open = time.process_time() - start
        sides = {
            "rosbags": lambda: rosbags_pass(root / name),
            "ours": lambda: our_pass(root),
            "ours, no de-skew": lambda: our_pass(root, deskew=False),
            "floor": lambda: floor_pass(root / name),
        }
        order = list(sides)
        times: dict[str, list[float]] = {side: [] for side in sides}
        for r in range(args.repeats):  # alternated: each round runs every side, the order rotating
            for side in order[r % len(order) :] + order[: r % len(order)]:
                times[side].append(sides[side]())
        base = statistics.median(times["rosbags"])
        print(
            f"{args.container}: {args.throughput_seconds:.0f} s recording, {mb:.1f} MB, {args.points} points/sweep, "
            f"{args.cameras} cameras, {f'{args.columns} time columns' if args.columns else 'per-point times'}; "
            f"CPU time, {args.repeats} alternated rounds"
        )
        print(f"  first open (index):  {first_open:.2f} CPU-s ({mb / first_open:.0f} MB/s)")
        for side, values in times.items():
            ratios = sorted(rb / v for rb, v in zip(times["rosbags"], values, strict=True))
            print(
                f"  {side + ':':18s} {spread(values, mb)}, {base / statistics.median(values):.2f}x rosbags "
                f"(per round {ratios[0]:.2f}-{ratios[-1]:.2f})"
            )
        print("  goal: ours >= 0.8x rosbags")
        for minutes in args.minutes:
            folder = Path(tmp) / f"mem-{minutes}"
            folder.mkdir()
            write_recording_of(folder / name, args.container, minutes * 60.0, args.points, args.cameras, args.columns)
            RosReader(folder)  # the index, built once (not what a worker pays)
            out = subprocess.run(
                [sys.executable, "-c", MEMORY_CHILD, str(folder)], capture_output=True, text=True, check=True
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"  {minutes:>5.1f} min ({size_mb(folder / name):7.1f} MB, {r['scenes']} scenes): worker peak "
                f"{r['peak_mb']:.0f} MB, {r['peak_mb'] - r['base_mb']:.0f} MB over the imports"
            )
            if minutes == max(args.minutes):
                import shutil

                shutil.rmtree(folder / ".stridegen-index")
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(
                    [sys.executable, "-m", "stridegen.cli.check", "check", str(folder), "segmenter.name=projected_box"],
                    capture_output=True,
                    text=True,
                )
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                print(f"  first `stridegen check` of the {minutes:.0f} min recording: {cpu:.1f} CPU-s")


if __name__ == "__main__":
    main()
