"""Two prompts a user can pick in their client: recall before answering, and store what they
said. Each is a user message naming the tools to call and how."""

from __future__ import annotations

import mcp_types as types

from ..errors import InvalidInput, NotFound

RECALL = "recall_before_answering"
STORE = "store_what_the_user_told_you"

_TAG = types.PromptArgument(
    name="containerTag",
    description="The container to use (one per user or project).",
    required=False,
)

PROMPTS = [
    types.Prompt(
        name=RECALL,
        title="Recall before answering",
        description="Search memory for what is relevant to a question, then answer it.",
        arguments=[
            types.PromptArgument(name="question", description="The question.", required=True),
            _TAG,
        ],
    ),
    types.Prompt(
        name=STORE,
        title="Store what I told you",
        description="Save the durable facts the user stated in this conversation.",
        arguments=[_TAG],
    ),
]


def prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    args = arguments or {}
    tag = args.get("containerTag")
    where = f' with containerTag "{tag}"' if tag else ""
    if name == RECALL:
        question = args.get("question", "").strip()
        if not question:
            raise InvalidInput("the prompt recall_before_answering needs a question")
        text = (
            f"Before you answer, call search_memories{where} with a query for what the answer "
            "depends on. Use the results that are relevant (a result with "
            "`possiblyOutdatedBy` may have been replaced by a newer one), then call memory_used "
            "with the search's traceId and the ids of the results you used (an empty list if "
            "none helped). Then answer, saying when you relied on a memory.\n\n"
            f"Question: {question}"
        )
    elif name == STORE:
        text = (
            f"Look back over this conversation and save{where} each durable fact I stated "
            "about myself, my work or my preferences, with one add_memory call per fact, as a "
            "short self-contained sentence. Skip small talk, guesses and anything secret "
            "(passwords, keys, financial or medical details). If a fact corrects a memory you "
            "were shown, pass that memory's id as supersedes. Then tell me what you saved."
        )
    else:
        raise NotFound(f"no prompt {name!r}")
    return types.GetPromptResult(
        description=next(p.description for p in PROMPTS if p.name == name),
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
    )
