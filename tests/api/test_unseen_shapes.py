"""Write decisions and recall on shapes the labelled corpus does not hold, over a real server:
distinct facts that read like corrections are never hidden nor displaced, corrections written
as people write them rank newer first, a back-dated write never replaces a newer fact, and
diversification only reorders near-duplicates."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from ..servers import mnemolog_server

TIERS = ("quality", "fast")
LIMITS = (3, 5, 10)

# Facts about other people and things, so each ranking below has competition.
FILLERS = (
    "Bob's birthday is on 4 May.",
    "Carla is allergic to shellfish.",
    "Dmitri drives a green Volvo.",
    "The office wifi password is taped inside the kitchen cupboard.",
    "Elena's cat is called Miso.",
    "Farid plays chess on Thursday evenings.",
    "The garden shed needs a new roof before winter.",
    "Grace takes the 7:40 train to work.",
)

Memory = dict[str, object]
Hit = dict[str, object]


class Servers:
    """One ``mnemolog serve`` per embedder tier, started when a test first needs it and
    stopped with the module."""

    def __init__(self, root: Path, stack: ExitStack) -> None:
        self.root = root
        self.stack = stack
        self.clients: dict[str, httpx.Client] = {}

    def client(self, tier: str) -> httpx.Client:
        if tier not in self.clients:
            data_dir = self.root / tier / "data"
            base_url, _ = self.stack.enter_context(
                mnemolog_server(data_dir, env={"MNEMOLOG_EMBEDDER": tier})
            )
            self.clients[tier] = self.stack.enter_context(
                httpx.Client(base_url=base_url, timeout=60)
            )
        return self.clients[tier]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    with ExitStack() as stack:
        yield Servers(tmp_path_factory.mktemp("unseen-shapes"), stack)


@pytest.fixture(params=TIERS)
def tiered(request: pytest.FixtureRequest, servers: Servers) -> httpx.Client:
    """A server of each embedder tier: the behaviour must hold on both."""
    tier: str = request.param
    return servers.client(tier)


@pytest.fixture
def default(servers: Servers) -> httpx.Client:
    """The server of the default tier."""
    return servers.client("quality")


def fresh_tag(name: str) -> str:
    """A container of its own, so no test sees another's memories."""
    return f"u-{name}-{uuid.uuid4().hex[:8]}"


def write(client: httpx.Client, tag: str, content: str, **extra: object) -> Memory:
    """One memory written alone; the write's answer for it."""
    response = client.post(
        "/memories", json={"containerTag": tag, "memories": [{"content": content, **extra}]}
    )
    assert response.status_code == 200, response.text
    (memory,) = response.json()["memories"]
    assert isinstance(memory, dict)
    return memory


def write_fillers(client: httpx.Client, tag: str, fillers: tuple[str, ...] = FILLERS) -> None:
    response = client.post(
        "/memories",
        json={"containerTag": tag, "memories": [{"content": text} for text in fillers]},
    )
    assert response.status_code == 200, response.text
    assert all(m["status"] == "created" for m in response.json()["memories"])


def search(
    client: httpx.Client, tag: str, q: str, limit: int, diversify: bool | None = None
) -> list[Hit]:
    body: dict[str, object] = {"q": q, "containerTag": tag, "limit": limit}
    if diversify is not None:
        body["diversify"] = diversify
    response = client.post("/search", json=body)
    assert response.status_code == 200, response.text
    hits: list[Hit] = response.json()["results"]
    return hits


def position(hits: list[Hit], content: str) -> int | None:
    """The 1-based position of the hit serving ``content``, or None when it is not served."""
    return next((n for n, hit in enumerate(hits, 1) if hit["content"] == content), None)


def listed(client: httpx.Client, tag: str) -> list[Memory]:
    """The live memories of a container, each at its latest version."""
    response = client.get("/memories", params={"containerTag": tag, "limit": 500})
    assert response.status_code == 200, response.text
    memories: list[Memory] = response.json()["memories"]
    return memories


def live_ids(client: httpx.Client, tag: str) -> set[object]:
    return {m["id"] for m in listed(client, tag)}


