"""``saveMemory``: the model states a fact, or corrects a memory it was shown, through the proxy
and the domain's write decision; the real ``openai`` client against mnemolog on loopback, in
front of a scripted upstream speaking the wire formats of real servers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from mnemolog.eventlog.events import MemorySuperseded, MemoryWritten, ProxyTurn

from ..servers import replayed_traces
from .conftest import Proxy, start_proxy
from .scripted import PERSONAS, Reply, ScriptedUpstream

SAVE = "saveMemory"
SEARCH = "searchMemory"


@pytest.fixture(scope="module")
def hasty_saver(
    tmp_path_factory: pytest.TempPathFactory, scripted: tuple[ScriptedUpstream, str]
) -> Iterator[Proxy]:
    """A proxy offering ``saveMemory``, with a short recall (and save) timeout."""
    data_dir = tmp_path_factory.mktemp("hasty") / "data"
    yield from start_proxy(data_dir, scripted, proxy_save_tool=True, proxy_recall_timeout=0.3)


def ask(
    proxy: Proxy, tag: str, text: str, *, stream: bool = False, **create: Any
) -> tuple[str, httpx.Headers]:
    """One turn; the answer's text (or its client calls as JSON) and the headers."""
    with openai.OpenAI(
        base_url=proxy.v1,
        api_key="k",
        max_retries=0,
        default_headers={"x-mnemolog-container-tag": tag},
    ) as client:
        messages: Any = [{"role": "user", "content": text}]
        if not stream:
            raw = client.chat.completions.with_raw_response.create(
                model="m", messages=messages, **create
            )
            message = raw.parse().choices[0].message
            if message.tool_calls:
                calls = [(c.function.name, c.function.arguments) for c in message.tool_calls]
                return json.dumps(calls), raw.headers
            return message.content or "", raw.headers
        with client.chat.completions.with_streaming_response.create(
            model="m", messages=messages, stream=True, **create
        ) as response:
            chunks = [c for c in response.parse() if c.choices]
            assert chunks[-1].choices[0].finish_reason in ("stop", "tool_calls")
            return "".join(c.choices[0].delta.content or "" for c in chunks), response.headers


def remember(proxy: Proxy, tag: str, content: str) -> dict[str, Any]:
    response = httpx.post(
        f"{proxy.base_url}/memories",
        json={"containerTag": tag, "memories": [{"content": content}]},
    )
    assert response.status_code == 200, response.text
    written: dict[str, Any] = response.json()["memories"][0]
    return written


def live(proxy: Proxy, tag: str) -> list[str]:
    """The latest text of every live memory of a container."""
    response = httpx.get(f"{proxy.base_url}/memories", params={"containerTag": tag})
    assert response.status_code == 200, response.text
    return sorted(m["content"] for m in response.json()["memories"])


