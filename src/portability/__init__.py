"""Portability: the ``bellamente-export`` document (export and import) and backups."""

from .exporter import export
from .format import FORMAT, VERSION, Envelope, Export, ImportFile
from .importer import IMPORTER, Importer, ImportReport, ItemResult

__all__ = [
    "FORMAT",
    "IMPORTER",
    "VERSION",
    "Envelope",
    "Export",
    "ImportFile",
    "ImportReport",
    "Importer",
    "ItemResult",
    "export",
]
