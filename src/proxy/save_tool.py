"""The write side of a turn: a ``saveMemory`` call through the domain's write decision.

The model names the memory it corrects by its number in the last ``searchMemory`` result it
was shown; here that number becomes the served version's memory id, and the write names it in
``supersedes`` (an explicit correction, always honoured). The write runs in a worker thread,
durably, bounded by a timeout. A refusal of the write decision (an unknown, erased or forgotten
memory, or an agent whose trust is under the threshold) is a ``SaveRefused`` the model is told
about; any other failure a ``MemoryFailed`` with a reason code, as for recall.
"""

from __future__ import annotations

import asyncio

import msgspec
from starlette.concurrency import run_in_threadpool

from ..errors import AgentDistrusted, KeyDestroyed, MemoryForgotten, NotFound, VersionConflict
from ..eventlog import Actor
from ..memory import Core, NewMemory, WriteOutcome
from .recall_tool import MemoryFailed

REFUSALS: tuple[tuple[type[Exception], str], ...] = (
    (KeyDestroyed, "was erased"),
    (MemoryForgotten, "was forgotten"),
    (VersionConflict, "changed meanwhile"),
    (NotFound, "is no longer in memory"),
)


class Saved(msgspec.Struct, frozen=True, kw_only=True):
    """What one write did, and the number of the shown memory it replaced or matched, or
    that it may update (linked, both kept)."""

    outcome: WriteOutcome
    number: int | None = None
    updates: int | None = None


class SaveRefused(Exception):
    """The write was refused: nothing was written. ``code`` is the round's reason code."""

    def __init__(self, why: str, code: str = "save_refused") -> None:
        super().__init__(why)
        self.why = why
        self.code = code


class SaveTool:
    def __init__(self, core: Core, *, timeout: float) -> None:
        self._core = core
        self._timeout = timeout

    async def save(
        self,
        container_tag: str,
        content: str,
        *,
        shown: list[str],
        replaces: int | None,
        actor: Actor,
        metadata: dict[str, object],
    ) -> Saved:
        """Write ``content`` into the container; ``replaces`` is a number of ``shown`` (the
        version ids of the last result sent, in their order), already checked to be one."""
        try:
            return await asyncio.wait_for(
                run_in_threadpool(
                    self._write, container_tag, content, shown, replaces, actor, metadata
                ),
                self._timeout,
            )
        except SaveRefused:
            raise
        except TimeoutError as exc:  # the write may still land: a thread cannot be stopped
            raise MemoryFailed("save_timeout") from exc
        except Exception as exc:
            raise MemoryFailed("save_failed") from exc

    def _write(
        self,
        container_tag: str,
        content: str,
        shown: list[str],
        replaces: int | None,
        actor: Actor,
        metadata: dict[str, object],
    ) -> Saved:
        rows = self._core.reads.versions(shown) if shown else {}
        memory_of = {v: rows[v].memory_id for v in shown if v in rows}
        supersedes = None
        if replaces is not None:
            supersedes = memory_of.get(shown[replaces - 1])
            if supersedes is None:
                raise SaveRefused(f"memory {replaces} is no longer in memory")
        item = NewMemory(content=content, supersedes=supersedes, metadata=metadata)
        # Looked up at call time, like recall: the write decision serving now is the one used.
        try:
            (outcome,) = self._core.writes.write(container_tag, [item], actor)
        except AgentDistrusted as exc:
            # Not a failure of memory: the model is told, and the turn keeps its recall.
            why = "this agent's trust is under the threshold, so it may not write to memory"
            raise SaveRefused(why, "agent_distrusted") from exc
        except (NotFound, KeyDestroyed, MemoryForgotten, VersionConflict) as exc:
            if replaces is None:
                raise  # not a refusal of a named memory: a failure
            why = next(why for kind, why in REFUSALS if isinstance(exc, kind))
            raise SaveRefused(f"memory {replaces} {why}") from exc
        # The shown memory it replaced or matched, named or found by the write decision.
        number = next(
            (n for n, v in enumerate(shown, 1) if memory_of.get(v) == outcome.memory_id), None
        )
        updates = next(
            (n for n, v in enumerate(shown, 1) if memory_of.get(v) == outcome.possibly_updates),
            None,
        )
        return Saved(outcome=outcome, number=number, updates=updates)


def save_result(saved: Saved) -> str:
    """The one-line tool result the model reads."""
    outcome = saved.outcome
    if outcome.status == "deduplicated":
        return "Already known."
    if outcome.status == "superseded":
        if saved.number is not None:
            return f"Saved: it replaces memory {saved.number}."
        return "Saved: it replaces an older memory."
    if saved.updates is not None:
        return f"Saved as a new memory that may update memory {saved.updates}; both are kept."
    return "Saved as a new memory."
