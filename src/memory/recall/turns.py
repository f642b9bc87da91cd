"""A proxied turn's record: what the proxy sent the model and what came of it.

A turn appends one ``context.injected`` per rendered search result it sent (naming the
renderer, so a replay renders the same bytes), then its ``proxy.turn``, then the capture's
decision when one ran, in one append. The model's tool arguments, and the name of the model
the client asked for, are sealed under the container's key, so erasing the container erases
them with its queries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

from ...eventlog import Actor, Draft, Sealed, Sealer
from ...eventlog.events import CaptureDecided, ContextInjected, InjectedSource, ProxyTurn
from ...eventlog.subjects import container_subject
from ..record import Recorder
from .render import MEMORIES_RENDERER


class Shown(Protocol):
    """One search result as the proxy rendered and sent it."""

    @property
    def recall_id(self) -> str: ...
    @property
    def version_ids(self) -> list[str]: ...
    @property
    def digest(self) -> str: ...
    @property
    def sources(self) -> list[InjectedSource]: ...


class Turns:
    def __init__(self, *, recorder: Recorder, sealer: Sealer) -> None:
        self._recorder = recorder
        self._sealer = sealer

    def sealed_arguments(self, container_tag: str, arguments: Sequence[str]) -> Sealed | None:
        """A round's ``searchMemory`` arguments, sealed under the container's key."""
        if not arguments:
            return None
        payload = json.dumps(list(arguments), ensure_ascii=False)
        return self._sealer.seal_text(container_subject(container_tag), payload)

    def sealed_model(self, container_tag: str, model: str) -> Sealed | None:
        """The model a client named, sealed under the container's key (None: it named none)."""
        if not model:
            return None
        return self._sealer.seal_text(container_subject(container_tag), model)

    def record(
        self,
        actor: Actor,
        turn: ProxyTurn,
        shown: Sequence[Shown],
        capture: CaptureDecided | None = None,
        *,
        durable: bool = True,
    ) -> None:
        """Append the turn's events; ``durable``: applied before this returns (so
        ``/inspect`` shows the turn once it is answered), else only submitted (a turn cut
        short must not wait)."""
        drafts = [
            Draft(
                actor,
                ContextInjected(
                    trace_id=turn.turn_id,
                    recall_id=s.recall_id,
                    version_ids=s.version_ids,
                    renderer=MEMORIES_RENDERER,
                    sent_digest=s.digest,
                    sources=s.sources,
                ),
            )
            for s in shown
        ]
        drafts.append(Draft(actor, turn))
        if capture is not None:
            drafts.append(Draft(actor, capture))
        if durable:
            self._recorder.record(drafts)
        else:
            self._recorder.submit(drafts)

    def record_capture(self, actor: Actor, capture: CaptureDecided) -> None:
        """A capture that ended after its turn was recorded (the turn was cut short)."""
        self._recorder.submit([Draft(actor, capture)])
