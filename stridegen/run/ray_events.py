"""The event actor of the ``ray`` executor (``stridegen.run.ray_executor``): workers post stage events, the driver
drains them.

A module of its own, importing nothing: Ray imports the module of an actor's class in the actor's fresh process, and
``ray_executor``'s imports (the runner, the shards, numpy, OpenCV, h5py: ~0.35 CPU-s) would be paid there for a
list of tuples, on the cores the first scenes' workers start on (issue 35).
"""

from __future__ import annotations


class EventLog:
    """The Ray actor the workers post stage events ``(job, scene, stage)`` to; the driver drains it."""

    def __init__(self) -> None:
        self.items: list[tuple[int, str, str]] = []

    def put(self, item: tuple[int, str, str]) -> None:
        self.items.append(item)

    def drain(self) -> list[tuple[int, str, str]]:
        out, self.items = self.items, []
        return out
