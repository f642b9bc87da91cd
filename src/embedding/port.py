"""The ``Embedder`` port and the byte form of one vector.

The log stores each vector inside a sealed field, as little-endian float32 bytes: a 384-d
vector is 1,536 bytes, a 256-d one 1,024.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ..errors import EmbedderError, InvalidInput
from .identity import EmbedderIdentity

_WIRE = np.dtype("<f4")


class Embedder(Protocol):
    """Turns texts into unit vectors; one identity per embedder."""

    @property
    def identity(self) -> EmbedderIdentity: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Float32 array of shape ``(len(texts), dimension)``, each row of norm 1: the
        vectors of texts to store (memories, document chunks).

        An empty sequence gives shape ``(0, dimension)``.
        """
        ...

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The same, for search queries: an encoder trained with a query prefix (e5) gets it
        here; for the others it is ``embed``."""
        ...


def embed_bytes(vector: npt.NDArray[np.floating]) -> bytes:
    """One vector as little-endian float32 bytes (what the log seals)."""
    array = np.asarray(vector)
    if array.ndim != 1 or array.size == 0:
        raise EmbedderError(f"expected one non-empty vector, got an array of shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise EmbedderError("a vector with NaN or infinite values cannot be stored")
    return array.astype(_WIRE, copy=False).tobytes()


def from_bytes(data: bytes, dimension: int | None = None) -> npt.NDArray[np.float32]:
    """The vector stored by :func:`embed_bytes`, as native float32 (a new, writable array).

    With ``dimension``, a vector of any other size is refused: it was made by another embedder.
    """
    if len(data) == 0 or len(data) % _WIRE.itemsize:
        raise EmbedderError(f"{len(data)} bytes are not a float32 vector")
    size = len(data) // _WIRE.itemsize
    if dimension is not None and size != dimension:
        raise EmbedderError(f"stored vector has {size} dimensions, expected {dimension}")
    return np.frombuffer(data, dtype=_WIRE).astype(np.float32)


def check_texts(texts: Sequence[str]) -> None:
    """Refuse a bare ``str`` (a sequence of characters), non-str items and lone surrogates."""
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not one str")
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"texts must be str, got {type(text).__name__}")
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInput(
                    "text contains a lone surrogate: it is not valid Unicode"
                ) from None
