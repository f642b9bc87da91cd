"""Events of a proxied turn: its rounds, and what capture decided."""

from __future__ import annotations

from typing import Literal

import msgspec

from .base import Event, Sealed


class ProxyRound(msgspec.Struct, frozen=True, kw_only=True):
    """One upstream call of a proxied turn, and what the model decided in it."""

    request_digest: str  # sha256 of the exact body bytes sent upstream
    status: int | None = None  # the upstream's HTTP status; None when no answer came
    latency_ms: float = 0.0
    decision: Literal["answer", "memory", "client_tools", "error"] = "answer"
    memory_calls: int = 0
    client_calls: int = 0
    arguments: Sealed | None = None  # the searchMemory arguments, as the model sent them
    recall_ids: list[str] = []
    results: int = 0
    error: str | None = None  # a reason code: recall_failed, recall_timeout, bad_arguments...
    # saveMemory calls (counted in memory_calls too), the version ids they wrote or found,
    # and the number each named in ``replaces`` (None: none, or unreadable). Their text is
    # not kept here: it is in the written memory's own event, erased with it.
    save_calls: int = 0
    saved: list[str] = []
    save_replaces: list[int | None] = []


class ProxyTurn(Event, frozen=True, kw_only=True, tag="proxy.turn"):
    """A chat completion went through the proxy: its rounds, its outcome and its digests.

    The injected memories are in the ``context.injected`` events of the same ``turn_id``;
    the profile context is named by when it was set and the digest of its rendered bytes.
    """

    turn_id: str
    container_tag: str
    # The model the client named, sealed under the container's key: a client may name its
    # model after the person or the task. Turns recorded before it was sealed hold it in
    # clear in ``model``; newer ones leave that empty.
    model: str = ""
    sealed_model: Sealed | None = None
    stream: bool
    request_digest: str  # sha256 of the client's request body
    rounds: list[ProxyRound] = []
    outcome: Literal["answer", "client_tools", "upstream_error", "cancelled"] = "answer"
    status: int = 200
    memory_round: bool = False
    results: int = 0
    answer_digest: str | None = None  # sha256 of the answer text (or tool calls) returned
    degraded: list[str] = []
    profile_at: int | None = None
    profile_digest: str | None = None
    latency_ms: float = 0.0


class CaptureDecided(Event, frozen=True, kw_only=True, tag="capture.decided"):
    """Auto-capture ran over a turn's user messages: what it wrote and why it kept the rest
    out, by count (the written text is in the memory's own write event, nowhere else)."""

    turn_id: str
    container_tag: str
    method: Literal["heuristic", "distilled"] = "heuristic"
    proposed: int = 0
    excluded: dict[str, int] = {}  # sensitive category -> candidates never stored
    redactions: int = 0
    written: list[str] = []  # version ids written, superseded or deduplicated into
    fallback: str | None = None  # why distillation was not used, when it was asked for
