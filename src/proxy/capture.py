"""Auto-capture: durable first-person facts from the user's latest turn, kept safe.

The user's text is redacted first (so neither the extractor nor the distiller ever sees a
secret), facts are proposed (distilled by the upstream when asked, else by the heuristic
extractor, which is also the fallback), each is dropped whole when it touches a sensitive
category or needed redaction, and the rest go through the normal write choke point, marked
as unverified captures. Every run is recorded as a ``capture.decided`` event, by count.
"""

from __future__ import annotations

from typing import Any, Literal

from starlette.concurrency import run_in_threadpool

from ..eventlog import Actor
from ..eventlog.events import CaptureDecided
from ..memory import NewMemory, Writes
from .extract import extract_facts
from .fact_distill import DistillFailed, distill
from .redact import MASK, redact
from .request import ChatRequest
from .sensitive import categories_of
from .turn import PROXY
from .upstream import Upstream


class Capture:
    def __init__(self, writes: Writes, upstream: Upstream, *, distill: bool) -> None:
        self._writes = writes
        self._upstream = upstream
        self._distill = distill

    async def run(self, turn_id: str, chat: ChatRequest, actor: Actor = PROXY) -> CaptureDecided:
        source, redactions = redact(latest_user_text(chat.body.get("messages") or []))
        method: Literal["heuristic", "distilled"] = "heuristic"
        fallback = None
        candidates: list[str] = []
        if self._distill and source.strip():
            try:
                candidates = await distill(self._upstream, chat.model, source)
                method = "distilled"
            except DistillFailed as exc:
                fallback = exc.code
        if method == "heuristic":
            candidates = extract_facts(source)
        excluded: dict[str, int] = {}
        kept: list[str] = []
        for candidate in candidates:
            text, found = redact(_printable(candidate))
            redactions += found
            touched = categories_of(text)
            if MASK in text and "credentials" not in touched:
                touched.insert(0, "credentials")
            if touched:
                excluded[touched[0]] = excluded.get(touched[0], 0) + 1
                continue
            if text not in kept:
                kept.append(text)
        written: list[str] = []
        if kept:
            metadata: dict[str, object] = {
                "source": "capture",
                "verified": False,
                "method": method,
                "traceId": turn_id,
            }
            items = [NewMemory(content=fact, metadata=metadata) for fact in kept]
            outcomes = await run_in_threadpool(self._writes.write, chat.container_tag, items, actor)
            written = [o.version_id for o in outcomes]
        return CaptureDecided(
            turn_id=turn_id,
            container_tag=chat.container_tag,
            method=method,
            proposed=len(candidates),
            excluded=excluded,
            redactions=redactions,
            written=written,
            fallback=fallback,
        )


def latest_user_text(messages: list[Any]) -> str:
    """The user's messages since the assistant last spoke: what this turn adds."""
    texts: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            break
        if role == "user":
            texts.append(_text_of(message.get("content")))
    return "\n".join(reversed(texts))


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "\n".join(
            str(part["text"])
            for part in content
            if isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        )
    return ""


def _printable(text: str) -> str:
    return "".join(c for c in text if ord(c) >= 0x20 or c in "\t\n")
