"""Tool calls as they arrive: whole in a buffered answer, or in deltas of a stream.

Servers differ in how they stream a call. OpenAI and llama-server send ``index`` with every
delta and the id and name once; llama-cpp-python repeats the id and name in every delta;
Ollama and some others omit ``index``. ``CallAccumulator`` puts them back together: a delta
belongs to the call of its ``index`` when there is one, else to the call of its ``id``, else
to the call being built; a new id (or a name after arguments began) starts a new call.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .tool import SEARCH_MEMORY


class ToolCall(msgspec.Struct, kw_only=True):
    id: str = ""
    name: str = ""
    arguments: str = ""

    @property
    def is_memory(self) -> bool:
        return self.name == SEARCH_MEMORY

    def wire(self, *, index: int | None = None) -> dict[str, Any]:
        call: dict[str, Any] = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }
        return call if index is None else {"index": index, **call}


class CallAccumulator:
    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self._by_index: dict[int, ToolCall] = {}
        self._by_id: dict[str, ToolCall] = {}

    def add(self, delta: object) -> None:
        if not isinstance(delta, dict):
            return
        function = delta.get("function")
        function = function if isinstance(function, dict) else {}
        index = delta.get("index")
        call_id = delta.get("id") if isinstance(delta.get("id"), str) else None
        name = function.get("name") if isinstance(function.get("name"), str) else None
        arguments = function.get("arguments")
        call = self._find(index if isinstance(index, int) else None, call_id, name)
        if call_id and not call.id:
            call.id = call_id
            self._by_id[call_id] = call
        if name and not call.name:
            call.name = name
        if isinstance(arguments, str):
            call.arguments += arguments
        elif isinstance(arguments, dict):  # some servers send the object itself
            call.arguments += msgspec.json.encode(arguments).decode()

    def _find(self, index: int | None, call_id: str | None, name: str | None) -> ToolCall:
        if index is not None:
            call = self._by_index.get(index)
            if call is None:
                call = self._new()
                self._by_index[index] = call
            return call
        if call_id is not None:
            known = self._by_id.get(call_id)
            if known is not None:
                return known
            if self.calls and not self.calls[-1].id:
                return self.calls[-1]
            return self._new()
        last = self.calls[-1] if self.calls else None
        if last is None or (name is not None and last.name and last.arguments):
            return self._new()
        return last

    def _new(self) -> ToolCall:
        call = ToolCall()
        self.calls.append(call)
        return call

    def finished(self) -> list[ToolCall]:
        """The calls, each with an id (synthesised where the server sent none)."""
        for n, call in enumerate(self.calls):
            if not call.id:
                call.id = f"call_mnemolog_{n}"
        return [call for call in self.calls if call.name]


def calls_of_message(message: dict[str, Any]) -> list[ToolCall]:
    """The tool calls of a buffered assistant message (``function_call`` of old servers too)."""
    accumulator = CallAccumulator()
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list) and tool_calls:
        for n, call in enumerate(tool_calls):
            if isinstance(call, dict):
                accumulator.add({**call, "index": n})
    elif isinstance(message.get("function_call"), dict):
        accumulator.add({"function": message["function_call"], "index": 0})
    return accumulator.finished()
