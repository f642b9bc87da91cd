"""The dashboard's session table under a login flood: each agent keeps its latest sessions,
and a full table refuses a login rather than end another agent's session."""

from __future__ import annotations

import pytest

from mnemolog.errors import SessionsFull
from mnemolog.memory.agents import Caller
from mnemolog.web.sessions import SESSION_TTL, Sessions


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def agent(name: str) -> Caller:
    return Caller(agent_id=name, containers=frozenset({name}), key_id=f"key-{name}")


def test_a_full_table_refuses_a_login_and_logs_no_one_out() -> None:
    clock = Clock()
    sessions = Sessions(capacity=4, per_agent=2, clock=clock)
    held = [sessions.open(agent(name)) for name in ("ada", "ada", "bo", "bo")]
    with pytest.raises(SessionsFull):
        sessions.open(agent("cy"))
    assert [sessions.caller(t) for t in held] == [agent(n) for n in ("ada", "ada", "bo", "bo")]
    # An agent at its own bound makes room with its own oldest session.
    again = sessions.open(agent("ada"))
    assert sessions.caller(held[0]) is None and sessions.caller(again) == agent("ada")
    assert [sessions.caller(t) for t in held[1:]] == [agent(n) for n in ("ada", "bo", "bo")]
    # Expired sessions are no one's: they make way.
    clock.now += SESSION_TTL + 1
    cy = sessions.open(agent("cy"))
    assert sessions.caller(cy) == agent("cy")
    assert all(sessions.caller(t) is None for t in [*held, again])
