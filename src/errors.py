"""The exceptions mnemolog raises, all under one base.

    MnemologError
    ├── InvalidInput                  bad input from a caller (4xx, nothing changed)
    │   ├── MalformedBody             not JSON, or JSON we refuse: NaN, duplicate keys (400)
    │   ├── PayloadTooLarge           a body over the size limit (413)
    │   ├── UnsupportedMediaType      a body that is not application/json (415)
    │   ├── NotFound                  no such memory, document or trace (404)
    │   ├── VersionConflict           expectedVersion is no longer the latest (409)
    │   ├── MemoryForgotten           a write names a forgotten memory to correct (409)
    │   ├── NothingToSplit            a split of a current version, or of one split already (409)
    │   ├── NothingChanged            a correction that would change nothing of the latest (409)
    │   ├── RollbackAlreadyUndone     an undo of a rollback undone already (409)
    │   ├── LastLiveKey               a revocation over HTTP that would open the door (409)
    │   ├── IdempotencyConflict       same idempotency key, different payload (409)
    │   └── SeqAhead                  a read's minSeq is past the log's head (400)
    ├── RequestRefused                the request came through the wrong door: nothing ran (403)
    │   ├── MisdirectedHost           a Host the server does not answer to (421)
    │   ├── ForeignOrigin             sent from a web page of another origin (403)
    │   ├── Unauthorized              no API key, or one that opens nothing, where needed (401)
    │   ├── AdminRequired             only the user or an admin key may do this (403)
    │   ├── ContainerForbidden        the key may not reach that container (403)
    │   └── AgentDistrusted           the agent's trust is under the threshold: no writes (403)
    ├── KeyDestroyed                  the subject's key was destroyed: it cannot come back (410)
    ├── DataDirLocked                 another mnemolog process owns the data dir
    ├── EmbedderError                 the embedder cannot be loaded or used
    │   ├── EmbedderMismatch          the data dir is pinned to another embedder (refuse to boot)
    │   └── RerankerUnavailable       the reranker's model is missing or not the pinned one (503)
    ├── UpstreamNotConfigured         the proxy has no upstream base URL (503)
    ├── UpstreamFailed                the upstream failed or answered nonsense (502)
    │   └── UpstreamRejected          the upstream refused the request: its 4xx status is kept
    ├── UpstreamTimeout               the upstream did not answer in time (504)
    ├── StorageError                  the log cannot take writes
    │   ├── StorageFailed             an I/O or fsync failure: fail-stop until restart (503)
    │   ├── DiskFull                  no space left on the device: fail-stop (507)
    │   ├── LogClosed                 the log was closed (503)
    │   ├── AppendConflict            another node changed what an append was decided on (503)
    │   └── ProjectionsLagging        this node has not applied the seq a read asked for (503)
    └── CorruptLog                    the stored log fails its own checks
        └── CorruptRecord             one record fails its checksum, sequence or chain check

Each carries a stable machine-readable ``code``. The statuses in brackets are what the HTTP
shells answer with; they are mapped from the classes there (``web/statuses.py``), so nothing
below the shells speaks HTTP.
"""

from __future__ import annotations


class MnemologError(Exception):
    """Base of every error mnemolog raises on purpose."""

    code = "mnemolog_error"


class InvalidInput(MnemologError):
    code = "invalid_input"


class MalformedBody(InvalidInput):
    code = "malformed_body"


class PayloadTooLarge(InvalidInput):
    code = "payload_too_large"


class UnsupportedMediaType(InvalidInput):
    code = "unsupported_media_type"


class NotFound(InvalidInput):
    code = "not_found"


class VersionConflict(InvalidInput):
    code = "version_conflict"


class NothingToSplit(InvalidInput):
    """A split named a version no later version replaced, or one split out already."""

    code = "nothing_to_split"


class NothingChanged(InvalidInput):
    """A correction (PATCH) whose text, isStatic, metadata, context and fact time are the
    latest version's already: nothing is appended."""

    code = "nothing_changed"


class RollbackAlreadyUndone(InvalidInput):
    """An undo named a rollback that was undone already: roll the agent back again instead."""

    code = "rollback_undone"


class MemoryForgotten(InvalidInput):
    code = "memory_forgotten"


class LastLiveKey(InvalidInput):
    """Revoking the last live key would leave loopback callers in unkeyed: that is done with
    ``mnemolog keys revoke``, with the server stopped, on purpose."""

    code = "last_live_key"


class ContainerInUse(InvalidInput):
    """Another agent's key is scoped to the container an erasure names (``force``, from a
    caller that reaches every container, erases it all the same)."""

    code = "container_in_use"


