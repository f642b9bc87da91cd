"""A script's own section of ``docs/benchmarks.md``, between its markers (``<!-- name -->`` ...
``<!-- /name -->``): ``run_all.py`` keeps such sections when it rewrites the rest of the page."""

from __future__ import annotations

from pathlib import Path


def write_section(page: Path, name: str, body: str) -> None:
    """Put ``body`` between the markers of ``name`` in ``page``, replacing what was there, or
    at the end of the page the first time."""
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    text = page.read_text(encoding="utf-8") if page.exists() else ""
    block = f"{start}\n{body}{end}\n"
    if start in text and end in text:
        head, _, rest = text.partition(start)
        _, _, tail = rest.partition(end)
        text = head + block + tail.lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    page.write_text(text, encoding="utf-8")
