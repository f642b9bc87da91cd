"""What a memory's text is known by when it is compared whole.

The write decision finds an exact duplicate by this digest and the memories projection
indexes versions by it, so both floors read it from here.
"""

from __future__ import annotations

import hashlib
import unicodedata


def content_hash(content: str) -> str:
    """The identity of a content for exact-duplicate detection: NFC, whitespace collapsed."""
    normal = " ".join(unicodedata.normalize("NFC", content).split())
    return hashlib.sha256(normal.encode()).hexdigest()
