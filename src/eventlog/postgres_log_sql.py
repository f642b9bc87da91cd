"""The PostgreSQL log's tables and statements (``postgres_log.py``): the DDL made once per
schema, the statements composed once, and the ``decided`` rows a batch's conditional appends
are checked against under the head lock."""

from __future__ import annotations

import re
from collections.abc import Sequence

import psycopg
from psycopg import sql

from ..errors import AppendConflict, StorageFailed
from .committed import AppendRequest
from .conditions import Condition
from .port import EMPTY_HEAD, Head
from .record import GENESIS

DEFAULT_SCHEMA = "mnemolog"
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}")
DEFAULT_POLL_INTERVAL = 0.5  # seconds between polls of the head row when no NOTIFY came

DDL = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.log (seq bigint PRIMARY KEY, data bytea NOT NULL);
CREATE TABLE IF NOT EXISTS {schema}.head (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    seq bigint NOT NULL,
    digest text NOT NULL,
    ts bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS {schema}.idempotency (key text PRIMARY KEY, entry bytea NOT NULL);
CREATE TABLE IF NOT EXISTS {schema}.decided (
    key text PRIMARY KEY,
    node text NOT NULL,
    seq bigint NOT NULL,
    others bigint NOT NULL
);
CREATE OR REPLACE FUNCTION {schema}.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the mnemolog log is append-only';
END $$;
DROP TRIGGER IF EXISTS append_only ON {schema}.log;
CREATE TRIGGER append_only BEFORE UPDATE OR DELETE ON {schema}.log
    FOR EACH ROW EXECUTE FUNCTION {schema}.refuse_change();
DROP TRIGGER IF EXISTS append_only_truncate ON {schema}.log;
CREATE TRIGGER append_only_truncate BEFORE TRUNCATE ON {schema}.log
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.refuse_change();
"""


class Decided:
    """The ``decided`` rows of one batch's keys, read under the head lock, checked and moved
    on as the batch's conditional appends take their seqs, then saved."""

    def __init__(
        self,
        cur: psycopg.Cursor[tuple[object, ...]],
        q: Queries,
        node: str,
        requests: Sequence[AppendRequest],
    ) -> None:
        self._cur = cur
        self._q = q
        self._node = node
        keys = sorted({k for r in requests if r.condition is not None for k in r.condition.keys})
        self._rows: dict[str, tuple[str, int, int]] = {}
        if keys:
            cur.execute(q.read_decided, (keys,))
            for key, by, seq, others in cur.fetchall():
                self._rows[str(key)] = (str(by), as_int(seq), as_int(others))
        self._changed: set[str] = set()

    def refusal(self, condition: Condition) -> AppendConflict | None:
        """Why an append decided under ``condition`` may not land, if it may not: another
        node appended about one of its keys after what it had seen, or it built on an append
        of this node that was refused. A refused condition is resolved at once, so what was
        decided on its heads later in this batch is refused too."""
        conflict: AppendConflict | None = None
        for earlier in condition.after:
            if earlier.refused:
                conflict = AppendConflict(earlier.keys[0], earlier.conflict_seq)
        for key in condition.keys:
            row = self._rows.get(key)
            if row is None:
                continue
            by, seq, others = row
            foreign = others if by == self._node else seq
            if foreign > condition.seen:
                conflict = AppendConflict(key, foreign)
        if conflict is not None:
            condition.conflict_seq = conflict.seq
            condition.resolve(refused=True)
        return conflict

    def took(self, condition: Condition, last_seq: int) -> None:
        """An append under ``condition`` was given seqs up to ``last_seq``."""
        for key in condition.keys:
            by, seq, others = self._rows.get(key, (self._node, 0, 0))
            self._rows[key] = (self._node, last_seq, others if by == self._node else seq)
            self._changed.add(key)

    def save(self) -> None:
        if self._changed:
            self._cur.executemany(
                self._q.put_decided, [(key, *self._rows[key]) for key in sorted(self._changed)]
            )


class Queries:
    """The statements of one schema, composed once."""

    def __init__(self, schema: str) -> None:
        s = sql.Identifier(schema)
        self.lock_head = sql.SQL("SELECT seq, digest, ts FROM {}.head FOR UPDATE").format(s)
        self.read_head = sql.SQL("SELECT seq, digest, ts FROM {}.head").format(s)
        self.set_head = sql.SQL("UPDATE {}.head SET seq = %s, digest = %s, ts = %s").format(s)
        self.copy_log = sql.SQL("COPY {}.log (seq, data) FROM STDIN").format(s)
        self.read_range = sql.SQL(
            "SELECT seq, data FROM {}.log WHERE seq BETWEEN %s AND %s ORDER BY seq"
        ).format(s)
        self.get_key = sql.SQL("SELECT entry FROM {}.idempotency WHERE key = %s").format(s)
        self.put_key = sql.SQL("INSERT INTO {}.idempotency (key, entry) VALUES (%s, %s)").format(s)
        self.notify = sql.SQL("SELECT pg_notify(%s, %s)")
        self.read_decided = sql.SQL(
            "SELECT key, node, seq, others FROM {}.decided WHERE key = ANY(%s)"
        ).format(s)
        self.put_decided = sql.SQL(
            "INSERT INTO {}.decided (key, node, seq, others) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (key) DO UPDATE "
            "SET node = excluded.node, seq = excluded.seq, others = excluded.others"
        ).format(s)


def create_tables(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> None:
    """The schema's tables, trigger and head row, made once (nodes starting together wait for
    each other on an advisory lock: ``CREATE ... IF NOT EXISTS`` alone races)."""
    s = sql.Identifier(schema)
    try:
        # The newest table: a schema made before it came gets it (and only then is the
        # trigger replaced).
        made = conn.execute("SELECT to_regclass(%s)", (f"{schema}.decided",)).fetchone()
        conn.rollback()
        if made is not None and made[0] is not None:
            return  # made before: its trigger is not replaced under appending nodes
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"mnemolog:{schema}",))
            conn.execute(sql.SQL(DDL).format(schema=s))
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.head (seq, digest, ts) VALUES (0, %s, 0) ON CONFLICT DO NOTHING"
                ).format(s),
                (GENESIS,),
            )
    except psycopg.Error as exc:
        raise StorageFailed(f"cannot make the log's tables: {exc}") from exc


def read_head(conn: psycopg.Connection[tuple[object, ...]], q: Queries) -> Head:
    row = conn.execute(q.read_head).fetchone()
    return EMPTY_HEAD if row is None else head_of(row)


def head_of(row: tuple[object, ...]) -> Head:
    seq, digest, ts = row
    return Head(as_int(seq), str(digest), as_int(ts))


def as_int(value: object) -> int:
    assert isinstance(value, int)
    return value


def as_bytes(value: object) -> bytes:
    assert isinstance(value, (bytes, memoryview))
    return bytes(value)
