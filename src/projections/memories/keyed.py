"""Writes sent with an idempotency key (``write.keyed``), as the memories projection keeps
them: what a retry of each is answered, looked up by (container, agent, key digest).

Folded from the log like every table here, so a rebuild restores it; a container's erasure
deletes its rows (its fingerprints were sealed under the container's key, destroyed with it).
"""

from __future__ import annotations

from itertools import accumulate

import msgspec

from ...eventlog import Sealer
from ...eventlog.events import KeyedOutcome, WriteKeyed
from ..sqlite import SqliteProjection

_encode_outcomes = msgspec.json.Encoder().encode
_decode_outcomes = msgspec.json.Decoder(list[KeyedOutcome]).decode


class KeyedRow(msgspec.Struct, frozen=True, kw_only=True):
    """A keyed write as folded: its request's fingerprint and the answer it was given."""

    fingerprint: str
    seq: int  # of its ``write.keyed`` record
    outcomes: list[KeyedOutcome]

    def seqs(self) -> list[int]:
        """Each outcome's seq: the first record its write appended. The records of every
        outcome come in order and end just before the ``write.keyed`` one."""
        first = self.seq - sum(o.events for o in self.outcomes)
        return list(accumulate((o.events for o in self.outcomes[:-1]), initial=first))


class KeyedWriteTable(SqliteProjection):
    """Mixed into the memories projection: the ``keyed_writes`` table, its fold and read."""

    _sealer: Sealer

    def keyed_write(self, container_tag: str, agent_id: str, key_digest: str) -> KeyedRow | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT fingerprint, seq, outcomes FROM keyed_writes"
                " WHERE container_tag = ? AND agent_id = ? AND key_digest = ?",
                (container_tag, agent_id, key_digest),
            ).fetchone()
        if row is None:
            return None
        return KeyedRow(fingerprint=row[0], seq=row[1], outcomes=_decode_outcomes(row[2]))

    def _fold_keyed(self, seq: int, event: WriteKeyed) -> None:
        fingerprint = self._sealer.open_text(event.fingerprint)
        if fingerprint is None:
            return  # its container was erased since: the key is unused again
        # The first answer stands: a key is only ever recorded once (``memory/writing/keyed``).
        self._conn.execute(
            "INSERT OR IGNORE INTO keyed_writes VALUES (?, ?, ?, ?, ?, ?)",
            (
                event.container_tag,
                event.agent_id,
                event.key_digest,
                fingerprint,
                seq,
                _encode_outcomes(event.outcomes).decode(),
            ),
        )

    def _erase_keyed(self, container_tag: str) -> None:
        self._conn.execute("DELETE FROM keyed_writes WHERE container_tag = ?", (container_tag,))
