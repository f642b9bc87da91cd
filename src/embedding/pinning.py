"""The pinning rule: a data dir holds vectors of one embedder, fixed on first use.

Vectors of two embedders are not comparable, even at the same dimension: mixing them would
make recall silently wrong. So the first start appends an ``embedder.pinned`` event, and every
later start must use the same identity or refuse to boot.
"""

from __future__ import annotations

from ..errors import EmbedderMismatch
from ..eventlog.events import EmbedderPinned
from .identity import EmbedderIdentity


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
    return (
        f"To keep this data dir, start the server with the embedder it is pinned to "
        f"({was.name}, with the same model files). To move it to this server's embedder, "
        "re-embed it with the server stopped: `mnemolog reembed --embedder <tier>` replays "
        "the log into vectors of the new model, and the next start uses them."
    )
