"""Check an LMDB data file before LMDB maps it.

LMDB keeps no checksums and trusts its meta pages: a truncated ``data.mdb`` kills the reading
process with SIGBUS, and a damaged meta page can silently select an older snapshot. So before
opening, we read the two meta pages with plain file I/O and check what LMDB would rely on.
Reading here is safe only before LMDB opens the file: closing any descriptor of a file drops
the process's POSIX locks on it.
"""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import msgspec

from ..errors import CorruptLog

_MAGIC = 0xBEEFC0DE
_DATA_VERSION = 1
_P_META = 0x08
_INVALID_PGNO = 0xFFFFFFFFFFFFFFFF
# Offsets inside a meta page (64-bit build): 16-byte page header, then MDB_meta.
_FLAGS = 10
_MAGIC_AT = 16
_PSIZE_AT = 40  # md_pad of the free-list DB holds the page size
_FREE_ROOT_AT = 80
_MAIN_ROOT_AT = 128
_LAST_PGNO_AT = 136
_TXNID_AT = 144
_META_END = 152


class Meta(msgspec.Struct, frozen=True):
    psize: int
    last_pgno: int
    txnid: int
    free_root: int
    main_root: int


def _meta(page: bytes, index: int) -> Meta:
    pgno = struct.unpack_from("<Q", page, 0)[0]
    flags = struct.unpack_from("<H", page, _FLAGS)[0]
    magic, version = struct.unpack_from("<II", page, _MAGIC_AT)
    if pgno != index or not flags & _P_META or magic != _MAGIC or version != _DATA_VERSION:
        raise CorruptLog(f"meta page {index} is damaged")
    return Meta(
        psize=struct.unpack_from("<I", page, _PSIZE_AT)[0],
        last_pgno=struct.unpack_from("<Q", page, _LAST_PGNO_AT)[0],
        txnid=struct.unpack_from("<Q", page, _TXNID_AT)[0],
        free_root=struct.unpack_from("<Q", page, _FREE_ROOT_AT)[0],
        main_root=struct.unpack_from("<Q", page, _MAIN_ROOT_AT)[0],
    )


def check_data_file(path: Path, *, attempts: int = 3) -> None:
    """Raise ``CorruptLog`` if ``path`` (an LMDB ``data.mdb``) is truncated or damaged.

    A missing file is fine: LMDB creates it. A live writer may commit between our reads of the
    two meta pages, so a failed check is retried before it is believed; damage persists.
    """
    for attempt in range(attempts):
        try:
            _check_once(path)
            return
        except CorruptLog:
            if attempt == attempts - 1:
                raise
            time.sleep(0.01)


def _check_once(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        head = os.pread(fd, _META_END, 0)
        if len(head) < _META_END:
            raise CorruptLog(f"{path} is truncated ({len(head)} bytes)")
        psize = struct.unpack_from("<I", head, _PSIZE_AT)[0]
        if psize < 512 or psize > 65536 or psize & (psize - 1):
            raise CorruptLog(f"{path}: meta page 0 is damaged (page size {psize})")
        pages = os.pread(fd, psize + _META_END, 0)
        if len(pages) < psize + _META_END:
            raise CorruptLog(f"{path} is truncated ({len(pages)} bytes)")
        metas = [_meta(pages[i * psize : i * psize + _META_END], i) for i in (0, 1)]
        # Read the size last: LMDB extends the file before a meta page points into it, so a
        # commit by a live writer between our reads cannot look like a truncation.
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    _check_metas(path, metas, psize, size)


def _check_metas(path: Path, metas: list[Meta], psize: int, size: int) -> None:
    m0, m1 = metas
    if m1.psize != psize:
        raise CorruptLog(f"{path}: the meta pages disagree on the page size")
    # LMDB writes the meta page of slot txnid % 2, so the two slots hold consecutive txnids.
    fresh = m0.txnid == 0 and m1.txnid == 0
    if not fresh and (m0.txnid % 2 != 0 or m1.txnid % 2 != 1 or abs(m0.txnid - m1.txnid) != 1):
        raise CorruptLog(f"{path}: the meta pages hold inconsistent transaction ids")
    # LMDB uses only the newest meta page. The older one may legitimately be stale: after a
    # failed meta write LMDB rewrites it with new roots but its old txnid and last page.
    meta = max(metas, key=lambda m: m.txnid)
    needed = (meta.last_pgno + 1) * psize
    if needed > size:
        raise CorruptLog(f"{path} is truncated: {size} bytes, {needed} needed")
    for root in (meta.free_root, meta.main_root):
        if root != _INVALID_PGNO and root > meta.last_pgno:
            raise CorruptLog(f"{path}: the meta page points past the last page")
