"""Optional distillation of facts by the same upstream the turn goes to (never another host).

Any failure (an upstream error, a timeout, an answer that is not a JSON list of strings) is
reported as a reason code, and the caller falls back to the heuristic extractor.
"""

from __future__ import annotations

import asyncio
import json

from .upstream import Upstream

DISTILL_PROMPT = (
    "You extract durable facts a user states about themselves (where they live, what they do,"
    " prefer, own or are called) from their message. Leave out passwords, keys, tokens, money,"
    " health and anything said only for today. Answer with a JSON array of short first-person"
    ' sentences, e.g. ["I live in Lyon."], or [] when there are none. Answer with the array only.'
)
TIMEOUT = 30.0


class DistillFailed(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


async def distill(upstream: Upstream, model: str, text: str) -> list[str]:
    body: dict[str, object] = {
        "messages": [
            {"role": "system", "content": DISTILL_PROMPT},
            {"role": "user", "content": text},
        ],
        "temperature": 0,
        "max_tokens": 256,
        "stream": False,
    }
    if model:
        body["model"] = model
    try:
        response = await asyncio.wait_for(upstream.post_chat(json.dumps(body).encode()), TIMEOUT)
    except Exception as exc:
        raise DistillFailed("distill_unreachable") from exc
    if response.status_code != 200:
        raise DistillFailed("distill_failed")
    try:
        content = json.loads(response.content)["choices"][0]["message"]["content"]
        start, end = content.index("["), content.rindex("]") + 1
        facts = json.loads(content[start:end])
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise DistillFailed("distill_unparsable") from exc
    if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
        raise DistillFailed("distill_unparsable")
    return [" ".join(f.split()) for f in facts if f.strip()][:20]
