"""The headers every HTML page sends, the dashboard's and the API reference's alike.

A page of this server acts for whoever opens it: the dashboard's forms run commands with the
session's key, the reference's "Try it out" sends what a click asks, with no key at all while
none is live. Framed by a page of another origin, a click on it could be lured there
(clickjacking), so no page may be framed: ``frame-ancestors 'none'`` says it to browsers,
``X-Frame-Options`` to those that predate it.
"""

from __future__ import annotations

__all__ = ["page_headers"]

NOT_FRAMED = "frame-ancestors 'none'"


def page_headers(policy: str = "") -> dict[str, str]:
    """The headers of a page whose own Content-Security-Policy is ``policy`` (directives
    separated by ``;``); framing is forbidden whatever it says."""
    return {
        "content-security-policy": f"{policy}; {NOT_FRAMED}" if policy else NOT_FRAMED,
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        # Not no-referrer: with it a browser sends `Origin: null` on a form post, which the
        # Host/Origin guard refuses.
        "referrer-policy": "same-origin",
        "cache-control": "no-store",
    }
