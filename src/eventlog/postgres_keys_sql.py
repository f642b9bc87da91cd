"""The tables and statements of the PostgreSQL key store (``postgres_keys.py``)."""

from __future__ import annotations

from psycopg import sql

DDL = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.keys (subject text PRIMARY KEY, key bytea NOT NULL);
CREATE TABLE IF NOT EXISTS {schema}.key_tombstones (digest bytea PRIMARY KEY);
CREATE TABLE IF NOT EXISTS {schema}.key_generations (
    subject text PRIMARY KEY,
    generation text NOT NULL
);
CREATE TABLE IF NOT EXISTS {schema}.key_resealed (field bytea PRIMARY KEY, ct bytea NOT NULL);
CREATE TABLE IF NOT EXISTS {schema}.key_epoch (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    n bigint NOT NULL,
    compacted bigint NOT NULL
);
INSERT INTO {schema}.key_epoch (n, compacted) VALUES (0, 0) ON CONFLICT DO NOTHING;
"""

# How long a rewrite of the keys table waits for its lock before the erasure fails (and may be
# retried): a transaction holding the table must not stall every node's key reads behind it.
VACUUM_LOCK_TIMEOUT = "30s"


class KeyQueries:
    """The statements of one schema, composed once."""

    def __init__(self, schema: str) -> None:
        s = sql.Identifier(schema)

        def q(text: str) -> sql.Composed:
            return sql.SQL(text).format(s=s)

        self.load = q("SELECT key FROM {s}.keys WHERE subject = %s")
        # The subject's current generation and its tombstone, in one statement, from the
        # database: another node may have re-keyed or erased it a moment ago.
        self.is_destroyed = q(
            "SELECT EXISTS (SELECT 1 FROM {s}.key_tombstones WHERE digest = sha256(convert_to("
            "coalesce((SELECT generation FROM {s}.key_generations WHERE subject = %(subject)s),"
            " %(subject)s), 'UTF8')))"
        )
        self.resealed = q("SELECT ct FROM {s}.key_resealed WHERE field = %s")
        self.lock_shared = sql.SQL("SELECT pg_advisory_xact_lock_shared(hashtext(%s))")
        self.lock = sql.SQL("SELECT pg_advisory_xact_lock(hashtext(%s))")
        self.tombstoned = q("SELECT digest FROM {s}.key_tombstones WHERE digest = ANY(%s::bytea[])")
        self.insert_keys = q(
            "INSERT INTO {s}.keys (subject, key) SELECT * FROM unnest(%s::text[], %s::bytea[])"
            " ON CONFLICT (subject) DO NOTHING"
        )
        self.keys_of = q("SELECT subject, key FROM {s}.keys WHERE subject = ANY(%s::text[])")
        self.delete_keys = q("DELETE FROM {s}.keys WHERE subject = ANY(%s::text[]) RETURNING 1")
        self.put_tombstones = q(
            "INSERT INTO {s}.key_tombstones (digest) SELECT unnest(%s::bytea[])"
            " ON CONFLICT DO NOTHING"
        )
        self.generations_of = q(
            "SELECT subject, generation FROM {s}.key_generations WHERE subject = ANY(%s::text[])"
        )
        self.put_generations = q(
            "INSERT INTO {s}.key_generations (subject, generation)"
            " SELECT * FROM unnest(%s::text[], %s::text[])"
            " ON CONFLICT (subject) DO UPDATE SET generation = excluded.generation"
        )
        self.put_resealed = q(
            "INSERT INTO {s}.key_resealed (field, ct)"
            " SELECT * FROM unnest(%s::bytea[], %s::bytea[])"
            " ON CONFLICT (field) DO UPDATE SET ct = excluded.ct"
        )
        self.read_epoch = q("SELECT n, compacted FROM {s}.key_epoch")
        self.bump_epoch = q("UPDATE {s}.key_epoch SET n = n + 1 RETURNING n")
        self.mark_compacted = q("UPDATE {s}.key_epoch SET compacted = greatest(compacted, %s)")
        self.notify = sql.SQL("SELECT pg_notify(%s, %s)")
        self.vacuum_lock_timeout = sql.SQL("SET lock_timeout = {}").format(
            sql.Literal(VACUUM_LOCK_TIMEOUT)
        )
        self.vacuum_keys = q("VACUUM FULL {s}.keys")
        self.all_keys = q("SELECT subject, key FROM {s}.keys")
        self.all_tombstones = q("SELECT digest FROM {s}.key_tombstones")
        self.all_generations = q("SELECT subject, generation FROM {s}.key_generations")
        self.all_resealed = q("SELECT field, ct FROM {s}.key_resealed")
        self.holds_anything = q(
            "SELECT EXISTS (SELECT 1 FROM {s}.keys) OR EXISTS (SELECT 1 FROM {s}.key_tombstones)"
            " OR EXISTS (SELECT 1 FROM {s}.key_generations)"
            " OR EXISTS (SELECT 1 FROM {s}.key_resealed)"
        )
        self.copy_keys = q("COPY {s}.keys (subject, key) FROM STDIN")
        self.copy_tombstones = q("COPY {s}.key_tombstones (digest) FROM STDIN")
        self.copy_generations = q("COPY {s}.key_generations (subject, generation) FROM STDIN")
        self.copy_resealed = q("COPY {s}.key_resealed (field, ct) FROM STDIN")
