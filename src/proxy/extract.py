"""The heuristic extractor: durable first-person facts in a user's own words.

A sentence is proposed when it states something about the user that is likely to stay true
(where they live, what they do, prefer, own, are called) and is not a question, a request, a
hypothetical or a passing state ("I'm tired today").
"""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_FACT = re.compile(
    r"""(?ix)^(?:also,?\s+|and\s+|btw,?\s+|by\ the\ way,?\s+|fyi,?\s+)?(
        i\s+(?:am|'m|was)\s+(?:a|an|from|born|based|vegetarian|vegan|married|single|
             left[-\s]handed|right[-\s]handed|\w+ing\ (?:at|for|on|in|as))\b
      | i'm\s+(?:a|an|from|born|based|vegetarian|vegan|married|single|\w+ing\ (?:at|for|on|in|as))\b
      | i\s+(?:live|work|study|grew\ up|moved|prefer|like|love|enjoy|hate|dislike|use|own|
             have|speak|play|drive|ride|follow|support|collect|teach|go\ by|usually|always|never|
             was\ born|am\ called|run|write|cook|read|watch|listen|take|was\ diagnosed|
             am\ allergic|suffer)\b
      | my\s+(?:[a-z'-]+\s+){0,4}(?:is|are|was|were|lives|works|likes|loves)\b
      | call\ me\b
      | people\ call\ me\b
    )""",
)
_NOT_DURABLE = re.compile(
    r"""(?ix)\b(
        today|tonight|right\ now|at\ the\ moment|this\ (?:morning|afternoon|evening|week)|
        yesterday|tomorrow|just\ now|currently\ feeling|
        if|would|could|might|maybe|perhaps|wonder|should\ i|
        can\ you|could\ you|please|help\ me|tell\ me|let\ me\ know|
        tired|hungry|bored|sleepy|busy
    )\b""",
)
MAX_WORDS = 40


def extract_facts(text: str) -> list[str]:
    """Candidate facts from one user message, in order, without repeats."""
    facts: list[str] = []
    for match in _SENTENCE.finditer(text):
        sentence = " ".join(match.group(0).split())
        if not sentence or sentence.endswith("?"):
            continue
        words = sentence.split()
        if not 3 <= len(words) <= MAX_WORDS:
            continue
        if not _FACT.match(sentence) or _NOT_DURABLE.search(sentence):
            continue
        fact = sentence[0].upper() + sentence[1:]
        if fact[-1] not in ".!":
            fact += "."
        if fact not in facts:
            facts.append(fact)
    return facts
