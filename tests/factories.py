"""Small builders for events and drafts shared by the tests and benchmarks."""

from __future__ import annotations

import os
import random
import string

from mnemolog.eventlog import Actor, Draft, Sealed
from mnemolog.eventlog.events import AgentSignal, MemoryWritten

ACTOR = Actor(agent_id="agent-test", protocol="rest")


def signal_draft(label: str, *, size: int = 0, actor: Actor = ACTOR) -> Draft:
    """A draft whose label identifies it; ``size`` pads the label to about that many bytes,
    with letters drawn from the label's own seed: a stored record is compressed, and a
    padding of one repeated character would leave it a few bytes long."""
    padded = label
    if len(label) < size:
        letters = random.Random(label).choices(string.ascii_letters, k=size - len(label) - 1)
        padded = label + "." + "".join(letters)
    return Draft(actor, AgentSignal(agent_id=actor.agent_id, signal="neutral", label=padded))


def memory_draft(memory_id: str, content: Sealed, *, container: str = "c1") -> Draft:
    return Draft(
        ACTOR,
        MemoryWritten(
            memory_id=memory_id,
            version_id=f"{memory_id}-v1",
            container_tag=container,
            content=content,
        ),
    )


def fake_sealed(subject: str = "memory:m1", size: int = 32) -> Sealed:
    """Random bytes standing in for a ciphertext, for tests that never open it."""
    return Sealed(subject=subject, nonce=os.urandom(12), ct=os.urandom(size))
