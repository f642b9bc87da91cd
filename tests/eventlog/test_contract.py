"""The ``EventLog`` contract, run against the LMDB log, the PostgreSQL log and the in-memory
log."""

from __future__ import annotations

import asyncio
import itertools
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemolog.errors import IdempotencyConflict, InvalidInput, LogClosed
from mnemolog.eventlog import GENESIS, Actor, Draft, Event, EventLog
from mnemolog.eventlog.events import AgentSignal

from ..factories import ACTOR, signal_draft
from .conftest import LOG_KINDS, opened_log


def notes(log: EventLog, from_seq: int = 1) -> list[str | None]:
    return [r.record.event.label for r in log.read(from_seq)]  # type: ignore[union-attr]


def test_appends_read_back_in_order_with_a_chain(log: EventLog) -> None:
    first = log.append([signal_draft("a"), signal_draft("b")])
    second = log.append([signal_draft("c")])
    assert first.seqs == [1, 2]
    assert second.seqs == [3]
    records = list(log.read())
    assert [r.seq for r in records] == [1, 2, 3]
    assert notes(log) == ["a", "b", "c"]
    assert records[0].record.prev == GENESIS
    for before, after in itertools.pairwise(records):
        assert after.record.prev == before.digest
        assert after.record.ts >= before.record.ts
    assert log.head().seq == 3
    assert log.head().digest == records[-1].digest
    assert [r.digest for r in first.records + second.records] == [r.digest for r in records]


def test_read_from_the_middle_with_a_limit(log: EventLog) -> None:
    log.append([signal_draft(str(i)) for i in range(10)])
    assert notes(log, 4)[:3] == ["3", "4", "5"]
    assert [r.seq for r in log.read(4, limit=3)] == [4, 5, 6]
    assert list(log.read(11)) == []
    assert [r.seq for r in log.read(0, limit=2)] == [1, 2]


def test_empty_append_changes_nothing(log: EventLog) -> None:
    assert log.append([]).records == ()
    assert log.head().seq == 0
    assert list(log.read()) == []


def test_idempotent_retry_appends_once(log: EventLog) -> None:
    first = log.append([signal_draft("x"), signal_draft("y")], idempotency_key="k1")
    retry = log.append([signal_draft("x"), signal_draft("y")], idempotency_key="k1")
    assert not first.replayed
    assert retry.replayed
    assert retry.seqs == first.seqs == [1, 2]
    assert [r.digest for r in retry.records] == [r.digest for r in first.records]
    assert log.head().seq == 2


def test_same_key_other_payload_is_a_conflict(log: EventLog) -> None:
    log.append([signal_draft("x")], idempotency_key="k1")
    with pytest.raises(IdempotencyConflict):
        log.append([signal_draft("other")], idempotency_key="k1")
    assert log.head().seq == 1


def test_fingerprint_names_the_payload(log: EventLog) -> None:
    log.append([signal_draft("x")], idempotency_key="k", fingerprint=b"request-1")
    # Different drafts (e.g. re-sealed with a fresh nonce) but the same request: a replay.
    again = log.append([signal_draft("x2")], idempotency_key="k", fingerprint=b"request-1")
    assert again.replayed and again.seqs == [1]
    with pytest.raises(IdempotencyConflict):
        log.append([signal_draft("x")], idempotency_key="k", fingerprint=b"request-2")


def test_concurrent_appends_get_distinct_contiguous_seqs(log: EventLog) -> None:
    acked: list[tuple[str, int]] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        for n in range(25):
            result = log.append([signal_draft(f"{w}-{n}")])
            with lock:
                acked.append((f"{w}-{n}", result.seqs[0]))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    by_seq = dict((seq, note) for note, seq in acked)
    assert sorted(by_seq) == list(range(1, 201))
    assert notes(log) == [by_seq[s] for s in range(1, 201)]


def test_subscription_wakes_a_waiting_reader(log: EventLog) -> None:
    assert log.wait_for(0, timeout=0.01) == 0
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(log.wait_for(0, timeout=10)))
    reader.start()
    log.append([signal_draft("wake")])
    reader.join(timeout=10)
    assert seen == [1]