def inspect(proxy: Proxy, turn_id: str) -> dict[str, Any]:
    response = httpx.get(f"{proxy.base_url}/inspect/{turn_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def last_tool_result(body: dict[str, Any]) -> str:
    """The content of the last tool message of an upstream request."""
    return str([m for m in body["messages"] if m["role"] == "tool"][-1]["content"])


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def save_call(content: str, replaces: object = None) -> tuple[str, dict[str, Any]]:
    arguments: dict[str, Any] = {"content": content}
    if replaces is not None:
        arguments["replaces"] = replaces
    return (SAVE, arguments)


def correction_turn(proxy: Proxy, tag: str, *, stream: bool) -> tuple[str, httpx.Headers]:
    """Search shows the old memory as number 1; the model replaces it (only once it saw it)."""

    def correct(body: dict[str, Any]) -> Reply:
        shown = last_tool_result(body)
        assert "\n1. [" in shown and "John prefers dark mode" in shown, shown
        return Reply(content=None, calls=[save_call("John prefers light mode", 1)])

    proxy.upstream.script(
        Reply(content=None, calls=[(SEARCH, {"query": "theme preference"})]),
        correct,
        Reply(content="Noted: light mode from now on."),
    )
    return ask(proxy, tag, "I switched: I prefer light mode now.", stream=stream)


# --- a correction, a plain save --------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("persona", PERSONAS)
def test_a_correction_replaces_the_memory_that_was_shown(
    saving: Proxy, persona: str, stream: bool
) -> None:
    tag = f"u-correct-{persona}-{stream}"
    old = remember(saving, tag, "John prefers dark mode")
    saving.upstream.reset(persona)
    text, headers = correction_turn(saving, tag, stream=stream)
    assert text == "Noted: light mode from now on."
    assert headers["x-mnemolog-degraded"] == "none"
    assert headers["x-mnemolog-memory-rounds"] == "2"
    first, second, third = saving.upstream.chats()
    assert tool_names(first.json) == [SEARCH, SAVE]
    assert tool_names(second.json) == [SEARCH, SAVE]
    assert "tools" not in third.json  # the cap: two memory rounds
    assert last_tool_result(third.json) == "Saved: it replaces memory 1."
    chain = httpx.get(f"{saving.base_url}/memories/{old['id']}").json()
    assert chain["latestVersion"] == 2
    assert [v["content"] for v in chain["versions"]] == [
        "John prefers dark mode",
        "John prefers light mode",
    ]
    latest = chain["versions"][1]
    assert latest["provenance"]["protocol"] == "proxy"
    assert latest["metadata"] == {"source": "saveMemory", "traceId": headers["x-mnemolog-trace-id"]}
    assert live(saving, tag) == ["John prefers light mode"]
    # The log says it was the named correction: superseded, by the explicit rule.
    (event,) = [
        s.record.event
        for s in saving.runtime.log.read()
        if isinstance(s.record.event, MemorySuperseded) and s.record.event.memory_id == old["id"]
    ]
    assert event.version == 2 and event.evidence.rule == "explicit"
    assert event.supersedes_version_id == old["versionId"]
    # The trace shows the save.
    trace = inspect(saving, headers["x-mnemolog-trace-id"])
    rounds = trace["rounds"]
    assert [r["decision"] for r in rounds] == ["memory", "memory", "answer"]
    assert [(r["memoryCalls"], r["saveCalls"]) for r in rounds] == [(1, 0), (1, 1), (0, 0)]
    assert rounds[1]["saved"] == [event.version_id]
    assert rounds[1]["arguments"] is None  # no searchMemory call in that round
    assert rounds[1]["saveReplaces"] == [1]
    assert rounds[0]["saveReplaces"] == [] and rounds[0]["saved"] == []
    # A later search serves the new text only.
    saving.upstream.script(
        Reply(content=None, calls=[(SEARCH, {"query": "John theme"})]),
        Reply(content="Light mode."),
    )
    assert ask(saving, tag, "Which theme do I like?", stream=stream)[0] == "Light mode."
    served = last_tool_result(saving.upstream.chats()[4].json)
    assert "John prefers light mode" in served and "dark mode" not in served


def test_replaces_names_the_memory_whatever_the_words(saving: Proxy) -> None:
    """A loose paraphrase the write decision alone would keep beside the old memory."""
    tag = "u-paraphrase"
    old = remember(saving, tag, "I like my coffee black")
    saving.upstream.script(
        Reply(content=None, calls=[(SEARCH, {"query": "coffee"})]),
        Reply(content=None, calls=[save_call("I take oat milk in it these days", "1")]),
        Reply(content="Oat milk it is."),
    )
    assert ask(saving, tag, "No more black coffee: oat milk now.")[0] == "Oat milk it is."
    assert last_tool_result(saving.upstream.chats()[2].json) == "Saved: it replaces memory 1."
    assert httpx.get(f"{saving.base_url}/memories/{old['id']}").json()["latestVersion"] == 2
    assert live(saving, tag) == ["I take oat milk in it these days"]


def test_a_plain_save_is_decided_by_the_write_decision(saving: Proxy) -> None:
    tag = "u-plain"
    saving.upstream.script(
        Reply(content=None, calls=[save_call("Ada's sister is called Mia")]),
        Reply(content="I will remember Mia."),
    )
    text, headers = ask(saving, tag, "My sister is called Mia.")
    assert text == "I will remember Mia."
    assert last_tool_result(saving.upstream.chats()[1].json) == "Saved as a new memory."
    assert live(saving, tag) == ["Ada's sister is called Mia"]
    (saved,) = inspect(saving, headers["x-mnemolog-trace-id"])["rounds"][0]["saved"]
    # The same fact again is already known: nothing new, the trace names the version found.
    saving.upstream.script(
        Reply(content=None, calls=[save_call("  Ada's sister is called Mia ")]),
        Reply(content="I know."),
    )
    _, again = ask(saving, tag, "Remember: my sister is Mia.", stream=True)
    assert last_tool_result(saving.upstream.chats()[3].json) == "Already known."
    assert inspect(saving, again["x-mnemolog-trace-id"])["rounds"][0]["saved"] == [saved]
    assert live(saving, tag) == ["Ada's sister is called Mia"]


def test_a_plain_save_that_may_correct_a_shown_memory_names_it(saving: Proxy) -> None:
    tag = "u-plain-correct"
    remember(saving, tag, "Tom lives in Paris")
    saving.upstream.script(
        Reply(content=None, calls=[(SEARCH, {"query": "where Tom lives"})]),
        Reply(content=None, calls=[save_call("Tom lives in Berlin")]),
        Reply(content="Berlin, noted."),
    )
    ask(saving, tag, "I moved to Berlin.")
    # A new value may correct the shown memory or not: it is linked to it, never hides it.
    assert last_tool_result(saving.upstream.chats()[2].json) == (
        "Saved as a new memory that may update memory 1; both are kept."
    )
    assert live(saving, tag) == ["Tom lives in Berlin", "Tom lives in Paris"]


# --- bad arguments, refusals, failures -------------------------------------------------


@pytest.mark.parametrize(
    ("search_first", "arguments", "said"),
    [
        (False, {"content": "Ada likes tea", "replaces": 1}, "no searchMemory result was shown"),
        (True, {"content": "Ada likes tea", "replaces": 3}, "has no memory 3"),
        (True, {"content": "Ada likes tea", "replaces": 0}, "not the number of a memory"),
        (True, {"content": "Ada likes tea", "replaces": "first"}, "not the number of a memory"),
        (True, {"content": "Ada likes tea", "replaces": True}, "not the number of a memory"),
        (True, {"content": "   "}, "no content"),
        (True, {"text": "Ada likes tea"}, "no content"),
        (True, {"content": "x" * 2001}, "longer than 2000 characters"),
        (True, '{"content": "Ada likes tea"', "not JSON"),
        (True, '["Ada likes tea"]', "not a JSON object"),
    ],
)
def test_bad_arguments_write_nothing_and_the_turn_answers(
    saving: Proxy, search_first: bool, arguments: object, said: str
) -> None:
    tag = f"u-bad-{abs(hash((search_first, str(arguments)))) % 10**8}"
    remember(saving, tag, "Ada likes coffee")
    if search_first:
        saving.upstream.script(Reply(content=None, calls=[(SEARCH, {"query": "drinks"})]))
    saving.upstream.script(Reply(content=None, calls=[(SAVE, arguments)]), Reply(content="Fine."))
    text, headers = ask(saving, tag, "I like tea.")
    assert text == "Fine."
    assert headers["x-mnemolog-degraded"] == "none"
    result = last_tool_result(saving.upstream.chats()[-1].json)
    assert result.startswith("Not saved: ") and said in result, result
    assert live(saving, tag) == ["Ada likes coffee"]
    rounds = inspect(saving, headers["x-mnemolog-trace-id"])["rounds"]
    save_round = rounds[-2]
    assert save_round["saveCalls"] == 1 and save_round["saved"] == []
    assert save_round["error"] == "save_bad_arguments"


def test_replaces_is_ambiguous_after_two_results_at_once(saving: Proxy) -> None:
    tag = "u-ambiguous"
    remember(saving, tag, "Ada likes coffee")
    saving.upstream.script(
        Reply(content=None, calls=[(SEARCH, {"query": "coffee"}), (SEARCH, {"query": "drinks"})]),
        Reply(content=None, calls=[save_call("Ada likes tea", 1)]),
        Reply(content="Fine."),
    )
    ask(saving, tag, "I like tea.")
    assert "several searchMemory results" in last_tool_result(saving.upstream.chats()[2].json)
    assert live(saving, tag) == ["Ada likes coffee"]


def test_a_refused_correction_is_told_to_the_model(saving: Proxy) -> None:
    tag = "u-refused"
    old = remember(saving, tag, "Bo keeps bees")

    def forget_then_correct(body: dict[str, Any]) -> Reply:
        # The memory shown is forgotten before the model's correction reaches the proxy.
        forgot = httpx.post(
            f"{saving.base_url}/memories/{old['id']}/forget", json={"reason": "user asked"}
        )
        assert forgot.status_code == 200, forgot.text
        return Reply(content=None, calls=[save_call("Bo keeps wasps", 1)])

    saving.upstream.script(
        Reply(content=None, calls=[(SEARCH, {"query": "bees"})]),
        forget_then_correct,
        Reply(content="Understood."),
    )
    text, headers = ask(saving, tag, "Not bees: wasps.")
    assert text == "Understood." and headers["x-mnemolog-degraded"] == "none"
    result = last_tool_result(saving.upstream.chats()[2].json)
    assert result == "Not saved: memory 1 was forgotten."
    chain = httpx.get(f"{saving.base_url}/memories/{old['id']}").json()
    assert chain["latestVersion"] == 1 and chain["forgotten"] is True
    assert live(saving, tag) == []
    rounds = inspect(saving, headers["x-mnemolog-trace-id"])["rounds"]
    assert rounds[1]["error"] == "save_refused" and rounds[1]["saved"] == []


class FailingWrites:
    def write(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the disk is gone")


class SlowWrites:
    def write(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(1.0)
        raise RuntimeError("too late anyway")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("writes", "reason"), [(FailingWrites, "save_failed"), (SlowWrites, "save_timeout")]
)
def test_a_failing_save_degrades_to_a_memoryless_answer(
    hasty_saver: Proxy,
    monkeypatch: pytest.MonkeyPatch,
    writes: type[Any],
    reason: str,
    stream: bool,
) -> None:
    proxy = hasty_saver
    tag = f"u-fail-{reason}-{stream}"
    monkeypatch.setattr(proxy.runtime.core, "writes", writes())
    proxy.upstream.script(
        Reply(content=None, calls=[save_call("Cy speaks Welsh")]),
        Reply(content="Answered without memory."),
    )
    text, headers = ask(proxy, tag, "I speak Welsh.", stream=stream)
    monkeypatch.undo()
    assert text == "Answered without memory."
    assert reason in headers["x-mnemolog-degraded"].split(",")
    last = proxy.upstream.chats()[-1].json
    assert "tools" not in last and all(m["role"] != "tool" for m in last["messages"])
    turn = inspect(proxy, headers["x-mnemolog-trace-id"])
    assert turn["outcome"] == "answer" and reason in turn["degraded"]
    assert turn["rounds"][0]["error"] == reason and turn["rounds"][0]["saved"] == []
    assert live(proxy, tag) == []


# --- when the tool is offered ------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_the_tool_is_not_offered_when_the_setting_is_off(proxy: Proxy, stream: bool) -> None:
    ask(proxy, "u-off", "Hi", stream=stream)
    (sent,) = proxy.upstream.chats()
    assert tool_names(sent.json) == [SEARCH]


def test_the_tool_is_not_offered_without_memory(saving: Proxy) -> None:
    ask(saving, "u-nomemory", "Hi", extra_body={"mnemolog": {"memory": False}})
    (sent,) = saving.upstream.chats()
    assert "tools" not in sent.json


def test_a_client_tool_of_the_same_name_wins(saving: Proxy) -> None:
    theirs = {
        "type": "function",
        "function": {
            "name": SAVE,
            "parameters": {"type": "object", "properties": {"note": {"type": "string"}}},
        },
    }
    saving.upstream.script(Reply(content=None, calls=[(SAVE, {"note": "buy milk"})]))
    text, headers = ask(saving, "u-theirs", "Note: buy milk.", tools=[theirs])
    assert json.loads(text) == [[SAVE, '{"note": "buy milk"}']]  # the client's call, untouched
    assert "save_tool_name_taken" in headers["x-mnemolog-degraded"]
    (sent,) = saving.upstream.chats()
    assert sent.json["tools"][0] == theirs
    assert tool_names(sent.json) == [SAVE, SEARCH]
    assert live(saving, "u-theirs") == []


@pytest.mark.parametrize("stream", [False, True])
def test_save_rounds_count_against_the_runaway_cap(saving: Proxy, stream: bool) -> None:
    tag = f"u-runaway-{stream}"
    saving.upstream.script(
        Reply(content=None, calls=[save_call("Dee plays the cello")]),
        Reply(content=None, calls=[save_call("Dee plays the viola")]),
        Reply(content="Done."),
    )
    text, headers = ask(saving, tag, "I play the cello and the viola.", stream=stream)
    assert text == "Done." and headers["x-mnemolog-memory-rounds"] == "2"
    chats = saving.upstream.chats()
    assert len(chats) == 3 and "tools" not in chats[-1].json
    assert len(live(saving, tag)) in (1, 2)  # the write decision decides


def test_a_mixed_round_runs_search_and_save_in_order(saving: Proxy) -> None:
    tag = "u-mixed-save"
    remember(saving, tag, "Eve works at Acme")
    saving.upstream.script(
        Reply(
            content=None,
            calls=[(SEARCH, {"query": "where Eve works"}), save_call("Eve has a cat named Tom")],
        ),
        Reply(content="Got it."),
    )
    _, headers = ask(saving, tag, "I have a cat, Tom. Where do I work?", stream=True)
    second = saving.upstream.chats()[1].json
    assistant, search_result, save_result = second["messages"][-3:]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == [SEARCH, SAVE]
    assert "Eve works at Acme" in search_result["content"]
    assert save_result["content"] == "Saved as a new memory."
    assert [search_result["tool_call_id"], save_result["tool_call_id"]] == [
        c["id"] for c in assistant["tool_calls"]
    ]
    (first,) = inspect(saving, headers["x-mnemolog-trace-id"])["rounds"][:1]
    assert (first["memoryCalls"], first["saveCalls"], len(first["saved"])) == (2, 1, 1)
    assert json.loads(first["arguments"][0]) == {"query": "where Eve works"}
    assert live(saving, tag) == ["Eve has a cat named Tom", "Eve works at Acme"]


# --- the record ------------------------------------------------------------------------


def test_saves_leave_their_text_out_of_the_turn_and_replay_checks(
    saving: Proxy, tmp_path: Path
) -> None:
    tag = "u-replay"
    remember(saving, tag, "John prefers dark mode")
    _, headers = correction_turn(saving, tag, stream=False)
    turn_id = headers["x-mnemolog-trace-id"]
    (turn,) = [
        s
        for s in saving.runtime.log.read()
        if isinstance(s.record.event, ProxyTurn) and s.record.event.turn_id == turn_id
    ]
    assert isinstance(turn.record.event, ProxyTurn)
    assert turn.record.event.rounds[1].save_replaces == [1]
    assert b"light mode" not in repr(turn.record.event).encode()
    written = [
        s.record.event
        for s in saving.runtime.log.read()
        if isinstance(s.record.event, (MemoryWritten, MemorySuperseded))
    ]
    assert written  # the saved text is in its own write event, sealed under the memory's key
    report = replayed_traces(saving.data_dir)
    assert report["differs"] == 0 and int(str(report["checked"])) > 0, report


# --- the tool and the bodies sent --------------------------------------------------------


def test_the_save_tool_goes_after_search_and_a_choice_of_it_only_while_offered() -> None:
    from mnemolog.proxy.tool import SAVE_MEMORY_TOOL, SEARCH_MEMORY_TOOL, upstream_body

    weather = {"type": "function", "function": {"name": "w"}}
    choice = {"type": "function", "function": {"name": SAVE}}
    body = {"messages": [], "tools": [weather], "tool_choice": choice}
    offered = upstream_body(body, [], offer_tool=True, offer_save=True, stream=False)
    assert offered["tools"] == [weather, SEARCH_MEMORY_TOOL, SAVE_MEMORY_TOOL]
    assert offered["tool_choice"] == choice
    search_only = upstream_body(body, [], offer_tool=True, stream=False)
    assert search_only["tools"] == [weather, SEARCH_MEMORY_TOOL]
    assert "tool_choice" not in search_only  # it names a tool not offered
    theirs = {"type": "function", "function": {"name": SAVE}}
    kept = upstream_body(
        {"messages": [], "tools": [theirs], "tool_choice": choice},
        [],
        offer_tool=False,
        stream=False,
    )
    assert kept["tool_choice"] == choice  # the client's own saveMemory


def test_the_save_schema_carries_no_length_bounds_a_grammar_would_expand() -> None:
    from mnemolog.proxy.tool import SAVE_MEMORY_TOOL

    encoded = json.dumps(SAVE_MEMORY_TOOL)
    assert "maxLength" not in encoded and "minLength" not in encoded
    assert "replaces" in SAVE_MEMORY_TOOL["function"]["description"]
