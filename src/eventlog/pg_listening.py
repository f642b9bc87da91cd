"""Following what other nodes change in PostgreSQL: a thread woken by a NOTIFY channel and
polling between notifications (a notification is lost with its connection; a poll is not).
The log follows its head this way, the key store its epoch."""

from __future__ import annotations

import threading
from collections.abc import Callable

import psycopg
from psycopg import sql

from ..errors import StorageFailed

Conn = psycopg.Connection[tuple[object, ...]]


class Listener:
    """Calls ``look(conn)`` at start, after every notification on ``channel`` and every
    ``poll_interval`` seconds between them, on a connection of its own (``connect``, in
    autocommit), reconnecting after a failure. ``listen=False`` only polls (for poolers that
    drop notifications). ``heard`` is given each notification's payload first."""

    def __init__(
        self,
        connect: Callable[[], Conn],
        channel: str,
        look: Callable[[Conn], None],
        *,
        poll_interval: float,
        name: str,
        listen: bool = True,
        heard: Callable[[str], None] | None = None,
    ) -> None:
        self._connect = connect
        self._channel = channel
        self._look = look
        self._heard = heard
        self._poll_interval = poll_interval
        self._listen = listen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        conn: Conn | None = None
        while not self._stop.is_set():
            try:
                if conn is None or conn.closed:
                    conn = self._connect()
                    if self._listen:
                        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
                self._look(conn)
                if self._listen:
                    for note in conn.notifies(timeout=self._poll_interval, stop_after=1):
                        if self._heard is not None:
                            self._heard(note.payload)
                else:
                    self._stop.wait(self._poll_interval)
            except (psycopg.Error, StorageFailed):
                if conn is not None:
                    conn.close()
                conn = None
                self._stop.wait(self._poll_interval)
        if conn is not None:
            conn.close()

    def close(self, timeout: float) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout)
