"""The pinning rule: a data dir holds vectors of one embedder, fixed on first use.

Vectors of two embedders are not comparable, even at the same dimension: mixing them would
make recall silently wrong. So the first start appends an ``embedder.pinned`` event, and every
later start must use the same identity or refuse to boot.
"""

from __future__ import annotations

from ..errors import EmbedderMismatch
from ..eventlog.events import EmbedderPinned
from .identity import EmbedderIdentity
from .quality import QUALITY_NAME
from .static import STATIC_NAME

_TIERS = {QUALITY_NAME: "quality", STATIC_NAME: "fast"}


def check_pin(pinned: EmbedderPinned | None, identity: EmbedderIdentity) -> EmbedderPinned | None:
    """The event to append if nothing is pinned yet; None if ``identity`` is the pinned one.

    Raises ``EmbedderMismatch`` if the data dir is pinned to another embedder.
    """
    if pinned is None:
        return EmbedderPinned(
            name=identity.name, dimension=identity.dimension, digest=identity.digest
        )
    was = EmbedderIdentity(pinned.name, pinned.dimension, pinned.digest)
    if was == identity:
        return None
    if was.dimension != identity.dimension:
        raise EmbedderMismatch(
            f"this data dir is pinned to {was.name} ({was.dimension}-d); this server would use "
            f"{identity.name} ({identity.dimension}-d). Vectors of different dimensions cannot "
            f"be searched together. {_remedy(was)}"
        )
    raise EmbedderMismatch(
        f"this data dir is pinned to {was.describe()}; this server would use "
        f"{identity.describe()}. Both are {was.dimension}-d, but their vectors are not "
        f"comparable: recall would return wrong results without any error. {_remedy(was)}"
    )


def _remedy(was: EmbedderIdentity) -> str:
    tier = _TIERS.get(was.name)
    use = (
        f'start the server with the "{tier}" embedder tier it is pinned to'
        if tier is not None
        else "start the server with the embedder it is pinned to"
    )
    return (
        f"To keep this data dir, {use} (with the same model files). To change embedder, "
        "start on a fresh data dir and re-import your memories into it; the old data dir is "
        "left as it is."
    )
