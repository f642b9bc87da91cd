"""Schemathesis against the served OpenAPI document, over a real server: every operation,
with valid and invalid inputs from a fixed seed, is answered without a 5xx, and a request
answered 4xx appends nothing to the log."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from mnemolog.api import create_app
from mnemolog.runtime import Runtime
from mnemolog.settings import Settings

from ..servers import app_server, settled_head

EXAMPLES = 15  # per operation and mode: under a minute on two cores
# Not fuzzed: the chat proxy, answered 5xx by design here (503 upstream_not_configured); the
# event stream, which never ends; and key making (a made key would close the door on every
# case after it; tests/api/test_keys.py covers it).
SKIPPED = {
    ("POST", "/v1/chat/completions"),
    ("GET", "/v1/models"),
    ("GET", "/events"),
    ("POST", "/agents/{agent_id}/keys"),
}


@dataclass
class Tally:
    cases: int = 0
    refused: int = 0
    server_errors: list[str] = field(default_factory=list)
    appended_by_refused: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("schemathesis") / "data"
    runtime = Runtime(Settings(data_dir=data_dir, embedder="quality"))
    try:
        with app_server(create_app(runtime)) as url:
            httpx.post(
                f"{url}/memories",
                json={"containerTag": "fuzz", "memories": [{"content": "Ada keeps bees"}]},
            ).raise_for_status()
            yield url
    finally:
        runtime.close()


def _head(client: httpx.Client) -> int:
    return settled_head(client)


@pytest.mark.slow
def test_no_operation_answers_a_5xx_and_refused_requests_append_nothing(base_url: str) -> None:
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    tally = Tally()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 20
    with httpx.Client(base_url=base_url, timeout=60) as client:
        for operation in operations:
            if (operation.method.upper(), operation.path) in SKIPPED:
                continue
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                strategy = operation.as_strategy(generation_mode=mode)
                _run(strategy, client, base_url, tally)
    print(f"\nschemathesis: {tally.cases} cases, {tally.refused} refused with a 4xx")
    assert tally.cases >= 300
    assert tally.server_errors == []
    assert tally.appended_by_refused == []


def _run(
    strategy: st.SearchStrategy[schemathesis.Case],
    client: httpx.Client,
    base_url: str,
    tally: Tally,
) -> None:
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,  # a fixed seed: the same cases on every run
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def one(case: schemathesis.Case) -> None:
        before = _head(client)
        response = case.call(base_url=base_url, timeout=60)
        tally.cases += 1
        shown = f"{case.formatted_path} -> {response.status_code}: {case.as_curl_command()}"
        if response.status_code >= 500:
            tally.server_errors.append(shown)
        elif response.status_code >= 400:
            tally.refused += 1
            error = response.json().get("error", {}) if response.content else {}
            if not isinstance(error, dict) or not isinstance(error.get("code"), str):
                tally.server_errors.append(f"no error body: {shown}")
            if _head(client) != before:
                tally.appended_by_refused.append(shown)

    # No invalid input exists for an operation that takes none (GET /health).
    with contextlib.suppress(Unsatisfiable):
        one()