def test_async_append_and_subscription(log: EventLog) -> None:
    async def scenario() -> tuple[int, list[int]]:
        waiter = asyncio.create_task(log.wait_for_async(0, timeout=10))
        await asyncio.sleep(0)
        appended = await log.append_async([signal_draft("a")])
        timed_out = await log.wait_for_async(5, timeout=0.01)
        return await waiter, [*appended.seqs, timed_out]

    woke, seqs = asyncio.run(scenario())
    assert woke == 1
    assert seqs == [1, 1]


def test_closed_log_refuses_appends(log: EventLog) -> None:
    log.close()
    with pytest.raises(LogClosed):
        log.append([signal_draft("late")])


batches = st.lists(
    st.tuples(st.lists(st.text(max_size=8), max_size=4), st.sampled_from([None, "a", "b", "c"])),
    max_size=12,
)


@pytest.mark.parametrize("kind", LOG_KINDS)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=batches)
def test_appends_match_a_plain_model(
    request: pytest.FixtureRequest, kind: str, ops: list[tuple[list[str], str | None]]
) -> None:
    """Random appends, some retried under a key: the log equals a list model."""
    with tempfile.TemporaryDirectory() as tmp:
        opening = opened_log(request, kind, Path(tmp))
        log = next(opening)
        try:
            model: list[str] = []
            keyed: dict[str, tuple[list[str], list[int]]] = {}
            for payload, key in ops:
                drafts = [signal_draft(n) for n in payload]
                if key in keyed and keyed[key][0] != payload:
                    with pytest.raises(IdempotencyConflict):
                        log.append(drafts, idempotency_key=key)
                    continue
                result = log.append(drafts, idempotency_key=key)
                if key in keyed:
                    assert result.replayed and result.seqs == keyed[key][1]
                    continue
                if not payload:  # an empty append is a no-op and records no key
                    assert result.records == () and not result.replayed
                    continue
                assert result.seqs == list(range(len(model) + 1, len(model) + len(payload) + 1))
                model.extend(payload)
                if key is not None:
                    keyed[key] = (payload, result.seqs)
            assert notes(log) == model
            assert log.head().seq == len(model)
        finally:
            opening.close()


@pytest.mark.parametrize(
    "event",
    [
        AgentSignal(agent_id="a", signal="neutral", weight=float("nan")),
        AgentSignal(agent_id="\ud800", signal="neutral"),
        AgentSignal(agent_id=7, signal="neutral"),  # type: ignore[arg-type]
        AgentSignal(agent_id="a", signal="bogus"),  # type: ignore[arg-type]
    ],
    ids=["nan", "surrogate", "wrong-type", "bad-literal"],
)
def test_an_unstorable_draft_is_refused_and_changes_nothing(log: EventLog, event: Event) -> None:
    log.append([signal_draft("before")])
    with pytest.raises(InvalidInput):
        log.append([signal_draft("ok"), Draft(ACTOR, event)])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        telnet = Actor(agent_id="a", protocol="telnet")  # type: ignore[arg-type]
        log.append([Draft(telnet, AgentSignal(agent_id="a", signal="neutral"))])
    log.append([signal_draft("after")])
    assert notes(log) == ["before", "after"]


@pytest.mark.parametrize("key", ["", "k" * 257, "\ud800"], ids=["empty", "long", "surrogate"])
def test_an_unstorable_idempotency_key_is_refused(log: EventLog, key: str) -> None:
    with pytest.raises(InvalidInput):
        log.append([signal_draft("x")], idempotency_key=key)
    # The log is not harmed: a client-chosen key must never stop writes for everyone.
    assert log.append([signal_draft("y")], idempotency_key="k" * 256).seqs == [1]


def test_submitted_appends_keep_their_submission_order(log: EventLog) -> None:
    futures = [log.submit([signal_draft(f"s{i}")]) for i in range(20)]
    seqs = [f.result(timeout=10).seqs[0] for f in futures]
    assert seqs == list(range(1, 21))
    assert notes(log) == [f"s{i}" for i in range(20)]


def test_a_lone_process_has_every_turn_at_once_and_it_begins_at_most_at_the_head(
    log: EventLog,
) -> None:
    log.append([signal_draft("before")])
    turn = log.hold("team")
    again = log.hold("team")  # this process's decisions never wait on each other here
    other = log.hold("other team", within=True)
    assert turn.head <= log.head().seq
    log.append([signal_draft("in the turn")])
    turn.retain()  # an append in flight keeps it
    for held in (turn, turn, again, other):
        held.release()
    log.hold("team").release()  # a new turn once every holder let go
