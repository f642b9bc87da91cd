"""The poisoning rules for concealed text: markup a reader never sees, orders to decode and
obey, and the base64, hex and rot13 blobs decoded so the rules can read them."""

from __future__ import annotations

import base64
import binascii
import re

HIDDEN_MARKUP = [
    # Markup that a reader of the rendered memory never sees but a model reads.
    r"<!--.*?-->",
    r"<[a-z]+[^>]*style\s*=\s*[\"'][^\"']*(?:display\s*:\s*none|visibility\s*:\s*hidden|"
    r"font-size\s*:\s*0|opacity\s*:\s*0|color\s*:\s*(?:white|#fff\b|#ffffff|transparent))",
    r"<[a-z]+[^>]*\s(?:hidden|aria-hidden\s*=\s*[\"']?true)",
    r"<\s*(?:script|iframe|object|embed)\b",
]
ENCODED = [
    # An order to decode and obey, whatever the payload is.
    r"\b(?:decode|base64[- ]?decode|unscramble|rot13|deobfuscate|reverse)\s+(?:this|the\s+"
    r"following|it|the\s+string|the\s+text)[^.]{0,60}?\b(?:and|then)\s+(?:follow|execute|obey|"
    r"run|do|carry\s+out|apply|act\s+on)",
]
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{20,}={0,2}")
_HEX = re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){12,}(?![0-9a-fA-F])")
_ROT13_NAMED = re.compile(r"\brot[\s-]?13\b", re.IGNORECASE)
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)


def _readable(raw: bytes) -> str | None:
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(c.isprintable() or c.isspace() for c in decoded)
    return decoded if decoded and printable / len(decoded) > 0.95 and " " in decoded else None


def decoded_blobs(text: str) -> list[str]:
    """What a text's base64 and hex blobs decode to when it is readable, and the whole text
    rot13-decoded when it names rot13 (an order to decode and obey carries its payload so)."""
    out = [found for m in _HEX.finditer(text) if (found := _readable(bytes.fromhex(m.group())))]
    if _ROT13_NAMED.search(text):
        out.append(text.translate(_ROT13))
    for m in _BASE64.finditer(text):
        blob = m.group()
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        decoded = _readable(raw)
        if decoded is not None:
            out.append(decoded)
    return out
