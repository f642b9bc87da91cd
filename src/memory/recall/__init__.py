"""Recall: the hybrid search and its trace, ranking, rendering, usage, a proxied turn's record."""
