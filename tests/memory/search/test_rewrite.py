"""Query rewriting in memory.search, against the fake OpenAI-compatible server on loopback (tests/fakes).

What is tested: the rewrites are retrieved and fused and the result says so (`rewrite="rewritten"`, the queries,
"via qN" labels); a failed or slow model degrades to the query as given and the result says which; the setting
and the argument switch it off; the request carries the query as data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from memory.search import SearchRequest, memory_search
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAI, chat_content, chat_json, http_error, raw_body, slow


@pytest.fixture
def model(settings: Any) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        settings.ATRIUM_LLM_BASE_URL = server.base_url
        settings.ATRIUM_LLM_API_KEY = "sk-test"
        settings.ATRIUM_LLM_MODEL = "fake-model"
        settings.ATRIUM_SEARCH_REWRITE = True
        settings.ATRIUM_SEARCH_REWRITE_TIMEOUT = 2.0
        yield server


@pytest.fixture
def notes(save: Any) -> dict[str, Any]:
    return {
        "broker": save("We decided to use Celery with Redis as the broker for background jobs", kind="decision").memory,
        "font": save("The design system uses Inter as its body font", kind="decision").memory,
        "tea": save("Alice prefers green tea in the morning", kind="preference").memory,
    }


def search(user: Any, query: str, **kwargs: Any) -> Any:
    return memory_search(user=user, request=SearchRequest(query=query, **kwargs), reinforce=False, register_batch=False)


def test_rewrites_are_retrieved_fused_and_labelled(alice: Any, notes: dict[str, Any], model: FakeOpenAI) -> None:
    model.script_chat([chat_json({"queries": ["job queue broker", "typeface of the design system"]})])
    query = "remind me what we picked for the job queue, and the typeface too"

    plain = search(alice, query, rewrite=False)
    result = search(alice, query)

    assert plain.rewrite == "off" and plain.queries == [query]
    assert result.rewrite == "rewritten" and result.rewrite_error == ""
    assert result.queries == [query, "job queue broker", "typeface of the design system"]
    found = {h.memory.pk: h for h in result.hits}
    assert {notes["broker"].pk, notes["font"].pk} <= set(found)
    assert found[notes["font"].pk].label.endswith("via q3")  # found best by the third query
    assert all(h.label.split(" via ")[0] for h in result.hits)  # every label still names its arms
    request = model.requests_to(CHAT_PATH)[0].json
    assert request["model"] == "fake-model" and request["temperature"] == 0
    assert json.loads(request["messages"][1]["content"]) == {"request": query}  # the query travels as data


def test_a_failing_model_degrades_to_the_query_as_given(alice: Any, notes: dict[str, Any], model: FakeOpenAI) -> None:
    model.script_chat([http_error(500)])

    result = search(alice, "green tea")

    assert result.rewrite == "failed" and "500" in result.rewrite_error
    assert result.queries == ["green tea"]
    assert result.hits[0].memory.pk == notes["tea"].pk
    assert "via" not in result.hits[0].label
    assert len(model.requests_to(CHAT_PATH)) == 1  # no retry: a search does not wait on a failing model


@pytest.mark.parametrize(
    "reply",
    [
        chat_content("Sure! Here are some queries: green tea, morning drinks"),
        chat_json({"queries": "green tea"}),
        chat_json({"unexpected": True}),
        raw_body("<html>502 Bad Gateway</html>", status=200, content_type="text/html"),
    ],
    ids=["prose", "wrong-type", "wrong-shape", "html"],
)
def test_a_garbage_reply_degrades_to_the_query_as_given_and_says_so(
    alice: Any, notes: dict[str, Any], model: FakeOpenAI, reply: Any
) -> None:
    model.script_chat([reply])

    result = search(alice, "green tea")

    assert result.rewrite == "failed" and result.rewrite_error != ""
    assert result.queries == ["green tea"]
    assert result.hits[0].memory.pk == notes["tea"].pk
    assert "via" not in result.hits[0].label


def test_a_slow_model_times_out_and_the_search_goes_on(
    alice: Any, notes: dict[str, Any], model: FakeOpenAI, settings: Any
) -> None:
    settings.ATRIUM_SEARCH_REWRITE_TIMEOUT = 0.3
    model.script_chat([slow(3.0, chat_json({"queries": ["never used"]}))])

    result = search(alice, "green tea")

    assert result.rewrite == "timeout"
    assert result.queries == ["green tea"]
    assert result.hits[0].memory.pk == notes["tea"].pk


def test_the_setting_and_the_argument_switch_it_off(
    alice: Any, notes: dict[str, Any], model: FakeOpenAI, settings: Any
) -> None:
    settings.ATRIUM_SEARCH_REWRITE = False
    by_setting = search(alice, "green tea")
    settings.ATRIUM_SEARCH_REWRITE = True
    by_argument = search(alice, "green tea", rewrite=False)

    assert by_setting.rewrite == "off" and by_argument.rewrite == "off"
    assert model.requests_to(CHAT_PATH) == []
    # Positive control: with both on, the model is asked.
    model.script_chat([chat_json({"queries": ["green tea preference"]})])
    assert search(alice, "green tea").rewrite == "rewritten"
    assert len(model.requests_to(CHAT_PATH)) == 1


def test_no_model_configured_means_off(alice: Any, notes: dict[str, Any], settings: Any) -> None:
    settings.ATRIUM_LLM_BASE_URL = ""
    settings.ATRIUM_LLM_MODEL = ""

    assert search(alice, "green tea").rewrite == "off"


def test_an_off_topic_rewrite_brings_nothing_below_the_floor(
    alice: Any, notes: dict[str, Any], model: FakeOpenAI
) -> None:
    """Each query applies its own floor: a rewrite about nothing the palace holds adds no neighbours."""
    model.script_chat([chat_json({"queries": ["quantum chromodynamics lecture"]})])

    result = search(alice, "green tea")

    assert result.rewrite == "rewritten"
    assert [h.memory.pk for h in result.hits] == [notes["tea"].pk]
