"""Crypto-shredding: after a key is destroyed and the store compacted, nothing is left.

The key store tests run against both stores (LMDB and PostgreSQL); what is about LMDB's
files alone runs on it alone."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from pathlib import Path

import lmdb
import pytest

from mnemolog.errors import CorruptLog, KeyDestroyed, LogClosed
from mnemolog.eventlog import (
    Actor,
    Draft,
    KeyStore,
    LmdbEventLog,
    LmdbKeyStore,
    Sealer,
    keys_base,
    verify_log,
)
from mnemolog.eventlog.datadir import keys_dir, log_dir
from mnemolog.eventlog.events import MemoryWritten, RecallPerformed, SubjectErased
from mnemolog.eventlog.sealing import encode_sealed

from ..factories import ACTOR, memory_draft
from .keystores import KEY_STORE_KINDS, KeyStores, grep_tree, key_stores


@pytest.fixture(params=KEY_STORE_KINDS)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyStores]:
    yield from key_stores(request, request.param, tmp_path / "keys")


@pytest.fixture
def keys(stores: KeyStores) -> KeyStore:
    return stores.open()


def test_sealed_fields_open_only_under_their_subject(keys: KeyStore) -> None:
    sealer = Sealer(keys)
    sealed = sealer.seal_text("memory:m1", "John prefers dark mode")
    assert b"John" not in sealed.ct
    assert sealer.open_text(sealed) == "John prefers dark mode"
    moved = type(sealed)(subject="memory:m2", nonce=sealed.nonce, ct=sealed.ct)
    sealer.seal_text("memory:m2", "other")
    with pytest.raises(CorruptLog):
        sealer.open(moved)


def test_kept_ciphers_are_bounded_and_each_opens_under_its_own_key(
    keys: KeyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keys_base, "CIPHER_CACHE", 4)
    sealer = Sealer(keys)
    sealed = [sealer.seal_text(f"memory:m{i}", f"text {i}") for i in range(10)]
    assert [sealer.open_text(s) for s in reversed(sealed)] == [
        f"text {i}" for i in reversed(range(10))
    ]
    assert len(keys._ciphers) <= 4
    assert keys.destroy("memory:m9")  # the most recently used one
    assert sealer.open(sealed[9]) is None
    assert sealer.open_text(sealed[8]) == "text 8"


def test_keys_survive_a_reopen(stores: KeyStores) -> None:
    store = stores.open()
    sealed = Sealer(store).seal_text("container:u1", "a query")
    store.close()
    assert Sealer(stores.open()).open_text(sealed) == "a query"


def test_a_read_only_store_reads_and_changes_nothing(stores: KeyStores) -> None:
    store = stores.open()
    key = store.ensure("memory:m1")
    store.close()
    readonly = stores.open(readonly=True)
    assert readonly.key_for("memory:m1") == key
    with pytest.raises(LogClosed, match="read-only"):
        readonly.ensure("memory:m2")
    with pytest.raises(LogClosed, match="read-only"):
        readonly.destroy("memory:m1")
    with pytest.raises(LogClosed, match="read-only"):
        readonly.rekey("memory:m1", readonly.next_generation("memory:m1"), [])
    assert readonly.key_for("memory:m1") == key


def test_concurrent_first_use_of_a_subject_gets_one_key(keys: KeyStore) -> None:
    got: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: got.append(keys.ensure("memory:shared"))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 1 and len(got) == 8


def test_a_destroyed_subject_reads_as_erased_and_never_comes_back(stores: KeyStores) -> None:
    store = stores.open()
    sealer = Sealer(store)
    sealed = sealer.seal_text("memory:m1", "secret")
    assert store.destroy("memory:m1")
    assert sealer.open(sealed) is None
    assert store.is_destroyed("memory:m1")
    with pytest.raises(KeyDestroyed):
        sealer.seal_text("memory:m1", "again")
    store.close()
    store = stores.open()  # the tombstone is durable too
    with pytest.raises(KeyDestroyed):
        store.ensure("memory:m1")
    assert not store.destroy("memory:m1")


def test_a_rekeyed_subject_opens_only_what_was_moved(keys: KeyStore) -> None:
    sealer = Sealer(keys)
    kept = sealer.seal_text("memory:m1", "kept")
    dropped = sealer.seal_text("memory:m1", "dropped")
    generation = keys.next_generation("memory:m1")
    assert generation == "memory:m1#2"
    moved = sealer.seal(generation, b"kept")
    keys.rekey("memory:m1", generation, [(kept.subject, kept.nonce, encode_sealed(moved))])
    assert keys.current("memory:m1") == generation
    assert keys.next_generation("memory:m1") == "memory:m1#3"
    assert sealer.open_text(kept) == "kept" and sealer.open(dropped) is None
    assert not keys.is_destroyed("memory:m1")  # it lives on in its generation
    assert sealer.seal_text("memory:m1", "new").subject == generation
    keys.erase([], renewed=["memory:m1"])  # every generation goes, a fresh one is current
    assert keys.current("memory:m1") == "memory:m1#3"
    assert sealer.open(kept) is None and keys.key_for(generation) is None
    assert not keys.is_destroyed("memory:m1")


def test_erasure_leaves_no_key_and_no_plaintext_under_the_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    canary = "canary-7f3a9 John's passport number is X1234567"
    keys = LmdbKeyStore(keys_dir(data_dir))
    sealer = Sealer(keys)
    log = LmdbEventLog(log_dir(data_dir))
    try:
        log.append([memory_draft("m1", sealer.seal_text("memory:m1", canary))])
        kept = sealer.seal_text("memory:m2", "kept fact about the weather")
        log.append([memory_draft("m2", kept)])
        query = RecallPerformed(
            recall_id="r1",
            origin="rest",
            container_tag="c1",
            query=sealer.seal_text("container:c1", "what is John's passport?"),
            embedder="test",
        )
        log.append([Draft(ACTOR, query)])
        key = keys.key_for("memory:m1")
        assert key is not None
        # The needles are really there before the erase, so the greps below can fail.
        assert grep_tree(data_dir, key)
        for _ in range(50):  # old key-store pages that a plain delete would leave readable
            keys.ensure(f"memory:filler-{_}")

        assert keys.destroy("memory:m1")
        log.append([Draft(Actor(agent_id="admin", protocol="cli"), _erased("m1"))])

        records = list(log.read())
        first = records[0].record.event
        assert isinstance(first, MemoryWritten)
        assert sealer.open(first.content) is None
        assert sealer.open_text(kept) == "kept fact about the weather"
    finally:
        log.close()
        keys.close()

    for needle in (key, base64.b64encode(key), canary.encode(), b"canary-7f3a9", b"passport"):
        assert grep_tree(data_dir, needle) == [], needle
    assert verify_log(log_dir(data_dir)).ok


def _erased(memory_id: str) -> SubjectErased:
    return SubjectErased(subject=f"memory:{memory_id}", scope="memory", memory_id=memory_id)


def test_a_crash_before_compaction_is_healed_at_the_next_open(tmp_path: Path) -> None:
    store = LmdbKeyStore(tmp_path / "keys")
    key = store.ensure("memory:m1")
    for i in range(20):
        store.ensure(f"memory:other-{i}")
    store.close()
    # What a crash right after destroy's delete leaves: the key in a freed page, no compaction.
    env = lmdb.open(str(tmp_path / "keys"), max_dbs=2)
    with env.begin(write=True) as txn:
        txn.delete(b"memory:m1", db=env.open_db(b"keys", txn=txn))
    env.close()
    assert grep_tree(tmp_path, key)
    LmdbKeyStore(tmp_path / "keys").close()
    assert grep_tree(tmp_path, key) == []


def test_keys_made_ahead_and_unused_are_dropped(stores: KeyStores, tmp_path: Path) -> None:
    keys = stores.open()
    made = keys.ensure_many([f"memory:ahead-{i}" for i in range(300)])
    assert len(set(made)) == 300
    assert keys.ensure_many(["memory:ahead-0"]) == [made[0]]
    assert keys.cipher_for("memory:ahead-3") is not None  # a context is kept for it
    keys.discard([f"memory:ahead-{i}" for i in range(3, 300)])
    assert keys.key_for("memory:ahead-3") is None  # forgotten at once, deleted at close
    assert keys.cipher_for("memory:ahead-3") is None
    keys.close()
    if stores.kind == "lmdb":
        assert grep_tree(tmp_path, made[4]) == []
    keys = stores.open()  # the deletion left a file the next open accepts
    assert keys.key_for("memory:ahead-3") is None and keys.key_for("memory:ahead-299") is None
    assert keys.key_for("memory:ahead-1") == made[1]
    assert not keys.is_destroyed("memory:ahead-3")  # never erased: it sealed nothing
