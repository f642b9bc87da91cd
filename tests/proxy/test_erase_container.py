"""Erasing a whole container (a user), a document and a profile, over a real server: every text
written to it, by every surface, leaves the data directory (live, after a rebuild, after a
backup and restore), and another container keeps its data, its searches and its traces."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from mnemolog.eventlog.events import ContainerErased, SubjectErased

from ..servers import MNEMOLOG
from .conftest import Proxy, scripted, start_proxy
from .scripted import Reply

__all__ = ["scripted"]  # the scripted upstream fixture, used through ``eraser``

GONE, KEPT = "u-gone", "u-kept"


def canaries(tag: str) -> dict[str, str]:
    """One made-up word per surface, unique to the container: what must go, or stay."""
    mark = "zq" if tag == GONE else "kx"
    surfaces = [
        *("memory", "correction", "split", "forgot", "query", "tool", "capture", "profile"),
        "model",  # the model a client names through the proxy
    ]
    # Letters only: a word mixing letters and digits is masked as a possible secret.
    return {surface: f"{mark}{surface}vel" for surface in [*surfaces, "doc"]}


@pytest.fixture(scope="module")
def eraser(tmp_path_factory: pytest.TempPathFactory, scripted: Any) -> Iterator[Proxy]:
    data_dir = tmp_path_factory.mktemp("erase") / "data"
    yield from start_proxy(data_dir, scripted, capture=True)


def post(proxy: Proxy, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{proxy.base_url}{path}", json=body, timeout=60)
    assert response.status_code in (200, 201), response.text
    found: dict[str, Any] = response.json()
    return found


def chat(proxy: Proxy, tag: str, text: str, **headers: str) -> None:
    with openai.OpenAI(
        base_url=proxy.v1,
        api_key="k",
        max_retries=0,
        default_headers={"x-mnemolog-container-tag": tag, **headers},
    ) as client:
        model = canaries(tag)["model"]
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])


def fill(proxy: Proxy, tag: str) -> list[str]:
    """Write to ``tag`` through every surface; the recall trace ids it made."""
    words = canaries(tag)

    def write(content: str, **extra: Any) -> dict[str, Any]:
        body = {"containerTag": tag, "memories": [{"content": content, **extra}]}
        memory: dict[str, Any] = post(proxy, "/memories", body)["memories"][0]
        return memory

    write(f"Ada keeps a {words['memory']} in the attic.")
    older = write("The garden gate code is 4417.")
    write(f"The garden gate code is {words['correction']}.", supersedes=older["id"])
    hidden = write(f"The shed lamp is {words['split']}.")
    write("The shed lamp is green.", supersedes=hidden["id"])
    split = post(proxy, f"/memories/{hidden['id']}/split", {"versionId": hidden["versionId"]})
    assert split["id"] != hidden["id"]
    forgotten = write(f"Ada once owned a {words['forgot']}.")
    post(proxy, f"/memories/{forgotten['id']}/forget", {"reason": f"why {words['forgot']}"})
    traces = [
        post(proxy, "/search", {"q": f"where is the {words['query']}", "containerTag": tag})[
            "traceId"
        ]
    ]
    proxy.upstream.script(
        Reply(content=None, calls=[("searchMemory", {"query": f"the {words['tool']}"})]),
        Reply(content="Noted."),
    )
    chat(proxy, tag, "What do you know about the attic?")
    chat(
        proxy,
        tag,
        f"I live in {words['capture'].capitalize()} with my sister.",
        **{"x-mnemolog-capture": "on"},
    )
    response = httpx.put(
        f"{proxy.base_url}/profile",
        json={"containerTag": tag, "static": [f"Likes {words['profile']}"], "dynamic": []},
    )
    assert response.status_code == 200, response.text
    post(proxy, "/documents", {"containerTag": tag, "content": f"A note on the {words['doc']}."})
    return traces


def holders(root: Path, needle: str) -> list[Path]:
    """The files under ``root`` holding ``needle`` in any case."""
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes().lower()
            if needle.encode() in data:
                found.append(path)
    return found


def leftovers(root: Path, tag: str) -> dict[str, list[Path]]:
    return {word: found for word in canaries(tag).values() if (found := holders(root, word))}


def head(proxy: Proxy) -> int:
    return proxy.runtime.log.head().seq


def kept_view(proxy: Proxy) -> list[Any]:
    """What the other container serves: its memories, profile, documents and a search."""
    base = proxy.base_url
    return [
        httpx.get(f"{base}/memories", params={"containerTag": KEPT, "limit": 100}).json(),
        httpx.get(f"{base}/profile", params={"containerTag": KEPT}).json(),
        httpx.get(f"{base}/documents", params={"containerTag": KEPT}).json()["documents"],
        [
            (hit["id"], hit["content"])
            for hit in post(proxy, "/search", {"q": "garden gate code", "containerTag": KEPT})[
                "results"
            ]
        ],
    ]


def turn_models(proxy: Proxy, tag: str) -> list[str | None]:
    """The model each proxied turn of ``tag`` names, as ``/inspect`` lists them and shows one."""
    listed = httpx.get(
        f"{proxy.base_url}/inspect", params={"containerTag": tag, "type": "turn"}
    ).json()["traces"]
    shown = httpx.get(f"{proxy.base_url}/inspect/{listed[0]['traceId']}").json()
    return [t["model"] for t in listed] + [shown["model"]]


def test_erasing_a_container_leaves_nothing_of_it(eraser: Proxy, tmp_path: Path) -> None:
    fill(eraser, GONE)
    fill(eraser, KEPT)
    assert leftovers(eraser.data_dir, GONE), "the canaries must be findable before the erasure"
    assert turn_models(eraser, GONE) == [canaries(GONE)["model"]] * 3
    before = kept_view(eraser)

    response = httpx.delete(f"{eraser.base_url}/containers/{GONE}", timeout=120)
    assert response.status_code == 200, response.text
    receipt = response.json()
    assert receipt["containerTag"] == GONE and receipt["repeated"] is False
    destroyed = receipt["destroyed"]
    assert destroyed["memories"] >= 6 and destroyed["versions"] >= 8
    assert (destroyed["documents"], destroyed["profile"]) == (1, True)
    assert destroyed["recalls"] >= 2 and destroyed["turns"] >= 1

    # Nothing of it is served, and nothing of it is left on disk.
    base = eraser.base_url
    assert httpx.get(f"{base}/memories", params={"containerTag": GONE}).json()["memories"] == []
    assert httpx.get(f"{base}/profile", params={"containerTag": GONE}).json()["static"] == []
    assert httpx.get(f"{base}/documents", params={"containerTag": GONE}).json()["documents"] == []
    assert leftovers(eraser.data_dir, GONE) == {}
    assert turn_models(eraser, GONE) == [None] * 3  # the turns stay, without their model
    # The other container is as it was, and still holds its own words.
    assert kept_view(eraser) == before
    assert turn_models(eraser, KEPT) == [canaries(KEPT)["model"]] * 3
    assert set(leftovers(eraser.data_dir, KEPT)) == set(canaries(KEPT).values())

    # Idempotent: the same receipt again, and nothing appended.
    at = head(eraser)
    again = httpx.delete(f"{base}/containers/{GONE}", timeout=60)
    assert again.status_code == 200
    assert {**again.json(), "repeated": False} == receipt and again.json()["repeated"] is True
    assert head(eraser) == at

    # One event per subject destroyed, then the receipt, with no text.
    events = [stored.record.event for stored in eraser.runtime.log.read()]
    receipts = [e for e in events if isinstance(e, ContainerErased)]
    assert len(receipts) == 1 and receipts[0].memories == destroyed["memories"]
    scopes = [e.scope for e in events if isinstance(e, SubjectErased) and e.container_tag == GONE]
    assert scopes.count("memory") == destroyed["memories"]
    assert {"document", "profile", "container"} <= set(scopes)

    # A write afterwards starts a fresh subject, and a later erasure takes it too.
    fresh = "Ada now keeps a zqfreshvel in the cellar."
    post(eraser, "/memories", {"containerTag": GONE, "memories": [{"content": fresh}]})
    hits = post(eraser, "/search", {"q": "what is in the cellar", "containerTag": GONE})
    assert [h["content"] for h in hits["results"]] == [fresh]
    later = httpx.delete(f"{base}/containers/{GONE}", timeout=60).json()
    assert later["repeated"] is False and later["destroyed"]["memories"] == 1
    assert holders(eraser.data_dir, "zqfreshvel") == []

    verified = subprocess.run(
        [MNEMOLOG, "verify-log", "--data-dir", str(eraser.data_dir)],
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stderr
    exported = subprocess.run(
        [MNEMOLOG, "export-log", "--data-dir", str(eraser.data_dir)],
        capture_output=True,
        check=True,
    ).stdout.lower()
    assert not [w for w in canaries(GONE).values() if w.encode() in exported]


def test_a_backup_and_a_rebuild_hold_nothing_of_an_erased_container(
    eraser: Proxy, tmp_path: Path
) -> None:
    backup = tmp_path / "backup"
    done = subprocess.run(
        [MNEMOLOG, "backup", str(backup), "--data-dir", str(eraser.data_dir)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    restored = tmp_path / "restored"
    done = subprocess.run(
        [MNEMOLOG, "restore", str(backup), "--data-dir", str(restored)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    # The backup holds the log and the keys, sealed; the restore folds them out again: the
    # other container's words are all back, none of the erased one's.
    assert leftovers(backup, GONE) == {}
    assert leftovers(restored, GONE) == {}
    assert set(leftovers(restored, KEPT)) == set(canaries(KEPT).values())
    done = subprocess.run(
        [MNEMOLOG, "rebuild", "--data-dir", str(restored)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert leftovers(restored, GONE) == {}


def test_a_document_and_a_profile_are_erased_alone(eraser: Proxy) -> None:
    tag = "u-parts"
    base = eraser.base_url
    kept = "A recipe for zqkeptpie."
    post(eraser, "/memories", {"containerTag": tag, "memories": [{"content": kept}]})
    doc = post(eraser, "/documents", {"containerTag": tag, "content": "The zqmanualdoc says hi."})
    other = post(eraser, "/documents", {"containerTag": tag, "content": "The zqotherdoc stays."})
    assert (
        httpx.put(
            f"{base}/profile", json={"containerTag": tag, "static": ["Likes zqprofiletea"]}
        ).status_code
        == 200
    )

    gone = httpx.delete(f"{base}/documents/{doc['id']}")
    assert gone.status_code == 200 and gone.json()["erased"] is True
    assert httpx.get(f"{base}/documents/{doc['id']}").json()["content"] is None
    assert httpx.delete(f"{base}/documents/{doc['id']}").status_code == 410
    assert holders(eraser.data_dir, "zqmanualdoc") == []
    assert holders(eraser.data_dir, "zqotherdoc")

    erased = httpx.delete(f"{base}/profile", params={"containerTag": tag})
    assert erased.status_code == 200, erased.text
    assert httpx.get(f"{base}/profile", params={"containerTag": tag}).json()["static"] == []
    assert holders(eraser.data_dir, "zqprofiletea") == []
    assert httpx.delete(f"{base}/profile", params={"containerTag": tag}).status_code == 404
    # The container's memories and its other document are untouched; a new profile works.
    assert [
        m["content"]
        for m in httpx.get(f"{base}/memories", params={"containerTag": tag}).json()["memories"]
    ] == [kept]
    assert httpx.get(f"{base}/documents/{other['id']}").json()["content"]
    assert httpx.put(
        f"{base}/profile", json={"containerTag": tag, "static": ["Likes coffee"]}
    ).json()["static"] == ["Likes coffee"]


@pytest.mark.parametrize(
    ("method", "path", "params", "status"),
    [
        ("DELETE", "/containers/u-never-written", {}, 404),
        ("DELETE", "/documents/doc_0123456789abcdef", {}, 404),
        ("DELETE", "/profile", {"containerTag": "u-never-written"}, 404),
        ("DELETE", "/profile", {}, 400),
        ("DELETE", "/containers/" + "x" * 300, {}, 400),
    ],
)
def test_bad_erasures_are_refused_and_write_nothing(
    eraser: Proxy, method: str, path: str, params: dict[str, str], status: int
) -> None:
    at = head(eraser)
    response = httpx.request(method, f"{eraser.base_url}{path}", params=params)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"]
    assert head(eraser) == at
