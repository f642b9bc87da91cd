"""Facts read out of the files people bring: JSON Lines, CSV, another memory layer's export
(Mem0's ``get_all()``), or a plain JSON list of facts. ``mnemolog import`` writes what these
yield through ``POST /memories``, as any client would; a ``bellamente-export`` document goes to
``POST /import`` whole instead (it restores history, with its own ids).

Each fact keeps the number of the line (or item) it came from, so a failure names it. A line
that cannot be read (a file cut mid-line, a row without text, JSON nested too deep, a number
JSON has no place for such as NaN or 1e400, a time out of any calendar) is yielded as
``Unreadable`` and the rest are read on.

Field names are matched leniently, since every tool names them its own way:

- the text: ``content``, ``text``, ``memory`` (Mem0), ``fact``;
- the container: ``containerTag``, ``container``, ``user_id``/``userId`` (Mem0's user);
- the fact time: ``observedAt``, ``timestamp``, ``created_at``/``createdAt`` (Mem0), ``date``,
  as ISO 8601 or as seconds since the epoch;
- ``metadata`` (an object of scalars), ``isStatic``; Mem0's ``categories`` become the
  metadata's ``categories`` (comma-separated) and its ``id`` the metadata's ``sourceId``.

In a CSV file the first row names the columns, and every other non-empty column becomes
metadata.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import msgspec

__all__ = ["Fact", "Format", "Unreadable", "count_items", "detect_format", "read_facts"]

Format = Literal["jsonl", "csv", "mem0", "bellamente"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "mem0", "bellamente")

_TEXT = ("content", "text", "memory", "fact")
_CONTAINER = ("containerTag", "container_tag", "container", "user_id", "userId")
_TIME = ("observedAt", "observed_at", "timestamp", "created_at", "createdAt", "date")
_STATIC = ("isStatic", "is_static")
# Read into their own fields, or dropped as another layer's bookkeeping (Mem0's ``hash``,
# ``updated_at``; the ids of its agents and runs stay, as metadata).
_TAKEN = {*_TEXT, *_CONTAINER, *_TIME, *_STATIC, "metadata", "categories", "id", "hash"}
_DROPPED = {
    "updated_at",
    "updatedAt",
    "score",
    "immutable",
    "expiration_date",
    "structured_attributes",
}


class Fact(msgspec.Struct, frozen=True, kw_only=True):
    line: int  # the line (JSON Lines, CSV) or the item (JSON) it came from, from 1
    content: str
    container_tag: str | None = None
    observed_at: str | None = None
    metadata: dict[str, str | int | float | bool | None] | None = None
    is_static: bool | None = None


class Unreadable(msgspec.Struct, frozen=True, kw_only=True):
    line: int
    reason: str


def detect_format(path: Path) -> Format:
    """The format of ``path``: by its suffix, and for ``.json`` by what it holds."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    head = path.read_bytes()[:4096].lstrip()
    if head.startswith(b"{") and b'"bellamente-export"' in head:
        return "bellamente"
    if head.startswith((b"[", b"{")) and suffix == ".json":
        return "mem0"
    if head.startswith(b"{"):
        return "jsonl"
    return "csv"


def count_items(path: Path, fmt: Format) -> int:
    """The last line number (JSON Lines, CSV) or item number (JSON) ``read_facts`` can give a
    fact, read cheaply: how far an import is goes by it."""
    if fmt == "mem0":
        return len(_mem0_items(path))
    lines = 0
    last = b"\n"
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")  # a last line without its newline (a file cut short)


def read_facts(path: Path, fmt: Format) -> Iterator[Fact | Unreadable]:
    if fmt == "jsonl":
        yield from _jsonl(path)
    elif fmt == "csv":
        yield from _csv(path)
    elif fmt == "mem0":
        for n, item in enumerate(_mem0_items(path), 1):
            yield _fact(n, item)
    else:
        raise ValueError(f"{fmt} is not read fact by fact")


def _jsonl(path: Path) -> Iterator[Fact | Unreadable]:
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                item = _parse(raw)
            except ValueError as exc:
                yield Unreadable(line=n, reason=f"not JSON: {exc}")
                continue
            yield _fact(n, item)


