"""What a model reads about each tool: its name, description, argument schema and hints.

The hints follow the MCP meanings: read-only tools change no memory (a search still records
its trace, as every recall does); destructive ones remove or replace something a later call
cannot simply add back.
"""

from __future__ import annotations

from dataclasses import dataclass

import mcp_types as types
import msgspec

from .arguments import (
    AddArgs,
    DocumentArgs,
    EraseContainerArgs,
    ForgetArgs,
    IdArgs,
    ListArgs,
    ProfileArgs,
    RateArgs,
    SearchArgs,
    SetProfileArgs,
    TraceArgs,
    UpdateArgs,
    UsedArgs,
    input_schema,
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    arguments: type[msgspec.Struct]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    def tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=input_schema(self.arguments),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=False if self.read_only else self.destructive,
                idempotent_hint=self.idempotent,
                open_world_hint=False,  # the local store only, never the outside world
            ),
        )


SEARCH = ToolSpec(
    "search_memories",
    "Search memories",
    "Search the user's long-term memory. Call it before answering anything that may depend "
    "on what they said before: their preferences, facts about them, earlier decisions. "
    "Returns the best matches, newest facts first, each with its `id`, `content`, "
    "`observedAt` (when it was said or true: the fact time) and `validFrom`/`validTo` (when "
    "this version was the one recorded: the record time), and a `traceId` for memory_used. "
    "With `asOf`, searches what was known at that instant.",
    SearchArgs,
    read_only=True,
    idempotent=True,
)
ADD = ToolSpec(
    "add_memory",
    "Add a memory",
    "Save one durable fact the user stated or confirmed, to recall in later conversations: "
    "one fact per call, as a short self-contained sentence. An exact duplicate is recognised "
    "(`status: deduplicated`); a new value of a fact already stored (a new address) becomes "
    "its next version (`superseded`). To correct a memory you were shown, pass its `id` as "
    "`supersedes`. Do not store passwords, keys, or financial or medical details unless the "
    "user asks you to.",
    AddArgs,
    idempotent=True,
)
GET = ToolSpec(
    "get_memory",
    "Get a memory and its history",
    "Get one memory with its whole history: every version with its validity window in "
    "record time (`validFrom` inclusive, `validTo` exclusive, null while current), whether it "
    "is forgotten and why, and the memories it may update or be updated by.",
    IdArgs,
    read_only=True,
    idempotent=True,
)
UPDATE = ToolSpec(
    "update_memory",
    "Correct a memory",
    "Replace a memory's content with a corrected one. It adds a version; the older one "
    "stays in the history. Use it when you know which memory is wrong; pass "
    "`expectedVersion` (its `latestVersion`) so as not to overwrite a change you have not "
    "seen.",
    UpdateArgs,
)
FORGET = ToolSpec(
    "forget_memory",
    "Forget a memory",
    "Forget a memory the user asked you to forget, or one that is no longer true and has no "
    "replacement. Search stops serving it; restore_memory brings it back. Give the reason.",
    ForgetArgs,
    destructive=True,
    idempotent=True,
)
RESTORE = ToolSpec(
    "restore_memory",
    "Restore a memory",
    "Bring back a forgotten memory, so search serves it again.",
    IdArgs,
    idempotent=True,
)
LIST = ToolSpec(
    "list_memories",
    "List recent memories",
    "List the most recent memories (the latest version of each), newest first, with `total`. "
    "For browsing; to answer a question, search_memories finds the relevant ones.",
    ListArgs,
    read_only=True,
    idempotent=True,
)
INSPECT = ToolSpec(
    "inspect_trace",
    "Inspect a search",
    "Show how a search was answered: its query, every candidate considered with its "
    "similarity, keyword score, ranks and fused score, which were served and which fell under "
    "the floor, and the time each stage took. Use it to explain why a memory was or was not "
    "recalled.",
    TraceArgs,
    read_only=True,
    idempotent=True,
)
GET_PROFILE = ToolSpec(
    "get_profile",
    "Get the profile",
    "Get the user's profile in a container: lasting facts (`static`) and current state "
    "(`dynamic`), as set_profile left them (empty lists when none is set).",
    ProfileArgs,
    read_only=True,
    idempotent=True,
)
SET_PROFILE = ToolSpec(
    "set_profile",
    "Set the profile",
    "Replace the user's profile in a container with these two lists: `static` for lasting "
    "facts, `dynamic` for current state. What is not given is removed, so read it with "
    "get_profile first and keep what still holds.",
    SetProfileArgs,
    destructive=True,
    idempotent=True,
)
USED = ToolSpec(
    "memory_used",
    "Report the memories used",
    "After answering with search_memories results, say which of them you actually used "
    "(their `id`), or none. It tells mnemolog which memories help; it changes no memory.",
    UsedArgs,
)
RATE = ToolSpec(
    "rate_result",
    "Rate a search result",
    "Grade how much one result of a search_memories call was worth to its query: 0 "
    "irrelevant (no bearing on it, or wrong), 1 related (on topic but no help), 2 useful "
    "(helped answer), 3 answer (answers it by itself); with a short reason if you have one. "
    "Rate only results that search returned. It teaches mnemolog's ranking; it changes no "
    "memory.",
    RateArgs,
)
DELETE = ToolSpec(
    "delete_memory",
    "Delete a memory for good",
    "Erase a memory permanently: every version's content is destroyed and cannot be "
    "restored. Only when the user explicitly asks for permanent deletion; otherwise use "
    "forget_memory.",
    IdArgs,
    destructive=True,
    idempotent=False,
)
ERASE_CONTAINER = ToolSpec(
    "erase_container",
    "Erase a user's whole memory for good",
    "Erase everything stored for a container (a user): every memory with all its versions, "
    "the documents, the profile, and the searches and tool calls made for it. Nothing can "
    "restore it. Only when the user explicitly asks for all of their data to be deleted. "
    "Answers a receipt of what was destroyed, counts only.",
    EraseContainerArgs,
    destructive=True,
    idempotent=True,
)
ERASE_DOCUMENT = ToolSpec(
    "erase_document",
    "Delete a document for good",
    "Erase one ingested document permanently: its text, title and every chunk. Only when the "
    "user explicitly asks for it.",
    DocumentArgs,
    destructive=True,
    idempotent=False,
)
ERASE_PROFILE = ToolSpec(
    "erase_profile",
    "Delete a user's profile for good",
    "Erase a container's profile (its static and dynamic facts) permanently, and nothing "
    "else of it. Only when the user explicitly asks for it.",
    ProfileArgs,
    destructive=True,
    idempotent=False,
)
# The tools that erase for good: offered only behind the hard-delete switch.
ERASERS: tuple[ToolSpec, ...] = (DELETE, ERASE_CONTAINER, ERASE_DOCUMENT, ERASE_PROFILE)

TOOLS: tuple[ToolSpec, ...] = (
    SEARCH,
    ADD,
    GET,
    UPDATE,
    FORGET,
    RESTORE,
    LIST,
    INSPECT,
    GET_PROFILE,
    SET_PROFILE,
    USED,
    RATE,
)
