"""Following a log other nodes append to: their records reach this node's projections.

A node applies its own appends before it answers them (``Recorder.record``); what other nodes
append reaches it only through the log. The follower waits on the log's head (woken by the
log's subscription: LISTEN/NOTIFY and a poll, for PostgreSQL) and applies up to it, so this
node's reads and decisions trail the log by one wake-up and one read.
"""

from __future__ import annotations

import logging
import threading

from ..errors import LogClosed, MnemologError
from ..eventlog import EventLog
from .runner import ProjectionRunner

logger = logging.getLogger(__name__)

WAKE_EVERY = 0.5  # seconds between looks at the head when nothing wakes the follower
RETRY_AFTER = 1.0  # seconds to wait after the log could not be read


class Follower:
    def __init__(self, log: EventLog, runner: ProjectionRunner) -> None:
        self._log = log
        self._runner = runner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mnemolog-follower", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                position = self._runner.position()
                head = self._log.wait_for(position, WAKE_EVERY)
                if head > position and not self._stop.is_set():
                    self._runner.sync_to(head)
            except LogClosed:
                return
            except MnemologError:
                # The database is unreachable for now: the log reconnects on the next read.
                logger.warning("cannot follow the log; trying again", exc_info=True)
                self._stop.wait(RETRY_AFTER)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=WAKE_EVERY + 30)
