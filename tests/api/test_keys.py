"""API keys and agents over a real server: once a key is live every route but /health needs
one; bad credentials are a 401 that runs nothing; the server stamps each event with the key's
agent; a key scoped to containers reaches nothing else, on any route; keys are in no file of
the data dir and in nothing the server prints."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..servers import MNEMOLOG, add_key, free_port, settled_head, wait_healthy

ENV = {**os.environ, "MNEMOLOG_EMBEDDER": "quality"}


class Store:
    def __init__(self, base_url: str, data_dir: Path, tokens: dict[str, str], log: Path):
        self.base_url = base_url
        self.data_dir = data_dir
        self.tokens = tokens
        self.log = log

    def client(self, agent: str | None) -> httpx.Client:
        headers = {} if agent is None else {"authorization": f"Bearer {self.tokens[agent]}"}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30)

    def head(self) -> int:
        with self.client("admin") as admin:
            return settled_head(admin)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    root = tmp_path_factory.mktemp("keys")
    data_dir = root / "data"
    tokens = {
        "alice": add_key(data_dir, "alice", "a1"),
        "bob": add_key(data_dir, "bob", "b1"),
        "admin": add_key(data_dir, "admin"),
        "root": add_key(data_dir, "root", admin=True),  # may act for the user
    }
    revoked = add_key(data_dir, "carol", "a1")
    key_id = revoked.split("_")[1]
    subprocess.run(
        [MNEMOLOG, "keys", "revoke", key_id, "--data-dir", str(data_dir)],
        capture_output=True,
        env=ENV,
        check=True,
    )
    tokens["carol"] = revoked
    port = free_port()
    log = root / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**ENV, "MNEMOLOG_ACCESS_LOG": "true"},
        )
        try:
            base_url = f"http://127.0.0.1:{port}"
            wait_healthy(base_url, proc)
            yield Store(base_url, data_dir, tokens, log)
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def test_health_stays_open_and_says_keys_are_required(store: Store) -> None:
    with store.client(None) as anyone:
        health = anyone.get("/health")
    assert health.status_code == 200 and health.json()["auth"] == "required"


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Basic YWxpY2U6c2VjcmV0",
        "Bearer mnl_",
        "Bearer not-a-key",
        "Bearer mnl_0123456789abcdef_" + "A" * 43,  # no such key id
        "Bearer " + "x" * 100_000,
        "Token mnl_x",
    ],
)
def test_a_request_without_a_key_that_opens_the_door_is_a_401_and_runs_nothing(
    store: Store, authorization: str | None
) -> None:
    before = store.head()
    headers = {} if authorization is None else {"authorization": authorization}
    with httpx.Client(base_url=store.base_url, headers=headers) as client:
        for method, path, body in (
            ("POST", "/memories", {"containerTag": "a1", "memories": [{"content": "x"}]}),
            ("POST", "/search", {"q": "x", "containerTag": "a1"}),
            ("GET", "/memories", None),
            ("GET", "/openapi.json", None),
            ("GET", "/log/export", None),
        ):
            response = client.request(method, path, json=body)
            assert response.status_code == 401, (authorization, path, response.text)
            assert response.json()["error"]["code"] == "unauthorized"
            assert response.headers["www-authenticate"].startswith("Bearer")
    assert store.head() == before


def test_a_wrong_secret_a_revoked_key_and_non_ascii_bytes_are_refused(store: Store) -> None:
    before = store.head()
    alice = store.tokens["alice"]
    wrong = alice[:-1] + ("A" if alice[-1] != "A" else "B")
    raw_headers = [
        [(b"authorization", f"Bearer {wrong}".encode())],
        [(b"authorization", f"Bearer {store.tokens['carol']}".encode())],
        [(b"authorization", "Bearer mnl_é".encode())],
        [(b"authorization", b"Bearer \xff\xfe")],
        [(b"authorization", f"Bearer {alice}".encode())] * 2,  # two of them
    ]
    for headers in raw_headers:
        response = httpx.post(
            f"{store.base_url}/search",
            json={"q": "x", "containerTag": "a1"},
            headers=httpx.Headers(headers),
        )
        assert response.status_code == 401, (headers, response.text)
    assert store.head() == before


def test_the_server_stamps_the_keys_agent_on_every_event(store: Store) -> None:
    with store.client("alice") as alice, store.client("admin") as admin:
        written = alice.post(
            "/memories",
            json={"containerTag": "a1", "memories": [{"content": "Alice's kiln fires at 1200C"}]},
        )
        assert written.status_code == 200, written.text
        seq = written.json()["memories"][0]["seq"]
        # A body cannot say who it is: the agent comes from the key.
        found = alice.post("/search", json={"q": "kiln", "containerTag": "a1"})
        assert found.status_code == 200
        chain = alice.get(f"/memories/{written.json()['memories'][0]['id']}").json()
        assert chain["versions"][0]["provenance"]["agentId"] == "alice"
        records = admin.get("/log/export", params={"from": seq, "to": seq})
        assert records.status_code == 200, records.text
        assert '"agent_id":"alice"' in records.text.replace(" ", "")


def _alice_things(store: Store) -> dict[str, str]:
    with store.client("alice") as alice:
        written = alice.post(
            "/memories",
            json={"containerTag": "a1", "memories": [{"content": "The a1 vault code is 7"}]},
        ).json()["memories"][0]
        alice.patch(f"/memories/{written['id']}", json={"content": "The a1 vault code is 8"})
        trace = alice.post("/search", json={"q": "vault", "containerTag": "a1"}).json()
        document = alice.post(
            "/documents", json={"containerTag": "a1", "content": "Alice's notes on the vault."}
        ).json()
        chain = alice.get(f"/memories/{written['id']}").json()
    return {
        "memory": written["id"],
        "old_version": chain["versions"][0]["versionId"],
        "trace": trace["traceId"],
        "document": document["id"],
    }


def test_a_key_scoped_to_containers_reaches_no_other_on_any_route(store: Store) -> None:
    ids = _alice_things(store)
    m, t, d = ids["memory"], ids["trace"], ids["document"]
    refused = [
        ("POST", "/memories", {"containerTag": "a1", "memories": [{"content": "bob was here"}]}),
        ("POST", "/search", {"q": "vault", "containerTag": "a1"}),
        ("POST", "/search", {"q": "vault"}),  # every container
        ("GET", "/memories?containerTag=a1", None),
        ("GET", "/memories", None),
        ("GET", f"/memories/{m}", None),
        ("PATCH", f"/memories/{m}", {"content": "bob's code"}),
        ("POST", f"/memories/{m}/forget", {"reason": "bob"}),
        ("POST", f"/memories/{m}/restore", None),
        ("POST", f"/memories/{m}/split", {"versionId": ids["old_version"]}),
        ("DELETE", f"/memories/{m}", None),
        ("DELETE", "/containers/a1", None),
        ("DELETE", f"/documents/{d}", None),
        ("DELETE", "/profile?containerTag=a1", None),
        ("POST", "/documents", {"containerTag": "a1", "content": "bob's doc"}),
        ("GET", "/documents?containerTag=a1", None),
        ("GET", "/documents", None),
        ("GET", f"/documents/{d}", None),
        ("GET", "/profile?containerTag=a1", None),
        ("PUT", "/profile", {"containerTag": "a1", "static": ["bob"]}),
        ("GET", "/export?containerTag=a1", None),
        ("GET", "/export", None),
        ("GET", "/inspect?containerTag=a1", None),
        ("GET", "/inspect", None),
        ("GET", f"/inspect/{t}", None),
        ("GET", "/events", None),
        ("GET", "/log/export", None),
        (
            "POST",
            "/v1/chat/completions",
            {
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "mnemolog": {"containerTag": "a1"},
            },
        ),
    ]
    before = store.head()
    with store.client("bob") as bob:
        for method, path, body in refused:
            response = bob.request(method, path, json=body)
            assert response.status_code in (403, 404), (method, path, response.text)
            assert response.json()["error"]["code"] in ("container_forbidden", "not_found")
            assert "vault code" not in response.text, (method, path)
        imported = bob.post(
            "/import",
            json={
                "format": "bellamente-export",
                "version": 1,
                "exportedAt": "2026-01-01T00:00:00Z",
                "memories": [
                    {
                        "id": "mem_x",
                        "containerTag": "a1",
                        "versions": [
                            {"version": 1, "content": "bob", "validFrom": "2026-01-01T00:00:00Z"}
                        ],
                    }
                ],
            },
        )
        assert imported.status_code == 403, imported.text
        # Its own container is open to it.
        own = bob.post(
            "/memories", json={"containerTag": "b1", "memories": [{"content": "Bob's bike"}]}
        )
        assert own.status_code == 200, own.text
    assert store.head() == before + 1
    with store.client("alice") as alice:
        assert alice.get(f"/memories/{m}").status_code == 200
        assert alice.get("/inspect", params={"containerTag": "b1"}).status_code == 403
        found = alice.post("/search", json={"q": "Bob's bike", "containerTag": "a1"}).json()
        assert all("Bob" not in r["content"] for r in found["results"])


def test_no_key_is_in_any_file_of_the_data_dir_or_in_what_the_server_printed(
    store: Store,
) -> None:
    with store.client("alice") as alice:
        alice.post("/search", json={"q": "anything", "containerTag": "a1"})
    printed = store.log.read_bytes()
    for token in store.tokens.values():
        secret = token.split("_", 2)[2].encode()
        assert secret not in printed
        for path in store.data_dir.rglob("*"):
            if path.is_file():
                assert secret not in path.read_bytes(), path


def test_a_server_on_another_address_without_keys_refuses_to_start(tmp_path: Path) -> None:
    done = subprocess.run(
        [MNEMOLOG, "serve", "--data-dir", str(tmp_path / "d"), "--host", "0.0.0.0", "--port", "1"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "no API key" in done.stderr


def test_an_admin_revokes_a_key_while_the_server_runs_but_never_the_last(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    tokens = {
        "boss": add_key(data_dir, "boss", admin=True),
        "dave": add_key(data_dir, "dave"),
        "erin": add_key(data_dir, "erin", "e1"),
    }
    key_id = {agent: token.split("_")[1] for agent, token in tokens.items()}
    port = free_port()
    proc = subprocess.Popen(
        [MNEMOLOG, "serve", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=ENV,
    )
    try:
        everyone = {**tokens, "admin": tokens["boss"]}  # Store.head asks as "admin"
        store = Store(f"http://127.0.0.1:{port}", data_dir, everyone, tmp_path)
        wait_healthy(store.base_url, proc)
        with store.client("boss") as boss, store.client("dave") as dave:
            assert dave.get("/memories").status_code == 200
            before = store.head()
            with store.client("erin") as erin:
                refused = erin.delete(f"/agents/dave/keys/{key_id['dave']}")
            assert (refused.status_code, refused.json()["error"]["code"]) == (403, "admin_required")
            for path in (
                f"/agents/erin/keys/{key_id['dave']}",  # not erin's key
                "/agents/dave/keys/0123456789abcdef",  # no such key
            ):
                missing = boss.delete(path)
                assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
            assert store.head() == before

            # An event stream dave opened ends with the revocation: not one event more.
            with store.client("dave") as follower, follower.stream("GET", "/events") as stream:
                lines = stream.iter_lines()
                assert next(lines).startswith("retry:")
                revoked = boss.delete(f"/agents/dave/keys/{key_id['dave']}")
                after = list(lines)  # the server ends the response: no read timeout
            assert not [line for line in after if line.startswith(("data:", "id:"))], after
            assert revoked.status_code == 200, revoked.text
            assert revoked.json() == {
                "keyId": key_id["dave"],
                "agentId": "dave",
                "revoked": True,
                "seq": before + 1,
            }
            gone = dave.get("/memories")  # at once: no restart
            assert (gone.status_code, gone.json()["error"]["code"]) == (401, "unauthorized")
            again = boss.delete(f"/agents/dave/keys/{key_id['dave']}")
            assert again.status_code == 404
            listed = boss.get("/agents/dave").json()["keys"]
            assert [k["live"] for k in listed] == [False]

            assert boss.delete(f"/agents/erin/keys/{key_id['erin']}").status_code == 200
            head = store.head()
            last = boss.delete(f"/agents/boss/keys/{key_id['boss']}")
            assert (last.status_code, last.json()["error"]["code"]) == (409, "last_live_key")
            assert store.head() == head
            assert boss.get("/health").json()["auth"] == "required"
            with store.client(None) as anyone:
                assert anyone.get("/memories").status_code == 401  # the door stays shut
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_an_import_cannot_tell_another_tenants_ids_from_unknown_ones(store: Store) -> None:
    with store.client("bob") as bob:
        written = bob.post(
            "/memories", json={"containerTag": "b1", "memories": [{"content": "Bob's oar"}]}
        ).json()["memories"][0]
        document = bob.post("/documents", json={"containerTag": "b1", "content": "Bob's log"})
        bobs = {"memory": written["id"], "document": document.json()["id"]}

    def chain(source: str, text: str) -> dict[str, object]:
        version = {"version": 1, "content": text, "validFrom": "2026-01-01T00:00:00Z"}
        return {"id": source, "containerTag": "a1", "versions": [version]}

    def document_of(source: str, text: str) -> dict[str, object]:
        return {"id": source, "containerTag": "a1", "content": text}

    envelope = {
        "format": "bellamente-export",
        "version": 1,
        "exportedAt": "2026-01-01T00:00:00Z",
        "memories": [
            chain(bobs["memory"], "Alice's oar"),
            chain("mem_00000000000000000000000000000000", "Alice's paddle"),
        ],
        "documents": [
            document_of(bobs["document"], "Alice's log"),
            document_of("doc_00000000000000000000000000000000", "Alice's diary"),
        ],
    }
    with store.client("alice") as alice:
        response = alice.post("/import", json=envelope)
        assert response.status_code == 200, response.text
        report = response.json()
    for kind in ("memories", "documents"):
        foreign, unknown = report[kind]
        assert foreign["status"] == unknown["status"] == "imported", report
        assert foreign.get("reason") == unknown.get("reason") is None
        assert foreign["id"] != foreign["sourceId"]  # a fresh id, not bob's


def test_keys_list_json_is_camel_case_as_the_api_is(store: Store) -> None:
    done = subprocess.run(
        [MNEMOLOG, "keys", "list", "--json", "--data-dir", str(store.data_dir)],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
        timeout=60,
    )
    listed = json.loads(done.stdout)
    alice = next(k for k in listed if k["agentId"] == "alice")
    assert set(alice) == {"keyId", "agentId", "containers", "createdAt", "revokedAt", "admin"}
    assert alice["containers"] == ["a1"] and alice["revokedAt"] is None


def keys_add_beside(store: Store, key: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in ENV.items() if k != "MNEMOLOG_API_KEY"}
    if key is not None:
        env["MNEMOLOG_API_KEY"] = key
    return subprocess.run(
        [MNEMOLOG, "keys", "add", *args, "--data-dir", str(store.data_dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_keys_add_beside_a_running_server_asks_it(store: Store) -> None:
    done = keys_add_beside(store, store.tokens["root"], "dave", "--container", "d1")
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("mnl_") and token not in done.stderr
    assert "for agent dave (d1); shown once" in done.stderr
    with httpx.Client(
        base_url=store.base_url, headers={"Authorization": f"Bearer {token}"}
    ) as dave:
        assert dave.get("/memories", params={"containerTag": "d1"}).status_code == 200
        assert dave.get("/memories", params={"containerTag": "a1"}).status_code == 403
    with store.client("root") as root:
        agents = root.get("/agents/dave").json()
    assert [k["containers"] for k in agents["keys"]] == [["d1"]]


def test_keys_add_beside_a_server_needs_an_admin_key(store: Store) -> None:
    before = store.head()
    missing = keys_add_beside(store, None, "eve")
    assert missing.returncode == 1 and '"unauthorized"' in missing.stderr
    scoped = keys_add_beside(store, store.tokens["alice"], "eve")
    assert scoped.returncode == 1 and '"admin_required"' in scoped.stderr
    unscoped = keys_add_beside(store, store.tokens["admin"], "eve")  # every container, no admin
    assert unscoped.returncode == 1 and '"admin_required"' in unscoped.stderr
    assert missing.stdout == scoped.stdout == unscoped.stdout == ""
    assert store.head() == before
