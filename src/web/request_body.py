"""Strict request bodies: what stock FastAPI would let through or answer with a 500.

msgspec decodes into the route's Struct, refusing unknown fields, wrong types, NaN, Infinity,
numbers out of range and lone surrogates. Two gaps remain in any JSON parser that builds
mappings, so they are checked here: duplicate keys (which value did the client mean?) and
control characters in strings (NUL breaks SQLite tools and full-text tokenizers). And one that
every recursive parser has: a body nested about a thousand levels deep ends in a
``RecursionError`` at a depth that depends on the stack it is parsed from, and one just short
of it breaks whatever recurses over it next. So nesting is limited before any parse, at a
depth no request needs (``refuse_deep``).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, TypeVar

import msgspec
from fastapi import Request

from ..errors import InvalidInput, MalformedBody, PayloadTooLarge, UnsupportedMediaType

T = TypeVar("T")

_ALLOWED_CONTROLS = {"\t", "\n", "\r"}
# Levels of arrays and objects a body may nest: serde_json's default. A chat request's tool
# schemas, the deepest bodies sent, nest a few dozen.
MAX_DEPTH = 128
_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


async def read_json(request: Request, type_: type[T], *, max_bytes: int) -> T:
    """Read and decode a JSON body into ``type_``; every failure is a 4xx ``InvalidInput``."""
    return decode_json(await read_body(request, max_bytes=max_bytes), type_)


async def read_body(request: Request, *, max_bytes: int) -> bytes:
    """The raw bytes of a JSON body, refused (415, 413) before more than ``max_bytes`` are
    read."""
    check_json_headers(
        request.headers.get("content-type"), request.headers.get("content-length"), max_bytes
    )
    body = BodyBuffer(max_bytes)
    async for chunk in request.stream():
        body.add(chunk)
    return body.bytes()


def check_json_headers(
    content_type: str | None, content_length: str | None, max_bytes: int
) -> None:
    """Refuse a body that is not JSON (415) or declares more than ``max_bytes`` (413)."""
    media = (content_type or "application/json").split(";")[0].strip()
    if media.lower() != "application/json":
        raise UnsupportedMediaType(f"expected application/json, got {media!r}")
    if content_length is not None and content_length.isdigit() and int(content_length) > max_bytes:
        raise PayloadTooLarge(f"the body is over {max_bytes} bytes")


class BodyBuffer:
    """The chunks of a body as they arrive, refused (413) once over ``max_bytes``."""

    __slots__ = ("_chunks", "_max", "_size")

    def __init__(self, max_bytes: int) -> None:
        self._chunks: list[bytes] = []
        self._max = max_bytes
        self._size = 0

    def add(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size > self._max:
            raise PayloadTooLarge(f"the body is over {self._max} bytes")
        self._chunks.append(chunk)

    def bytes(self) -> bytes:
        return b"".join(self._chunks)


def refuse_deep(raw: bytes) -> None:
    """Refuse (400) a body whose arrays and objects nest deeper than ``MAX_DEPTH``, without
    parsing it: its brackets outside strings, innermost pairs dropped once per level."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return  # too few brackets to nest that deep: the usual case, two scans in C
    # Escaped backslashes, then escaped quotes, go first: every quote left opens or closes
    # a string, so the even parts of a split on quotes are what is outside strings.
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[::2])
    brackets = outside.translate(_SQUARE, _NOT_BRACKET)
    for _ in range(MAX_DEPTH):
        if not brackets:
            return
        brackets = brackets.replace(b"[]", b"")
    if brackets:
        raise MalformedBody(f"the body nests arrays and objects over {MAX_DEPTH} levels deep")


def decode_json(raw: bytes, type_: type[T]) -> T:
    refuse_deep(raw)
    try:
        value: T = msgspec.json.decode(raw, type=type_, strict=True)
        # msgspec has accepted it, so it is valid JSON: the stdlib parse cannot fail for
        # syntax. msgspec also refused any raw control character, so one can only come from
        # an escape: a body without a backslash needs no look at its strings.
        hook = _refuse_duplicates_and_controls if b"\\" in raw else _refuse_duplicates
        json.loads(raw, object_pairs_hook=hook)
    except msgspec.ValidationError as exc:
        raise InvalidInput(str(exc)) from exc
    except msgspec.DecodeError as exc:
        raise MalformedBody(f"the body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        # Both parsers recurse per level; past the interpreter's limit nothing can read it.
        raise MalformedBody("the body nests arrays or objects too deep to be read") from exc
    except UnicodeDecodeError as exc:
        # msgspec skips what it keeps raw (an import's items) without checking its bytes.
        raise MalformedBody(f"the body is not UTF-8: byte {exc.start} is invalid") from exc
    return value


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen = dict(pairs)
    if len(seen) != len(pairs):
        counts = Counter(key for key, _ in pairs)
        key = next(key for key, count in counts.items() if count > 1)
        raise MalformedBody(f"the key {key!r} appears twice in one object")
    return seen


def _refuse_duplicates_and_controls(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen = _refuse_duplicates(pairs)
    for key, value in pairs:
        _refuse_controls(key)
        _refuse_controls(value)
    return seen


def _refuse_controls(value: object) -> None:
    """Objects are checked by the hook as they are built; strings and lists here."""
    if isinstance(value, list):
        for item in value:
            _refuse_controls(item)
    elif isinstance(value, str):
        _refuse_control_chars(value)


def _refuse_control_chars(text: str) -> None:
    for ch in text:
        if ord(ch) < 0x20 and ch not in _ALLOWED_CONTROLS:
            raise MalformedBody(f"a string holds the control character U+{ord(ch):04X}")