# Two facts about two things, in the words of a correction: (name, first, second, questions
# naming the first, questions naming the second).
DISTINCT = [
    (
        "people",
        "Alice Moreau moved to Lisbon and now works on the Rust team.",
        "Alice Kowalski moved to Oslo and now works on the Go team.",
        ("Where did Alice Moreau move?", "Which team does Alice Moreau work on?"),
        ("Where did Alice Kowalski move?", "Which team does Alice Kowalski work on?"),
    ),
    (
        "pins",
        "Pin requests to 2.31 in atlas because the license changed upstream.",
        "Pin httpx to 0.27 in borealis because the license changed upstream.",
        ("Which version is requests pinned to in atlas?",),
        ("Which version is httpx pinned to in borealis?",),
    ),
    (
        "shifts",
        "Marta switched to night shifts at the Leeds plant.",
        "Jonas switched to early shifts at the Porto plant.",
        ("Which shift did Marta switch to?",),
        ("Which shift did Jonas switch to?",),
    ),
    (
        "invoices",
        "Invoice 4471 for Acme changed status to paid.",
        "Invoice 5312 for Globex changed status to overdue.",
        ("What is the status of invoice 4471?",),
        ("What is the status of invoice 5312?",),
    ),
]


@pytest.mark.parametrize(
    ("first", "second", "first_questions", "second_questions"),
    [case[1:] for case in DISTINCT],
    ids=[case[0] for case in DISTINCT],
)
def test_a_distinct_fact_is_never_hidden_nor_displaced(
    tiered: httpx.Client,
    first: str,
    second: str,
    first_questions: tuple[str, ...],
    second_questions: tuple[str, ...],
) -> None:
    """A second thing told in the words of a change (*moved*, *now*, *switched*, *changed*)
    is another fact, not a new value of the first: hiding it loses what the user said, and
    either fact must stay the answer to the question that names it."""
    tag = fresh_tag("distinct")
    write_fillers(tiered, tag)
    one = write(tiered, tag, first)
    two = write(tiered, tag, second)
    assert two["status"] == "created", two
    assert two["id"] != one["id"]
    assert {one["id"], two["id"]} <= live_ids(tiered, tag)
    for memory, text, questions in (
        (one, first, first_questions),
        (two, second, second_questions),
    ):
        for q in questions:
            for limit in LIMITS:
                hits = search(tiered, tag, q, limit)
                assert hits, (q, limit)
                top = hits[0]
                assert (top["id"], top["content"]) == (memory["id"], text), (
                    q,
                    limit,
                    [h["content"] for h in hits],
                )


# (name, older, newer, question): corrections as people write them.
CORRECTIONS = [
    (
        "locker",
        "My locker code ends in 4417.",
        "My new locker code ends in 9082.",
        "What does my locker code end in?",
    ),
    ("age", "Priya is 33 years old.", "Priya turned 34 last week.", "How old is Priya?"),
    (
        "dentist",
        "The dentist appointment is on Tuesday at 3pm.",
        "The dentist appointment moved to Friday at 10am.",
        "When is the dentist appointment?",
    ),
    ("job", "Ravi works as a nurse.", "Ravi now works in finance.", "What does Ravi do for work?"),
    (
        "home",
        "Alice now lives in Porto.",
        "Actually Alice moved to Berlin last month.",
        "Where does Alice live?",
    ),
]


@pytest.mark.parametrize(
    ("older", "newer", "question"),
    [case[1:] for case in CORRECTIONS],
    ids=[case[0] for case in CORRECTIONS],
)
def test_a_correction_as_people_write_it_ranks_newer_first(
    tiered: httpx.Client, older: str, newer: str, question: str
) -> None:
    """A correction that names the change in its own words replaces the older value or is at
    least linked to it: recall serves the newer value, ahead of the older one and marking it
    possibly outdated, whatever the limit and with or without diversification."""
    tag = fresh_tag("correction")
    old = write(tiered, tag, older)
    write_fillers(tiered, tag, FILLERS[:5])
    new = write(tiered, tag, newer)
    assert (new["status"] == "superseded" and new["id"] == old["id"]) or (
        new["possiblyUpdates"] == old["id"]
    ), new
    for limit in LIMITS:
        for diversify in (None, False):
            hits = search(tiered, tag, question, limit, diversify)
            where = (limit, diversify, [h["content"] for h in hits])
            newer_at = position(hits, newer)
            older_at = position(hits, older)
            assert newer_at is not None, where
            if older_at is not None:
                assert newer_at < older_at, where
                outdated_by = hits[older_at - 1].get("possiblyOutdatedBy", [])
                assert isinstance(outdated_by, list)
                assert new["id"] in outdated_by, where


