"""Which results of a recall helped: the agent's (or the user's) word, as ``recall.used``, and
how much one result helped, as a graded ``recall.feedback``.

A use or a rating names versions the recall served, by their version ids (REST) or their memory
ids (MCP); anything else is refused, so the feedback that moves trust and ranking always points
at what was shown. An empty use says none of the results helped.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ...errors import InvalidInput
from ...eventlog import Draft, Sealer
from ...eventlog.events import Protocol, RecallFeedback, RecallUsed
from ...eventlog.subjects import container_subject
from ...projections.memories.rows import VersionRow
from ..agents import Caller
from ..reads import Reads
from ..record import Recorder

# Graded relevance, as TREC judges it: what one served result was worth to the query. The one
# scale the REST and MCP bounds, the dashboard's choices and the docs are checked against.
GRADES: dict[int, str] = {
    0: "irrelevant",  # no bearing on the query, or wrong
    1: "related",  # on topic, but it did not help
    2: "useful",  # it helped answer
    3: "answer",  # it answers the query by itself
}
MAX_FEEDBACK_REASON = 1000  # characters of a rating's reason


class Used(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    memory_ids: list[str]
    version_ids: list[str]
    seq: int


class Rated(msgspec.Struct, frozen=True, kw_only=True):
    trace_id: str
    version_id: str
    memory_id: str
    grade: int
    seq: int


class Usage:
    def __init__(self, *, recorder: Recorder, reads: Reads, sealer: Sealer) -> None:
        self._recorder = recorder
        self._reads = reads
        self._sealer = sealer

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

    def feedback(
        self,
        trace_id: str,
        caller: Caller,
        protocol: Protocol,
        *,
        version_id: str | None = None,
        memory_id: str | None = None,
        grade: int,
        reason: str | None = None,
    ) -> Rated:
        """Record how much one served result (named by version or by memory id) was worth."""
        # bool is an int to Python: a ``true`` grade is a mistake, never a 1.
        if isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES:
            raise InvalidInput(f"grade must be an integer from 0 to {max(GRADES)}, not {grade!r}")
        if reason is not None and not 1 <= len(reason) <= MAX_FEEDBACK_REASON:
            raise InvalidInput(
                f"a reason is 1 to {MAX_FEEDBACK_REASON} characters (leave it out for none)"
            )
        if (version_id is None) == (memory_id is None):
            raise InvalidInput("name the rated result by its version id or by its memory id")
        trace = self._reads.trace(trace_id, caller)
        row = self._served(trace.served, trace_id, version_id=version_id, memory_id=memory_id)
        subject = container_subject(trace.container_tag or "")
        event = RecallFeedback(
            recall_id=trace.recall_id,
            container_tag=trace.container_tag,
            version_id=row.version_id,
            memory_id=row.memory_id,
            grade=grade,
            reason=None if reason is None else self._sealer.seal_text(subject, reason),
        )
        appended = self._recorder.record([Draft(caller.actor(protocol), event)])
        return Rated(
            trace_id=trace.recall_id,
            version_id=row.version_id,
            memory_id=row.memory_id,
            grade=grade,
            seq=appended.seqs[-1],
        )

    def _served(
        self,
        served: Sequence[str],
        trace_id: str,
        *,
        version_id: str | None,
        memory_id: str | None,
    ) -> VersionRow:
        """The served version a rating names; a candidate that was not served is refused like
        a stranger: only what was shown can be judged against the query."""
        rows = self._reads.versions(served)
        if version_id is not None:
            found = rows.get(version_id)
            what = f"version {version_id!r}"
        else:
            found = next((r for r in rows.values() if r.memory_id == memory_id), None)
            what = f"memory {memory_id!r}"
        if found is None:
            raise InvalidInput(
                f"trace {trace_id!r} did not serve {what}: rate a result that search returned"
            )
        return found
