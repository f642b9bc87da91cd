"""Turns to decide about a container, on a PostgreSQL log two nodes share: a turn another node
holds is waited for and begins at a head that holds that node's appends; a node's own decisions
join its turn, which lingers after its last holder until another node asks for it (or a while
has passed); a busy turn lets a waiting node in before the node's next decision; a node whose
connection dies leaves its turns; a turn held too long fails the wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psycopg
import pytest

from mnemolog.errors import StorageFailed
from mnemolog.eventlog import Hold
from mnemolog.eventlog.pg_turns import lock_id
from mnemolog.eventlog.postgres_log import PostgresEventLog

from ..factories import signal_draft
from ..postgres import Server


def holders(url: str, schema: str, key: str, *, granted: bool) -> list[int]:
    """The server processes holding (or waiting for) the lock of ``key``'s turns."""
    lock = lock_id(f"mnemolog-turn:{schema}", key) & 0xFFFF_FFFF_FFFF_FFFF
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = %s "
            "AND objid = %s AND objsubid = 1 AND granted = %s",
            (lock >> 32, lock & 0xFFFF_FFFF, granted),
        ).fetchall()
    return [int(pid) for (pid,) in rows]


def released(url: str, schema: str, key: str) -> None:
    """Return once nobody holds ``key``'s lock."""
    deadline = time.monotonic() + 30
    while holders(url, schema, key, granted=True):
        assert time.monotonic() < deadline, "the turn was never let go"
        time.sleep(0.01)


def queued(url: str, schema: str, key: str = "team") -> None:
    """Return once a connection waits for ``key``'s lock in the server's queue."""
    deadline = time.monotonic() + 30
    while not holders(url, schema, key, granted=False):
        assert time.monotonic() < deadline, "nobody queued for the turn"
        time.sleep(0.01)


class Taking:
    """``hold()`` in a thread of its own; ``order`` records who got a turn, in order."""

    def __init__(self, name: str, hold: Callable[[], Hold], order: list[str]) -> None:
        self.turn: Hold | None = None
        self._name = name
        self._hold = hold
        self._order = order
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        self.turn = self._hold()
        self._order.append(self._name)

    def join(self) -> Hold:
        self._thread.join(timeout=60)
        assert self.turn is not None
        return self.turn


def test_a_turn_another_node_holds_is_waited_for_and_begins_after_its_appends(
    two_nodes: tuple[PostgresEventLog, PostgresEventLog], postgres_server: Server, pg_schema: str
) -> None:
    a, b = two_nodes
    turn = a.hold("team")
    a.append([signal_draft("decided in a's turn")])
    order: list[str] = []
    on_b = Taking("b", lambda: b.hold("team"), order)
    queued(postgres_server.url, pg_schema)
    a.append([signal_draft("still a's turn")])
    order.append("a ends")
    turn.release()
    got = on_b.join()
    assert order == ["a ends", "b"]
    assert got.head == 2  # both of a's appends: b applies them before it decides
    got.release()


def test_a_nodes_decisions_join_its_turn_and_other_keys_never_wait(
    two_nodes: tuple[PostgresEventLog, PostgresEventLog], postgres_server: Server, pg_schema: str
) -> None:
    a, b = two_nodes
    first = a.hold("team")
    second = a.hold("team")  # joined: no second lock
    assert second is first
    other = b.hold("other team")  # another key: at once
    first.retain()  # an append in flight holds it
    for _ in range(2):
        first.release()
    order: list[str] = []
    on_b = Taking("b", lambda: b.hold("team"), order)
    queued(postgres_server.url, pg_schema)
    order.append("a's last holder lets go")
    first.release()
    on_b.join().release()
    assert order == ["a's last holder lets go", "b"]
    other.release()
    for key in ("team", "other team"):
        released(postgres_server.url, pg_schema, key)  # idle turns end by themselves


def test_an_idle_turn_lingers_for_the_nodes_next_decision_until_another_node_asks(
    two_nodes: tuple[PostgresEventLog, PostgresEventLog], postgres_server: Server, pg_schema: str
) -> None:
    a, b = two_nodes
    turn = a.hold("team")
    turn.release()
    (holder,) = holders(postgres_server.url, pg_schema, "team", granted=True)
    again = a.hold("team")  # joined: the lock was kept
    assert again is turn
    assert holders(postgres_server.url, pg_schema, "team", granted=True) == [holder]
    again.release()
    a.append([signal_draft("decided in a's turn")])
    on_b = b.hold("team")  # asked for, the idle turn ends at once
    assert on_b.head == 1
    on_b.release()
    # Had b waited (a's turn still lingering when it asked), its turn ended at once; on a
    # loaded machine a's 0.1 s linger may run out first, and b's own idle turn then lingers
    # that long. Either way nobody holds the key moments later.
    released(postgres_server.url, pg_schema, "team")


def test_a_busy_turn_lets_a_waiting_node_in_before_the_nodes_next_decision(
    two_nodes: tuple[PostgresEventLog, PostgresEventLog], postgres_server: Server, pg_schema: str
) -> None:
    a, b = two_nodes
    held = [a.hold("team") for _ in range(3)]
    order: list[str] = []
    on_b = Taking("b", lambda: b.hold("team"), order)
    queued(postgres_server.url, pg_schema)
    deadline = time.monotonic() + 30
    while not held[0].closing:  # told that b waits, the turn admits no one more
        assert time.monotonic() < deadline, "a never heard that b waits"
        time.sleep(0.01)
    on_a = Taking("a", lambda: a.hold("team"), order)
    # A decision made within another turn still joins (it may hold what the turn waits on).
    held.append(a.hold("team", within=True))
    assert held[-1] is held[0]
    for turn in held:
        turn.release()
    b_turn = on_b.join()
    assert order == ["b"]  # a's next decision queued behind b
    b_turn.release()
    on_a.join().release()
    assert order == ["b", "a"]


def test_a_node_whose_connection_dies_leaves_its_turns(
    two_nodes: tuple[PostgresEventLog, PostgresEventLog], postgres_server: Server, pg_schema: str
) -> None:
    a, b = two_nodes
    turn = a.hold("team")
    (holder,) = holders(postgres_server.url, pg_schema, "team", granted=True)
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (holder,))
    b.hold("team").release()  # the lock went with a's connection
    turn.release()  # its connection is gone: nothing to unlock, and no error
    deadline = time.monotonic() + 30
    while (again := a.hold("team")) is turn:  # until the lost turn has ended
        again.release()
        assert time.monotonic() < deadline, "the lost turn never ended"
        time.sleep(0.05)
    # The next turn took the lock again, on a new connection.
    assert holders(postgres_server.url, pg_schema, "team", granted=True) not in ([], [holder])
    again.release()


def test_a_turn_held_too_long_fails_the_wait_and_the_next_one_begins(
    postgres_server: Server, pg_schema: str
) -> None:
    a = PostgresEventLog(postgres_server.url, schema=pg_schema)
    b = PostgresEventLog(postgres_server.url, schema=pg_schema, turn_wait=0.2)
    try:
        turn = a.hold("team")
        with pytest.raises(StorageFailed, match="held its turn"):
            b.hold("team")
        turn.release()
        b.hold("team").release()
    finally:
        a.close()
        b.close()
