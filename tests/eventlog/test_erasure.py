"""Crypto-shredding: after a key is destroyed and the store compacted, nothing is left."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from pathlib import Path

import lmdb
import pytest

from mnemolog.errors import CorruptLog, KeyDestroyed
from mnemolog.eventlog import Actor, Draft, KeyStore, LmdbEventLog, Sealer, verify_log
from mnemolog.eventlog import keystore as keystore_module
from mnemolog.eventlog.datadir import keys_dir, log_dir
from mnemolog.eventlog.events import MemoryWritten, RecallPerformed, SubjectErased

from ..factories import ACTOR, memory_draft


@pytest.fixture
def keys(tmp_path: Path) -> Iterator[KeyStore]:
    store = KeyStore(tmp_path / "keys")
    yield store
    store.close()


def grep_tree(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


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
    monkeypatch.setattr(keystore_module, "CIPHER_CACHE", 4)
    sealer = Sealer(keys)
    sealed = [sealer.seal_text(f"memory:m{i}", f"text {i}") for i in range(10)]
    assert [sealer.open_text(s) for s in reversed(sealed)] == [
        f"text {i}" for i in reversed(range(10))
    ]
    assert len(keys._ciphers) <= 4
    assert keys.destroy("memory:m9")  # the most recently used one
    assert sealer.open(sealed[9]) is None
    assert sealer.open_text(sealed[8]) == "text 8"


def test_keys_survive_a_reopen(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    sealed = Sealer(store).seal_text("container:u1", "a query")
    store.close()
    store = KeyStore(tmp_path / "keys")
    try:
        assert Sealer(store).open_text(sealed) == "a query"
    finally:
        store.close()


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


def test_a_destroyed_subject_reads_as_erased_and_never_comes_back(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    sealer = Sealer(store)
    sealed = sealer.seal_text("memory:m1", "secret")
    assert store.destroy("memory:m1")
    assert sealer.open(sealed) is None
    assert store.is_destroyed("memory:m1")
    with pytest.raises(KeyDestroyed):
        sealer.seal_text("memory:m1", "again")
    store.close()
    store = KeyStore(tmp_path / "keys")  # the tombstone is durable too
    try:
        with pytest.raises(KeyDestroyed):
            store.ensure("memory:m1")
        assert not store.destroy("memory:m1")
    finally:
        store.close()


def test_erasure_leaves_no_key_and_no_plaintext_under_the_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    canary = "canary-7f3a9 John's passport number is X1234567"
    keys = KeyStore(keys_dir(data_dir))
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
    store = KeyStore(tmp_path / "keys")
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
    KeyStore(tmp_path / "keys").close()
    assert grep_tree(tmp_path, key) == []


def test_keys_made_ahead_and_unused_are_dropped(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    made = keys.ensure_many([f"memory:ahead-{i}" for i in range(300)])
    assert len(set(made)) == 300
    assert keys.ensure_many(["memory:ahead-0"]) == [made[0]]
    assert keys.cipher_for("memory:ahead-3") is not None  # a context is kept for it
    keys.discard([f"memory:ahead-{i}" for i in range(3, 300)])
    assert keys.key_for("memory:ahead-3") is None  # forgotten at once, deleted at close
    assert keys.cipher_for("memory:ahead-3") is None
    keys.close()
    assert grep_tree(tmp_path, made[4]) == []
    keys = KeyStore(tmp_path / "keys")  # the deletion left a file the next open accepts
    try:
        assert keys.key_for("memory:ahead-3") is None and keys.key_for("memory:ahead-299") is None
        assert keys.key_for("memory:ahead-1") == made[1]
        assert not keys.is_destroyed("memory:ahead-3")  # never erased: it sealed nothing
    finally:
        keys.close()
