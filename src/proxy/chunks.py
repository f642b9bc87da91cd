"""The chunks the proxy streams to its client: always well-formed OpenAI chunks.

Every choice has ``index`` 0, every tool call its ``index``, ``id``, ``type`` and name, the
last chunk the finish reason that matches what was sent (``tool_calls`` whenever calls were),
and a usage-only chunk (empty ``choices``) comes only when the client asked for it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .calls import ToolCall

# Delta keys passed through as they came (reasoning of thinking models and the like).
_OWN_DELTA_KEYS = {"role", "content", "tool_calls", "function_call"}


class ChunkWriter:
    def __init__(self, turn_id: str, model: str) -> None:
        self.id = f"chatcmpl-{turn_id.removeprefix('trn_')}"
        self.created = int(time.time())
        self.model = model
        self.fingerprint: str | None = None
        self._learned = False
        self._role_sent = False
        self.answer: list[str] = []

    def learn(self, chunk: dict[str, Any]) -> None:
        """Take the id, time and model of the upstream's first chunk."""
        if self._learned:
            return
        self._learned = True
        if isinstance(chunk.get("id"), str) and chunk["id"]:
            self.id = chunk["id"]
        if isinstance(chunk.get("created"), int):
            self.created = chunk["created"]
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("system_fingerprint"), str):
            self.fingerprint = chunk["system_fingerprint"]

    def delta(self, delta: dict[str, Any], *, finish: str | None = None) -> bytes:
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        if isinstance(delta.get("content"), str):
            self.answer.append(delta["content"])
        return self._event(
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}, None
        )

    def tool_calls(self, calls: list[ToolCall]) -> bytes:
        return self.delta(
            {"content": None, "tool_calls": [c.wire(index=n) for n, c in enumerate(calls)]}
        )

    def finish(self, reason: str) -> bytes:
        return self.delta({}, finish=reason)

    def usage(self, usage: dict[str, int]) -> bytes:
        return self._event(None, usage)

    def _event(self, choice: dict[str, Any] | None, usage: dict[str, int] | None) -> bytes:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }
        if self.fingerprint is not None:
            chunk["system_fingerprint"] = self.fingerprint
        chunk["choices"] = [] if choice is None else [choice]
        if usage is not None:
            chunk["usage"] = usage
        return (
            b"data: "
            + json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode()
            + b"\n\n"
        )


def extra_delta(delta: dict[str, Any]) -> dict[str, Any]:
    """The parts of an upstream delta the proxy passes on untouched."""
    return {k: v for k, v in delta.items() if k not in _OWN_DELTA_KEYS and v is not None}


def error_event(code: str, message: str) -> bytes:
    body = {"error": {"message": message, "type": code, "code": code}}
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"
