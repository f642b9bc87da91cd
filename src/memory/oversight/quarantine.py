"""Quarantine of an agent: its memories hidden, and kept, until it is released.

A quarantine is an event (``agent.quarantined``), and so is its end (``agent.released``).
While it lasts, every version the agent wrote, and every document it ingested, is left out of
recall (REST, MCP and the proxy's memory round all recall through ``Recall``) and out of the
lists agents read; nothing
is forgotten or changed, so a release serves them again as they were. A chain whose current
version the agent wrote serves nothing meanwhile: its earlier versions were replaced, and a
rollback is what gives them back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from collections.abc import Set as AbstractSet

from ...errors import NotFound
from ...eventlog import Actor, Draft
from ...eventlog.events import AgentQuarantined, AgentReleased
from ...projections.documents.projection import DocumentProjection
from ...projections.memories.projection import MemoryProjection
from ...projections.oversight import OversightProjection, QuarantineRow
from ..agents import check_agent_name
from ..record import Recorder

MAX_REASON = 500

Hidden = Callable[[str | None], AbstractSet[int]]


def hidden_rows(oversight: OversightProjection, memories: MemoryProjection) -> Hidden:
    """The version rows recall must leave out in a container (every container, for None)."""
    return _hidden_by(oversight, memories.rows_by_agents)


def hidden_chunks(oversight: OversightProjection, documents: DocumentProjection) -> Hidden:
    """The document chunks recall must leave out: those of documents a quarantined agent
    ingested."""
    return _hidden_by(oversight, documents.labels_by_agents)


def _hidden_by(
    oversight: OversightProjection,
    written_by: Callable[[frozenset[str], str | None], AbstractSet[int]],
) -> Hidden:
    def hidden(container_tag: str | None) -> AbstractSet[int]:
        agents = oversight.quarantined()
        return written_by(agents, container_tag) if agents else frozenset()

    return hidden


class Quarantine:
    def __init__(
        self,
        *,
        recorder: Recorder,
        oversight: OversightProjection,
        memories: MemoryProjection,
        documents: DocumentProjection,
    ) -> None:
        self._recorder = recorder
        self._oversight = oversight
        self._memories = memories
        self._lock = threading.Lock()  # one event for two calls racing to quarantine one agent
        self.hidden = hidden_rows(oversight, memories)
        self.hidden_chunks = hidden_chunks(oversight, documents)

    def agents(self) -> frozenset[str]:
        """The agents quarantined now."""
        return self._oversight.quarantined()

    def served_profile(self, container_tag: str) -> tuple[dict[str, object], int] | None:
        """The profile served for a container: the last one no quarantined agent set."""
        return self._memories.profile(container_tag, self.agents())

    def state(self, agent_id: str) -> QuarantineRow | None:
        return self._oversight.quarantine(agent_id)

    def quarantine(self, agent_id: str, reason: str | None, actor: Actor) -> QuarantineRow:
        """Hide the agent's memories; an agent quarantined already stays as it is (nothing is
        appended)."""
        check_agent_name(agent_id)
        with self._lock:
            found = self._oversight.quarantine(agent_id)
            if found is not None:
                return found
            event = AgentQuarantined(agent_id=agent_id, reason=reason)
            self._recorder.record([Draft(actor, event)])
            made = self._oversight.quarantine(agent_id)
        assert made is not None
        return made

    def release(self, agent_id: str, actor: Actor) -> int:
        check_agent_name(agent_id)
        with self._lock:
            if self._oversight.quarantine(agent_id) is None:
                raise NotFound(f"agent {agent_id!r} is not quarantined")
            released = self._recorder.record([Draft(actor, AgentReleased(agent_id=agent_id))])
        return released.seqs[0]
