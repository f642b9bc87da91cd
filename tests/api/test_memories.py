"""The memory API end to end: a real server on loopback, the real quality embedder."""

from __future__ import annotations

import itertools
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from mnemolog.eventlog import LmdbEventLog
from mnemolog.eventlog.datadir import log_dir
from mnemolog.eventlog.events import RecallPerformed

from ..servers import MNEMOLOG, mnemolog_server, replayed_traces, settled_head


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    data_dir = tmp_path_factory.mktemp("memories") / "data"
    with mnemolog_server(data_dir) as (base_url, _), httpx.Client(base_url=base_url) as client:
        yield client, data_dir


def write(client: httpx.Client, tag: str, *contents: str) -> list[dict[str, object]]:
    response = client.post(
        "/memories", json={"containerTag": tag, "memories": [{"content": c} for c in contents]}
    )
    assert response.status_code == 200, response.text
    memories: list[dict[str, object]] = response.json()["memories"]
    return memories


def named(client: httpx.Client, tag: str, content: str, corrects: str) -> list[dict[str, object]]:
    """A write that names the memory it corrects (``supersedes``)."""
    body = {"containerTag": tag, "memories": [{"content": content, "supersedes": corrects}]}
    response = client.post("/memories", json=body)
    assert response.status_code == 200, response.text
    memories: list[dict[str, object]] = response.json()["memories"]
    return memories


def search(client: httpx.Client, tag: str, q: str, **extra: object) -> httpx.Response:
    return client.post("/search", json={"q": q, "containerTag": tag, **extra})


