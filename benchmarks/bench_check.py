"""What `stridegen check` costs per scene: metadata only (``deep=False``, what a build runs before each scene) and the
full check of the command (``deep=True``: every camera image decoded at 1/8 scale with libjpeg's warnings as errors,
issue 33), on synthetic logs at two camera sizes. CPU only.

    .venv/bin/python benchmarks/bench_check.py                      # 800x450 and 1600x900, 2 scenes of 8 s
    .venv/bin/python benchmarks/bench_check.py --sizes 1600x900 --repeat 9

Each repeat opens the log afresh (``check_log`` on the path: the reader is built each time, as in the command) and
times every scene (``SceneSummary.check_s``); min / median / max over the repeats and scenes, in ms per scene, and
the decode's share: (deep - metadata) per camera image. The logs are generated once into ``--workdir``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def per_scene_ms(log: Path, deep: bool, repeat: int) -> list[float]:
    from stridegen.logs.check import check_log
    from stridegen.run.config import load_build_config

    settings = load_build_config(None).check_settings()
    out: list[float] = []
    for _ in range(repeat):
        report = check_log(log, settings, deep=deep)
        assert report.ok, [f.text() for f in report.errors]
        out += [s.check_s * 1e3 for s in report.scenes]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["800x450", "1600x900"], help="camera sizes WxH")
    parser.add_argument("--scenes", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "stridegen-bench-check")
    args = parser.parse_args()
    from stridegen.logs.synthetic.generator import generate_dataset

    print("| cameras | frames per scene | images per scene | metadata ms/scene | deep ms/scene | decode ms/image |")
    print("| --- | --- | --- | --- | --- | --- |")
    for size in args.sizes:
        width, height = (int(v) for v in size.split("x"))
        log = args.workdir / f"s{args.scenes}-{args.seconds:g}s-{size}"
        if not (log / "v1.0-synthetic").is_dir():
            generate_dataset(
                log, scenes=args.scenes, seconds=args.seconds, seed=5, width=width, height=height, progress=False
            )
        from stridegen.logs import open_log

        scene = open_log(log).scenes()[0]
        images = sum(len(f.camera_channels) for f in scene.frames)
        shallow = per_scene_ms(log, False, args.repeat)
        deep = per_scene_ms(log, True, args.repeat)

        def mmm(values: list[float]) -> str:
            return f"{min(values):.0f} / {statistics.median(values):.0f} / {max(values):.0f}"

        decode = (statistics.median(deep) - statistics.median(shallow)) / images
        print(f"| {size} | {len(scene.frames)} | {images} | {mmm(shallow)} | {mmm(deep)} | {decode:.2f} |")


if __name__ == "__main__":
    main()
