"""The documents projection and its chunking."""
