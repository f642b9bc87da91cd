"""Trace fidelity: the context a turn injected, rebuilt from its trace alone, is byte for byte
what the upstream received.

From the log and the projections only (never from the proxy's memory): each
``context.injected`` names a recall and the versions it served; rendering those versions again
must give the recorded digest, and those bytes must be in a request the upstream received.
Each upstream call's recorded digest must be the digest of a body the upstream received, and
the profile context, rebuilt from its ``profile.updated`` record, must match too. What a round
saved is versions of the turn's container, and the turn's event holds none of their text.
"""

from __future__ import annotations

import hashlib
import json

import msgspec

from mnemolog.eventlog.events import (
    ContextInjected,
    ProfileUpdated,
    ProxyRound,
    ProxyTurn,
    RecallPerformed,
)
from mnemolog.memory import RenderedMemory, digest, render_memories, render_profile
from mnemolog.runtime import Runtime

from .scripted import ScriptedUpstream


def rebuild_injection(runtime: Runtime, injected: ContextInjected) -> str:
    rows = runtime.core.memories.by_version_ids(injected.version_ids)
    sources = injected.sources or [None] * len(injected.version_ids)
    return render_memories(
        [
            RenderedMemory.of(rows[v], source)
            for v, source in zip(injected.version_ids, sources, strict=True)
        ],
        injected.renderer,
    )


def rebuild_profile(runtime: Runtime, container_tag: str, at: int) -> str:
    for stored in runtime.log.read():
        event = stored.record.event
        if (
            isinstance(event, ProfileUpdated)
            and event.container_tag == container_tag
            and stored.record.ts == at
        ):
            opened = runtime.sealer.open(event.profile)
            assert opened is not None, "the profile was erased"
            profile = msgspec.json.decode(opened)
            return render_profile(profile["static"], profile["dynamic"])
    raise AssertionError(f"no profile of {container_tag!r} set at {at}")


def check_saves(runtime: Runtime, turn: ProxyTurn, done: ProxyRound) -> None:
    """A round's saves: each a version of the turn's container, whose text is nowhere in the
    turn's event (only the numbers the calls named are kept)."""
    assert len(done.saved) <= done.save_calls <= done.memory_calls
    assert len(done.save_replaces) == done.save_calls
    rows = runtime.core.memories.by_version_ids(done.saved)
    encoded = msgspec.json.encode(turn)
    for version_id in done.saved:
        row = rows[version_id]
        assert row.container_tag == turn.container_tag
        if row.content is not None:
            assert row.content.encode() not in encoded, "a saved text is in the turn's event"


def check_turns(runtime: Runtime, upstream: ScriptedUpstream, *, after_seq: int) -> int:
    """Check every turn recorded after ``after_seq``; returns the seq checked up to."""
    records = list(runtime.log.read(from_seq=after_seq + 1))
    recalls = {
        r.record.event.recall_id: r.record.event
        for r in runtime.log.read()
        if isinstance(r.record.event, RecallPerformed)
    }
    bodies = [r.raw for r in upstream.chats()]
    body_digests = {hashlib.sha256(raw).hexdigest() for raw in bodies}
    turns = [r.record.event for r in records if isinstance(r.record.event, ProxyTurn)]
    injections = [r.record.event for r in records if isinstance(r.record.event, ContextInjected)]
    for injected in injections:
        text = rebuild_injection(runtime, injected)
        assert digest(text) == injected.sent_digest, "re-rendering does not give the digest"
        recall = recalls[injected.recall_id]
        assert isinstance(recall, RecallPerformed) and recall.origin == "proxy"
        assert recall.served == injected.version_ids
        encoded = json.dumps(text, ensure_ascii=False)[1:-1].encode()
        assert any(encoded in raw for raw in bodies), "the upstream never received these bytes"
        assert any(
            m.get("role") == "tool" and m.get("content") == text
            for raw in bodies
            for m in json.loads(raw)["messages"]
        )
    for turn in turns:
        if turn.outcome == "cancelled":
            continue
        for done in turn.rounds:
            assert done.request_digest in body_digests, "a round's digest matches no body sent"
            check_saves(runtime, turn, done)
        mine = [i for i in injections if i.trace_id == turn.turn_id]
        assert [i.recall_id for i in mine] == [
            r
            for done in turn.rounds
            for r in done.recall_ids
            if any(i.recall_id == r for i in mine)
        ]
        if turn.profile_digest is not None:
            assert turn.profile_at is not None
            text = rebuild_profile(runtime, turn.container_tag, turn.profile_at)
            assert digest(text) == turn.profile_digest
            assert any(
                m.get("role") == "system" and m.get("content") == text
                for raw in bodies
                for m in json.loads(raw)["messages"]
            )
    return records[-1].seq if records else after_seq