# Facts of a large store, none sharing a word with the crowd or the pair below.
_SUBJECTS = "river lantern copper meadow harbor falcon orchard granite velvet canyon".split()  # noqa: SIM905
_VERBS = "needs holds keeps shows lends paints ships trades sorts packs".split()  # noqa: SIM905
_OBJECTS = "boxes ropes tiles jars maps nails pens cups bells seeds".split()  # noqa: SIM905
STORE = tuple(
    f"The {s} shop {v} {o} on aisle {n}."
    for n, (s, v, o) in enumerate((s, v, o) for s in _SUBJECTS for v in _VERBS for o in _OBJECTS)
)[:600]


def test_a_correction_is_linked_in_a_store_crowded_with_its_words(tiered: httpx.Client) -> None:
    """Among many facts that share a correction's common words ("moved to Lisbon last month")
    and a store's worth of others, the correction is still judged against the fact that
    names its thing, linked to it and served first."""
    tag = fresh_tag("crowded")
    older = "Priya Shograi lives in Porto."
    newer = "Actually Priya Shograi moved to Lisbon last month."
    old = write(tiered, tag, older)
    crowd = tuple(
        f"Priya Kor{chr(97 + n // 26)}{chr(97 + n % 26)} moved to Lisbon last month and now works"
        " on the Go team."
        for n in range(40)
    )
    write_fillers(tiered, tag, STORE[:300] + crowd + STORE[300:])
    new = write(tiered, tag, newer)
    assert new["possiblyUpdates"] == old["id"], new
    for limit in LIMITS:
        hits = search(tiered, tag, "Where does Priya Shograi live?", limit)
        assert position(hits, newer) == 1, (limit, [h["content"] for h in hits])


def test_a_back_dated_write_never_replaces_a_newer_fact(default: httpx.Client) -> None:
    """A value observed before the one the memory holds is history, not a correction: it is
    kept beside it, marked outdated by it, and the newer fact stays the served value."""
    tag = fresh_tag("back-dated")
    write_fillers(default, tag)
    tea = write(default, tag, "Zed prefers tea")
    coffee = write(default, tag, "Zed prefers coffee", observedAt="2025-01-01T00:00:00Z")
    assert coffee["status"] != "superseded", coffee
    assert coffee["status"] == "created" and coffee["id"] != tea["id"], coffee
    assert coffee.get("possiblyOutdatedBy") == tea["id"], coffee
    assert coffee["reason"] == "older_fact_time", coffee
    hits = search(default, tag, "What does Zed prefer to drink?", 10)
    assert hits and hits[0]["content"] == "Zed prefers tea", [h["content"] for h in hits]
    coffee_at = position(hits, "Zed prefers coffee")
    assert coffee_at is None or coffee_at > 1
    latest = default.get(f"/memories/{tea['id']}").json()["versions"][-1]
    assert (latest["content"], latest["validTo"]) == ("Zed prefers tea", None)


def test_a_back_dated_named_correction_never_replaces_a_newer_fact(
    default: httpx.Client,
) -> None:
    """Naming the memory does not make an older observation its current value: the chain's
    latest version stays the fact observed last."""
    tag = fresh_tag("back-dated-named")
    write_fillers(default, tag)
    tea = write(default, tag, "Zed prefers tea")
    write(
        default,
        tag,
        "Zed prefers coffee",
        observedAt="2025-01-01T00:00:00Z",
        supersedes=tea["id"],
    )
    hits = search(default, tag, "What does Zed prefer to drink?", 10)
    assert hits and hits[0]["content"] == "Zed prefers tea", [h["content"] for h in hits]
    latest = default.get(f"/memories/{tea['id']}").json()["versions"][-1]
    assert (latest["content"], latest["validTo"]) == ("Zed prefers tea", None)


def test_a_back_dated_edit_never_replaces_a_newer_fact(default: httpx.Client) -> None:
    """PATCH with an older observedAt keeps the chain's latest version: the edit is kept as
    an older memory the chain may update, and a search serves the chain's value first."""
    tag = fresh_tag("back-dated-edit")
    write_fillers(default, tag)
    tea = write(default, tag, "Zed prefers tea")
    patched = default.patch(
        f"/memories/{tea['id']}",
        json={"content": "Zed prefers coffee", "observedAt": "2025-01-01T00:00:00Z"},
    )
    assert patched.status_code == 200, patched.text
    chain = patched.json()
    assert [v["content"] for v in chain["versions"]] == ["Zed prefers tea"]
    (older,) = chain["possiblyUpdates"]
    kept = default.get(f"/memories/{older['id']}").json()
    assert [v["content"] for v in kept["versions"]] == ["Zed prefers coffee"]
    assert [link["id"] for link in kept["possiblyUpdatedBy"]] == [tea["id"]]
    hits = search(default, tag, "What does Zed prefer to drink?", 10)
    assert [h["content"] for h in hits][:2] == ["Zed prefers tea", "Zed prefers coffee"]
    assert hits[1]["possiblyOutdatedBy"] == [tea["id"]]


