"""Key stores of each kind for the tests: LMDB in a directory, PostgreSQL in a fresh schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemolog.eventlog import KeyStore, LmdbKeyStore
from mnemolog.eventlog.postgres_keys import PostgresKeyStore

from ..postgres import drop_schema, fresh_schema

KEY_STORE_KINDS = ["lmdb", "postgres"]


class KeyStores:
    """Opens stores of one kind on one place (a directory or a schema) as often as a test
    asks, and closes them all at the end."""

    def __init__(self, kind: str, path: Path, url: str | None) -> None:
        self.kind = kind
        self.url = url
        self.schema = fresh_schema()
        self._path = path
        self._opened: list[KeyStore] = []

    def open(self, *, readonly: bool = False) -> KeyStore:
        store: KeyStore
        if self.kind == "lmdb":
            store = LmdbKeyStore(self._path, readonly=readonly)
        else:
            assert self.url is not None
            store = PostgresKeyStore(
                self.url, schema=self.schema, readonly=readonly, poll_interval=0.1
            )
        self._opened.append(store)
        return store

    def close(self) -> None:
        for store in self._opened:
            store.close()
        if self.kind == "postgres":
            assert self.url is not None
            drop_schema(self.url, self.schema)


def key_stores(request: pytest.FixtureRequest, kind: str, path: Path) -> Iterator[KeyStores]:
    url: str | None = request.getfixturevalue("postgres_url") if kind == "postgres" else None
    stores = KeyStores(kind, path, url)
    try:
        yield stores
    finally:
        stores.close()


def grep_tree(root: Path, needle: bytes) -> list[Path]:
    """The files under ``root`` holding ``needle`` (one removed while read holds nothing)."""
    found = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and needle in path.read_bytes():
                found.append(path)
        except FileNotFoundError:
            pass
    return found
