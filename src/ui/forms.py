"""The dashboard's forms: URL-encoded bodies, read strictly, each checked for its CSRF token.

A form is small (a reason, a corrected text): a body past ``MAX_FORM`` is refused before it is
read whole. A correction carries a memory's whole text, as long as the API takes
(``MAX_CONTENT`` characters, each at most 12 bytes once UTF-8 and URL-encoded). Its ``csrf``
field must be the session's token (``web/sessions.py``); with the cookie being
``SameSite=Strict`` and the Host/Origin guard in front, this is the third wall.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import Request

from ..errors import CsrfRefused, InvalidInput
from ..memory import MAX_CONTENT
from ..web.sessions import Sessions, session_token

MAX_FORM = MAX_CONTENT * 12 + (64 << 10)  # bytes


async def read_form(request: Request, sessions: Sessions) -> dict[str, str]:
    """The form's fields (one value each), after its CSRF token is checked."""
    fields = await read_fields(request)
    if not sessions.csrf_ok(session_token(request.scope), fields.pop("csrf", "")):
        raise CsrfRefused("this form is stale or not from this dashboard: reload the page")
    return fields


async def read_fields(request: Request) -> dict[str, str]:
    """The form's fields (one value each), its CSRF token not checked: only for a form whose
    fields are shown back and never acted on (a form sent on to the login page)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise InvalidInput("a dashboard form is sent as application/x-www-form-urlencoded")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise InvalidInput(f"a dashboard form is at most {MAX_FORM} bytes")
    try:
        text = body.decode("utf-8")
        parsed = parse_qs(text, keep_blank_values=True, strict_parsing=bool(text))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput("a dashboard form must be URL-encoded UTF-8") from exc
    fields: dict[str, str] = {}
    for name, values in parsed.items():
        if len(values) != 1:
            raise InvalidInput(f"form field {name!r} is given {len(values)} times")
        fields[name] = values[0]
    return fields
