"""The condition an append was decided under, for a log that several nodes append to.

A node decides a write against its own projections: whether it is a duplicate, a correction
or a new fact depends on what its container held. Two nodes deciding about one container at
once could both take the same chain's head as the one they correct. So a decided append
carries its condition: the containers (``keys``) it was decided about, and ``seen``, the seq
up to which the node's projections had applied the log when it decided. A shared log refuses
the append (``AppendConflict``) if another node appended about one of those keys after
``seen``; the node applies that record and decides again.

A node's own appends still in flight are not a conflict: its decisions see them (the gate's
in-flight heads). But a decision that built on one of them (``after``) must not land if that
one was refused, so a refused condition is marked and everything decided after it on its
heads is refused too. The log resolves each condition once it is processed (``resolve``),
which also lets go of what it built on.

The embedded log has one writer, so it never refuses an append: it only resolves.
"""

from __future__ import annotations

__all__ = ["Condition"]


class Condition:
    __slots__ = ("after", "conflict_seq", "keys", "refused", "seen")

    def __init__(self, keys: tuple[str, ...], seen: int, after: tuple[Condition, ...] = ()):
        self.keys = keys
        self.seen = seen
        self.after = after
        self.refused = False
        self.conflict_seq = 0  # the other node's append that refused it, if one did

    def built_on_refused(self) -> bool:
        """Whether a decision this one built on was refused (or failed to commit)."""
        return any(earlier.refused for earlier in self.after)

    def resolve(self, *, refused: bool) -> None:
        """Processed by the log: refused, or committed. What it built on is no longer needed
        (the log processes appends in submission order)."""
        self.refused = self.refused or refused
        self.after = ()
