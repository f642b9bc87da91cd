"""The ``Embedder`` port and the byte form of vectors.

The log stores each vector inside a sealed field, as one format byte (``0x02``) and
little-endian float16: a 256-d vector is 513 bytes, where the float32 bytes written before
were 1,024 (and put ``memory.written`` past the 2,038 bytes that fit an LMDB page). Float16
keeps 11 significant bits: a cosine between unit vectors moves by about 1e-4, far below any
gap ranking or the write decision acts on (docs/performance.md measures it). Older logs are
read as they are: an even length is float32, 4 bytes a value; an odd one starts with its
format byte; the two never collide, and nothing is rewritten. Several vectors (a document's
chunks) are one format byte and the rows after it.
Whatever the bytes, a vector is handed out as float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ..errors import EmbedderError, InvalidInput
from .identity import EmbedderIdentity

_FLOAT32 = np.dtype("<f4")  # the format of stores written before float16 (even lengths)
_FLOAT16 = np.dtype("<f2")
HALF = b"\x02"  # the format byte of float16 vectors
_FLOAT16_MAX = float(np.finfo(np.float16).max)


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
    """One vector as the log stores it: the format byte and float16 values."""
    array = np.asarray(vector)
    if array.ndim != 1 or array.size == 0:
        raise EmbedderError(f"expected one non-empty vector, got an array of shape {array.shape}")
    return embed_rows_bytes(array.reshape(1, -1))


def embed_rows_bytes(rows: npt.NDArray[np.floating]) -> bytes:
    """Several vectors of one width (a document's chunks) as one field: the format byte, then
    each row's float16 values."""
    array = np.asarray(rows)
    if array.ndim != 2:
        raise EmbedderError(f"expected rows of vectors, got an array of shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise EmbedderError("a vector with NaN or infinite values cannot be stored")
    if array.size and float(np.abs(array).max()) > _FLOAT16_MAX:
        raise EmbedderError("a vector with values beyond float16's range cannot be stored")
    return HALF + array.astype(_FLOAT16).tobytes()


def float32_bytes(vector: npt.NDArray[np.floating]) -> bytes:
    """A vector's little-endian float32 bytes: what digests of query vectors are taken over,
    whatever the log's format."""
    return np.asarray(vector).astype(_FLOAT32, copy=False).tobytes()


def rows_from_bytes(data: bytes, dimension: int | None = None) -> npt.NDArray[np.float32]:
    """The vectors of one stored field, as a new writable float32 array of shape ``(rows,
    width)``; ``dimension`` is the width, which a field of several rows needs.

    A vector of any other width than ``dimension`` is refused: it was made by another embedder.
    """
    if len(data) % 2:
        if data[:1] != HALF:
            raise EmbedderError(f"unknown vector format byte {data[:1].hex()}")
        values = np.frombuffer(data, dtype=_FLOAT16, offset=1)
    elif data and not len(data) % _FLOAT32.itemsize:
        values = np.frombuffer(data, dtype=_FLOAT32)
    else:
        values = np.empty(0, dtype=_FLOAT32)
    if values.size == 0:
        raise EmbedderError(f"{len(data)} bytes are not a stored vector")
    width = values.size if dimension is None else dimension
    if values.size % width:
        raise EmbedderError(f"stored vector has {values.size} dimensions, expected {dimension}")
    return values.astype(np.float32).reshape(-1, width)


def from_bytes(data: bytes, dimension: int | None = None) -> npt.NDArray[np.float32]:
    """The one vector stored by :func:`embed_bytes` (or as float32 before it), as native
    float32 (a new, writable array).

    With ``dimension``, a vector of any other size is refused: it was made by another embedder.
    """
    rows = rows_from_bytes(data, dimension)
    if len(rows) != 1:
        raise EmbedderError(f"stored vector has {rows.size} dimensions, expected {dimension}")
    first: npt.NDArray[np.float32] = rows[0]
    return first


def stacked_vectors(fields: Sequence[bytes]) -> npt.NDArray[np.float32] | None:
    """Single-vector fields of one byte length as one float32 matrix, a row each; None if
    they are not stored vectors."""
    length = len(fields[0]) if fields else 0
    if not fields or any(len(f) != length for f in fields):
        return None
    joined = np.frombuffer(b"".join(fields), dtype=np.uint8).reshape(len(fields), length)
    if length % 2:
        if length < 3 or np.any(joined[:, 0] != HALF[0]):
            return None
        values = np.ascontiguousarray(joined[:, 1:]).view(_FLOAT16)
    elif length % _FLOAT32.itemsize == 0:
        values = joined.view(_FLOAT32)
    else:
        return None
    return values.astype(np.float32)


def split_rows(data: bytes, count: int) -> list[bytes] | None:
    """A field of ``count`` vectors as ``count`` fields of one vector each, in its format;
    None if its length does not divide so."""
    prefix, payload = (data[:1], data[1:]) if len(data) % 2 else (b"", data)
    if count <= 0 or not payload or len(payload) % count:
        return None
    width = len(payload) // count
    if width % (_FLOAT16 if prefix else _FLOAT32).itemsize:
        return None
    return [prefix + payload[i * width : (i + 1) * width] for i in range(count)]


def row_count(data: bytes, dimension: int) -> int:
    """How many vectors of ``dimension`` values a stored field holds."""
    if len(data) % 2:
        return (len(data) - 1) // (_FLOAT16.itemsize * dimension)
    return len(data) // (_FLOAT32.itemsize * dimension)


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
