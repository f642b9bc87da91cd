"""Ids for new chains come with durable keys, made ahead in batches that follow the writes."""

from __future__ import annotations

import time
from pathlib import Path

from mnemolog.eventlog import LmdbKeyStore
from mnemolog.eventlog.subjects import memory_subject
from mnemolog.memory.writing.fresh_ids import MAX_BATCH, FreshIds


def test_taken_ids_have_durable_keys_and_the_pool_grows_to_the_largest_write(
    tmp_path: Path,
) -> None:
    keys = LmdbKeyStore(tmp_path / "keys")
    fresh = FreshIds(keys, prefix="mem", subject=memory_subject)
    try:
        taken = fresh.take(700)  # more than the pool holds: the rest is made at once
        assert len(set(taken)) == 700
        assert all(keys.key_for(memory_subject(i)) is not None for i in taken)
        deadline = time.monotonic() + 30
        while len(fresh._pool) < 700 and time.monotonic() < deadline:
            time.sleep(0.01)  # the refill now makes as many as the write asked for
        assert 700 <= len(fresh._pool) <= 2 * MAX_BATCH
        again = fresh.take(700)
        assert not set(again) & set(taken)
    finally:
        fresh.close()
        keys.close()
