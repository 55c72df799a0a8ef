"""The one bounded cache of the house: the ``limit`` most recently used values by key, each made on first use.

Log readers keep their built scenes in one (``stridegen.logs``); the engine keeps its backends in one
(``stridegen.run.backends``: log readers, detectors, segmenters, face detectors), so a process's memory does not
grow with the number of scenes or configurations it has met.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """The ``limit`` most recently used values by key, each made on first use (module docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = int(limit)
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K, make: Callable[[], V]) -> V:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = make()
        self._items[key] = value
        while len(self._items) > self.limit:
            self._items.popitem(last=False)
        return value

    def discard(self, keep: Callable[[K], bool]) -> None:
        """Drop every value whose key ``keep`` rejects."""
        for key in [k for k in self._items if not keep(k)]:
            del self._items[key]

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()
