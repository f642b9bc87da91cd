"""The facts mnemolog records: one tagged union of frozen msgspec Structs.

Every event is a past-tense fact with a stable dotted wire tag (``type``) and a ``schema``
version. Evolve additively: new fields get defaults and types never change; a breaking change
bumps ``schema`` and registers an upcaster (see ``upcasting.py``).

Text that may hold personal data is never a plain ``str`` here: it is a ``Sealed`` value,
encrypted under its subject's data key, so destroying the key erases it from the log.

The classes live in one module per subject (``memory``, ``recall``, ``stores``, ``agents``,
``turns``, ``portability``, on ``base``); this face writes the union once, and the list of
classes is read off it.
"""

from __future__ import annotations

from typing import TypeAlias, get_args

import msgspec

from .agents import (
    AgentKeyAdded,
    AgentKeyRevoked,
    AgentQuarantined,
    AgentReleased,
    AgentRolledBack,
    AgentSignal,
    MemoryFlagged,
    ProfileReset,
    RevertedChain,
    RollbackUndone,
)
from .base import Actor, Event, Protocol, Sealed
from .memory import (
    ChainForgotten,
    ChainRestored,
    ContainerErased,
    Evidence,
    KeyedOutcome,
    MemoryArbitrated,
    MemoryDeduplicated,
    MemoryEdited,
    MemoryLinked,
    MemoryReverted,
    MemorySplit,
    MemorySuperseded,
    MemoryWritten,
    SubjectErased,
    WriteKeyed,
)
from .portability import DocumentImported, ImportedChain, ImportOrigin, MemoryImported
from .ranker import RankerPromoted, RankerRolledBack, RankerTrained
from .recall import (
    Candidate,
    ContextInjected,
    InjectedSource,
    LearnedRanking,
    MemoryCaptured,
    RecallFeedback,
    RecallPerformed,
    RecallUsed,
)
from .stores import (
    DocumentForgotten,
    DocumentIngested,
    DocumentRestored,
    EmbedderPinned,
    ProfileUpdated,
    ReembedCompleted,
    ReembeddedVector,
    ReembedStarted,
    VectorsReembedded,
)
from .turns import CaptureDecided, ProxyRound, ProxyTurn

__all__ = [
    "EVENT_TYPES",
    "Actor",
    "AgentKeyAdded",
    "AgentKeyRevoked",
    "AgentQuarantined",
    "AgentReleased",
    "AgentRolledBack",
    "AgentSignal",
    "AnyEvent",
    "Candidate",
    "CaptureDecided",
    "ChainForgotten",
    "ChainRestored",
    "ContainerErased",
    "ContextInjected",
    "DocumentForgotten",
    "DocumentImported",
    "DocumentIngested",
    "DocumentRestored",
    "EmbedderPinned",
    "Event",
    "Evidence",
    "ImportOrigin",
    "ImportedChain",
    "InjectedSource",
    "KeyedOutcome",
    "LearnedRanking",
    "MemoryArbitrated",
    "MemoryCaptured",
    "MemoryDeduplicated",
    "MemoryEdited",
    "MemoryFlagged",
    "MemoryImported",
    "MemoryLinked",
    "MemoryReverted",
    "MemorySplit",
    "MemorySuperseded",
    "MemoryWritten",
    "ProfileReset",
    "ProfileUpdated",
    "Protocol",
    "ProxyRound",
    "ProxyTurn",
    "RankerPromoted",
    "RankerRolledBack",
    "RankerTrained",
    "RecallFeedback",
    "RecallPerformed",
    "RecallUsed",
    "ReembedCompleted",
    "ReembedStarted",
    "ReembeddedVector",
    "RevertedChain",
    "RollbackUndone",
    "Sealed",
    "SubjectErased",
    "VectorsReembedded",
    "VersionEvent",
    "WriteKeyed",
    "current_schema",
    "event_tag",
]

# The events that make a memory version (its row id in the projections is their seq).
VersionEvent: TypeAlias = (
    MemoryWritten | MemorySuperseded | MemoryEdited | MemoryImported | MemorySplit
)

AnyEvent: TypeAlias = (
    MemoryWritten
    | MemoryDeduplicated
    | MemorySuperseded
    | MemoryLinked
    | MemoryArbitrated
    | MemoryEdited
    | MemoryReverted
    | MemorySplit
    | ChainForgotten
    | ChainRestored
    | SubjectErased
    | ContainerErased
    | RecallPerformed
    | ContextInjected
    | MemoryCaptured
    | ProfileUpdated
    | DocumentIngested
    | DocumentForgotten
    | DocumentRestored
    | EmbedderPinned
    | ReembedStarted
    | VectorsReembedded
    | ReembedCompleted
    | AgentSignal
    | MemoryFlagged
    | AgentKeyAdded
    | AgentKeyRevoked
    | AgentQuarantined
    | AgentReleased
    | AgentRolledBack
    | RollbackUndone
    | ProxyTurn
    | CaptureDecided
    | MemoryImported
    | DocumentImported
    | RecallUsed
    | WriteKeyed
    | RecallFeedback
    | RankerTrained
    | RankerPromoted
    | RankerRolledBack
)

# Every event class, read off the union so the list is written once.
EVENT_TYPES: tuple[type[Event], ...] = get_args(AnyEvent)


def event_tag(event_type: type[Event]) -> str:
    """The wire tag of an event class."""
    tag = event_type.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def current_schema(event_type: type[Event]) -> int:
    """The schema version new events of this class are written with."""
    for field in msgspec.structs.fields(event_type):
        if field.name == "schema":
            assert isinstance(field.default, int)
            return field.default
    raise TypeError(f"{event_type.__name__} has no schema field")
