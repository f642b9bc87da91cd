"""The vector indexes: the graph and its worker, search, exact scoring, files, scopes."""
