"""The dashboard's plain words for the log's terms: what an event kind, a link's reason or a
protocol means, said as a person would say it, with the term itself beside it (the term is
what the API, the log and the docs use, so a reader can look it up)."""

from __future__ import annotations

from markupsafe import Markup

__all__ = ["PLAIN", "plain", "said"]

PLAIN: dict[str, str] = {
    # Event kinds (docs/events.md).
    "agent.key_added": "a key was made",
    "agent.key_revoked": "a key was revoked",
    "agent.quarantined": "the agent was quarantined",
    "agent.released": "the agent was released from quarantine",
    "agent.rollback_undone": "a rollback was undone",
    "agent.rolled_back": "the agent's writes were rolled back",
    "agent.signal": "a trust signal about the agent",
    "capture.decided": "the proxy decided what to keep from a turn",
    "chain.forgotten": "forgotten (can be restored)",
    "chain.restored": "restored after being forgotten",
    "container.erased": "a container was erased for good",
    "context.injected": "memories were put into a model's prompt",
    "document.forgotten": "a document was forgotten",
    "document.imported": "a document was imported",
    "document.ingested": "a document was added",
    "document.restored": "a document was restored",
    "embedder.pinned": "the embedding model was fixed for this store",
    "embedder.reembed_completed": "re-embedding finished",
    "embedder.reembed_started": "re-embedding started",
    "memory.arbitrated": "a model was asked whether two memories are the same fact",
    "memory.captured": "kept from a proxied conversation",
    "memory.deduplicated": "the same text again: nothing new stored",
    "memory.edited": "corrected by hand: a new version",
    "memory.flagged": "flagged as a possible instruction to agents",
    "memory.imported": "imported",
    "memory.linked": "linked as a possible update of another memory",
    "memory.reverted": "put back to an earlier version",
    "memory.split": "split back out of a memory it was wrongly merged into",
    "memory.superseded": "replaced by a newer version",
    "memory.written": "written",
    "profile.updated": "the profile was updated",
    "proxy.turn": "a chat turn went through the proxy",
    "ranker.promoted": "a learned ranking model was put in use",
    "ranker.rolled_back": "the learned ranking model was withdrawn",
    "ranker.trained": "a learned ranking model was trained",
    "recall.feedback": "a recall result was rated",
    "recall.performed": "a search",
    "recall.used": "a recalled memory was used",
    "subject.erased": "erased for good (its key destroyed)",
    "vectors.reembedded": "its vectors were computed again",
    "write.keyed": "a write sent with an idempotency key",
    # Why a write was linked to, or replaced, another memory.
    "older_fact_time": "its fact is older than one already stored",
    "dissimilar": "too different to be the same fact",
    "other_content": "says something else",
    "other_subject": "is about something else",
    "static": "the older memory is marked as never changing",
    # Trust signals about an agent (docs/security.md).
    "flagged": "its text was flagged as a possible instruction to agents",
    "burst": "it wrote too much too fast",
    "contradiction": "another agent corrected its memory",
    "consistent": "another agent confirmed its memory",
    "used": "its memory was used in an answer",
    "forgotten": "another agent forgot its memory",
    "erased": "another agent erased its memory",
    "restored": "its forgotten memory was restored",
    "feedback": "feedback about the agent",
    "rollback_undone": "a rollback of its writes was undone",
    # How a caller reached the store.
    "rest": "the REST API",
    "mcp": "MCP",
    "proxy": "the chat proxy",
    "import": "an import",
    "cli": "the command line",
    "ui": "the dashboard",
}


def said(term: object) -> Markup:
    """``term`` in plain words with the term beside it: ``replaced by a newer version
    (memory.superseded)``; a term with no plain words is shown as it is."""
    text = str(term)
    plain = PLAIN.get(text)
    if plain is None:
        return Markup('<code class="term">{}</code>').format(text)
    return Markup('{} <code class="term">{}</code>').format(plain, text)


def plain(term: object) -> str:
    """``term`` in plain words with the term beside it, as text (an SVG ``<title>``)."""
    text = str(term)
    words = PLAIN.get(text)
    return f"{words} ({text})" if words else text
