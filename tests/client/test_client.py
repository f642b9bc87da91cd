"""The Python client against a real ``mnemolog serve``: every call decodes to its typed answer,
sync and async alike, and the memory surface round-trips over real HTTP."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from mnemolog import errors
from mnemolog.client import (
    AsyncClient,
    Client,
    DocumentHit,
    MemoryHit,
    RecallFeedback,
    RecallTrace,
    status_of,
)

from ..servers import mnemolog_server


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mnemolog_server(tmp_path_factory.mktemp("client") / "data") as (url, _):
        yield url


@pytest.fixture
def client(base_url: str) -> Iterator[Client]:
    with Client(base_url) as c:
        yield c


def test_add_answers_outcomes_and_the_same_text_again_is_deduplicated(client: Client) -> None:
    first = client.add("John prefers dark mode", "add")
    assert first.container_tag == "add" and len(first.memories) == 1
    outcome = first.memories[0]
    assert outcome.status == "created"
    assert outcome.id.startswith("mem_") and outcome.version_id.startswith("ver_")
    assert outcome.version == 1 and outcome.seq > 0 and outcome.flags == []
    again = client.add("John prefers dark mode", "add").memories[0]
    assert (again.id, again.status) == (outcome.id, "deduplicated")


def test_add_takes_a_list_of_texts_and_dicts_with_defaults(client: Client) -> None:
    written = client.add(
        [
            "Sam drinks green tea every morning",
            {"content": "Sam's cat is called Miso", "metadata": {"source": "chat"}},
            {"content": "Sam lives in Lisbon", "isStatic": False},
        ],
        "batch",
        is_static=True,
        observed_at=datetime(2026, 1, 2, 3, 4, tzinfo=UTC),
    )
    assert [m.status for m in written.memories] == ["created"] * 3
    tea, cat, city = (client.get(m.id).versions[-1] for m in written.memories)
    assert tea.is_static and cat.is_static and not city.is_static  # the item's own wins
    assert cat.metadata == {"source": "chat"}
    assert tea.observed_at is not None and tea.observed_at.startswith("2026-01-02T03:04")


def test_search_finds_a_memory_and_its_trace_is_inspected(client: Client) -> None:
    written = client.add("The spare keys are in the kitchen drawer", "search").memories[0]
    found = client.search("where are the spare keys", "search", limit=5)
    assert found.trace_id.startswith("trc_") and found.search_mode == "memories"
    top = found.results[0]
    assert isinstance(top, MemoryHit)
    assert (top.id, top.rank, top.content) == (
        written.id,
        1,
        "The spare keys are in the kitchen drawer",
    )
    assert top.trust == 1.0 and top.sources[0].agent_id == "local"
    trace = client.inspect(found.trace_id)
    assert isinstance(trace, RecallTrace)
    assert trace.query == "where are the spare keys" and written.version_id in trace.served
    assert any(c.version_id == written.version_id and c.served for c in trace.candidates)
    used = client.recall_used(found.trace_id, [written.version_id])
    assert used.memory_ids == [written.id] and used.seq > 0


def test_a_served_result_is_rated_and_a_bad_rating_raises(client: Client) -> None:
    written = client.add("The boiler is serviced every October", "rated").memories[0]
    found = client.search("when is the boiler serviced", "rated")
    rated = client.recall_feedback(found.trace_id, written.version_id, 3, reason="the month")
    assert isinstance(rated, RecallFeedback)
    assert (rated.trace_id, rated.version_id, rated.memory_id, rated.grade) == (
        found.trace_id,
        written.version_id,
        written.id,
        3,
    )
    trace = client.inspect(found.trace_id)
    assert isinstance(trace, RecallTrace)
    assert [(r.version_id, r.grade, r.seq) for r in trace.feedback] == [
        (written.version_id, 3, rated.seq)
    ]
    with pytest.raises(errors.InvalidInput) as out_of_range:
        client.recall_feedback(found.trace_id, written.version_id, 4)
    assert status_of(out_of_range.value) == 400
    with pytest.raises(errors.InvalidInput, match="did not serve"):
        client.recall_feedback(found.trace_id, "ver_nope", 1)
    with pytest.raises(errors.NotFound):
        client.recall_feedback("trc_nope", written.version_id, 1)


def test_list_pages_and_iter_memories_reads_every_page(client: Client) -> None:
    ids = [
        client.add(f"Fact number {n} about the garden", "paged").memories[0].id for n in range(5)
    ]
    page = client.list("paged", limit=2)
    assert (page.total, page.limit, page.offset, len(page.memories)) == (5, 2, 0, 2)
    assert page.memories[0].id == ids[-1]  # newest first
    assert [m.id for m in client.iter_memories("paged", page_size=2)] == ids[::-1]


def test_get_update_forget_restore_delete_round_trip(client: Client) -> None:
    memory_id = client.add("Ana's favourite colour is teal", "life").memories[0].id
    chain = client.get(memory_id)
    assert chain.latest_version == 1 and chain.container_tag == "life"

    edited = client.update(memory_id, "Ana's favourite colour is orange", expected_version=1)
    assert edited.latest_version == 2 and len(edited.versions) == 2
    assert edited.latest is not None and edited.latest.content == "Ana's favourite colour is orange"
    with pytest.raises(errors.VersionConflict) as stale:
        client.update(memory_id, "a late edit", expected_version=1)
    assert status_of(stale.value) == 409

    forgotten = client.forget(memory_id, "user asked")
    assert forgotten.forgotten and forgotten.forgotten_reason == "user asked"
    assert memory_id not in {m.id for m in client.list("life").memories}
    assert memory_id in {m.id for m in client.list("life", include_forgotten=True).memories}
    assert not client.restore(memory_id).forgotten
    assert memory_id in {m.id for m in client.list("life").memories}

    erased = client.delete(memory_id)
    assert (erased.id, erased.hard_deleted, erased.erased) == (memory_id, True, True)
    assert client.get(memory_id).erased
    with pytest.raises(errors.KeyDestroyed) as again:
        client.delete(memory_id)
    assert status_of(again.value) == 410


def test_supersedes_and_split(client: Client) -> None:
    old = client.add("The spare keys are in the hall", "split").memories[0]
    new = client.add("Ask Sam for the spare keys", "split", supersedes=old.id).memories[0]
    assert (new.id, new.status, new.version) == (old.id, "superseded", 2)
    split = client.split(old.id, old.version_id)
    assert split.split_from is not None and split.split_from.id == old.id
    assert split.id != old.id


def test_documents_add_list_get_delete(client: Client) -> None:
    text = "The Falcon 3 espresso machine heats up in about 25 seconds.\n\nDescale monthly."
    added = client.add_document(text, "docs", title="Manual", metadata={"v": 1})
    assert added.status == "created" and added.chunks >= 1
    assert client.add_document(text, "docs").status == "deduplicated"
    page = client.list_documents("docs")
    assert page.total == 1 and page.documents[0].title == "Manual"
    assert page.documents[0].content is None  # lists leave the text out
    document = client.get_document(added.id)
    assert document.content == text and document.metadata == {"v": 1}
    hits = client.search("how long does the espresso machine heat", "docs", search_mode="documents")
    assert isinstance(hits.results[0], DocumentHit) and hits.results[0].document_id == added.id
    assert client.delete_document(added.id).erased
    with pytest.raises(errors.KeyDestroyed):
        client.delete_document(added.id)


def test_profile_set_get_delete(client: Client) -> None:
    assert client.profile("prof").static == []
    client.set_profile("prof", static=["Name: Ana"], dynamic=["Planning a trip"])
    profile = client.profile("prof")
    assert (profile.static, profile.dynamic) == (["Name: Ana"], ["Planning a trip"])
    assert profile.updated_at is not None
    assert client.delete_profile("prof").erased
    with pytest.raises(errors.NotFound):
        client.delete_profile("prof")


def test_export_import_and_delete_container(client: Client) -> None:
    client.add("Rui plays the cello on Sundays", "port")
    exported = client.export("port")
    assert exported["format"] == "bellamente-export" and len(exported["memories"]) == 1
    report = client.import_export(exported)  # its own export: every chain exists already
    assert (report.imported, report.skipped, report.memories[0].reason) == (0, 1, "exists")
    receipt = client.delete_container("port")
    assert receipt.container_tag == "port" and receipt.destroyed.memories == 1
    assert not receipt.repeated and client.delete_container("port").repeated


def test_health_stats_and_a_tag_with_a_slash_stays_one_path_segment(client: Client) -> None:
    health = client.health()
    assert health.ok and health.service == "mnemolog" and health.auth == "none"
    client.add("Nora keeps bees on the roof", "stats")
    stats = client.stats("stats")
    assert (stats.container_tag, stats.containers, stats.documents) == ("stats", 1, 0)
    assert stats.memories["live"] == 1 and stats.log.head > 0
    assert client.stats().containers >= 1
    with pytest.raises(errors.NotFound):
        client.delete_container("no/such")


def test_idempotency_key_is_sent_as_a_header(base_url: str) -> None:
    seen: list[httpx.Request] = []

    class Recording(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return super().handle_request(request)

    with Client(base_url, transport=Recording()) as c:
        c.add("Idempotent fact", "idem", idempotency_key="retry-1")
        c.add("Another fact", "idem")
    assert seen[0].headers["idempotency-key"] == "retry-1"
    assert "idempotency-key" not in seen[1].headers
    assert seen[0].headers["content-type"] == "application/json"


def test_a_retry_with_the_same_idempotency_key_gets_the_first_answer(client: Client) -> None:
    texts = ["Mara keeps her bike in the hallway", "Mara's bike is a red Bianchi"]
    first = client.add(texts, "idem-retry", idempotency_key="row-1")
    again = client.add(texts, "idem-retry", idempotency_key="row-1")
    assert again.memories == first.memories
    assert (first.replayed, again.replayed) == (False, True)
    assert [m.status for m in first.memories] == ["created", "created"]
    with pytest.raises(errors.IdempotencyConflict) as refused:
        client.add("Mara sold her bike", "idem-retry", idempotency_key="row-1")
    assert status_of(refused.value) == 409
    assert client.list("idem-retry").total == 2


def test_the_environment_names_the_server(base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOLOG_URL", base_url + "/")
    with Client() as c:
        assert c.base_url == base_url and c.health().ok


def test_async_client_round_trip(base_url: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(base_url) as c:
            assert (await c.health()).ok
            written = await c.add("Lena runs every Sunday morning", "async")
            memory_id = written.memories[0].id
            assert (await c.add("Lena runs every Sunday morning", "async")).memories[
                0
            ].status == "deduplicated"
            found = await c.search("when does Lena run", "async")
            top = found.results[0]
            assert isinstance(top, MemoryHit) and top.id == memory_id
            assert isinstance(await c.inspect(found.trace_id), RecallTrace)
            rated = await c.recall_feedback(found.trace_id, top.version_id, 2)
            assert (rated.memory_id, rated.grade) == (memory_id, 2)
            edited = await c.update(memory_id, "Lena runs every Saturday morning")
            assert edited.latest_version == 2
            assert (await c.forget(memory_id, "moved")).forgotten
            assert not (await c.restore(memory_id)).forgotten
            assert [m.id async for m in c.iter_memories("async", page_size=1)] == [memory_id]
            assert (await c.list("async")).total == 1
            await c.set_profile("async", static=["Runner"])
            assert (await c.profile("async")).static == ["Runner"]
            assert (await c.delete(memory_id)).erased
            with pytest.raises(errors.NotFound) as missing:
                await c.get("mem_missing")
            assert status_of(missing.value) == 404

    asyncio.run(scenario())


def test_importing_the_client_loads_no_server_code() -> None:
    """An agent's process pays for httpx and msgspec, not for models, indexes or the log."""
    probe = (
        "import json, sys, mnemolog.client; "
        "print(json.dumps([m for m in sys.modules if m.startswith('mnemolog.')]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = {m for m in json.loads(done.stdout) if not m.startswith("mnemolog.client")}
    assert loaded == {"mnemolog.errors"}


def test_reads_wait_for_a_seq_a_write_answered_and_refuse_one_never_answered(
    client: Client,
) -> None:
    written = client.add("The backup runs at 02:00", "seqs").memories[0]
    assert client.get(written.id, min_seq=written.seq).id == written.id
    assert client.list("seqs", min_seq=written.seq).total == 1
    found = client.search("when does the backup run", "seqs", min_seq=written.seq)
    assert [hit.id for hit in found.results if isinstance(hit, MemoryHit)] == [written.id]
    stats = client.stats()
    assert stats.log.applied is not None and stats.log.applied >= written.seq
    with pytest.raises(errors.SeqAhead) as ahead:
        client.list("seqs", min_seq=stats.log.head + 1000)
    assert status_of(ahead.value) == 400