class IdempotencyConflict(InvalidInput):
    code = "idempotency_conflict"


class SeqAhead(InvalidInput):
    """A read asked to see a seq the log does not hold: no write was ever answered with it."""

    code = "min_seq_ahead"

    def __init__(self, min_seq: int, head: int) -> None:
        super().__init__(
            f"minSeq {min_seq} is past the log's head ({head}): no write has been answered "
            "with it; send the seq a write answered"
        )
        self.min_seq = min_seq
        self.head = head


class RequestRefused(MnemologError):
    """Refused in front of every route (``web/host_guard.py``), before anything ran."""

    code = "request_refused"


class MisdirectedHost(RequestRefused):
    code = "misdirected_host"


class ForeignOrigin(RequestRefused):
    code = "foreign_origin"


class CsrfRefused(RequestRefused):
    """A dashboard form without this session's CSRF token."""

    code = "csrf_refused"


class Unauthorized(RequestRefused):
    """No API key, or one that opens nothing, where keys are required."""

    code = "unauthorized"


class AdminRequired(RequestRefused):
    """Quarantine and rollback of agents are the user's (the local agent) or an admin key's."""

    code = "admin_required"


class ContainerForbidden(RequestRefused):
    """The request's key may not reach that container (or the whole store)."""

    code = "container_forbidden"


class AgentDistrusted(RequestRefused):
    """The agent's trust is under the enforcement threshold: its writes and deletes are
    refused, and nothing is appended (``GET /agents/{id}`` says why)."""

    code = "agent_distrusted"


class KeyDestroyed(MnemologError):
    code = "key_destroyed"


class DataDirLocked(MnemologError):
    code = "data_dir_locked"


class SessionsFull(MnemologError):
    """The dashboard keeps as many live sessions as it may, all of other agents: a login
    waits for one to end rather than log someone else out (503)."""

    code = "sessions_full"


class EmbedderError(MnemologError):
    code = "embedder_error"


class EmbedderMismatch(EmbedderError):
    code = "embedder_mismatch"


class RerankerUnavailable(EmbedderError):
    """The reranker's files are missing or are not the pinned ones (503: the server is fine,
    this feature of it is not installed)."""

    code = "reranker_unavailable"


class UpstreamNotConfigured(MnemologError):
    code = "upstream_not_configured"


class UpstreamFailed(MnemologError):
    code = "upstream_error"


class UpstreamRejected(UpstreamFailed):
    """A 4xx from the upstream that is the caller's to fix (bad model, too long, rate limit)."""

    code = "upstream_rejected"

    def __init__(self, upstream_status: int, message: str) -> None:
        super().__init__(message)
        self.upstream_status = upstream_status


class UpstreamTimeout(MnemologError):
    code = "upstream_timeout"


class StorageError(MnemologError):
    code = "storage_error"


class StorageFailed(StorageError):
    code = "storage_failed"


class DiskFull(StorageError):
    code = "disk_full"


class LogClosed(StorageError):
    code = "log_closed"


class AppendConflict(StorageError):
    """Another node appended about a container after this node decided about it (the log
    refused the append): the decision is made again once ``seq`` is applied."""

    code = "append_conflict"

    def __init__(self, key: str, seq: int) -> None:
        super().__init__(
            f"another node appended about {key!r} (at seq {seq}) after this decision was made"
        )
        self.key = key
        self.seq = seq


class ProjectionsLagging(StorageError):
    """A read asked to see at least ``min_seq`` and this node had not applied it in time."""

    code = "projections_lagging"

    def __init__(self, min_seq: int, applied: int, head: int, waited: float) -> None:
        super().__init__(
            f"minSeq {min_seq} not reached: this node has applied the log up to seq {applied} "
            f"(the log's head is {head}) after waiting {waited:g} s"
        )
        self.min_seq = min_seq
        self.applied = applied
        self.head = head


class CorruptLog(MnemologError):
    code = "corrupt_log"


class CorruptRecord(CorruptLog):
    """A record fails its checks; ``seq`` is the first bad sequence number."""

    code = "corrupt_record"

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"record {seq}: {reason}")
        self.seq = seq
        self.reason = reason


# The failures a caller's own request caused (answered 4xx): in a batch of several callers'
# requests, such a failure belongs to one of them alone.
CALLER_ERRORS: tuple[type[MnemologError], ...] = (
    InvalidInput,
    RequestRefused,
    KeyDestroyed,
    UpstreamRejected,
)
