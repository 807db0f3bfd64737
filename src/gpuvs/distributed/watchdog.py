"""Every rank's own clock on the step of a case it is in.

A rank can wait forever: in a collective whose peer's node died (NCCL does not notice a
lost peer; Gloo notices only when the peer's connection closes), or on a peer that hangs.
Under `gpuvs dist` the parent keeps the clock and kills every rank; inside the user's own
torchrun (`--launched`), across nodes, no process outside the ranks does. So each rank
arms a deadline at each step of a case (the moments rank 0 reports to a parent) and,
when it passes, a thread of the rank's own ends the case: `expire(case_key)` is called,
once, from that thread — the main thread is the one stuck. The process groups' own
timeouts are set longer than this clock (`rank_main.PARENT_GRACE_S`), so it is this clock
that ends a hang, in words, before NCCL's watchdog tears the process down.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Watchdog:
    """A deadline re-armed at each step of a case; `expire(key)` once it passes."""

    def __init__(self, timeout_s: float, expire: Callable[[str], None]) -> None:
        self.timeout_s = timeout_s
        self._expire = expire
        self._key = ""
        self._deadline = float("inf")
        self._stopped = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._watch, daemon=True,
                                        name="gpuvs-dist-watchdog")
        self._thread.start()

    def arm(self, case_key: str, tries: int = 1) -> None:
        """A step of `case_key` begins: it has `timeout_s` from now (`tries` times that
        for a rank that waits out every try of a case it is not part of)."""
        with self._changed:
            self._key = case_key
            self._deadline = time.monotonic() + self.timeout_s * tries
            self._changed.notify()

    def disarm(self) -> None:
        """Between cases (or in the code that handles a failure): no deadline."""
        with self._changed:
            self._key, self._deadline = "", float("inf")
            self._changed.notify()

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify()
        self._thread.join()

    def _watch(self) -> None:
        with self._changed:
            while not self._stopped:
                left = self._deadline - time.monotonic()
                if left <= 0:
                    key, self._deadline = self._key, float("inf")
                    break
                self._changed.wait(None if left == float("inf") else left)
            else:
                return
        self._expire(key)
