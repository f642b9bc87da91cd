"""The key store in PostgreSQL, shared by several nodes: a key one node makes opens on another,
a destroy on one reaches the others' caches (also when its notification is lost), concurrent
first uses across nodes get one key, a lost connection fails one call and the next reconnects,
and an erased key is gone from every file of the database cluster."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from mnemolog.errors import KeyDestroyed, StorageFailed
from mnemolog.eventlog import Sealer
from mnemolog.eventlog.postgres_keys import PostgresKeyStore
from mnemolog.eventlog.postgres_log import PostgresEventLog
from mnemolog.eventlog.sealing import encode_sealed

from ..factories import memory_draft
from ..postgres import Server, drop_schema, fresh_schema
from .keystores import grep_tree

WAIT = 5.0  # seconds a change may take to reach another node (it polls every 0.1 s)


@pytest.fixture
def schema(postgres_url: str) -> Iterator[str]:
    name = fresh_schema()
    yield name
    drop_schema(postgres_url, name)


@pytest.fixture
def node(postgres_url: str, schema: str) -> Iterator[Callable[..., PostgresKeyStore]]:
    """Opens a key store on the test's schema: one more node each call."""
    opened: list[PostgresKeyStore] = []

    def open_node(*, listen: bool = True, poll_interval: float = 0.1) -> PostgresKeyStore:
        store = PostgresKeyStore(
            postgres_url, schema=schema, poll_interval=poll_interval, listen=listen
        )
        opened.append(store)
        return store

    yield open_node
    for store in opened:
        store.close()


