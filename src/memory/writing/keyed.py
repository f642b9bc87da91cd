"""Writes that may be retried safely: an idempotency key sent with a write.

A key is scoped to (container, agent). Its first write is recorded with a ``write.keyed``
event in the same append as the write's own events, carrying the answer it was given; the
memories projection folds it, so the key survives a restart and a rebuild. A later write with
the key and the same request (by fingerprint) is answered that answer again and appends
nothing; with another request it is refused (``IdempotencyConflict``). A write that failed
appended nothing, the key's event with it: the key stays unused.

Requests with one key are serialised here, outside the write decision: while a key's write is
in flight (decided, not yet durable and applied), another request with it waits for that
answer rather than writing. A write without a key never comes here.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import NamedTuple, Protocol

import msgspec

from ...errors import AppendConflict, IdempotencyConflict, InvalidInput
from ...eventlog import Actor, Sealed, Sealer
from ...eventlog.events import KeyedOutcome, WriteKeyed
from ...eventlog.subjects import container_subject
from ...projections.memories.keyed import KeyedRow
from ...projections.memories.projection import MemoryProjection
from ..record import Recorder, decided_again
from .submitted import WriteOutcome
from .versions import NewMemory

MAX_KEY = 200
_encode = msgspec.json.Encoder().encode


class WriteKey(NamedTuple):
    """The key of a write as it is recorded: its digest and the request's, sealed."""

    digest: str  # sha256 of the key, hex: the key itself is never stored
    fingerprint: Sealed


class KeySpan(NamedTuple):
    """The items ``start:stop`` of a batch are one keyed request's."""

    start: int
    stop: int
    key: WriteKey


class KeyedWriter(Protocol):
    """Writes a request with its key's event in the same append (``WriteCombiner``)."""

    def write(
        self,
        container_tag: str,
        items: Sequence[NewMemory],
        actor: Actor,
        key: WriteKey | None = None,
    ) -> list[WriteOutcome]: ...


class Keyed(NamedTuple):
    """A keyed write's answer; ``replayed``: the first answer given again, nothing written."""

    outcomes: list[WriteOutcome]
    replayed: bool


class _Answer(NamedTuple):
    fingerprint: str
    outcomes: list[WriteOutcome]


def check_key(key: str) -> str:
    """An idempotency key: 1 to 200 printable ASCII characters, else 400."""
    if not 1 <= len(key) <= MAX_KEY or not all(" " <= c <= "~" for c in key):
        raise InvalidInput(f"Idempotency-Key must be 1 to {MAX_KEY} printable ASCII characters")
    return key


def fingerprint(container_tag: str, items: Sequence[NewMemory]) -> str:
    """The digest of a write's request as decoded: its container and memories."""
    return hashlib.sha256(_encode((container_tag, items))).hexdigest()


def keyed_event(
    container_tag: str,
    actor: Actor,
    key: WriteKey,
    outcomes: Sequence[WriteOutcome],
    counts: Sequence[int],
) -> WriteKeyed:
    """The ``write.keyed`` record of a request's outcomes (``counts``: the records each
    appended just before it)."""
    return WriteKeyed(
        container_tag=container_tag,
        agent_id=actor.agent_id,
        key_digest=key.digest,
        fingerprint=key.fingerprint,
        outcomes=[
            KeyedOutcome(
                memory_id=o.memory_id,
                version_id=o.version_id,
                version=o.version,
                status=o.status,
                events=count,
                similarity=o.similarity,
                reason=o.reason,
                flags=list(o.flags),
                possibly_updates=o.possibly_updates,
                possibly_outdated_by=o.possibly_outdated_by,
            )
            for o, count in zip(outcomes, counts, strict=True)
        ],
    )


def written_elsewhere(
    memories: MemoryProjection, container_tag: str, actor: Actor, spans: Sequence[KeySpan]
) -> AppendConflict | None:
    """On a shared log, in this node's turn (caught up): a keyed request whose key another
    node's write recorded since it was looked up. It is refused as decided on a stale
    container, so its caller looks the key up again and answers from that write."""
    for span in spans:
        found = memories.keyed_write(container_tag, actor.agent_id, span.key.digest)
        if found is not None:
            return AppendConflict(container_tag, found.seq)
    return None


def answered(row: KeyedRow) -> list[WriteOutcome]:
    """The answer a keyed write was given, as folded."""
    return [
        WriteOutcome(
            memory_id=o.memory_id,
            version_id=o.version_id,
            version=o.version,
            status=o.status,
            similarity=o.similarity,
            seq=seq,
            possibly_updates=o.possibly_updates,
            possibly_outdated_by=o.possibly_outdated_by,
            reason=o.reason,
            flags=tuple(o.flags),
        )
        for o, seq in zip(row.outcomes, row.seqs(), strict=True)
    ]


class KeyedWrites:
    def __init__(
        self,
        *,
        combiner: KeyedWriter,
        memories: MemoryProjection,
        sealer: Sealer,
        recorder: Recorder,
    ) -> None:
        """``recorder``: a keyed write refused on a shared log (another node appended about
        its container first) is looked up again once that append is applied (it may be this
        key's own first write, made on the other node), then decided again."""
        self._recorder = recorder
        self._combiner = combiner
        self._memories = memories
        self._sealer = sealer
        self._lock = threading.Lock()
        # (container, agent, key digest) -> the answer of the request writing with that key
        self._in_flight: dict[tuple[str, str, str], Future[_Answer]] = {}

    @decided_again
    def write(
        self, container_tag: str, items: Sequence[NewMemory], actor: Actor, key: str
    ) -> Keyed:
        """Write ``items`` once for ``key``: the first answer again for a retry."""
        digest = hashlib.sha256(check_key(key).encode()).hexdigest()
        mine = fingerprint(container_tag, items)
        scope = (container_tag, actor.agent_id, digest)
        while True:
            with self._lock:
                pending = self._in_flight.get(scope)
                if pending is None:
                    owned: Future[_Answer] = Future()
                    self._in_flight[scope] = owned
            if pending is None:
                break
            try:
                return _replayed(pending.result(), mine)
            except IdempotencyConflict:
                raise
            except Exception:
                continue  # that write failed and left the key unused: try again
        try:
            found = self._memories.keyed_write(*scope)
            if found is not None:
                answer = _Answer(found.fingerprint, answered(found))
                owned.set_result(answer)
                return _replayed(answer, mine)
            sealed = self._sealer.seal_text(container_subject(container_tag), mine)
            outcomes = self._combiner.write(container_tag, items, actor, WriteKey(digest, sealed))
            owned.set_result(_Answer(mine, outcomes))
            return Keyed(outcomes, replayed=False)
        except BaseException as exc:
            if not owned.done():
                owned.set_exception(exc)
            raise
        finally:
            with self._lock:
                del self._in_flight[scope]


def _replayed(answer: _Answer, fingerprint: str) -> Keyed:
    if answer.fingerprint != fingerprint:
        raise IdempotencyConflict(
            "this Idempotency-Key was used with another request: send a new key for it"
        )
    return Keyed(answer.outcomes, replayed=True)
