"""The event log: the only source of truth. Everything else is a fold over it."""

from .codec import RecordCodec
from .events import EVENT_TYPES, Actor, AnyEvent, Event, Sealed
from .in_memory import InMemoryEventLog
from .keys_port import KeyStore
from .keystore import LmdbKeyStore
from .lmdb_log import LmdbEventLog
from .port import Appended, Draft, EventLog, Head, Hold
from .record import GENESIS, Record, StoredRecord
from .sealing import Sealer
from .verify import VerifyReport, verify_log

__all__ = [
    "EVENT_TYPES",
    "GENESIS",
    "Actor",
    "AnyEvent",
    "Appended",
    "Draft",
    "Event",
    "EventLog",
    "Head",
    "Hold",
    "InMemoryEventLog",
    "KeyStore",
    "LmdbEventLog",
    "LmdbKeyStore",
    "Record",
    "RecordCodec",
    "Sealed",
    "Sealer",
    "StoredRecord",
    "VerifyReport",
    "verify_log",
]
