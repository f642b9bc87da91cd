"""The dashboard at ``/ui``: server-rendered pages over the same core the API uses."""

from .routes import error_page, ui_routes

__all__ = ["error_page", "ui_routes"]
