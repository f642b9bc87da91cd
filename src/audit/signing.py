"""The store key: an Ed25519 key of the data dir that signs log exports.

It lives in ``<data-dir>/store-signing.key`` (the raw 32-byte private key, mode 0600: no PEM
armour, which a scan of the data dir for leaked secrets would take for one), beside the key
store but not in its LMDB environment: a restore swaps ``keys/`` whole and the key store is
compacted by copies, neither of which should carry or drop a file of ours. It is made when the
server first opens the data dir (or at an earlier first use: ``mnemolog store-key``, a signed
export) and never written to the log or into an export; only its public key leaves the data
dir. The signed statement is a few lines of ASCII (``signed_message``), so any Ed25519
library can check it; docs/audit.md specifies it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..errors import InvalidInput, StorageFailed
from ..fsync import fsync_path

KEY_FILE = "store-signing.key"
ALG = "ed25519"
SIGNATURE_DOMAIN = "mnemolog-log-export-signature"
PUBLIC_KEY_SIZE = 32
PRIVATE_KEY_SIZE = 32
SIGNATURE_SIZE = 64
FINGERPRINT_PREFIX = "SHA256:"


def key_path(data_dir: Path) -> Path:
    return data_dir / KEY_FILE


def store_key(data_dir: Path) -> Ed25519PrivateKey:
    """The data dir's store key, made durably (0600) the first time it is asked for.

    Two processes making it at once (a server and ``export-log`` beside it) keep the first:
    the new key is linked into place, which never replaces a file, rather than renamed over
    it (``fsync.write_durably``), so no export is ever signed by a key that then vanishes.
    """
    path = key_path(data_dir)
    try:
        return _load(path)
    except FileNotFoundError:
        pass
    key = Ed25519PrivateKey.generate()
    raw = key.private_bytes(
        serialization.Encoding.Raw,
        serialization.PrivateFormat.Raw,
        serialization.NoEncryption(),
    )
    tmp = path.with_name(f"{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, raw)
        finally:
            os.close(fd)
        fsync_path(tmp)
        with contextlib.suppress(FileExistsError):  # another process made it first: use it
            os.link(tmp, path)
        fsync_path(data_dir)
    except OSError as exc:
        raise StorageFailed(f"cannot make the store key {path}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return _load(path)


def _load(path: Path) -> Ed25519PrivateKey:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StorageFailed(f"cannot read the store key {path}: {exc}") from exc
    if len(raw) != PRIVATE_KEY_SIZE:
        raise StorageFailed(f"{path} is not an Ed25519 private key ({len(raw)} bytes)")
    return Ed25519PrivateKey.from_private_bytes(raw)


def public_bytes(key: Ed25519PrivateKey | Ed25519PublicKey) -> bytes:
    """The raw 32 bytes of the public key."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def encode_public_key(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The public key as standard base64 of its raw 32 bytes (how exports carry it)."""
    return base64.b64encode(public_bytes(key)).decode("ascii")


def fingerprint(public_key: bytes) -> str:
    """``SHA256:`` and the unpadded base64 of SHA-256 of the raw public key (as OpenSSH)."""
    digest = base64.b64encode(hashlib.sha256(public_key).digest()).decode("ascii")
    return FINGERPRINT_PREFIX + digest.rstrip("=")


def signed_message(
    *, format: str, version: int, from_seq: int, to_seq: int, prev: str, last: str
) -> bytes:
    """The exact bytes an export's signature is over: one ``name value`` line per field."""
    records = to_seq - from_seq + 1
    return (
        f"{SIGNATURE_DOMAIN}\nformat {format}\nversion {version}\nfrom {from_seq}\n"
        f"to {to_seq}\nrecords {records}\nprev {prev}\nlast {last}\n"
    ).encode("ascii")


def sign(key: Ed25519PrivateKey, message: bytes) -> str:
    """The signature of ``message``, standard base64 of its 64 bytes."""
    return base64.b64encode(key.sign(message)).decode("ascii")


def decode_b64(text: str, size: int) -> bytes | None:
    """Canonical standard base64 of exactly ``size`` bytes, else None."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        return None
    if len(raw) != size or base64.b64encode(raw).decode("ascii") != text:
        return None
    return raw


def signature_holds(public_key: bytes, message: bytes, signature: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def pinned_fingerprint(text: str) -> str:
    """The fingerprint a ``--public-key`` pins: given as the base64 key or as its fingerprint."""
    if text.startswith(FINGERPRINT_PREFIX):
        return text
    raw = decode_b64(text, PUBLIC_KEY_SIZE)
    if raw is None:
        raise InvalidInput(
            "a public key is the base64 of 32 bytes or a SHA256: fingerprint"
            " (as `mnemolog store-key` prints them)"
        )
    return fingerprint(raw)
