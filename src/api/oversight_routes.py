"""Quarantine and rollback of agents, live key revocation, and the memories digest: the user's
(or an admin key's) oversight of what the agents wrote. Each change is one call and one
append."""

from __future__ import annotations

from typing import Annotated, TypeVar

import msgspec
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ..clock import iso, parse_as_of_instant
from ..errors import InvalidInput, NotFound
from ..eventlog import Actor
from ..eventlog.events import ProfileReset, RevertedChain
from ..memory import Core, RollbackRow
from ..memory.agents import Caller, check_agent_name
from ..runtime import Runtime
from ..web.caller import caller_in
from ..web.request_body import decode_json, read_body
from .models import Tag
from .query import MinSeq

AgentId = Annotated[str, Path(min_length=1, max_length=64)]
RollbackId = Annotated[str, Path(min_length=1, max_length=64)]
KeyId = Annotated[str, Path(min_length=1, max_length=64)]
Reason = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class _Body(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    pass


class QuarantineBody(_Body, frozen=True, kw_only=True):
    reason: Reason | None = None


class NewKeyBody(_Body, frozen=True, kw_only=True):
    # The containers the key may reach (left out: every one); an admin key is never scoped.
    containers: Annotated[list[Tag], msgspec.Meta(min_length=1, max_length=100)] | None = None
    admin: bool = False


class RollbackBody(_Body, frozen=True, kw_only=True):
    since: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    since_seq: Annotated[int, msgspec.Meta(ge=1, le=2**62)] | None = None


B = TypeVar("B", bound=_Body)

# What these routes take, for the OpenAPI document (their bodies are read by hand).
BODIES: dict[tuple[str, str], type[msgspec.Struct]] = {
    ("post", "/agents/{agent_id}/quarantine"): QuarantineBody,
    ("post", "/agents/{agent_id}/rollback"): RollbackBody,
    ("post", "/agents/{agent_id}/keys"): NewKeyBody,
}


def oversight_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter()
    core = runtime.core
    limit = runtime.settings.max_body_bytes

    def admin(request: Request) -> Actor:
        caller = caller_in(request.scope)
        caller.require_admin()
        return caller.actor("rest")

    def quarantine_json(agent_id: str) -> dict[str, object]:
        found = core.quarantine.state(agent_id)
        return {
            "agentId": agent_id,
            "quarantined": found is not None,
            "since": None if found is None else iso(found.at),
            "seq": None if found is None else found.seq,
            "reason": None if found is None else found.reason,
            "by": None if found is None else found.by_agent,
        }

    @router.get("/agents/{agent_id}/quarantine")
    def get_quarantine(agent_id: AgentId, request: Request) -> JSONResponse:
        admin(request)
        check_agent_name(agent_id)
        return JSONResponse(quarantine_json(agent_id))

    @router.post("/agents/{agent_id}/quarantine")
    async def quarantine(agent_id: AgentId, request: Request) -> JSONResponse:
        """Hide the agent's memories from recall and lists; they are kept."""
        actor = admin(request)
        body = await _optional(request, QuarantineBody, limit)
        await run_in_threadpool(core.quarantine.quarantine, agent_id, body.reason, actor)
        return JSONResponse(quarantine_json(agent_id))

    @router.delete("/agents/{agent_id}/quarantine")
    async def release(agent_id: AgentId, request: Request) -> JSONResponse:
        """End a quarantine: the agent's memories are served again."""
        actor = admin(request)
        seq = await run_in_threadpool(core.quarantine.release, agent_id, actor)
        return JSONResponse({**quarantine_json(agent_id), "seq": seq})

    @router.post("/agents/{agent_id}/keys", status_code=201)
    async def add_key(agent_id: AgentId, request: Request) -> JSONResponse:
        """Make a key for an agent while the server runs (``mnemolog keys add`` beside a
        server asks this): the token is in this answer only, never stored or shown again."""
        actor = admin(request)
        body = await _optional(request, NewKeyBody, limit)
        made = await run_in_threadpool(
            lambda: core.agents.add(agent_id, body.containers, actor, admin=body.admin)
        )
        return JSONResponse(
            {
                "keyId": made.key_id,
                "agentId": made.agent_id,
                "token": made.token,
                "containers": made.containers,
                "admin": body.admin,
                "seq": made.seq,
            },
            status_code=201,
        )

    @router.delete("/agents/{agent_id}/keys/{key_id}")
    async def revoke_key(agent_id: AgentId, key_id: KeyId, request: Request) -> JSONResponse:
        """Revoke one of the agent's keys while the server runs: the next request with it is
        a 401. Never the last live key (409 ``last_live_key``)."""
        actor = admin(request)
        seq = await run_in_threadpool(
            lambda: core.agents.revoke(key_id, actor, agent_id=agent_id, keep_one=True)
        )
        return JSONResponse({"keyId": key_id, "agentId": agent_id, "revoked": True, "seq": seq})

    @router.post("/agents/{agent_id}/rollback")
    async def rollback(agent_id: AgentId, request: Request) -> JSONResponse:
        """Undo what the agent wrote or changed since an instant (``since``) or a seq."""
        actor = admin(request)
        body = await _optional(request, RollbackBody, limit)
        if (body.since is None) == (body.since_seq is None):
            raise InvalidInput("a rollback needs one of since (an instant) or sinceSeq")
        check_agent_name(agent_id)
        since_seq = body.since_seq
        if body.since is not None:
            # An instant names its whole microsecond (as asOf does): from its start.
            at = parse_as_of_instant(body.since, "since") - 999
            since_seq = core.rollbacks.seq_at(at)
        assert since_seq is not None
        made = await run_in_threadpool(core.rollbacks.rollback, agent_id, since_seq, actor)
        if made is None:
            return JSONResponse(
                {
                    "rollbackId": None,
                    "agentId": agent_id,
                    "sinceSeq": since_seq,
                    **_digest(core, caller_in(request.scope)),
                }
            )
        return JSONResponse({**_rollback_json(made), **_digest(core, caller_in(request.scope))})

    @router.get("/agents/{agent_id}/rollbacks")
    def rollbacks(agent_id: AgentId, request: Request) -> JSONResponse:
        admin(request)
        check_agent_name(agent_id)
        return JSONResponse({"rollbacks": [_rollback_json(r) for r in core.rollbacks.of(agent_id)]})

    @router.post("/agents/{agent_id}/rollbacks/{rollback_id}/undo")
    async def undo(agent_id: AgentId, rollback_id: RollbackId, request: Request) -> JSONResponse:
        """Undo a rollback: what it forgot restored, what it gave back replaced again."""
        actor = admin(request)
        found = core.rollbacks.get(rollback_id)
        if found is None or found.agent_id != agent_id:
            raise NotFound(f"no rollback {rollback_id!r} of agent {agent_id!r}")
        done = await run_in_threadpool(core.rollbacks.undo, rollback_id, actor)
        return JSONResponse({**_rollback_json(done), **_digest(core, caller_in(request.scope))})

    @router.get("/digest")
    def digest(
        request: Request,
        container_tag: Annotated[Tag | None, Query(alias="containerTag", max_length=256)] = None,
        min_seq: MinSeq = None,
    ) -> JSONResponse:
        """The digest of what the memories projection serves (``MemoryAudit.digest``): nodes
        on one log that answer it for the same ``seq`` must agree."""
        if min_seq is not None:
            core.see(min_seq)
        digest = _digest(core, caller_in(request.scope), container_tag)
        return JSONResponse({"containerTag": container_tag, **digest})

    return router


def _digest(core: Core, caller: Caller, container_tag: str | None = None) -> dict[str, object]:
    digest, seq = core.reads.digest(container_tag, caller)
    return {"digest": digest, "seq": seq}


async def _optional(request: Request, type_: type[B], limit: int) -> B:
    """A body that may be left out (an empty body is the defaults)."""
    raw = await read_body(request, max_bytes=limit)
    return decode_json(raw or b"{}", type_)


def _rollback_json(row: RollbackRow) -> dict[str, object]:
    event, undo = row.event, row.undo
    return {
        "rollbackId": row.rollback_id,
        "agentId": row.agent_id,
        "sinceSeq": row.since_seq,
        "rollbackSeq": row.seq,
        "at": iso(row.at),
        "by": row.by_agent,
        "forgotten": event.forgotten,
        "reverted": [_reverted(r) for r in event.reverted],
        "restored": event.restored,
        "reforgotten": event.reforgotten,
        "profiles": [_profile(p) for p in event.profiles],
        "documents": event.documents,
        "erased": event.erased,
        "undone": None
        if undo is None
        else {
            "seq": row.undone_seq,
            "at": iso(row.undone_at),
            "restored": undo.restored,
            "reverted": [_reverted(r) for r in undo.reverted],
            "forgotten": undo.forgotten,
            "profiles": [_profile(p) for p in undo.profiles],
            "documents": undo.documents,
            "skipped": undo.skipped,
        },
    }


def _reverted(r: RevertedChain) -> dict[str, object]:
    return {
        "id": r.memory_id,
        "versionId": r.version_id,
        "restoredVersionId": r.restored_version_id,
        "replacedVersionId": r.replaced_version_id,
    }


def _profile(p: ProfileReset) -> dict[str, object]:
    return {
        "containerTag": p.container_tag,
        "restoredSeq": p.restored_seq,
        "replacedSeq": p.replaced_seq,
    }
