"""Projections: folds over the event log that can be thrown away and rebuilt."""

__all__: list[str] = []
