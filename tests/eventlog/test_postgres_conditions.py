"""Appends carrying the condition they were decided under, on a PostgreSQL log two nodes
share: refused when the other node appended about the same container after what the deciding
node had seen, never for the node's own appends, and never for other containers; a refusal
consumes no seq, and what was decided on a refused append's heads is refused with it."""

from __future__ import annotations

import pytest

from mnemolog.errors import AppendConflict
from mnemolog.eventlog.conditions import Condition
from mnemolog.eventlog.postgres_log import PostgresEventLog

from ..factories import signal_draft


def test_another_nodes_append_after_what_was_seen_refuses_the_decision(
    two_nodes: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    a, b = two_nodes
    first = a.append([signal_draft("a1")], condition=Condition(("c",), seen=0)).seqs
    assert first == [1]
    with pytest.raises(AppendConflict) as refused:
        b.append([signal_draft("b1")], condition=Condition(("c",), seen=0))
    assert refused.value.seq == 1 and refused.value.key == "c"
    assert b.head().seq == 1  # the refusal took no seq
    # Decided again having seen seq 1, it lands.
    assert b.append([signal_draft("b1")], condition=Condition(("c",), seen=1)).seqs == [2]
    # Now a is behind about "c": b's append is after what a saw.
    with pytest.raises(AppendConflict):
        a.append([signal_draft("a2")], condition=Condition(("c",), seen=1))
    assert a.append([signal_draft("a2")], condition=Condition(("c",), seen=2)).seqs == [3]
    assert [r.seq for r in b.read()] == [1, 2, 3]  # read checks the chain


def test_a_nodes_own_appends_and_other_containers_never_conflict(
    two_nodes: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    a, b = two_nodes
    # Both of a's appends were decided having seen nothing: the second saw the first in flight.
    for n in range(3):
        a.append([signal_draft(f"a{n}")], condition=Condition(("c",), seen=0))
    b.append([signal_draft("b")], condition=Condition(("other",), seen=0))
    b.append([signal_draft("plain")])  # no condition: a recall, say
    assert a.append([signal_draft("a3")], condition=Condition(("c",), seen=0)).seqs == [6]
    # b's append about "other" at seq 4 is after what this decision saw.
    with pytest.raises(AppendConflict):
        a.append([signal_draft("a4")], condition=Condition(("c", "other"), seen=3))


def test_what_was_decided_on_a_refused_append_is_refused_with_it(
    two_nodes: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    a, b = two_nodes
    b.append([signal_draft("b")], condition=Condition(("c",), seen=0))
    stale = Condition(("c",), seen=0)
    # Decided with the stale append's heads in flight, although it had seen b's append.
    built_on = Condition(("c",), seen=1, after=(stale,))
    unrelated = Condition(("d",), seen=0)
    futures = [
        a.submit([signal_draft("stale")], condition=stale),
        a.submit([signal_draft("built on")], condition=built_on),
        a.submit([signal_draft("unrelated")], condition=unrelated),
    ]
    for refused in futures[:2]:
        with pytest.raises(AppendConflict):
            refused.result()
    assert futures[2].result().seqs == [2]
    assert stale.refused and built_on.refused and not unrelated.refused
    # Resolved: they let go of what they built on.
    assert built_on.after == ()
    # Decided again from the present, it lands.
    assert a.append([signal_draft("again")], condition=Condition(("c",), seen=2)).seqs == [3]


def test_a_retried_key_is_answered_before_its_condition_is_checked(
    two_nodes: tuple[PostgresEventLog, PostgresEventLog],
) -> None:
    a, b = two_nodes
    first = a.append([signal_draft("k")], idempotency_key="k1", condition=Condition(("c",), 0))
    b.append([signal_draft("b")], condition=Condition(("c",), seen=1))
    again = a.append([signal_draft("k")], idempotency_key="k1", condition=Condition(("c",), 0))
    assert again.replayed and again.seqs == first.seqs
