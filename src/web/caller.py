"""Who a request is, as the door (``auth.py``) left it in the request's ASGI scope state.

The door is handed ``CALLER_STATE`` as the key to store under; every HTTP shell (REST, the
proxy, MCP over HTTP) reads the caller back with ``caller_in``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..memory.agents import LOCAL, Caller

CALLER_STATE = "mnemolog.caller"


def caller_in(scope: Mapping[str, Any]) -> Caller:
    """A request's caller; the local agent where no door put one (an app under test)."""
    found = scope.get("state", {}).get(CALLER_STATE)
    return found if isinstance(found, Caller) else LOCAL
