"""Sealing personal-data fields under their subject's key (AES-256-GCM).

The subject name is the associated data, so a ciphertext cannot be moved to another subject.
Opening a field whose key was destroyed answers None: the field is erased, not corrupt, unless
its subject was re-keyed and the field re-sealed under the new generation (``KeyStore.rekey``):
then its new ciphertext is opened. New fields are sealed under a subject's current generation.
"""

from __future__ import annotations

import os

import msgspec
from cryptography.exceptions import InvalidTag

from ..errors import CorruptLog
from .events import Sealed
from .keys_port import KeyStore

NONCE_SIZE = 12


class Sealer:
    def __init__(self, keys: KeyStore) -> None:
        self._keys = keys

    @property
    def keys(self) -> KeyStore:
        return self._keys

    def seal(self, subject: str, plaintext: bytes) -> Sealed:
        subject = self._keys.current(subject)
        cipher = self._keys.ensure_cipher(subject)
        nonce = os.urandom(NONCE_SIZE)
        ct = cipher.encrypt(nonce, plaintext, subject.encode())
        return Sealed(subject=subject, nonce=nonce, ct=ct)

    def seal_text(self, subject: str, text: str) -> Sealed:
        return self.seal(subject, text.encode())

    def open(self, sealed: Sealed) -> bytes | None:
        """The plaintext, or None if the subject was erased."""
        cipher = self._keys.cipher_for(sealed.subject)
        if cipher is None:
            moved = self._keys.resealed(sealed.subject, sealed.nonce)
            return None if moved is None else self.open(_decode_sealed(moved))
        try:
            return cipher.decrypt(sealed.nonce, sealed.ct, sealed.subject.encode())
        except InvalidTag as exc:
            raise CorruptLog(f"a sealed field of {sealed.subject!r} fails its tag") from exc

    def open_text(self, sealed: Sealed) -> str | None:
        data = self.open(sealed)
        return None if data is None else data.decode()


_decode_sealed = msgspec.msgpack.Decoder(Sealed).decode
encode_sealed = msgspec.msgpack.Encoder().encode
