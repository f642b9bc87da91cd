"""Which results of a recall helped: the agent's (or the user's) word, as ``recall.used``.

A use names versions the recall served, by their version ids (REST) or their memory ids (MCP);
anything else is refused, so the feedback that moves trust always points at what was shown.
An empty use says none of the results helped.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ...errors import InvalidInput
from ...eventlog import Draft
from ...eventlog.events import Protocol, RecallUsed
from ..agents import Caller
from ..reads import Reads
from ..record import Recorder


class Used(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    memory_ids: list[str]
    version_ids: list[str]
    seq: int


class Usage:
    def __init__(self, *, recorder: Recorder, reads: Reads) -> None:
        self._recorder = recorder
        self._reads = reads

    def used(
        self,
        trace_id: str,
        caller: Caller,
        protocol: Protocol,
        *,
        memory_ids: Sequence[str] | None = None,
        version_ids: Sequence[str] | None = None,
    ) -> Used:
        """Record that the results named (by memory or by version id) helped."""
        trace = self._reads.trace(trace_id, caller)
        served = self._reads.versions(trace.served)
        if version_ids is not None:
            versions = list(dict.fromkeys(version_ids))
            unknown = [v for v in versions if v not in served]
            what = "version"
        else:
            version_of = {row.memory_id: version for version, row in served.items()}
            named = list(dict.fromkeys(memory_ids or ()))
            unknown = [m for m in named if m not in version_of]
            versions = [version_of[m] for m in named if m in version_of]
            what = "memory"
        if unknown:
            raise InvalidInput(
                f"trace {trace_id!r} did not serve {what} {unknown[0]!r}: name results that"
                " search returned"
            )
        memories = [served[v].memory_id for v in versions]
        event = RecallUsed(
            recall_id=trace.recall_id,
            container_tag=trace.container_tag,
            memory_ids=memories,
            version_ids=versions,
        )
        appended = self._recorder.record([Draft(caller.actor(protocol), event)])
        return Used(
            trace_id=trace.recall_id,
            memory_ids=memories,
            version_ids=versions,
            seq=appended.seqs[-1],
        )