def _csv(path: Path) -> Iterator[Fact | Unreadable]:
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    dialect = csv.excel_tab if path.suffix.lower() == ".tsv" else csv.excel
    rows = csv.reader(io.StringIO(text, newline=""), dialect)
    header = next(rows, None)
    if header is None:
        return
    names = [name.strip() for name in header]
    for row in rows:
        line = rows.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(names):
            yield Unreadable(line=line, reason=f"{len(row)} cells under {len(names)} columns")
            continue
        yield _fact(line, {k: v for k, v in zip(names, row, strict=False) if v.strip()})


def _mem0_items(path: Path) -> list[Any]:
    """Mem0's ``get_all()`` saved as JSON: a list, or ``{"results": [...]}`` (v1.1), or
    ``{"memories": [...]}``; a plain JSON list of strings or facts reads the same way."""
    document = _parse(path.read_bytes())
    if isinstance(document, dict):
        for key in ("results", "memories", "facts"):
            if isinstance(document.get(key), list):
                return list(document[key])
        raise ValueError("a JSON object without a list of results, memories or facts")
    if not isinstance(document, list):
        raise ValueError("neither a list nor an object holding one")
    return document


def _parse(raw: bytes) -> Any:
    """JSON, strictly: what Python's parser lets through or raises past ``ValueError`` (NaN,
    Infinity, 1e400 read as infinity, nesting past the interpreter's depth) is a
    ``ValueError`` that says why."""
    try:
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError as exc:
        raise ValueError("it nests arrays or objects too deep to be read") from exc


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {_shown(text)} is out of range")
    return value


def _shown(value: object) -> str:
    """A value as a reason quotes it: never a whole line of digits."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _fact(line: int, item: object) -> Fact | Unreadable:
    try:
        return _fields(line, item)
    except RecursionError:  # metadata nested just short of the parser's limit
        return Unreadable(line=line, reason="it nests arrays or objects too deep to be read")


def _fields(line: int, item: object) -> Fact | Unreadable:
    if isinstance(item, str):
        item = {"content": item}
    if not isinstance(item, Mapping):
        return Unreadable(line=line, reason="neither a text nor an object")
    content = _first(item, _TEXT)
    if not isinstance(content, str) or not content.strip():
        return Unreadable(line=line, reason=f"no text: one of {', '.join(_TEXT)} is needed")
    container = _first(item, _CONTAINER)
    observed = _instant(_first(item, _TIME))
    if isinstance(observed, Unreadable):
        return Unreadable(line=line, reason=observed.reason)
    static = _first(item, _STATIC)
    return Fact(
        line=line,
        content=content,
        container_tag=str(container) if container not in (None, "") else None,
        observed_at=observed,
        metadata=_metadata(item),
        is_static=_boolean(static),
    )


def _first(item: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    return next((item[name] for name in names if item.get(name) not in (None, "")), None)


def _instant(value: object) -> str | Unreadable | None:
    """ISO 8601 text as it is (the server checks it); epoch seconds as ISO 8601 UTC."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return Unreadable(line=0, reason=f"a time that is neither text nor a number: {value!r}")
    seconds: int | float
    if isinstance(value, str):
        try:
            seconds = float(value.strip())
        except ValueError:
            return value.strip()
    else:
        seconds = value
    try:
        return datetime.fromtimestamp(seconds, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        # NaN, infinity, or seconds past the years 1 to 9999 a date-time can hold.
        return Unreadable(
            line=0, reason=f"a time out of range: {_shown(value)} seconds since the epoch"
        )


def _boolean(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes"):
        return True
    return None


def _metadata(item: Mapping[str, Any]) -> dict[str, str | int | float | bool | None] | None:
    found: dict[str, str | int | float | bool | None] = {}
    given = item.get("metadata")
    if isinstance(given, Mapping):
        found.update({str(k): _scalar(v) for k, v in given.items()})
    categories = item.get("categories")
    if isinstance(categories, list) and categories:
        found["categories"] = ",".join(str(c) for c in categories)
    if item.get("id") not in (None, ""):
        found["sourceId"] = str(item["id"])
    for key, value in item.items():
        if key not in _TAKEN and key not in _DROPPED and value not in (None, ""):
            found[key] = _scalar(value)
    return found or None


def _scalar(value: object) -> str | int | float | bool | None:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
