"""Errors of the proxy, under the one ``MnemologError`` base so the API renders them alike.

MnemologError
├── UpstreamNotConfigured   no upstream base URL is set (503)
├── UpstreamFailed          the upstream failed or answered nonsense (502)
│   └── UpstreamRejected    the upstream refused the request: its 4xx status is kept
└── UpstreamTimeout         the upstream did not answer in time (504)
"""

from __future__ import annotations

from ..errors import MnemologError


class UpstreamNotConfigured(MnemologError):
    code = "upstream_not_configured"
    status = 503


class UpstreamFailed(MnemologError):
    code = "upstream_error"
    status = 502


class UpstreamRejected(UpstreamFailed):
    """A 4xx from the upstream that is the caller's to fix (bad model, too long, rate limit)."""

    code = "upstream_rejected"

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class UpstreamTimeout(MnemologError):
    code = "upstream_timeout"
    status = 504
