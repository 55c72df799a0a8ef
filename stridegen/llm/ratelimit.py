"""Requests-per-minute and tokens-per-minute limiter, shared by all worker threads.

Two token buckets (capacity = the per-minute allowance, refilled continuously) and a shared cool-down: when a
server answers 429 with Retry-After, every worker waits until the cool-down ends, not only the one that was
told. Clock and sleep are injectable for tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class _Bucket:
    def __init__(self, per_minute: float | None, now: float) -> None:
        self.rate_per_s = None if not per_minute else per_minute / 60.0
        self.capacity = float(per_minute or 0.0)
        self.level = self.capacity
        self.t = now

    def refill(self, now: float) -> None:
        if self.rate_per_s is None:
            return
        self.level = min(self.capacity, self.level + (now - self.t) * self.rate_per_s)
        self.t = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0 if now). Amounts above capacity wait for a full bucket."""
        if self.rate_per_s is None:
            return 0.0
        need = min(amount, self.capacity) - self.level
        return max(0.0, need / self.rate_per_s)

    def take(self, amount: float) -> None:
        if self.rate_per_s is not None:
            self.level -= min(amount, self.capacity)


class RateLimiter:
    """Blocks ``acquire(tokens)`` until one request and ``tokens`` tokens fit in the per-minute budgets."""

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        now = clock()
        self._requests = _Bucket(requests_per_minute, now)
        self._tokens = _Bucket(tokens_per_minute, now)
        self._cooldown_until = 0.0
        self._lock = threading.Lock()

    def try_acquire(self, tokens: float = 0.0) -> float:
        """Take one request and ``tokens`` tokens if they fit now (returns 0), else take nothing and return the
        seconds to wait before asking again (the async path awaits them; ``acquire`` sleeps them)."""
        with self._lock:
            now = self._clock()
            self._requests.refill(now)
            self._tokens.refill(now)
            delay = max(self._cooldown_until - now, self._requests.wait_for(1.0), self._tokens.wait_for(tokens))
            if delay <= 0.0:
                self._requests.take(1.0)
                self._tokens.take(tokens)
                return 0.0
            return delay

    def acquire(self, tokens: float = 0.0) -> float:
        """Wait until a request of ``tokens`` tokens may be sent; returns the seconds waited."""
        waited = 0.0
        while (delay := self.try_acquire(tokens)) > 0.0:
            self._sleep(delay)
            waited += delay
        return waited

    def cool_down(self, seconds: float) -> None:
        """Hold every worker for ``seconds`` from now (a 429 with Retry-After)."""
        with self._lock:
            self._cooldown_until = max(self._cooldown_until, self._clock() + max(0.0, seconds))

    def refund_tokens(self, estimated: float, actual: float) -> None:
        """Correct the token bucket once the real usage of a request is known."""
        with self._lock:
            if self._tokens.rate_per_s is not None:
                self._tokens.level = min(self._tokens.capacity, self._tokens.level + estimated - actual)
