"""Turns to decide about a container, taken in PostgreSQL by the nodes that share a log.

A node decides a write against its own projections. Two nodes deciding about one container at
once would each decide without the other's write, so a node decides about a container only in
its turn: while it holds the container's advisory lock (``pg_advisory_lock`` on a 64-bit hash
of the schema and the key). A turn begins by reading the log's head after the lock is granted
(a statement of its own, so its snapshot is taken after the grant): every append another node
made about the key is at or below that head, and the node applies the log through it before
deciding. The turn lasts while this node decides about the key or has appends about it in
flight (its holders: ``retain`` and ``release``), and a while after.

Lingering. A turn whose last holder let go is kept for ``LINGER`` seconds: the node's next
decision about the key joins it without a round trip, and needs to apply nothing first (no
other node appended about the key meanwhile). A node that finds a key taken tells the others
on the channel ``<schema>_turns`` before it waits; the holder ends an idle turn at once and
lets a busy one end when its appends are applied. A turn that began by waiting (another node
wants the key too) ends as soon as it is idle. A lost notification costs the waiting node at
most the linger (an idle turn) or ``MAX_DECISIONS`` decisions (a busy one: it then admits no
more, and ends once its appends are applied).

Connections. A turn that nobody else holds begins on one connection that every such turn of
this node shares (``pg_try_advisory_lock``, which never waits), so a node writing into many
containers does not open a connection per container. A turn another node holds is waited for
in PostgreSQL's queue (first come, first served: a try fails while another node waits too) on
a connection of its own, which keeps the lock. A connection that waits holds no lock, and a
node waits for a key only while holding turns of keys ordered before it (callers take turns in
sorted order), so no two waits close a loop. Callers already in a turn join a closing one (it
may wait on their own appends).

Failures. A node that dies takes its connections with it and PostgreSQL releases their locks;
each connection asks the server to probe it (TCP keepalives), so a vanished host's locks go
within seconds too. A turn waited for longer than ``wait`` seconds (a node that hangs holding
it) fails the decision (``StorageFailed``, 503), as does a database that cannot be reached. A
turn whose connection broke may have lost its lock unseen: it admits no one after that, and
what was decided in it is still checked by the condition its append carries (``conditions.py``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable

import psycopg
from psycopg import sql

from ..errors import LogClosed, StorageFailed
from .pg_listening import Listener

Conn = psycopg.Connection[tuple[object, ...]]

LINGER = 0.1  # seconds an idle turn is kept for the node's next decision about its key
# Decisions one turn admits: a node that keeps deciding about a key lets another node's turn
# come after this many even when it missed that node's notification.
MAX_DECISIONS = 64
DEFAULT_WAIT = 30.0  # seconds a turn is waited for before the decision fails
IDLE_CONNECTIONS = 2  # waiting connections kept for the next wait
TRY_LOCK = "SELECT pg_try_advisory_lock(%s)"
WAIT_LOCK = "SELECT pg_advisory_lock(%s)"
UNLOCK = "SELECT pg_advisory_unlock(%s)"
WANTED = "SELECT pg_notify(%s, %s)"
# The server probes a turn's connection after 10 s of silence, every 5 s, 3 times: a node
# whose host vanished holding turns loses them within half a minute.
KEEPALIVES = {
    "tcp_keepalives_idle": "10",
    "tcp_keepalives_interval": "5",
    "tcp_keepalives_count": "3",
}


def lock_id(namespace: str, key: str) -> int:
    """The advisory lock of ``key``: a signed 64-bit hash (two keys sharing one would only
    take turns together)."""
    digest = hashlib.blake2b(f"{namespace}\0{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Turn:
    """One key's turn on this node (a ``Hold``): the connection holding its lock, the head it
    began at, and its holders."""

    __slots__ = (
        "_turns",
        "admitted",
        "closing",
        "conn",
        "contended",
        "ending",
        "error",
        "head",
        "holders",
        "idle_since",
        "key",
        "lock",
        "lost",
        "ready",
    )

    def __init__(self, turns: Turns, key: str, lock: int) -> None:
        self._turns = turns
        self.key = key
        self.lock = lock
        self.conn: Conn | None = None
        self.head = 0
        self.holders = 1
        self.admitted = 1  # decisions it let in
        self.ready = False  # its lock is held
        self.contended = False  # it began by waiting: another node wants the key too
        self.closing = False  # it admits no one more (but callers in a turn), ends once idle
        self.idle_since: float | None = None  # when its last holder let go, while it lingers
        self.ending = False  # being unlocked
        self.lost = False  # its connection broke: its lock may be gone
        self.error: BaseException | None = None  # why it could not begin

    def retain(self) -> None:
        self._turns.retain(self)

    def release(self) -> None:
        self._turns.release(self)


class Turns:
    """This node's turns, by key."""

    def __init__(
        self,
        connect: Callable[[], Conn],
        read_head: sql.Composed,
        schema: str,
        *,
        wait: float = DEFAULT_WAIT,
    ) -> None:
        self._connect = connect
        self._read_head = read_head
        self._namespace = f"mnemolog-turn:{schema}"
        self._channel = f"{schema}_turns"
        self._wait = wait
        self._guard = threading.Condition()
        self._turns: dict[str, Turn] = {}  # keys whose turn begins, runs, lingers or ends
        self._shared: Conn | None = None  # the locks of the turns that began without waiting
        self._on_shared = threading.Lock()  # one statement at a time on it
        self._idle: list[Conn] = []  # under ``_guard``
        self._listener: Listener | None = None  # started with the first turn
        self._closed = False

    # --- holding -----------------------------------------------------------------------------

    def hold(self, key: str, *, within: bool = False) -> Turn:
        with self._guard:
            while True:
                if self._closed:
                    raise LogClosed("the log is closed")
                turn = self._turns.get(key)
                if turn is None:
                    turn = self._turns[key] = Turn(self, key, lock_id(self._namespace, key))
                    self._follow()
                    break
                if self._joined(turn, within):
                    while not turn.ready and turn.error is None:
                        self._guard.wait()
                    if turn.error is not None:
                        raise turn.error
                    return turn
                if turn.lost and within:
                    raise StorageFailed("the connection holding this node's turn broke")
                self._guard.wait()  # until it ends; then a turn begins anew
        try:
            self._begin(turn)
        except BaseException as exc:
            with self._guard:
                turn.error = exc
                del self._turns[key]
                self._guard.notify_all()
            raise
        with self._guard:
            turn.ready = True
            self._guard.notify_all()
        return turn

    def _joined(self, turn: Turn, within: bool) -> bool:
        """Join ``turn`` (under ``_guard``) if it still admits this decision."""
        if turn.ending or turn.lost or (turn.closing and not within):
            return False
        turn.holders += 1
        turn.admitted += 1
        turn.idle_since = None
        turn.closing = turn.closing or turn.admitted >= MAX_DECISIONS
        return True

    def retain(self, turn: Turn) -> None:
        with self._guard:
            assert turn.holders > 0, "retained by a holder"
            turn.holders += 1

    def release(self, turn: Turn) -> None:
        with self._guard:
            turn.holders -= 1
            if turn.holders:
                return
            if not (turn.closing or turn.contended or turn.lost or self._closed):
                turn.idle_since = time.monotonic()  # it lingers (``_expire`` ends it)
                return
            turn.ending = True
        self._end(turn)

    def _wanted(self, payload: str) -> None:
        """Another node waits for a key (a notification): if this node holds it, its turn
        ends as soon as it is idle."""
        try:
            lock = int(payload)
        except ValueError:
            return
        with self._guard:
            found = [t for t in self._turns.values() if t.lock == lock and t.ready]
            for turn in found:
                turn.closing = True
            ending = [t for t in found if t.idle_since is not None and not t.ending]
            for turn in ending:
                turn.ending = True
        for turn in ending:
            self._end(turn)

    def _expire(self, _: Conn) -> None:
        """End the turns idle for ``LINGER`` seconds (between notifications and polls)."""
        now = time.monotonic()
        with self._guard:
            ending = [
                t
                for t in self._turns.values()
                if t.idle_since is not None and not t.ending and now - t.idle_since >= LINGER
            ]
            for turn in ending:
                turn.ending = True
        for turn in ending:
            self._end(turn)

    def _follow(self) -> None:
        """Start listening for other nodes waiting, with the first turn (under ``_guard``)."""
        if self._listener is None:
            self._listener = Listener(
                self._opened,
                self._channel,
                self._expire,
                poll_interval=LINGER / 2,
                name="mnemolog-turns",
                heard=self._wanted,
            )

    # --- the database ------------------------------------------------------------------------

    def _begin(self, turn: Turn) -> None:
        """Take the key's lock: at once on the shared connection if no other node holds it or
        waits for it, else queued on a connection of its own, once the holder is told."""
        with self._on_shared:
            try:
                if self._shared is None or self._shared.closed:
                    self._shared = self._opened()
                taken, head = self._locked(self._shared, TRY_LOCK, turn.lock)
            except psycopg.Error as exc:
                self._lost_shared()
                raise StorageFailed(f"cannot take a turn in the log's database: {exc}") from exc
            if taken:
                turn.conn, turn.head = self._shared, head
                return
        with self._guard:
            idle = self._idle.pop() if self._idle else None
        conn = idle or self._opened()
        try:
            conn.execute(WANTED, (self._channel, str(turn.lock)))
            _, head = self._locked(conn, WAIT_LOCK, turn.lock)
        except psycopg.errors.LockNotAvailable as exc:
            self._idled(conn)
            raise StorageFailed(
                f"another node held its turn on {turn.key!r} for over {self._wait:g} s"
            ) from exc
        except psycopg.Error as exc:
            conn.close()
            raise StorageFailed(f"cannot take a turn in the log's database: {exc}") from exc
        turn.conn, turn.head, turn.contended = conn, head, True

    def _locked(self, conn: Conn, statement: str, lock: int) -> tuple[bool, int]:
        """Lock, then read the head: one round trip, the head read after the lock."""
        with conn.pipeline():
            took = conn.execute(statement, (lock,))
            head = conn.execute(self._read_head)
        taken, row = took.fetchone(), head.fetchone()
        assert taken is not None and row is not None, "the head row is made with the tables"
        seq = row[0]
        assert isinstance(seq, int)
        return taken[0] is not False, seq  # pg_advisory_lock answers NULL once it has it

    def _end(self, turn: Turn) -> None:
        """Unlock the key (``turn.ending`` set); a waiting connection goes back to the idle
        ones. Then a new turn of the key may begin."""
        try:
            conn = turn.conn
            if conn is None or conn.closed:
                return  # its connection broke: the lock went with it
            if conn is self._shared:
                with self._on_shared:
                    try:
                        conn.execute(UNLOCK, (turn.lock,))
                    except psycopg.Error:
                        self._lost_shared()
                return
            try:
                conn.execute(UNLOCK, (turn.lock,))
            except psycopg.Error:
                conn.close()
                return
            self._idled(conn)
        finally:
            with self._guard:
                if self._turns.get(turn.key) is turn:
                    del self._turns[turn.key]
                self._guard.notify_all()

    def _idled(self, conn: Conn) -> None:
        """A waiting connection that holds no lock: kept for the next wait, or closed."""
        with self._guard:
            if not self._closed and len(self._idle) < IDLE_CONNECTIONS:
                self._idle.append(conn)
                return
        conn.close()

    def _lost_shared(self) -> None:
        """The shared connection broke (held under ``_on_shared``): its locks went with it, so
        its turns admit no one more, and those idle end now; the next turn reconnects."""
        conn, self._shared = self._shared, None
        if conn is not None:
            conn.close()
        with self._guard:
            for turn in list(self._turns.values()):
                if turn.conn is conn:
                    turn.lost = True
                    if turn.idle_since is not None and not turn.ending:
                        del self._turns[turn.key]  # nothing to unlock
            self._guard.notify_all()

    def _opened(self) -> Conn:
        conn = self._connect()
        try:
            for name, value in {**KEEPALIVES, "lock_timeout": str(int(self._wait * 1000))}.items():
                conn.execute("SELECT set_config(%s, %s, false)", (name, value))
        except psycopg.Error as exc:
            conn.close()
            raise StorageFailed(f"cannot take a turn in the log's database: {exc}") from exc
        return conn

    def close(self) -> None:
        """Stop; every lock goes with its connection."""
        with self._guard:
            self._closed = True
            listener, self._listener = self._listener, None
            conns = [*self._idle, *(t.conn for t in self._turns.values() if t.conn is not None)]
            self._idle.clear()
            self._guard.notify_all()
        if listener is not None:
            listener.close(timeout=LINGER + 5)
        with self._on_shared:
            if self._shared is not None:
                conns.append(self._shared)
                self._shared = None
        for conn in conns:
            conn.close()
