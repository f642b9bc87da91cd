"""``/ui/memories``: browse a store's memories, and one chain as a timeline of its versions.

Each action a page offers (forget, restore, correct, erase) is a form that runs the command
the REST API runs, with the same checks and the same events, then shows the chain again.
"""

from __future__ import annotations

import difflib
from typing import Annotated, cast, get_args

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..errors import InvalidInput, NothingChanged, VersionConflict
from ..memory import MAX_CONTENT, Core, NewMemory, VersionRow
from ..memory.reads import Browse
from ..views import chain_body
from .forms import read_form
from .pages import Pages, query, see_other
from .snippets import Snippets

PAGE = 50  # memories a list page shows
MAX_TEXT = 256  # characters of a list's text filter
MAX_REASON = 2000  # characters of a forget's reason, as the API takes
MAX_TAG = 256  # characters of a container's name, as the API takes
USES = 20  # recalls that served a memory, and turns that injected it, its page lists


def memory_pages(core: Core, pages: Pages) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/memories")
    def memories(
        request: Request,
        container: Annotated[str | None, Query(max_length=256)] = None,
        agent: Annotated[str | None, Query(max_length=64)] = None,
        status: Annotated[str, Query(max_length=16)] = "live",
        q: Annotated[str | None, Query(max_length=MAX_TEXT)] = None,
        page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
        erased: Annotated[str | None, Query(max_length=64)] = None,
        seq: Annotated[int | None, Query(ge=1, le=2**63 - 1)] = None,
        erased_container: Annotated[str | None, Query(max_length=MAX_TAG)] = None,
        memories: Annotated[int | None, Query(ge=0, le=2**63 - 1)] = None,
        documents: Annotated[int | None, Query(ge=0, le=2**63 - 1)] = None,
    ) -> Response:
        caller = pages.caller(request)
        if status not in get_args(Browse):
            raise InvalidInput(f"no status {status!r}: one of {', '.join(get_args(Browse))}")
        browsed = cast(Browse, status)
        if container is None and caller.scoped:
            container = sorted(caller.containers or ())[0] if caller.containers else None
        rows, total, counts = core.reads.browse(
            caller,
            status=browsed,
            container_tag=container or None,
            agent_id=agent or None,
            text=q or None,
            limit=PAGE,
            offset=(page - 1) * PAGE,
        )
        carried = core.reads.carried([r.version_id for r in rows])
        return pages.render(
            request,
            "memories.html",
            rows=rows,
            carried=carried,
            total=total,
            counts=counts,
            statuses=get_args(Browse),
            containers=core.reads.containers(caller),
            agents=core.reads.writers(caller, container or None),
            params={"container": container, "agent": agent, "status": status, "q": q},
            page=page,
            pages=max(1, -(-total // PAGE)),
            erased=erased,
            erased_seq=seq,
            erased_container=erased_container,
            erased_counts={"memories": memories or 0, "documents": documents or 0},
            max_content=MAX_CONTENT,
            max_tag=MAX_TAG,
        )

    @router.get("/ui/memories/{memory_id}")
    def memory(
        request: Request,
        memory_id: str,
        a: Annotated[int | None, Query(ge=1)] = None,
        b: Annotated[int | None, Query(ge=1)] = None,
    ) -> Response:
        return memory_page(request, memory_id, a, b)

    def memory_page(
        request: Request,
        memory_id: str,
        a: int | None = None,
        b: int | None = None,
        *,
        status: int = 200,
        refused: str | None = None,
        draft: dict[str, dict[str, str]] | None = None,
    ) -> Response:
        """A chain's page; after a refused correction, with why and the text as typed."""
        caller = pages.caller(request)
        read = core.reads.chain(memory_id, caller)
        body = chain_body(core, memory_id, caller)
        versions = read.chain.versions
        carried = core.reads.carried([v.version_id for v in versions])
        diff = None
        if len(versions) > 1:
            by_number = {v.version: v for v in versions}
            older = by_number.get(a or versions[-2].version)
            newer = by_number.get(b or versions[-1].version)
            if older is not None and newer is not None:
                diff = (older.version, newer.version, word_diff(older, newer))
        recalls, turns = core.reads.served(read.chain, caller, limit=USES)
        split_from = read.split_from
        # The memories this one is linked to, named with their text.
        snippets = Snippets(
            core,
            caller,
            memory_ids=[
                *(k.memory_id for k in read.links),
                *(k.target_memory_id for k in read.links),
                *(s.memory_id for s in read.split_into),
                *(e.other_memory_id for e in read.history if e.other_memory_id),
                *([split_from.source_memory_id] if split_from else []),
            ],
            version_ids=[split_from.source_version_id] if split_from else [],
        )
        return pages.render(
            request,
            "memory.html",
            status=status,
            chain=read.chain,
            body=body,
            carried=carried,
            diff=diff,
            quarantined=read.quarantined,
            history=read.history,
            snippets=snippets,
            recalls=recalls,
            turns=turns,
            uses=USES,
            numbers={v.version_id: v.version for v in versions},
            max_content=MAX_CONTENT,
            refused=refused,
            draft=draft,
        )

    @router.post("/ui/memories")
    async def add(request: Request) -> Response:
        """A memory written as ``POST /memories`` writes one, by the same write path (the
        decision may link it, find it a duplicate or make it a new version): to its page."""
        form = await read_form(request, pages.sessions)
        caller = pages.caller(request)
        tag = form.get("container", "").strip()
        content = form.get("content", "").strip()
        if not 1 <= len(tag) <= MAX_TAG:
            raise InvalidInput(f"name the container (1 to {MAX_TAG} characters)")
        if not content or len(content) > MAX_CONTENT:
            raise InvalidInput(f"a memory's text is 1 to {MAX_CONTENT} characters")
        caller.reach(tag)
        item = NewMemory(content=content)
        (outcome,) = await run_in_threadpool(core.combiner.write, tag, [item], caller.actor("rest"))
        return see_other(f"/ui/memories/{outcome.memory_id}")

    @router.get("/ui/containers/{container_tag}/erase")
    def confirm_erase_container(request: Request, container_tag: str) -> Response:
        caller = pages.caller(request)
        caller.reach(container_tag)
        _, _, counts = core.reads.browse(
            caller, status="live", container_tag=container_tag, limit=1
        )
        return pages.render(request, "erase-container.html", tag=container_tag, counts=counts)

    @router.post("/ui/containers/{container_tag}/erase")
    async def erase_container(request: Request, container_tag: str) -> Response:
        """``DELETE /containers/{tag}`` from a form: everything of the container destroyed,
        once its name is typed; to the memories list, saying what was destroyed."""
        form = await read_form(request, pages.sessions)
        if form.get("confirm") != container_tag:
            raise InvalidInput("type the container's name to confirm its erasure")
        caller = pages.caller(request)
        force = form.get("force") == "on"
        receipt = await run_in_threadpool(
            lambda: core.erasure.container(container_tag, caller, force=force)
        )
        done = receipt.receipt
        return see_other(
            query(
                "/ui/memories",
                {},
                erased_container=container_tag,
                memories=done.memories,
                documents=done.documents,
                seq=receipt.seq,
            )
        )

    @router.post("/ui/memories/{memory_id}/forget")
    async def forget(request: Request, memory_id: str) -> Response:
        form = await read_form(request, pages.sessions)
        caller = pages.caller(request)
        core.reads.latest(memory_id, caller)
        reason = form.get("reason", "").strip()
        if not 1 <= len(reason) <= MAX_REASON:
            raise InvalidInput(f"say why it is forgotten (1 to {MAX_REASON} characters)")
        await run_in_threadpool(core.chains.forget, memory_id, reason, caller.actor("rest"))
        return see_other(f"/ui/memories/{memory_id}")

    @router.post("/ui/memories/{memory_id}/restore")
    async def restore(request: Request, memory_id: str) -> Response:
        await read_form(request, pages.sessions)
        caller = pages.caller(request)
        core.reads.latest(memory_id, caller)
        await run_in_threadpool(core.chains.restore, memory_id, caller.actor("rest"))
        return see_other(f"/ui/memories/{memory_id}")

    @router.post("/ui/memories/{memory_id}/correct")
    async def correct(request: Request, memory_id: str) -> Response:
        form = await read_form(request, pages.sessions)
        caller = pages.caller(request)
        latest = core.reads.latest(memory_id, caller)
        content = form.get("content", "").strip()
        if not content:
            raise InvalidInput("a correction needs its text")
        if len(content) > MAX_CONTENT:
            raise InvalidInput(f"a memory's text is at most {MAX_CONTENT} characters")
        expected = form.get("expectedVersion", "")
        item = NewMemory(
            content=content,
            is_static=latest.is_static,
            metadata=latest.metadata,
            context=latest.context,
        )
        try:
            await run_in_threadpool(
                lambda: core.chains.edit(
                    memory_id,
                    item,
                    caller.actor("rest"),
                    expected_version=int(expected) if expected.isdigit() else None,
                )
            )
        except (NothingChanged, VersionConflict) as refusal:
            # Said beside the form, the text as typed kept in it.
            kept = {request.url.path: {"content": form.get("content", "")}}
            return memory_page(request, memory_id, status=409, refused=str(refusal), draft=kept)
        return see_other(f"/ui/memories/{memory_id}")

    @router.get("/ui/memories/{memory_id}/erase")
    def confirm_erase(request: Request, memory_id: str) -> Response:
        latest = core.reads.latest(memory_id, pages.caller(request))
        return pages.render(request, "erase.html", latest=latest)

    @router.post("/ui/memories/{memory_id}/erase")
    async def erase(request: Request, memory_id: str) -> Response:
        form = await read_form(request, pages.sessions)
        if form.get("confirm") != memory_id:
            raise InvalidInput("type the memory's id to confirm its erasure")
        caller = pages.caller(request)
        latest = core.reads.latest(memory_id, caller)
        seq = await run_in_threadpool(core.chains.erase, memory_id, caller.actor("rest"))
        # Back to the list the memory was in, saying what was done.
        shown = {"container": latest.container_tag}
        return see_other(query("/ui/memories", shown, erased=memory_id, seq=seq))

    return router


def word_diff(older: VersionRow, newer: VersionRow) -> list[tuple[str, str]]:
    """The two versions' texts word by word: (``same`` | ``removed`` | ``added``, words)."""
    before = (older.content or "").split()
    after = (newer.content or "").split()
    parts: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(("same", " ".join(before[i1:i2])))
            continue
        if i2 > i1:
            parts.append(("removed", " ".join(before[i1:i2])))
        if j2 > j1:
            parts.append(("added", " ".join(after[j1:j2])))
    return parts
