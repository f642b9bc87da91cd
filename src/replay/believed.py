"""What was believed at an instant: each chain's version then, its markers, the profiles.

Read from a memories projection folded up to that instant (its tables are documented in
docs/projections.md), so a chain shows the version that was latest then, whether it was
forgotten then, and whether it had been erased by then. A version whose text can no longer be
read although it was not erased by then belongs to a subject erased later: erasure reaches
the past too, and the replay says so rather than guessing. Beside them, each agent's trust
then (the trust projection folded to the same seq).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ..clock import iso
from ..memory import AgentScore
from ..settings import Settings


class BelievedMemory(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    container_tag: str
    version: int
    version_id: str
    kind: str
    content: str | None
    context: str | None  # what the version answers, if it was written with it
    observed_at: str
    valid_from: str
    forgotten: bool
    forgotten_reason: str | None
    erased: bool  # erased by the instant
    erased_later: bool  # readable then, erased since: the text is gone for good


class BelievedProfile(msgspec.Struct, frozen=True, kw_only=True):
    container_tag: str
    static: list[str] | None
    dynamic: list[str] | None
    updated_at: str
    erased_later: bool


class BelievedAgent(msgspec.Struct, frozen=True, kw_only=True):
    """An agent's trust then: the posterior mean, its parameters and the signals behind it."""

    agent_id: str
    trust: float
    alpha: float
    beta: float
    signals: int
    writes: int
    flagged: int
    distrusted: bool  # under the threshold then: its writes and deletes were refused


class Belief(msgspec.Struct, frozen=True, kw_only=True):
    as_of: str
    seq: int
    memories: list[BelievedMemory]
    profiles: list[BelievedProfile]
    agents: list[BelievedAgent] = []


def believed(path: Path, *, as_of_ns: int, seq: int, container_tag: str | None) -> Belief:
    """The state in the memories projection at ``path`` (folded up to ``seq``)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        where, args = ("WHERE c.container_tag = ?", (container_tag,)) if container_tag else ("", ())
        rows = conn.execute(
            "SELECT c.memory_id, c.container_tag, v.version, v.version_id, v.kind, v.content,"
            " v.observed_at, v.valid_from, c.forgotten, c.forgotten_reason, c.erased, v.context"
            " FROM chains c JOIN versions v ON v.memory_id = c.memory_id"
            f" AND v.version = c.latest_version {where} ORDER BY c.created_seq",
            args,
        ).fetchall()
        where = "WHERE container_tag = ?" if container_tag else ""
        profiles = conn.execute(
            f"SELECT container_tag, profile, updated_at FROM profiles {where}"
            " ORDER BY container_tag",
            args,
        ).fetchall()
    finally:
        conn.close()
    return Belief(
        as_of=iso(as_of_ns),
        seq=seq,
        memories=[
            BelievedMemory(
                id=r[0],
                container_tag=r[1],
                version=r[2],
                version_id=r[3],
                kind=r[4],
                content=r[5],
                context=r[11],
                observed_at=iso(r[6]),
                valid_from=iso(r[7]),
                forgotten=bool(r[8]),
                forgotten_reason=r[9],
                erased=bool(r[10]),
                erased_later=r[5] is None and not r[10],
            )
            for r in rows
        ],
        profiles=[_profile(r[0], r[1], r[2]) for r in profiles],
    )


def _profile(container_tag: str, text: str | None, updated_at: int) -> BelievedProfile:
    facts = {} if text is None else json.loads(text)
    return BelievedProfile(
        container_tag=container_tag,
        static=None if text is None else list(facts.get("static", [])),
        dynamic=None if text is None else list(facts.get("dynamic", [])),
        updated_at=iso(updated_at),
        erased_later=text is None,
    )


def render_belief(belief: Belief) -> str:
    """The human form printed by ``mnemolog replay --as-of``."""
    lines = [f"as of {belief.as_of} (log seq {belief.seq}): {len(belief.memories)} memories"]
    for m in belief.memories:
        marks = []
        if m.erased:
            marks.append("erased")
        elif m.erased_later:
            marks.append("erased since; text unrecoverable")
        if m.forgotten:
            marks.append(f"forgotten: {m.forgotten_reason or '?'}")
        mark = f" [{'; '.join(marks)}]" if marks else ""
        text = m.content if m.content is not None else "-"
        if m.context is not None:
            text += f"  (in reply to: {m.context})"
        lines.append(f"  {m.container_tag}  {m.id} v{m.version}{mark}  {text}")
    for p in belief.profiles:
        if p.static is None or p.dynamic is None:
            lines.append(f"  profile {p.container_tag}: erased since")
        else:
            lines.append(f"  profile {p.container_tag}: static {p.static}, dynamic {p.dynamic}")
    for a in belief.agents:
        mark = "  [distrusted: writes refused]" if a.distrusted else ""
        lines.append(
            f"  agent {a.agent_id}: trust {a.trust:.3f} (alpha {a.alpha:.2f}, beta {a.beta:.2f};"
            f" {a.signals} signals, {a.writes} writes, {a.flagged} flagged){mark}"
        )
    return "\n".join(lines)


def agents_then(scores: Sequence[AgentScore], settings: Settings) -> list[BelievedAgent]:
    """The agents' scores at an instant, as the replay shows them (the user is not scored)."""
    return [
        BelievedAgent(
            agent_id=s.agent_id,
            trust=round(s.trust, 6),
            alpha=round(s.alpha, 6),
            beta=round(s.beta, 6),
            signals=s.signals,
            writes=s.writes,
            flagged=s.flagged,
            distrusted=s.trust < settings.trust_threshold,
        )
        for s in scores
        if not s.user
    ]
