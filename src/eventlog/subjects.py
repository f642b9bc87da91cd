"""Names of erasure subjects: the unit a data key covers (see ``eventlog/keystore.py``)."""

from __future__ import annotations


def memory_subject(memory_id: str) -> str:
    """A memory chain's content, embeddings, metadata and forget reasons."""
    return f"memory:{memory_id}"


def container_subject(container_tag: str) -> str:
    """A container's (a user's) queries, tool arguments and conversation excerpts."""
    return f"container:{container_tag}"


def document_subject(document_id: str) -> str:
    """A document's content, title, metadata and chunk embeddings."""
    return f"document:{document_id}"


def profile_subject(container_tag: str) -> str:
    """A container's profile (its static and dynamic facts), erasable on its own."""
    return f"profile:{container_tag}"
