"""The one seam through which the domain records what it did: append, then apply.

Every change and every recall is an event appended to the log and then applied to the
projections before its caller is answered, so a client reads its own writes and ``/inspect``
shows a trace as soon as it is answered. ``Recorder.record`` is that pair of steps;
``submit`` and ``apply`` are its two halves, for callers that decide the next batch while the
previous one is made durable.

On a log several nodes append to, a node decides about a container only in its turn
(``turn``, taken by the container's gate): no other node appends about the container until
the turn ends, and the turn begins by applying what other nodes appended before it
(``caught_up``). An append made while deciding still carries the condition it was decided
under (``deciding``), which the log checks: a safety net for a turn lost with its database
connection. ``decided_again`` wraps a service's operation so that a refused one is made again
once what it missed is applied; ``see`` is how a read waits for a seq another node answered
(``minSeq``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Concatenate, Literal, ParamSpec, Protocol, TypeVar, overload

from ..errors import AppendConflict, ProjectionsLagging, SeqAhead
from ..eventlog import Appended, Draft, EventLog, Hold, StoredRecord
from ..eventlog.conditions import Condition
from ..projections.runner import ProjectionRunner

# How often a decision refused for another node's append is made again before the refusal
# reaches the caller (503): each retry first applies what it missed, so only a container
# written on several nodes without pause keeps refusing.
DECISION_ATTEMPTS = 8

# Records a read sent with ``minSeq`` applies between looks at its deadline.
CATCH_UP_CHUNK = 2048

# The condition of the decision this thread is making under a gate lock (``Recorder.deciding``).
_deciding: ContextVar[Condition | None] = ContextVar("mnemolog_deciding", default=None)


class Recorder:
    def __init__(
        self,
        log: EventLog,
        runner: ProjectionRunner,
        *,
        shared: bool = False,
        refresh: Callable[[], None] | None = None,
    ) -> None:
        """``shared``: other nodes append to ``log`` too, so appends carry the condition they
        were decided under (``eventlog/conditions.py``); the embedded log needs none.
        ``refresh``: what else catches up with other nodes before a refused decision is made
        again (the key store, which an erasure elsewhere changed)."""
        self.log = log
        self.runner = runner
        self.shared = shared
        self._refresh = refresh

    def turn(self, key: str) -> Hold:
        """This node's turn to decide about container ``key``, waited for while another node
        has it (at once on a log only this process appends to). Taken while deciding about
        another container, it joins this node's turn however many decisions that one
        admitted: waiting for it to end could wait on this decision's own appends."""
        return self.log.hold(key, within=_deciding.get() is not None)

    def caught_up(self, seq: int) -> None:
        """At the start of a turn: apply the log through ``seq``, the head the turn began at,
        so the decision sees every append other nodes made about the container; and the key
        store's changes with them (an erasure elsewhere destroyed keys)."""
        if self.runner.position() >= seq:
            return
        self.apply(seq)
        if self._refresh is not None:
            self._refresh()

    @contextmanager
    def deciding(self, key: str, after: Sequence[Condition] = ()) -> Iterator[None]:
        """While deciding about container ``key`` (its gate lock held): appends carry that
        they were decided on the projections as they are now, and on ``after`` (this node's
        appends in flight about the container). Nested, the keys add up."""
        if not self.shared:
            yield
            return
        outer = _deciding.get()
        seen = self.runner.position()
        condition = (
            Condition((key,), seen, tuple(after))
            if outer is None
            else Condition((*outer.keys, key), max(outer.seen, seen), (*outer.after, *after))
        )
        token = _deciding.set(condition)
        try:
            yield
        finally:
            _deciding.reset(token)

    def condition(self) -> Condition | None:
        """The condition of the decision being made, if one is (see ``deciding``)."""
        return _deciding.get()

    def saw_up_to(self, seq: int) -> None:
        """The decision being made now reads projections that applied the log to ``seq``."""
        condition = _deciding.get()
        if condition is not None:
            condition.seen = max(condition.seen, seq)

    @overload
    def record(self, drafts: Sequence[Draft], *, durable: Literal[True] = True) -> Appended: ...

    @overload
    def record(self, drafts: Sequence[Draft], *, durable: Literal[False]) -> Future[Appended]: ...

    def record(
        self, drafts: Sequence[Draft], *, durable: bool = True
    ) -> Appended | Future[Appended]:
        """Append ``drafts`` atomically. Durable: wait until they are on disk and applied, and
        answer what was appended. Not durable: queue them for the next group commit and
        answer at once with the pending append; they are applied by a later ``apply``."""
        if not durable:
            return self.submit(drafts)
        appended = self.log.append(drafts, condition=_deciding.get())
        self.apply(appended.seqs[-1], appended.records)
        return appended

    def submit(self, drafts: Sequence[Draft]) -> Future[Appended]:
        """Queue ``drafts`` for the next group commit (the log keeps submission order)."""
        return self.log.submit(drafts, condition=_deciding.get())

    def apply(self, seq: int, appended: Sequence[StoredRecord] = ()) -> int:
        """Apply the log to the projections up to ``seq``; ``appended`` are records the
        caller just appended, folded as they are when they are exactly what is missing."""
        return self.runner.sync_to(seq, appended)

    def apply_all(self) -> int:
        """Apply everything the log holds now."""
        return self.runner.sync_to(self.log.head().seq)

    def catch_up_after(self, conflict: AppendConflict) -> None:
        """Apply what another node appended that refused a decision (and what came before
        it), so that the decision is made again on it."""
        self.apply(max(conflict.seq, self.log.head().seq))
        if self._refresh is not None:
            self._refresh()

    def see(self, min_seq: int, timeout: float) -> None:
        """Return once the projections have applied the log through ``min_seq`` (a seq a
        write answered, perhaps on another node), applying what is missing here and now, for
        at most ``timeout`` seconds; then ``ProjectionsLagging``. A seq the log does not hold
        yet was never answered to anyone: ``SeqAhead``, at once. Applied through the head the
        log holds, not exactly ``min_seq``: an append's records are applied together."""
        if self.runner.position() >= min_seq:
            return
        head = self.log.head().seq
        if head < min_seq:
            head = self.log.current_head().seq  # another node's append not heard of yet
            if head < min_seq:
                raise SeqAhead(min_seq, head)
        deadline = time.monotonic() + timeout
        applied = self.runner.position()
        while applied < min_seq:
            if time.monotonic() >= deadline:
                raise ProjectionsLagging(min_seq, applied, head, timeout)
            applied = self.runner.sync_to(min(head, applied + CATCH_UP_CHUNK))


class _Recording(Protocol):
    _recorder: Recorder


S = TypeVar("S", bound=_Recording)
P = ParamSpec("P")
T = TypeVar("T")


def decided_again(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """A service's operation, decided and appended again when a shared log refuses its append
    because another node appended about the same container first: what that node appended is
    applied, then the operation reads the projections afresh. Only whole operations are
    wrapped (no gate lock is held between attempts)."""

    def again(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        for _ in range(DECISION_ATTEMPTS - 1):
            try:
                return method(self, *args, **kwargs)
            except AppendConflict as conflict:
                self._recorder.catch_up_after(conflict)
        return method(self, *args, **kwargs)

    functools.update_wrapper(again, method)
    return again
