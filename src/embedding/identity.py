"""Who made a vector: the identity a data dir is pinned to."""

from __future__ import annotations

import msgspec


class EmbedderIdentity(msgspec.Struct, frozen=True):
    """An embedder's name, output dimension and digest (hex sha256).

    Two embedders with equal identities produce interchangeable vectors. The digest covers
    what decides the vectors (model file, recipe), never the vectors themselves, so it is the
    same on every machine.
    """

    name: str
    dimension: int
    digest: str

    def describe(self) -> str:
        """``name (384-d, digest 8199be6f…)``, for messages."""
        return f"{self.name} ({self.dimension}-d, digest {self.digest[:12]})"
