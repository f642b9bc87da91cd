"""From an instant to a position in the log."""

from __future__ import annotations

from ..eventlog import EventLog


def seq_at(log: EventLog, instant_ns: int) -> int:
    """The last seq whose record time is at or before ``instant_ns`` (0 if none).

    Record times never decrease along the log, so a binary search over seqs finds it.
    """
    low, high = 0, log.head().seq  # invariant: ts(low) <= instant (seq 0: before the log)
    while low < high:
        middle = (low + high + 1) // 2
        record = next(iter(log.read(middle, limit=1))).record
        if record.ts <= instant_ns:
            low = middle
        else:
            high = middle - 1
    return low
