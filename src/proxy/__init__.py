"""The OpenAI-compatible chat proxy with an explicit, traced memory tool round."""

from .capture import Capture
from .memory import Memory
from .render import (
    MEMORIES_RENDERER,
    PROFILE_RENDERER,
    RenderedMemory,
    digest,
    render_memories,
    render_profile,
)
from .routes import proxy_routes
from .turn import Services
from .upstream import Upstream

__all__ = [
    "MEMORIES_RENDERER",
    "PROFILE_RENDERER",
    "Capture",
    "Memory",
    "RenderedMemory",
    "Services",
    "Upstream",
    "digest",
    "proxy_routes",
    "render_memories",
    "render_profile",
]