def eventually(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, "the change did not reach the other node in time"
        time.sleep(0.02)


def terminate(url: str, application: str) -> int:
    """Cut the connections of ``application`` (waiting until they are gone); how many."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE application_name = %s",
            (application,),
        ).fetchall()
    return len(rows)


def test_a_key_made_on_one_node_opens_on_another(node: Callable[..., PostgresKeyStore]) -> None:
    a, b = node(), node()
    sealed = Sealer(a).seal_text("memory:m1", "Ana lives in Porto")
    assert Sealer(b).open_text(sealed) == "Ana lives in Porto"
    assert b.key_for("memory:m1") == a.key_for("memory:m1")
    assert b.ensure("memory:m1") == a.key_for("memory:m1")  # found, not made again


@pytest.mark.parametrize("lost", ["listening", "polling only", "listener cut"])
def test_a_destroy_on_one_node_reaches_the_other_node_s_cache(
    node: Callable[..., PostgresKeyStore], postgres_url: str, schema: str, lost: str
) -> None:
    a = node()
    b = node(listen=lost != "polling only")
    sealed = Sealer(a).seal_text("memory:m1", "secret")
    kept = Sealer(a).seal_text("memory:m2", "kept")
    assert Sealer(b).open_text(sealed) == "secret"  # b holds the key and its context now
    if lost == "listener cut":
        # b's listener is down while a destroys: the NOTIFY goes nowhere, the poll after
        # the reconnect finds the epoch moved.
        assert terminate(postgres_url, f"mnemolog-keys-listener:{schema}") == 2
    assert a.destroy("memory:m1")
    eventually(lambda: b.cipher_for("memory:m1") is None and b.key_for("memory:m1") is None)
    assert Sealer(b).open(sealed) is None
    assert Sealer(b).open_text(kept) == "kept"
    assert b.is_destroyed("memory:m1")
    with pytest.raises(KeyDestroyed):
        b.ensure("memory:m1")


def test_a_rekey_on_one_node_moves_the_other_to_the_new_generation(
    node: Callable[..., PostgresKeyStore],
) -> None:
    a, b = node(), node(listen=False)
    kept = Sealer(a).seal_text("memory:m1", "kept")
    dropped = Sealer(a).seal_text("memory:m1", "dropped")
    assert Sealer(b).open_text(dropped) == "dropped"
    generation = a.next_generation("memory:m1")
    moved = Sealer(a).seal(generation, b"kept")
    a.rekey("memory:m1", generation, [(kept.subject, kept.nonce, encode_sealed(moved))])
    eventually(lambda: b.current("memory:m1") == generation)
    assert Sealer(b).open(dropped) is None
    assert Sealer(b).open_text(kept) == "kept"
    assert Sealer(b).seal_text("memory:m1", "new").subject == generation
    # An erasure decided on b reads the generation from the database, not from its cache.
    b.erase([], renewed=["memory:m1"])
    eventually(lambda: a.current("memory:m1") == "memory:m1#3")
    assert a.key_for(generation) is None and Sealer(a).open(kept) is None


def test_a_node_refused_a_key_catches_up_with_the_erasure_at_once(
    node: Callable[..., PostgresKeyStore],
) -> None:
    a = node()
    b = node(listen=False, poll_interval=60)  # would not poll again during the test
    a.ensure("container:c1")
    a.erase([], renewed=["container:c1"])
    assert b.current("container:c1") == "container:c1"  # b has not heard of it yet
    with pytest.raises(KeyDestroyed):
        b.ensure("container:c1")
    assert b.current("container:c1") == "container:c1#2"  # so a retry seals anew
    assert Sealer(b).seal_text("container:c1", "a new query").subject == "container:c1#2"


def test_concurrent_first_use_across_nodes_gets_one_key(
    node: Callable[..., PostgresKeyStore],
) -> None:
    stores = [node(), node()]
    start = threading.Barrier(8)
    got: list[bytes] = []

    def first_use(index: int) -> None:
        start.wait()
        got.append(stores[index % 2].ensure("memory:shared"))

    threads = [threading.Thread(target=first_use, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len(set(got)) == 1


def test_a_lost_connection_fails_one_call_and_the_next_reconnects(
    node: Callable[..., PostgresKeyStore], postgres_url: str, schema: str
) -> None:
    store = node()
    key = store.ensure("memory:m1")
    assert not store.is_destroyed("memory:m1")  # the reading connection is open
    assert terminate(postgres_url, f"mnemolog-keys:{schema}") == 2  # reader and writer
    with pytest.raises(StorageFailed):
        store.is_destroyed("memory:m1")
    assert not store.is_destroyed("memory:m1")
    with pytest.raises(StorageFailed):
        store.ensure("memory:m2")
    assert store.ensure("memory:m2") != key
    assert store.key_for("memory:m1") == key


def test_an_erased_key_is_gone_from_every_file_of_the_cluster(
    postgres_server: Server, schema: str
) -> None:
    if postgres_server.trial is None:
        pytest.skip("needs a throwaway cluster whose files the test can read")
    url, data = postgres_server.url, postgres_server.trial / "data"
    canary = "canary-5b1e0 Ada's passport number is Z7654321"
    with psycopg.connect(url, autocommit=True) as admin:
        recycle = admin.execute("SHOW wal_recycle").fetchone()
        assert recycle == ("off",), "start the cluster with tools/postgres_trial.sh"
        keys = PostgresKeyStore(url, schema=schema)
        log = PostgresEventLog(url, schema=schema)
        try:
            for i in range(50):  # live keys on the same page
                keys.ensure(f"memory:filler-{i}")
            # Made last, so lowest in its page: a plain VACUUM would leave its bytes in the
            # free space, where no live row slides over them.
            sealer = Sealer(keys)
            sealed = sealer.seal_text("memory:m1", canary)
            log.append([memory_draft("m1", sealed)])
            key = keys.key_for("memory:m1")
            assert key is not None
            admin.execute("CHECKPOINT")
            table = admin.execute("SELECT pg_relation_filepath(%s)", (f"{schema}.keys",)).fetchone()
            assert table is not None
            # The key is really in the cluster's files, the WAL and the table's own, before
            # the erasure, so the scan below can fail.
            found = grep_tree(data, key)
            assert data / str(table[0]) in found
            assert any(p.parent.name == "pg_wal" for p in found)

            keys.erase(["memory:m1"])
            assert sealer.open(sealed) is None
            for _ in range(2):  # the segments written before are past every checkpoint
                admin.execute("SELECT pg_switch_wal()")
                admin.execute("CHECKPOINT")
            assert grep_tree(data, key) == []
            # The log holds the ciphertext only: the text was never in the database.
            assert [r.seq for r in log.read()] == [1]
            for needle in (canary.encode(), b"canary-5b1e0", b"passport number"):
                assert grep_tree(data, needle) == [], needle
            assert sealer.open_text(Sealer(keys).seal_text("memory:m2", "x")) == "x"
        finally:
            log.close()
            keys.close()
