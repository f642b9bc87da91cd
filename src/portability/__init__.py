"""Backups of a whole data dir (the ``bellamente-export`` document itself is the domain's:
``memory/portable/``)."""
