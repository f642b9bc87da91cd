"""The REST API: FastAPI routes over the core, one error shape for every failure."""

from .app import create_app

__all__ = ["create_app"]
