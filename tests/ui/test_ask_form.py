"""The dashboard's ask form reads what ``POST /search`` reads, with the same bounds."""

from __future__ import annotations

import msgspec
import pytest

from mnemolog.api.models import Search
from mnemolog.errors import InvalidInput
from mnemolog.ui.ask import FIELDS, Asked, recall_request


def properties(struct: type[msgspec.Struct]) -> dict[str, object]:
    (_, components) = msgspec.json.schema_components([struct])
    found: dict[str, object] = components[struct.__name__]["properties"]
    return found


def test_the_form_takes_the_search_body_s_fields_with_their_bounds() -> None:
    api = properties(Search)
    del api["minSeq"]  # a person reads the store as it is
    assert properties(Asked) == api
    assert set(FIELDS) == {"container", *api} - {"containerTag"}


def test_the_form_s_fields_become_the_recall_the_api_runs() -> None:
    form = {
        "q": " where is Alice ",
        "limit": "7",
        "searchMode": "hybrid",
        "rerank": "false",
        "minTrust": "0.5",
        "recency": "false",
        "diversify": "",
        "asOf": "2026-07-03",
        "factAsOf": "",
        "includeForgotten": "true",
    }
    recall = recall_request(form, "home")
    assert (recall.q, recall.container_tag, recall.limit, recall.mode) == (
        "where is Alice",
        "home",
        7,
        "hybrid",
    )
    assert (recall.rerank, recall.min_trust, recall.recency, recall.diversify) == (
        False,
        0.5,
        False,
        None,
    )
    assert recall.include_forgotten and recall.fact_as_of is None
    assert recall.as_of is not None
    defaults = recall_request({"q": "x"}, None)
    assert (defaults.limit, defaults.recency, defaults.rerank) == (10, True, False)
    for bad, named in (
        ({"q": "x", "limit": "0"}, "limit"),
        ({"q": "x", "limit": "ten"}, "limit"),
        ({"q": "x", "minTrust": "2"}, "minTrust"),
        ({"q": "x", "rerank": "maybe"}, "rerank"),
        ({"q": "x", "asOf": "2026-07-03T12:00"}, "asOf"),
        ({"q": "   "}, "query"),
    ):
        with pytest.raises(InvalidInput, match=named):
            recall_request(bad, None)
