"""What the shells read: one facade over the read models, with the read rules applied once.

REST, MCP, the proxy and any page read the store through ``Reads`` and never a projection, so
three rules hold on every path alike:

- **In reach of the caller's key.** A thing of a container the key does not reach is
  ``NotFound``, as if it did not exist (``Caller.owns``): a key cannot probe another container's
  ids. A list of a container out of reach, or of every container for a scoped key, is refused
  (``Caller.reach``).
- **Settled before traces.** A search answers ahead of its recall event's group commit; a trace
  is read once the events queued before it are applied (``Recall.settle``).
- **Quarantine.** Lists leave out the memories and documents of quarantined agents, a chain
  says which of its versions are theirs, and a profile they wrote is not served.

Reads that follow one already checked (the versions a trace names, a chunk it served) take no
caller: they answer for a thing the caller has reached.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..errors import NotFound
from ..eventlog.events import ProxyTurn
from ..projections.documents.projection import ChunkRow, DocumentProjection, DocumentRow
from ..projections.memories.projection import MemoryProjection
from ..projections.memories.queries import Browse
from ..projections.memories.rows import ChainView, HistoryRow, LinkRow, SplitRow, VersionRow
from ..projections.traces import Rating, Trace, TraceProjection, TurnTrace, VersionTrace
from ..projections.trust.rows import Carried
from .agents import Caller
from .oversight.quarantine import Quarantine
from .oversight.trust import Trust
from .recall.service import Recall

__all__ = ["Browse", "ChainRead", "Named", "Reads"]


class ChainRead(msgspec.Struct, frozen=True, kw_only=True):
    """A chain with what is read beside it: its links, its splits, and which of its versions'
    authors are quarantined."""

    chain: ChainView
    links: list[LinkRow]
    split_from: SplitRow | None
    split_into: list[SplitRow]
    quarantined: frozenset[str]
    history: list[HistoryRow]  # every event folded for it, in log order


class Named(msgspec.Struct, frozen=True, kw_only=True):
    """The versions a page names, in the caller's reach (``Reads.named``): each chain's
    latest, versions by id, and versions by (memory id, version number)."""

    latest: dict[str, VersionRow]
    versions: dict[str, VersionRow]
    numbered: dict[tuple[str, int], VersionRow]


class Reads:
    def __init__(
        self,
        *,
        memories: MemoryProjection,
        documents: DocumentProjection,
        traces: TraceProjection,
        recall: Recall,
        quarantine: Quarantine,
        trust: Trust,
    ) -> None:
        self._memories = memories
        self._documents = documents
        self._traces = traces
        self._recall = recall
        self._quarantine = quarantine
        self._trust = trust

    # -- memories ------------------------------------------------------------------------------

    def latest(self, memory_id: str, caller: Caller) -> VersionRow:
        """A memory's latest version, if the caller's key reaches its container."""
        latest = self._memories.latest(memory_id)
        if latest is None:
            raise NotFound(f"no memory {memory_id!r}")
        caller.owns(latest.container_tag, f"memory {memory_id!r}")
        return latest

    def chain(self, memory_id: str, caller: Caller) -> ChainRead:
        """A chain as the store has it now, if the caller's key reaches its container."""
        chain = self._memories.chain(memory_id)
        if chain is None:
            raise NotFound(f"no memory {memory_id!r}")
        caller.owns(chain.container_tag, f"memory {memory_id!r}")
        return ChainRead(
            chain=chain,
            links=self._memories.links_of(memory_id),
            split_from=self._memories.split_from(memory_id),
            split_into=self._memories.split_into(memory_id),
            quarantined=self._quarantine.agents(),
            history=self._memories.history(memory_id),
        )

    def memories(
        self,
        caller: Caller,
        *,
        container_tag: str | None,
        include_forgotten: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[VersionRow], int]:
        """The latest versions of a container's chains (or every container's), newest first,
        and how many there are; quarantined agents' left out."""
        caller.reach(container_tag)
        return self._memories.list_latest(
            container_tag=container_tag,
            include_forgotten=include_forgotten,
            limit=limit,
            offset=offset,
            hidden_agents=self._quarantine.agents(),
        )

    def browse(
        self,
        caller: Caller,
        *,
        status: Browse,
        container_tag: str | None,
        agent_id: str | None = None,
        text: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[VersionRow], int, dict[str, int]]:
        """A page of versions of one status (``MemoryQueries.browse``), how many there are,
        and how many each status holds under the same filters. A key scoped to containers
        names one of them."""
        caller.reach(container_tag)
        rows, counts = self._memories.browse(
            status=status,
            container_tag=container_tag,
            agent_id=agent_id,
            text=text,
            hidden_agents=self._quarantine.agents(),
            flagged=self._trust.flagged_versions(),
            limit=limit,
            offset=offset,
        )
        return rows, counts[status], counts

    def containers(self, caller: Caller) -> list[str]:
        """The containers holding memories that the caller's key reaches."""
        return [tag for tag in self._memories.container_tags() if caller.may(tag)]

    def writers(self, caller: Caller, container_tag: str | None) -> list[str]:
        """The agents that wrote to a container (or to any, for an unscoped key)."""
        caller.reach(container_tag)
        return self._memories.agent_ids(container_tag)

    def versions(self, version_ids: Sequence[str]) -> dict[str, VersionRow]:
        """Versions by id, erased ones included (without their text)."""
        return self._memories.by_version_ids(version_ids)

    def named(
        self,
        caller: Caller,
        *,
        latest_of: Sequence[str] = (),
        version_ids: Sequence[str] = (),
        numbered: Sequence[tuple[str, int]] = (),
    ) -> Named:
        """The versions a list names by id (a page's rows), read in one query of each kind,
        whatever the rows number; those of a container out of the caller's reach left out,
        as if they did not exist. Erased ones are included, without their text."""
        memories = self._memories
        return Named(
            latest={
                k: v
                for k, v in memories.latest_of(latest_of).items()
                if caller.may(v.container_tag)
            },
            versions={
                k: v
                for k, v in memories.by_version_ids(sorted(set(version_ids))).items()
                if caller.may(v.container_tag)
            },
            numbered={
                k: v
                for k, v in memories.by_numbers(numbered).items()
                if caller.may(v.container_tag)
            },
        )

    def carried(self, version_ids: Sequence[str]) -> dict[str, Carried]:
        """Each version's sources and the trust it carries now."""
        return self._trust.carried(version_ids)

    def digest(self, container_tag: str | None, caller: Caller) -> tuple[str, int]:
        """The digest of what the memories projection serves, and the seq it covers."""
        caller.reach(container_tag)
        return self._memories.digest(container_tag), self._memories.last_seq()

    # -- profiles ------------------------------------------------------------------------------

    def profile(self, container_tag: str, caller: Caller) -> tuple[dict[str, object], int] | None:
        """A container's profile as served (none while its writer is quarantined)."""
        caller.reach(container_tag)
        return self._quarantine.served_profile(container_tag)

    def profile_tags(self, caller: Caller) -> list[str]:
        """The containers with a profile that the caller's key reaches."""
        return [tag for tag, _ in self._memories.profiles() if caller.may(tag)]

    # -- documents -----------------------------------------------------------------------------

    def documents(
        self, caller: Caller, *, container_tag: str | None, limit: int = 50, offset: int = 0
    ) -> tuple[list[DocumentRow], int]:
        caller.reach(container_tag)
        return self._documents.list_documents(
            container_tag=container_tag,
            limit=limit,
            offset=offset,
            hidden_agents=self._quarantine.agents(),
        )

    def document(self, document_id: str, caller: Caller) -> DocumentRow:
        document = self._documents.get(document_id)
        if document is None:
            raise NotFound(f"no document {document_id!r}")
        caller.owns(document.container_tag, f"document {document_id!r}")
        return document

    def chunk(self, document_id: str, index: int) -> ChunkRow | None:
        return self._documents.chunk_at(document_id, index)

    # -- traces --------------------------------------------------------------------------------

    def trace(self, trace_id: str, caller: Caller) -> Trace:
        """A recall trace, if the caller's key reaches its container (one over every container
        only an unscoped key does)."""
        self._recall.settle()
        trace = self._traces.get(trace_id)
        if trace is None:
            raise NotFound(f"no trace {trace_id!r}")
        caller.owns(trace.container_tag, f"trace {trace_id!r}")
        return trace

    def served(
        self, chain: ChainView, caller: Caller, *, limit: int = 20
    ) -> tuple[list[VersionTrace], list[VersionTrace]]:
        """Of a chain the caller was given (``chain``): the latest recalls that served any of
        its versions and the latest proxied turns that injected any, newest first, at most
        ``limit`` of each; a scoped key sees only those of its containers."""
        self._recall.settle()
        return self._traces.of_versions(
            [v.version_id for v in chain.versions],
            containers=caller.containers,
            limit=limit,
        )

    def ratings(self, trace: Trace) -> list[Rating]:
        """The grades given to the results of a trace the caller was given (``trace``)."""
        return self._traces.ratings(trace.recall_id)

    def turn(self, turn_id: str, caller: Caller) -> TurnTrace:
        turn = self._traces.turn(turn_id)
        if turn is None:
            raise NotFound(f"no trace {turn_id!r}")
        caller.owns(turn.turn.container_tag, f"trace {turn_id!r}")
        return turn

    def traces(
        self,
        caller: Caller,
        *,
        container_tag: str | None,
        origin: str | None = None,
        before_seq: int | None = None,
        limit: int = 20,
    ) -> list[Trace]:
        """Recent recalls, newest first."""
        caller.reach(container_tag)
        self._recall.settle()
        return self._traces.recent(
            container_tag=container_tag, origin=origin, before_seq=before_seq, limit=limit
        )

    def turns(
        self,
        caller: Caller,
        *,
        container_tag: str | None,
        before_seq: int | None = None,
        limit: int = 20,
    ) -> list[tuple[int, int, ProxyTurn, str, str]]:
        """Recent proxied turns, newest first: (seq, at, turn, agent id, protocol)."""
        caller.reach(container_tag)
        self._recall.settle()
        return self._traces.recent_turns(
            container_tag=container_tag, before_seq=before_seq, limit=limit
        )
