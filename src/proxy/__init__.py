"""The OpenAI-compatible chat proxy with an explicit, traced memory tool round."""

from .capture import Capture
from .recall_tool import RecallTool
from .routes import proxy_routes
from .turn import Services
from .upstream import Upstream

__all__ = ["Capture", "RecallTool", "Services", "Upstream", "proxy_routes"]
