"""The vector index's files: the graph file, its JSON sidecar and their checksum.

``save(last_seq)`` writes the graph file and then a JSON sidecar (``<path>.meta.json``) holding
its dimension, element count, the last log seq applied and the SHA-256 of the graph file.
``load`` checks the sidecar and the checksum before hnswlib reads a byte, so a torn, truncated
or foreign file yields ``None`` (rebuild from the log) and is never trusted.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import hnswlib
import msgspec

from ...fsync import fsync_path, write_durably

__all__ = [
    "FORMAT",
    "MIN_CAPACITY",
    "Sidecar",
    "capacity_for",
    "file_sha256",
    "open_graph",
    "publish",
    "sidecar_path",
    "verified_sidecar",
]

FORMAT = 1
MIN_CAPACITY = 1024
_HASH_BLOCK = 1 << 20


class Sidecar(msgspec.Struct, frozen=True, kw_only=True):
    """What ``save`` records beside the graph file; ``load`` trusts the file only if it matches."""

    format: int
    space: str
    dim: int
    m: int
    ef_construction: int
    seed: int
    count: int  # elements in the graph, deleted ones included
    capacity: int
    deleted: list[int]  # labels marked deleted (the graph keeps them until a rebuild)
    last_seq: int
    size: int
    sha256: str


def sidecar_path(path: Path) -> Path:
    """Where the sidecar of the graph file at ``path`` lives."""
    return path.with_name(path.name + ".meta.json")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def capacity_for(needed: int, current: int) -> int:
    """The capacity to grow to: a fixed rule, so equal inputs give equal files."""
    if needed <= current:
        return current
    return max(needed, 2 * current, MIN_CAPACITY)


def publish(
    tmp: Path,
    path: Path,
    *,
    dim: int,
    m: int,
    ef_construction: int,
    seed: int,
    count: int,
    capacity: int,
    deleted: list[int],
    last_seq: int,
) -> None:
    """Make the graph file written at ``tmp`` the one at ``path``: fsync it, rename it over
    ``path``, then write the sidecar with its checksum likewise; a crash between the two leaves
    a checksum mismatch. Holds no lock: the caller serialises saves."""
    with tmp.open("rb+") as file:
        os.fsync(file.fileno())
    meta = Sidecar(
        format=FORMAT,
        space="cosine",
        dim=dim,
        m=m,
        ef_construction=ef_construction,
        seed=seed,
        count=count,
        capacity=capacity,
        deleted=deleted,
        last_seq=last_seq,
        size=tmp.stat().st_size,
        sha256=file_sha256(tmp),
    )
    os.replace(tmp, path)
    write_durably(sidecar_path(path), msgspec.json.encode(meta))
    fsync_path(path.parent)


def verified_sidecar(path: Path, dim: int | None) -> Sidecar | None:
    """The sidecar of the graph file at ``path`` if the file matches it (size and checksum) and
    it is ours (of ``dim`` dimensions when given), else ``None``; hnswlib has read no byte."""
    try:
        meta = msgspec.json.decode(sidecar_path(path).read_bytes(), type=Sidecar)
        if (
            meta.format != FORMAT
            or meta.space != "cosine"
            or meta.dim < 1
            or (dim is not None and meta.dim != dim)
            or path.stat().st_size != meta.size
            or file_sha256(path) != meta.sha256
        ):
            return None
    except (OSError, msgspec.DecodeError):
        return None
    return meta


def open_graph(path: Path, meta: Sidecar) -> hnswlib.Index | None:
    """The graph in the verified file at ``path``, or ``None`` if hnswlib cannot read it or it
    does not hold the elements ``meta`` counts."""
    hnsw = hnswlib.Index(space="cosine", dim=meta.dim)
    try:
        hnsw.load_index(str(path), max_elements=meta.capacity)
    except (RuntimeError, ValueError, MemoryError):
        return None
    if int(hnsw.element_count) != meta.count:
        return None
    return hnsw
