"""``GET /ranker`` and ``POST /ranker/train`` over a real server: feedback sent over REST
trains a model that is promoted and shown with its weights; only the user or an admin key may
train, a scoped key sees only its containers, and a bad body is a 4xx that appends nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from mnemolog.api import create_app
from mnemolog.eventlog import Actor
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..servers import app_server, settled_head

CLI = Actor(agent_id="local", protocol="cli")
QUERY = "what does Sam like to eat for dinner"
FOODS = ["pasta", "rice", "soup", "tacos", "curry", "salad", "pizza", "ramen", "stew", "fish"]


@dataclass
class Store:
    base_url: str
    tokens: dict[str, str]

    def client(self, agent: str) -> httpx.Client:
        headers = {"authorization": f"Bearer {self.tokens[agent]}"}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=60)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    data_dir = tmp_path_factory.mktemp("ranker") / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="fast", ranker_train_every=0))
    try:
        agents = runtime.core.agents
        tokens = {
            "helper": agents.add("helper", None, CLI).token,
            "scoped": agents.add("scoped", ["elsewhere"], CLI).token,
            "boss": agents.add("boss", None, CLI, admin=True).token,
        }
        with app_server(create_app(runtime)) as base_url:
            yield Store(base_url, tokens)
    finally:
        runtime.close()


def search(client: httpx.Client) -> dict[str, object]:
    response = client.post("/search", json={"q": QUERY, "containerTag": "home", "limit": 5})
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def test_feedback_over_rest_trains_a_model_that_ranker_shows(store: Store) -> None:
    with store.client("helper") as helper, store.client("boss") as boss:
        memories = [
            {"content": f"Sam likes {f} for dinner on day {i}"} for i, f in enumerate(FOODS)
        ]
        written = helper.post("/memories", json={"containerTag": "home", "memories": memories})
        assert written.status_code == 200, written.text
        assert boss.get("/ranker").json() == {"global": None, "containers": []}

        first = search(helper)
        chosen = first["results"][3]["versionId"]  # type: ignore[index]
        for _ in range(60):
            found = search(helper)
            versions = [hit["versionId"] for hit in found["results"]]  # type: ignore[attr-defined]
            used = [chosen] if chosen in versions else []
            marked = helper.post(f"/recalls/{found['traceId']}/used", json={"versionIds": used})
            assert marked.status_code == 200, marked.text

        refused = helper.post("/ranker/train", json={})
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "admin_required"
        head = settled_head(boss)
        for body in ({"containerTag": ""}, {"containerTag": 3}, {"other": 1}, [1]):
            bad = boss.post("/ranker/train", json=body)
            assert bad.status_code == 400, (body, bad.text)
        assert settled_head(boss) == head

        trained = boss.post("/ranker/train")  # an empty body: every container
        assert trained.status_code == 200, trained.text
        home = next(t for t in trained.json()["trained"] if t["containerTag"] == "home")
        assert home["promoted"], home["reason"]

        shown = boss.get("/ranker").json()
        (container,) = shown["containers"]
        assert container["containerTag"] == "home"
        assert container["serving"] == "container"
        assert container["model"]["digest"] == home["digest"]
        assert container["model"]["reproduced"] is True
        assert container["model"]["weights"]["used_alike"] != 0
        # The first recall came before any feedback in the container: it logged no features,
        # so its use labels nothing (and costs nothing); the 59 after it count.
        assert container["feedback"]["counted"] == 59
        assert [d["kind"] for d in container["decisions"]][:2] == ["promoted", "trained"]

        ranked = search(boss)  # an agent that gives no feedback: never explored on
        assert ranked["results"][0]["versionId"] == chosen  # type: ignore[index]

    with store.client("scoped") as scoped:
        assert scoped.get("/ranker").json()["containers"] == []
        assert scoped.get("/ranker", params={"containerTag": "home"}).status_code == 403
