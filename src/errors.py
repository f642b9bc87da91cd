"""The exceptions mnemolog raises, all under one base.

    MnemologError
    ├── InvalidInput                  bad input from a caller (4xx, nothing changed)
    │   ├── MalformedBody             not JSON, or JSON we refuse: NaN, duplicate keys (400)
    │   ├── PayloadTooLarge           a body over the size limit (413)
    │   ├── UnsupportedMediaType      a body that is not application/json (415)
    │   ├── NotFound                  no such memory, document or trace (404)
    │   ├── VersionConflict           expectedVersion is no longer the latest (409)
    │   └── IdempotencyConflict       same idempotency key, different payload (409)
    ├── KeyDestroyed                  the subject's key was destroyed: it cannot come back (410)
    ├── DataDirLocked                 another mnemolog process owns the data dir
    ├── EmbedderError                 the embedder cannot be loaded or used
    │   └── EmbedderMismatch          the data dir is pinned to another embedder (refuse to boot)
    ├── StorageError                  the log cannot take writes
    │   ├── StorageFailed             an I/O or fsync failure: fail-stop until restart (503)
    │   ├── DiskFull                  no space left on the device: fail-stop (507)
    │   └── LogClosed                 the log was closed (503)
    └── CorruptLog                    the stored log fails its own checks
        └── CorruptRecord             one record fails its checksum, sequence or chain check

Each carries a stable machine-readable ``code`` and the HTTP status the API answers with.
"""

from __future__ import annotations


class MnemologError(Exception):
    """Base of every error mnemolog raises on purpose."""

    code = "mnemolog_error"
    status = 500


class InvalidInput(MnemologError):
    code = "invalid_input"
    status = 400


class MalformedBody(InvalidInput):
    code = "malformed_body"
    status = 400


class PayloadTooLarge(InvalidInput):
    code = "payload_too_large"
    status = 413


class UnsupportedMediaType(InvalidInput):
    code = "unsupported_media_type"
    status = 415


class NotFound(InvalidInput):
    code = "not_found"
    status = 404


class VersionConflict(InvalidInput):
    code = "version_conflict"
    status = 409


class IdempotencyConflict(InvalidInput):
    code = "idempotency_conflict"
    status = 409


class KeyDestroyed(MnemologError):
    code = "key_destroyed"
    status = 410


class DataDirLocked(MnemologError):
    code = "data_dir_locked"
    status = 503


class EmbedderError(MnemologError):
    code = "embedder_error"
    status = 503


class EmbedderMismatch(EmbedderError):
    code = "embedder_mismatch"
    status = 503


class StorageError(MnemologError):
    code = "storage_error"
    status = 503


class StorageFailed(StorageError):
    code = "storage_failed"
    status = 503


class DiskFull(StorageError):
    code = "disk_full"
    status = 507


class LogClosed(StorageError):
    code = "log_closed"
    status = 503


class CorruptLog(MnemologError):
    code = "corrupt_log"
    status = 500


class CorruptRecord(CorruptLog):
    """A record fails its checks; ``seq`` is the first bad sequence number."""

    code = "corrupt_record"

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"record {seq}: {reason}")
        self.seq = seq
        self.reason = reason
