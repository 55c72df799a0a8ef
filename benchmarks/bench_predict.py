"""`stridegen predict` throughput: the openai client's overhead, image preparation, the tiny transformers model.

    .venv/bin/python benchmarks/bench_predict.py [--latency 0.2 --seconds 4 --rounds 3 --dataset out/demo]

1. **Client**: the ``openai`` predictor (stridegen.predict.openai_backend, one event loop) against a loopback
   chat-completions server in its own process that answers every request after ``--latency`` seconds (an asyncio
   server, so it is never the bottleneck). For 1, 16 and 64 requests in flight it asks ``in-flight x seconds /
   latency`` questions and prints questions/s beside the ideal ``in-flight / latency``, and the client's CPU time
   per question (this process only: the server's CPU is not counted). Rounds alternate the three settings.
2. **Image preparation**: the spatiotemporal questions of a built dataset (``--dataset``, default ``out/demo``
   from ``make demo``) turned into their requests as a worker does (stridegen.predict.job.scene_requests: decode,
   resize to the ``strideqa-bench`` profile's 532 x 336, draw the target's marks, JPEG), one scene at a time,
   single-threaded OpenCV: questions/s/core, with the frames a scene's questions share drawn once (as in a run) and
   with every question drawing its four frames itself.
3. **Tiny transformers model**: the LLaVA-class model of reference/tiny_vlm.py (random weights) answering 32
   four-frame requests on the CPU with 16 new tokens, batch 1 and batch 8: CPU seconds per question (torch with one
   thread).

Every figure is min / median / max over ``--rounds`` rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPLY = {
    "id": "bench",
    "object": "chat.completion",
    "created": 0,
    "model": "bench",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Region [0] is 12 m away."}}
    ],
    "usage": {"prompt_tokens": 900, "completion_tokens": 9, "total_tokens": 909},
}


def _serve(port_queue: mp.Queue, latency: float) -> None:
    """A keep-alive HTTP/1.1 server that answers every POST with REPLY after ``latency`` seconds."""
    body = json.dumps(REPLY).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                header = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in header.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                await asyncio.sleep(latency)
                writer.write(head + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port_queue.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def _stats(values: list[float]) -> str:
    return f"{min(values):8.2f} {statistics.median(values):8.2f} {max(values):8.2f}"


def bench_client(latency: float, seconds: float, rounds: int) -> None:
    from stridegen.predict.base import GenerationSettings, PromptRequest
    from stridegen.predict.openai_backend import OpenAIPredictor

    ctx = mp.get_context("spawn")
    ports: mp.Queue = ctx.Queue()
    server = ctx.Process(target=_serve, args=(ports, latency), daemon=True)
    server.start()
    port = ports.get(timeout=30)
    os.environ["STRIDEGEN_BENCH_KEY"] = "EMPTY"
    image = bytes(range(256)) * 120  # ~30 kB: a 532 x 336 JPEG's size
    flights = (1, 16, 64)
    rates: dict[int, list[float]] = {n: [] for n in flights}
    cpu_ms: dict[int, list[float]] = {n: [] for n in flights}
    try:
        for _ in range(rounds):
            for n in flights:
                count = max(n, int(n * seconds / latency))
                requests = [PromptRequest("system", f"question {i}", (image,) * 4) for i in range(count)]
                predictor = OpenAIPredictor(
                    "bench", base_url=f"http://127.0.0.1:{port}/v1", api_key_env="STRIDEGEN_BENCH_KEY", concurrency=n
                )
                predictor.predict(requests[:1], GenerationSettings(), lambda i, r: None)  # warm: SDK import, pools
                done = [0]

                def on_reply(i: int, reply: object, done: list[int] = done) -> None:
                    done[0] += 1

                c0, t0 = time.process_time(), time.perf_counter()
                predictor.predict(requests, GenerationSettings(), on_reply)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                assert done[0] == count
                rates[n].append(count / wall)
                cpu_ms[n].append(1000 * cpu / count)
    finally:
        server.kill()
    print(f"1. client, {latency * 1000:.0f} ms server latency, {rounds} rounds (min / median / max)")
    print(f"   {'in flight':>9} {'questions/s':>28} {'ideal':>7} {'median/ideal':>13} {'client CPU ms/question':>30}")
    for n in flights:
        ideal = n / latency
        ratio = statistics.median(rates[n]) / ideal
        print(f"   {n:>9} {_stats(rates[n]):>28} {ideal:7.1f} {ratio:13.3f} {_stats(cpu_ms[n]):>30}")


def bench_images(dataset: Path, rounds: int) -> None:
    import cv2

    from stridegen.predict.base import GenerationSettings
    from stridegen.predict.job import PredictSpec, scene_requests
    from stridegen.predict.prompts import load_profile
    from stridegen.predict.questions import QuestionSource

    cv2.setNumThreads(1)
    spec = PredictSpec(
        source=str(dataset),
        predictor="openai",
        options={"model": "bench"},
        profile=load_profile("strideqa-bench"),
        generation=GenerationSettings(),
        cache_dir="unused",
        out_dir="unused",
    )
    source = QuestionSource(dataset, spec.marks())
    shared: list[float] = []
    alone: list[float] = []
    total = 0
    for _ in range(rounds):
        for timings, per_question in ((shared, False), (alone, True)):
            n, cpu = 0, 0.0
            for scene in source.scenes():
                with source.scene_questions(scene) as questions:
                    temporal = [q for q in questions if q.kind == "spatiotemporal"]
                    c0 = time.process_time()
                    if per_question:
                        for q in temporal:
                            scene_requests(spec, [q])
                    else:
                        scene_requests(spec, temporal)
                    cpu += time.process_time() - c0
                    n += len(temporal)
            timings.append(n / cpu)
            total = n
    print(f"2. image preparation, {total} spatiotemporal questions of {dataset} (4 frames each), one core")
    print(f"   {'questions/s/core':>45} (min / median / max)")
    print(f"   {'frames shared by a scene (a run)':<34}{_stats(shared)}")
    print(f"   {'every question draws its frames':<34}{_stats(alone)}")


def bench_tiny_model(rounds: int) -> None:
    import numpy as np
    import torch

    from reference.tiny_vlm import build_tiny_vlm
    from stridegen.core import registry
    from stridegen.formats.images import encode_jpeg
    from stridegen.predict.base import GenerationSettings, PromptRequest

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    frames = tuple(encode_jpeg(rng.integers(0, 255, (336, 532, 3), dtype=np.uint8), 90).tobytes() for _ in range(4))
    requests = [PromptRequest("Answer briefly.", f"How far is Region [{i}]?", frames) for i in range(32)]
    with tempfile.TemporaryDirectory() as folder:
        model = build_tiny_vlm(Path(folder) / "tiny")
        per: dict[int, list[float]] = {1: [], 8: []}
        for _ in range(rounds):
            for batch in per:
                predictor = registry.make("predictor", "transformers", {"model": str(model), "batch_size": batch})
                predictor.predict(requests[:1], GenerationSettings(max_new_tokens=2), lambda i, r: None)  # load
                c0 = time.process_time()
                predictor.predict(requests, GenerationSettings(max_new_tokens=16), lambda i, r: None)
                per[batch].append(1000 * (time.process_time() - c0) / len(requests))
    print("3. tiny transformers model (reference/tiny_vlm.py), 32 requests of 4 frames, 16 new tokens, one thread")
    print(f"   {'CPU ms/question':>36} (min / median / max)")
    for batch, values in per.items():
        print(f"   {'batch ' + str(batch):<18}{_stats(values)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2, help="server latency, seconds")
    ap.add_argument("--seconds", type=float, default=4.0, help="ideal length of one client measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dataset", type=Path, default=Path("out/demo"))
    ap.add_argument("--only", choices=("client", "images", "model"), default=None)
    args = ap.parse_args()
    if args.only in (None, "client"):
        bench_client(args.latency, args.seconds, args.rounds)
    if args.only in (None, "images"):
        if not (args.dataset / "manifest.json").is_file():
            print(f"2. image preparation: no dataset at {args.dataset} (run `make demo` or pass --dataset)")
        else:
            bench_images(args.dataset, args.rounds)
    if args.only in (None, "model"):
        bench_tiny_model(args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