def test_the_fact_observed_last_is_served_first_whatever_the_write_order(
    default: httpx.Client,
) -> None:
    """A preference observed in July and written after the one observed in December does not
    replace it; asked as of September, the July value is what was true then."""
    tag = fresh_tag("observed-order")
    write_fillers(default, tag)
    write(default, tag, "John prefers dark mode", observedAt="2025-12-01T00:00:00Z")
    write(default, tag, "John prefers light mode", observedAt="2025-07-01T00:00:00Z")
    hits = search(default, tag, "which theme does John prefer", 10)
    assert hits and hits[0]["content"] == "John prefers dark mode", [h["content"] for h in hits]
    response = default.post(
        "/search",
        json={"q": "which theme does John prefer", "containerTag": tag, "factAsOf": "2025-09-01"},
    )
    assert response.status_code == 200, response.text
    then = [h["content"] for h in response.json()["results"]]
    assert then and then[0] == "John prefers light mode", then
    assert "John prefers dark mode" not in then


def alice_container(client: httpx.Client) -> str:
    """Alice's old and new home among other facts about her and about other people."""
    tag = fresh_tag("diversify")
    write(client, tag, "Alice now lives in Porto.")
    for text in (
        "Alice is allergic to peanuts.",
        "Alice's sister is called Jana.",
        "Alice plays the cello.",
    ):
        write(client, tag, text)
    write_fillers(client, tag, FILLERS[:5])
    write(client, tag, "Actually Alice moved to Berlin last month.")
    return tag


@pytest.mark.parametrize("diversify", [None, True], ids=["default", "explicit"])
def test_diversification_reorders_near_duplicates_only(
    default: httpx.Client, diversify: bool | None
) -> None:
    """Diversifying sets a near-duplicate of a served hit back; it must not push the answer
    below a fact about something else just because that fact differs from the rest."""
    tag = alice_container(default)
    for limit in LIMITS:
        hits = search(default, tag, "Where does Alice live?", limit, diversify)
        where = (limit, [h["content"] for h in hits])
        berlin = position(hits, "Actually Alice moved to Berlin last month.")
        peanuts = position(hits, "Alice is allergic to peanuts.")
        assert berlin is not None, where
        assert peanuts is None or berlin < peanuts, where


@pytest.mark.parametrize("diversify", [None, True, False], ids=["default", "on", "off"])
def test_every_hit_carries_its_rank(default: httpx.Client, diversify: bool | None) -> None:
    """``rank`` is the hit's 1-based position in the results, the order to read them in;
    ``score`` is evidence and need not follow it once diversification reorders."""
    tag = alice_container(default)
    for limit in LIMITS:
        hits = search(default, tag, "Where does Alice live?", limit, diversify)
        assert hits
        assert [h.get("rank") for h in hits] == list(range(1, len(hits) + 1)), hits


def test_a_restatement_stays_one_memory(default: httpx.Client) -> None:
    """What already holds: the same words again are a duplicate, and the same words restated
    (only punctuation differs) are the same fact; neither starts a second memory."""
    tag = fresh_tag("restated")
    write_fillers(default, tag)
    dark = write(default, tag, "John prefers dark mode")
    again = write(default, tag, "John prefers  dark mode")
    assert (again["status"], again["id"]) == ("deduplicated", dark["id"]), again
    restated = write(default, tag, "John prefers  dark mode.")
    assert restated["id"] == dark["id"], restated
    assert restated["status"] in {"deduplicated", "superseded"}, restated
    modes = [m["id"] for m in listed(default, tag) if "dark mode" in str(m["content"])]
    assert modes == [dark["id"]], modes


def test_more_detail_replaces_the_older_version(default: httpx.Client) -> None:
    """The same words with more detail (every word the older said kept) are the same fact
    told better: the older version is replaced, not kept beside it."""
    tag = fresh_tag("detail")
    write_fillers(default, tag)
    dog = write(default, tag, "Maya has a dog named Rex")
    rex = write(default, tag, "Maya has a dog named Rex, a beagle")
    assert (rex["status"], rex["id"]) == ("superseded", dog["id"]), rex
