"""Where a client sends its requests and with which key: given, else from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .. import __version__
from ._calls import Call

DEFAULT_URL = "http://127.0.0.1:8080"
URL_VAR = "MNEMOLOG_URL"
KEY_VAR = "MNEMOLOG_API_KEY"


@dataclass(frozen=True, slots=True)
class Config:
    base_url: str
    api_key: str | None

    @classmethod
    def of(cls, base_url: str | None, api_key: str | None) -> Config:
        # An empty variable counts as unset, as a shell's ``VAR=`` means.
        url = base_url or os.environ.get(URL_VAR) or DEFAULT_URL
        key = api_key if api_key is not None else (os.environ.get(KEY_VAR) or None)
        return cls(base_url=url.rstrip("/"), api_key=key)

    def headers(self) -> dict[str, str]:
        """Sent with every request."""
        headers = {"user-agent": f"mnemolog-client/{__version__}", "accept": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    def request_headers(self, call: Call[Any]) -> dict[str, str]:
        """One request's own headers, over the client's."""
        if call.body is None:
            return call.headers
        return {"content-type": "application/json", **call.headers}


__all__ = ["DEFAULT_URL", "KEY_VAR", "URL_VAR", "Config"]
