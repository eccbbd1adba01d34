"""What an endpoint offers beyond chat completions, found out once per endpoint and remembered.

A lever that needs something of the engine (the next-token route the decline threshold reads,
today) asks :data:`FEATURES` before it uses it. The first request to an endpoint that lacks the
feature settles it as absent: the process says so once (a warning naming the endpoint, the
feature and what the planner does instead), every later request skips it without asking, and
each trace record notes it (``run.decision.unavailable``). A request that fails for another
reason (a timeout, a refused connection) settles nothing: the next one asks again.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

LOG = logging.getLogger("helmdeck_dspy.engines")
MAX_ENDPOINTS = 256
"""Endpoints remembered per process (the oldest are forgotten first)."""


class FeatureProbe:
    """Per-process memory of which endpoint lacks which feature (thread-safe)."""

    def __init__(self) -> None:
        self._absent: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()

    def absent(self, feature: str, endpoint: str) -> str | None:
        """Why ``endpoint`` is known to lack ``feature`` (None: not known to)."""
        with self._lock:
            return self._absent.get((feature, endpoint))

    def settle_absent(self, feature: str, endpoint: str, reason: str, fallback: str) -> None:
        """Remember that ``endpoint`` lacks ``feature``; the first time, say so (with ``fallback``:
        what the planner does instead)."""
        with self._lock:
            first = (feature, endpoint) not in self._absent
            self._absent[(feature, endpoint)] = reason
            while len(self._absent) > MAX_ENDPOINTS:
                self._absent.popitem(last=False)
        if first:
            LOG.warning("%s: %s; %s", endpoint, reason, fallback)

    def forget(self) -> None:
        """Forget every endpoint (a test starts from nothing)."""
        with self._lock:
            self._absent.clear()


FEATURES = FeatureProbe()
"""The process's one memory of endpoint features."""
