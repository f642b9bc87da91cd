"""The full-text indexes: their management, one index per container, the uncommitted tail,
the files, and the text analysis."""