def test_write_dedup_supersede_make_one_gapless_chain(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    (first,) = write(client, "u-chain", "John prefers dark mode")
    assert (first["status"], first["version"]) == ("created", 1)
    (again,) = write(client, "u-chain", "John prefers  dark mode")
    assert (again["status"], again["id"]) == ("deduplicated", first["id"])
    (corrected,) = named(client, "u-chain", "John prefers light mode", first["id"])
    assert (corrected["status"], corrected["id"], corrected["version"]) == (
        "superseded",
        first["id"],
        2,
    )
    assert isinstance(corrected["similarity"], float) and corrected["similarity"] >= 0.85
    (other,) = write(client, "u-chain", "The train to Paris leaves at noon")
    assert other["status"] == "created" and other["id"] != first["id"]

    chain = client.get(f"/memories/{first['id']}").json()
    v1, v2 = chain["versions"]
    assert (v1["version"], v2["version"]) == (1, 2)
    assert v1["validTo"] == v2["validFrom"] and v2["validTo"] is None
    assert v2["provenance"]["agentId"] == "local" and v2["provenance"]["protocol"] == "rest"

    listed = client.get("/memories", params={"containerTag": "u-chain"}).json()
    assert listed["total"] == 2
    assert {m["content"] for m in listed["memories"]} == {
        "John prefers light mode",
        "The train to Paris leaves at noon",
    }


def test_an_exact_duplicate_marked_static_makes_a_static_version(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server

    def post(tag: str, *memories: dict[str, object]) -> list[dict[str, object]]:
        response = client.post("/memories", json={"containerTag": tag, "memories": memories})
        assert response.status_code == 200, response.text
        answer: list[dict[str, object]] = response.json()["memories"]
        return answer

    text = "Ada is vegetarian"
    (first,) = write(client, "u-static", text)
    (static,) = post("u-static", {"content": text, "isStatic": True})
    assert (static["status"], static["reason"], static["id"], static["version"]) == (
        "superseded",
        "static",
        first["id"],
        2,
    )
    v1, v2 = client.get(f"/memories/{first['id']}").json()["versions"]
    assert (v1["isStatic"], v2["isStatic"]) == (False, True)
    assert v1["content"] == v2["content"] == text and v1["validTo"] == v2["validFrom"]
    # Static already, or without the flag: a duplicate, as before.
    for item in ({"content": text, "isStatic": True}, {"content": text}):
        (again,) = post("u-static", item)
        assert (again["status"], again["id"], again["version"]) == ("deduplicated", first["id"], 2)
    # In one batch: the chain the batch just made is made static by its second item.
    made, marked = post("u-static-batch", {"content": text}, {"content": text, "isStatic": True})
    assert (made["status"], marked["status"], marked["reason"]) == (
        "created",
        "superseded",
        "static",
    )
    assert (marked["id"], marked["version"]) == (made["id"], 2)
    # Naming the memory: the same.
    (named_static,) = post("u-static-named", {"content": text})
    (renamed,) = post(
        "u-static-named", {"content": text, "isStatic": True, "supersedes": named_static["id"]}
    )
    assert (renamed["status"], renamed["reason"], renamed["version"]) == ("superseded", "static", 2)


def test_recall_serves_the_newest_version_and_as_of_the_old(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    (first,) = write(client, "u-asof", "Ada lives in Berlin")
    time.sleep(0.01)
    between = client.get(f"/memories/{first['id']}").json()["versions"][0]["validFrom"]
    time.sleep(0.01)
    (moved,) = named(client, "u-asof", "Ada lives in Munich", first["id"])
    assert moved["status"] == "superseded"

    now = search(client, "u-asof", "where does Ada live")
    assert now.status_code == 200
    assert [r["content"] for r in now.json()["results"]] == ["Ada lives in Munich"]
    assert now.headers["x-mnemolog-trace-id"] == now.json()["traceId"]
    assert now.headers["x-bella-trace-id"] == now.json()["traceId"]

    then = search(client, "u-asof", "where does Ada live", asOf=between)
    assert [r["content"] for r in then.json()["results"]] == ["Ada lives in Berlin"]
    before = search(client, "u-asof", "where does Ada live", asOf="2001-01-01")
    assert before.json()["results"] == []
    for bad in ("2026-07-03T12:00:00", "yesterday", "2026-13-01"):
        refused = search(client, "u-asof", "where does Ada live", asOf=bad)
        assert refused.status_code == 400, bad
        assert refused.json()["error"]["code"] == "invalid_input"


def test_patch_makes_a_version_and_refuses_a_stale_expected_version(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    (memory,) = write(client, "u-patch", "Bob's favourite colour is green")
    patched = client.patch(
        f"/memories/{memory['id']}",
        json={"content": "Bob's favourite colour is blue", "expectedVersion": 1},
    )
    assert patched.status_code == 200, patched.text
    assert [v["content"] for v in patched.json()["versions"]] == [
        "Bob's favourite colour is green",
        "Bob's favourite colour is blue",
    ]
    stale = client.patch(
        f"/memories/{memory['id']}", json={"content": "Bob likes red", "expectedVersion": 1}
    )
    assert stale.status_code == 409
    assert stale.json()["error"]["code"] == "version_conflict"
    assert len(client.get(f"/memories/{memory['id']}").json()["versions"]) == 2
    missing = client.patch("/memories/mem_nope", json={"content": "x"})
    assert missing.status_code == 404


def test_a_patch_that_changes_nothing_is_refused_and_appends_nothing(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    (memory,) = write(client, "u-patch-same", "Bob's locker is number 12")
    head = settled_head(client)
    for same in (
        {"content": "Bob's locker is number 12"},
        {"content": "Bob's locker is number 12", "expectedVersion": 1},
        {"content": "  Bob's locker\r\nis number 12 "},  # as a form sends it back
    ):
        refused = client.patch(f"/memories/{memory['id']}", json=same)
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["code"] == "nothing_changed" and "changes nothing" in error["message"]
    assert settled_head(client) == head
    assert len(client.get(f"/memories/{memory['id']}").json()["versions"]) == 1
    # Any one thing changed is a correction.
    static = client.patch(
        f"/memories/{memory['id']}", json={"content": "Bob's locker is number 12", "isStatic": True}
    )
    assert static.status_code == 200, static.text
    assert [v["isStatic"] for v in static.json()["versions"]] == [False, True]


def test_forget_hides_and_restore_brings_back(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    (memory,) = write(client, "u-forget", "Carol is allergic to peanuts")
    no_reason = client.post(f"/memories/{memory['id']}/forget", json={})
    assert no_reason.status_code == 400
    forgotten = client.post(f"/memories/{memory['id']}/forget", json={"reason": "user asked"})
    assert forgotten.status_code == 200
    assert forgotten.json()["forgotten"] and forgotten.json()["forgottenReason"] == "user asked"
    assert search(client, "u-forget", "what is Carol allergic to").json()["results"] == []
    assert client.get("/memories", params={"containerTag": "u-forget"}).json()["total"] == 0
    shown = search(client, "u-forget", "what is Carol allergic to", includeForgotten=True)
    assert [r["content"] for r in shown.json()["results"]] == ["Carol is allergic to peanuts"]
    assert client.post(f"/memories/{memory['id']}/restore").json()["forgotten"] is False
    results = search(client, "u-forget", "what is Carol allergic to").json()["results"]
    assert [r["content"] for r in results] == ["Carol is allergic to peanuts"]


def test_hard_delete_leaves_no_byte_of_the_content(server: tuple[httpx.Client, Path]) -> None:
    client, data_dir = server
    canary = "Dave's locker code is canary-5150-xyzzy"
    (memory,) = write(client, "u-erase", canary)
    write(client, "u-erase", "Dave plays the cello")
    assert [r["content"] for r in search(client, "u-erase", "locker code").json()["results"]][
        :1
    ] == [canary]
    deleted = client.delete(f"/memories/{memory['id']}")
    assert deleted.status_code == 200 and deleted.json()["hardDeleted"] is True
    chain = client.get(f"/memories/{memory['id']}").json()
    assert chain["erased"] and [v["content"] for v in chain["versions"]] == [None]
    results = search(client, "u-erase", "locker code canary").json()["results"]
    assert canary not in [r["content"] for r in results]
    assert client.delete(f"/memories/{memory['id']}").status_code == 410
    for path in data_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"canary-5150" not in data and b"xyzzy" not in data, path
    verified = subprocess.run(
        [MNEMOLOG, "verify-log", "--data-dir", str(data_dir)], capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stderr


def test_every_recall_is_traced_with_all_its_candidates(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with mnemolog_server(data_dir) as (base_url, _), httpx.Client(base_url=base_url) as client:
        write(client, "u-trace", "Erin drinks oat milk", "Erin owns a red bicycle")
        response = search(client, "u-trace", "what milk does Erin drink", limit=1)
        trace_id = response.json()["traceId"]
        served = [r["versionId"] for r in response.json()["results"]]
    with LmdbEventLog(log_dir(data_dir)) as log:
        recalls = [
            r.record.event for r in log.read() if isinstance(r.record.event, RecallPerformed)
        ]
    (recall,) = recalls
    assert recall.recall_id == trace_id
    assert recall.served == served and len(served) == 1
    assert len(recall.candidates) == 2  # the one not served is kept too
    assert sorted(c.served for c in recall.candidates) == [False, True]
    assert all(c.similarity is not None for c in recall.candidates)
    assert set(recall.latency_ms) == {"embed", "memory_vector", "memory_bm25", "fuse"}
    assert recall.embedder.startswith("e5-small-v2-int8")  # the test servers run the quality tier


def test_extreme_but_valid_instants_are_accepted(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    response = client.post(
        "/memories",
        json={
            "containerTag": "u-clock",
            "memories": [
                {"content": "The abbey was founded", "observedAt": "0001-01-01T00:00:00Z"},
                {"content": "The time capsule opens", "observedAt": "9999-12-31T23:59:59+14:00"},
            ],
        },
    )
    assert response.status_code == 200, response.text
    for as_of in ("0001-01-01", "9999-12-31T23:59:59Z"):
        assert search(client, "u-clock", "abbey", asOf=as_of).status_code == 200
    naive = client.post(
        "/memories",
        json={
            "containerTag": "u-clock",
            "memories": [{"content": "x", "observedAt": "2026-01-01T10:00:00"}],
        },
    )
    assert naive.status_code == 400


def test_inspect_shows_the_trace_of_a_search(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    write(client, "u-inspect", "Frank collects vintage stamps", "Frank's dog is named Rex")
    response = search(client, "u-inspect", "what does Frank collect", limit=1)
    trace_id = response.json()["traceId"]
    trace = client.get(f"/inspect/{trace_id}")
    assert trace.status_code == 200
    body = trace.json()
    assert body["query"] == "what does Frank collect"
    assert body["containerTag"] == "u-inspect" and body["origin"] == "rest"
    assert body["served"] == [r["versionId"] for r in response.json()["results"]]
    assert {c["content"] for c in body["candidates"]} == {
        "Frank collects vintage stamps",
        "Frank's dog is named Rex",
    }
    assert [c["served"] for c in body["candidates"]].count(True) == 1
    recent = client.get("/inspect", params={"containerTag": "u-inspect"}).json()["traces"]
    assert recent[0]["traceId"] == trace_id
    assert client.get("/inspect/trc_missing").status_code == 404


def test_racing_writers_never_leave_two_latest_versions(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    (seed,) = write(client, "u-race", "Gina's favourite number is 1")

    def correct(n: int) -> int:
        with httpx.Client(base_url=str(client.base_url)) as own:
            return own.post(
                "/memories",
                json={
                    "containerTag": "u-race",
                    "memories": [{"content": f"Gina's favourite number is {n + 2}"}],
                },
            ).status_code

    def patch(n: int) -> int:
        with httpx.Client(base_url=str(client.base_url)) as own:
            return own.patch(
                f"/memories/{seed['id']}",
                json={"content": f"Gina's favourite number is {n + 100}", "expectedVersion": 1},
            ).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        patched = list(pool.map(patch, range(8)))
    assert sorted(patched) == [200] + [409] * 7
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert set(pool.map(correct, range(8))) == {200}

    listed = client.get("/memories", params={"containerTag": "u-race", "limit": 100}).json()
    for memory in listed["memories"]:
        versions = client.get(f"/memories/{memory['id']}").json()["versions"]
        assert [v["version"] for v in versions] == list(range(1, len(versions) + 1))
        assert [v["validTo"] is None for v in versions].count(True) == 1
        for older, newer in itertools.pairwise(versions):
            assert older["validTo"] == newer["validFrom"]


def test_profile_is_set_read_and_replaced(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    empty = client.get("/profile", params={"containerTag": "u-profile"}).json()
    assert (empty["static"], empty["dynamic"], empty["updatedAt"]) == ([], [], None)
    put = client.put(
        "/profile",
        json={
            "containerTag": "u-profile",
            "static": ["Name: Ivy", "Prefers metric units"],
            "dynamic": ["Planning a trip to Lisbon"],
        },
    )
    assert put.status_code == 200, put.text
    got = client.get("/profile", params={"containerTag": "u-profile"}).json()
    assert got["static"] == ["Name: Ivy", "Prefers metric units"]
    assert got["dynamic"] == ["Planning a trip to Lisbon"] and got["updatedAt"]
    client.put("/profile", json={"containerTag": "u-profile", "static": ["Name: Ivy"]})
    again = client.get("/profile", params={"containerTag": "u-profile"}).json()
    assert (again["static"], again["dynamic"]) == (["Name: Ivy"], [])
    assert client.get("/profile").status_code == 400
    bad = client.put("/profile", json={"containerTag": "u-profile", "static": [""]})
    assert bad.status_code == 400


def test_recency_ranks_the_newer_of_an_old_history_first(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    client.post(
        "/memories",
        json={
            "containerTag": "u-history",
            "memories": [
                {"content": "Noor's gym is Iron Temple", "observedAt": "2023-03-01T10:00:00Z"},
                {"content": "Noor trains at Peak Fitness", "observedAt": "2023-11-30T10:00:00Z"},
            ],
        },
    )
    results = search(client, "u-history", "which gym does Noor go to", diversify=False).json()
    contents = [r["content"] for r in results["results"]]
    assert contents[0] == "Noor trains at Peak Fitness", contents


def write_with_context(
    client: httpx.Client, tag: str, content: str, context: object
) -> httpx.Response:
    return client.post(
        "/memories",
        json={"containerTag": tag, "memories": [{"content": content, "context": context}]},
    )


def _position(results: list[dict[str, object]], content: str) -> float:
    contents = [r["content"] for r in results]
    return contents.index(content) if content in contents else float("inf")


def test_a_reply_is_found_by_the_words_of_the_question_it_answers(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    question = "Deborah: How did you come to have Susie, your corn snake?"
    reply = "Jolene: I adopted her two years ago, when I was feeling lonely."
    others = ["Jolene: My new keyboard is great for gaming.", "Deborah: Yoga starts at seven."]
    for tag, context in (("u-context", question), ("u-no-context", None)):
        reply_item: dict[str, object] = {"content": reply}
        if context is not None:
            reply_item["context"] = context
        written = client.post(
            "/memories",
            json={
                "containerTag": tag,
                "memories": [{"content": question}, reply_item, *({"content": o} for o in others)],
            },
        )
        assert written.status_code == 200, written.text
    query = "How did she come to have Susie the snake?"

    def reply_candidate(tag: str) -> dict[str, object]:
        found = search(client, tag, query).json()
        trace = client.get(f"/inspect/{found['traceId']}").json()
        (candidate,) = [c for c in trace["candidates"] if c["content"] == reply]
        return {**candidate, "position": _position(found["results"], reply)}

    # Nothing in the reply's own words matches the query: only its context does, and that
    # match is its keyword score (half the context's BM25).
    with_context, without = reply_candidate("u-context"), reply_candidate("u-no-context")
    assert without["bm25Rank"] is None and without["bm25"] is None
    assert with_context["bm25Rank"] == 2 and isinstance(with_context["bm25"], float)
    assert with_context["context"] == question and without["context"] is None
    assert with_context["position"] <= 1
    served = search(client, "u-context", query).json()["results"]
    assert next(r for r in served if r["content"] == reply)["context"] == question


def test_a_context_is_shown_kept_by_an_edit_and_replaced_when_given(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    written = write_with_context(
        client, "u-context-edit", "Yes, every Sunday", "Do you still go running?"
    )
    memory_id = written.json()["memories"][0]["id"]
    assert client.get(f"/memories/{memory_id}").json()["versions"][0]["context"] == (
        "Do you still go running?"
    )
    kept = client.patch(f"/memories/{memory_id}", json={"content": "Yes, every Saturday"})
    assert [v["context"] for v in kept.json()["versions"]] == ["Do you still go running?"] * 2
    replaced = client.patch(
        f"/memories/{memory_id}",
        json={"content": "Yes, on Saturdays", "context": "Do you still go running on weekends?"},
    )
    assert replaced.json()["versions"][-1]["context"] == "Do you still go running on weekends?"
    listed = client.get("/memories", params={"containerTag": "u-context-edit"}).json()
    assert [m["context"] for m in listed["memories"]] == ["Do you still go running on weekends?"]
    plain = write(client, "u-context-edit", "Running shoes are by the door")
    assert client.get(f"/memories/{plain[0]['id']}").json()["versions"][0]["context"] is None


@pytest.mark.parametrize("context", ["", 42, ["a question"], "x" * 100_001])
def test_a_bad_context_is_refused_and_nothing_is_written(
    server: tuple[httpx.Client, Path], context: object
) -> None:
    client, _ = server
    refused = write_with_context(client, "u-context-bad", "Fine content", context)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_input"
    assert client.get("/memories", params={"containerTag": "u-context-bad"}).json()["total"] == 0


def test_hard_delete_erases_the_context_too(server: tuple[httpx.Client, Path]) -> None:
    client, data_dir = server
    canary = "Where is the spare key, canary-ctx-4471-plugh?"
    written = write_with_context(client, "u-context-erase", "Under the blue flowerpot", canary)
    memory_id = written.json()["memories"][0]["id"]
    found = search(client, "u-context-erase", "spare key plugh").json()["results"]
    assert [r["content"] for r in found] == ["Under the blue flowerpot"]
    assert client.delete(f"/memories/{memory_id}").status_code == 200
    assert client.get(f"/memories/{memory_id}").json()["versions"][0]["context"] is None
    assert search(client, "u-context-erase", "spare key plugh").json()["results"] == []
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert b"canary-ctx-4471" not in path.read_bytes(), path


def test_every_recall_of_this_module_is_reproduced_by_replay(
    server: tuple[httpx.Client, Path],
) -> None:
    """Runs last in this module: every recall the tests above made, re-derived from the log
    (``mnemolog replay --check-traces``), equals its record, or was made unverifiable by an
    erase."""
    client, data_dir = server
    write(client, "replayed", "Noor plays the oud", "Noor's oud is from Cairo")
    for extra in ({}, {"searchMode": "hybrid"}, {"includeForgotten": True, "limit": 3}):
        assert search(client, "replayed", "Noor's instrument", **extra).status_code == 200
    report = replayed_traces(data_dir)
    assert report["differs"] == 0
    assert isinstance(report["exact"], int) and report["exact"] >= 3
    assert report["fidelity"] == 1.0


def test_a_bad_query_parameter_is_named_in_plain_words(
    server: tuple[httpx.Client, Path],
) -> None:
    client, _ = server
    refused = client.get("/memories", params={"limit": "9999"})
    assert refused.status_code == 400
    assert refused.json()["error"] == {
        "code": "invalid_input",
        "message": "query parameter limit: Input should be less than or equal to 500",
    }
    refused = client.get("/documents", params={"offset": "minus one"})
    assert refused.json()["error"]["message"] == (
        "query parameter offset: Input should be a valid integer, unable to parse string as an"
        " integer"
    )


def test_an_unknown_query_parameter_is_refused(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    refused = client.get("/memories", params={"q": "Alice"})
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert message.startswith("unknown query parameter 'q': this route takes ")
    assert "containerTag" in message and "limit" in message
    assert client.get("/memories", params={"limit": "5"}).status_code == 200


def test_a_blank_memory_is_refused(server: tuple[httpx.Client, Path]) -> None:
    client, _ = server
    before = settled_head(client)
    refused = client.post(
        "/memories", json={"containerTag": "u-blank", "memories": [{"content": " \n\t "}]}
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_input"
    assert settled_head(client) == before
