"""Whether a clause is the user's own (a habit, a wish about their own answers, a warning)
rather than an order to the agent: the exceptions the poisoning rules read clauses with."""

from __future__ import annotations

import re

_SUBJECT = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|we|we're|we've|he|she|they|my|our|his|her|their|mom|dad|"
    r"mum|people|everyone|nobody|je|j|ich|wir|nous|yo|nosotros)\b"
)
_SECOND = re.compile(r"\b(?:you|your|you're|assistant|ai|agent|model|llm|bot)\b")


def users_own(clause: str, start: int) -> bool:
    """Whether the words before ``start`` make the clause the user's own statement (a first-
    or third-person subject, no second person): a habit, not an order."""
    before = clause[:start]
    return bool(_SUBJECT.search(before)) and not _SECOND.search(before)


# The writer as the one an order is for ("always tell me ...", "... when I ask", "never
# recommend crypto to me"): a user's wish about how they are answered.
_FOR_THE_WRITER = re.compile(
    r"\b(?:to|for|with|tell|give|show|remind|answer|ask|correct|warn)\s+me\b(?!\s*['\"])"
    r"|\bwhen\s+i\s+(?:ask|say|want|write|request|need|type)\b"
)
# An address or a link: what an order for the writer must not carry to be the writer's own.
_OUTSIDE = re.compile(
    r"https?://|www\.|@[\w-]+\.|\b[\w-]+\.(?:com|net|org|io|xyz|ru|top|app|shop|biz)\b"
)
# "Never give your password ...", "don't use rm -rf ...": a warning, not an order to do it.
_WARNED_OFF = re.compile(r"\b(?:never|don't|do\s+not|avoid|stop)\s+(?:\w+\s+){0,1}$")


def writers_own_wish(reason: str, clause: str, start: int) -> bool:
    """A standing order whose beneficiary is the writer, or a disclosure or a command warned
    off: the user's own, not an attack (``always_answer``, ``secret_request``,
    ``tool_command`` only: the others are attacks whoever they are for)."""
    if reason == "always_answer":
        return bool(_FOR_THE_WRITER.search(clause)) and not _OUTSIDE.search(clause)
    if reason in ("secret_request", "tool_command"):
        return bool(_WARNED_OFF.search(clause[:start]))
    return False
