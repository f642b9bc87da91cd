"""What of a request may be written in a log line: no credential, no control character.

A client chooses every byte of its request line. Written as it came, a key sent in a URL
(``?access_token=…``, refused or not) would sit in the log for whoever reads it, and the
dashboard's filters (``/ui/memories?q=…``) would copy a person's memories there; a decoded
``%0a`` would start a forged line, ``%1b[`` would drive the reader's terminal, and a space
would shift the fields after it. So a query keeps only its parameters' names, a run of
characters shaped like a secret is masked wherever it is, and every character that is not
printable, the space and the backslash are written as escapes (``\\x0a``), so a request is
one line of fields and the escapes read back unambiguously.
"""

from __future__ import annotations

import re

__all__ = ["loggable_target", "printable"]

MASK = "***"
MAX_TARGET = 1024  # characters of a path and query kept, before escaping
# A run of characters a token is made of: base64url, hex, JWTs' dots, '+', '=' and '~'.
_RUN = re.compile(r"[A-Za-z0-9_\-+=.~]{24,}")
# mnemolog's own ids (``mem_`` and 32 hex digits): long, but no secret.
_ID = re.compile(r"[a-z]{2,5}_[0-9a-f]{16,32}")
_PLAIN = re.compile(r"[!-\[\]-~]*")  # printable ASCII but the space and the backslash


def loggable_target(path: str, query: bytes) -> str:
    """A request's path, and the names of its query's parameters, as a log line shows them."""
    target = path
    if query:
        names = (part.partition("=")[0] for part in query.decode("latin-1").split("&"))
        target += "?" + "&".join(names)
    if len(target) > MAX_TARGET:
        target = target[:MAX_TARGET] + "..."
    return printable(_RUN.sub(_masked, target))


def printable(text: str) -> str:
    """``text`` with every character that could end a line, forge a field or reach the
    terminal written as a Python escape."""
    if _PLAIN.fullmatch(text):
        return text  # the usual case, not copied
    return "".join(ch if _PLAIN.fullmatch(ch) or _safe(ch) else _escape(ch) for ch in text)


def _masked(run: re.Match[str]) -> str:
    """A long run is a secret when it mixes letters and digits, as keys do; ids are kept."""
    text = run.group()
    if _ID.fullmatch(text):
        return text
    has_digit = any(ch.isdigit() for ch in text)
    has_letter = any(ch.isalpha() for ch in text)
    return MASK if has_digit and has_letter else text


def _safe(ch: str) -> bool:
    """A printable character beyond ASCII (a name in another script), never a separator."""
    return ord(ch) > 0x7F and ch.isprintable() and not ch.isspace()


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
