"""The write path: the write decision and everything it hands on to."""
