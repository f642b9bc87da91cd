"""The memories projection: its fold, reads, rows, audit and snapshots."""
