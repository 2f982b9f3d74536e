"""REST search says how it was made: `how` (the arms that ran, the floor, what fell below it, query rewriting, the
fallback and where it came from, whether anything matched) and, on a miss with the overview fallback, the labelled
`overview`. A bad `fallback` is a 422 naming it and the values allowed; the user's setting is the default."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from accounts.usersettings import user_settings_update
from memory.models import AccessRecord, Memory, SearchBatch
from palace.actors import Actor
from palace.models import Palace
from tests.fakes.openai_server import FakeOpenAI, chat_json
from tests.fakes.team_notes import HIT, HIT_ANSWER, MISS, save_team_notes

URL = "/api/v1/search"


@pytest.fixture
def notes(alice: Any) -> list[Memory]:
    return save_team_notes(Palace.objects.get(personal_owner=alice))


@pytest.fixture
def alice_api(alice: Any, token_for: Callable[..., str], bearer: Callable[[str], dict[str, str]], client: Any) -> Any:
    headers = bearer(token_for(alice))

    def get(**params: Any) -> Any:
        return client.get(URL, params, **headers)

    return get


def test_a_hit_says_which_arms_ran_the_floor_and_no_fallback(alice_api: Any, notes: list[Memory]) -> None:
    body = alice_api(query=HIT).json()

    assert body["hits"][0]["memory"]["content"] == HIT_ANSWER
    how = body["how"]
    assert how["arms"] == ["lexical", "semantic"] and body["mode"] == "hybrid"
    assert how["matched"] is True
    assert isinstance(how["floor"], float) and 0.7 < how["floor"] < 0.95
    assert isinstance(how["below_floor"], int)
    assert (how["rewrite"], how["queries"], how["rewrite_error"]) == ("off", [HIT], "")
    assert (how["fallback"], how["fallback_from"], how["fallback_used"]) == ("none", "setting", False)
    assert how["query_read"] == "as given"
    assert how["database"] == "primary"  # no read replica configured (tests/config/test_read_replicas.py: with one)
    assert body["overview"] is None


def test_a_dialogue_query_says_which_turns_each_arm_read(alice_api: Any, notes: list[Memory]) -> None:
    from memory.search import tuned

    dialogue = f"ana: hi there\nbot: hello, how can I help\nana: quick one\nbot: sure\nana: {HIT}"
    with tuned(TAIL_TURNS=3):
        body = alice_api(query=dialogue).json()
    assert body["how"]["query_read"] == "dialogue of 5 turns: semantic arm the last 3, full text all"
    assert body["hits"][0]["memory"]["content"] == HIT_ANSWER  # the tail still carries the question


def test_a_miss_with_the_overview_fallback_returns_it_labelled_and_never_as_evidence(
    alice_api: Any, notes: list[Memory]
) -> None:
    batches, records = SearchBatch.objects.count(), AccessRecord.objects.count()

    body = alice_api(query=MISS, fallback="overview").json()

    assert body["hits"] == [] and body["batch"] is None
    how = body["how"]
    assert how["matched"] is False and how["below_floor"] > 0 and how["arms"] == ["lexical", "semantic"]
    assert (how["fallback"], how["fallback_from"], how["fallback_used"]) == ("overview", "request", True)
    overview = body["overview"]
    assert overview["label"] == "overview"
    assert {e["label"] for e in overview["entries"]} == {"overview"}
    assert all("ref" not in e and "score" not in e for e in overview["entries"])
    assert {e["memory"]["id"] for e in overview["entries"]} <= {m.pk for m in notes}
    assert [e["why"] for e in overview["entries"]] == ["recent"] * 5
    kinds = {r["kind"]: r for r in overview["rooms"]}
    assert (kinds["fact"]["memories"], kinds["decision"]["memories"]) == (10, 4)
    assert kinds["fact"]["rooms"] == 2 and kinds["fact"]["newest"] == ["Fact Hall-2", "Fact Hall"]
    # Nothing in it was registered as evidence or reinforced.
    assert (SearchBatch.objects.count(), AccessRecord.objects.count()) == (batches, records)
    assert not Memory.objects.filter(hit_count__gt=0).exists()


def test_the_users_setting_is_the_default_and_an_explicit_none_wins(
    alice: Any, alice_api: Any, notes: list[Memory]
) -> None:
    unset = alice_api(query=MISS).json()
    user_settings_update(user=alice, search_fallback="overview", actor=Actor.for_user(alice))
    by_setting = alice_api(query=MISS).json()
    told_none = alice_api(query=MISS, fallback="none").json()

    assert unset["overview"] is None and unset["how"]["fallback"] == "none"  # control: the default is off
    assert by_setting["overview"]["entries"]
    assert (by_setting["how"]["fallback"], by_setting["how"]["fallback_from"]) == ("overview", "setting")
    assert told_none["overview"] is None
    assert (told_none["how"]["fallback"], told_none["how"]["fallback_from"]) == ("none", "request")
    assert told_none["how"]["fallback_used"] is False


def test_without_the_embedder_only_the_lexical_arm_ran_and_there_is_no_floor(
    alice_api: Any, notes: list[Memory], embedder_down: None
) -> None:
    body = alice_api(query="green tea").json()

    assert body["how"]["arms"] == ["lexical"] and body["degraded"] == ["semantic"]
    assert body["how"]["floor"] is None and body["how"]["matched"] is True


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_bad_fallback_is_a_422_naming_the_argument_and_the_values(
    method: str, alice: Any, client_for: Callable[[Any], Any], notes: list[Memory]
) -> None:
    client = client_for(alice)
    sent = {"query": MISS, "fallback": "everything"}
    response = client.get(URL, sent) if method == "get" else client.post(URL, sent, content_type="application/json")

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert "fallback: Input should be 'none' or 'overview'" in error["message"]  # (a JSON body: "params.fallback")
    assert not SearchBatch.objects.exists()
    good = client.post(URL, {**sent, "fallback": "overview"}, content_type="application/json")
    assert good.status_code == 200 and good.json()["overview"]["entries"]  # positive control


def test_an_outsider_gets_no_overview_of_a_palace_they_are_not_in(
    alice: Any,
    charlie: Any,
    project: Palace,
    token_for: Callable[..., str],
    bearer: Callable[[str], dict[str, str]],
    client: Any,
) -> None:
    shared = save_team_notes(project)
    wanted = {"query": MISS, "fallback": "overview"}

    owner = client.get(URL, {**wanted, "palace": project.pk}, **bearer(token_for(alice)))
    named = client.get(URL, {**wanted, "palace": project.pk}, **bearer(token_for(charlie)))
    everything = client.get(URL, wanted, **bearer(token_for(charlie)))

    assert owner.status_code == 200  # positive control: the owner's overview lists the project's notes
    assert {e["memory"]["id"] for e in owner.json()["overview"]["entries"]} <= {m.pk for m in shared}
    assert owner.json()["overview"]["entries"]
    assert named.status_code == 404  # exactly like a palace that does not exist
    body = everything.json()
    assert body["how"]["fallback_used"] is True
    assert body["overview"]["entries"] == []
    assert {r["palace"] for r in body["overview"]["rooms"]} <= {Palace.objects.get(personal_owner=charlie).pk}


def test_openapi_lists_the_fallback_values(client: Any) -> None:
    spec = client.get("/api/v1/openapi.json").json()
    get = spec["paths"]["/api/v1/search"]["get"]
    (param,) = [p for p in get["parameters"] if p["name"] == "fallback"]

    assert "'overview'" in param["description"]
    schema = param["schema"]
    enums = [s.get("enum") for s in schema.get("anyOf", [schema])]
    assert ["none", "overview"] in enums or any(e and set(e) == {"none", "overview"} for e in enums)


@pytest.fixture
def model(settings: Any) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        settings.ATRIUM_LLM_BASE_URL = server.base_url
        settings.ATRIUM_LLM_API_KEY = "sk-test"
        settings.ATRIUM_LLM_MODEL = "fake-model"
        settings.ATRIUM_SEARCH_REWRITE = True
        settings.ATRIUM_SEARCH_REWRITE_TIMEOUT = 2.0
        yield server


def test_how_names_the_rewritten_queries(alice_api: Any, notes: list[Memory], model: FakeOpenAI) -> None:
    model.script_chat([chat_json({"queries": ["body typeface", "design system font"]})])

    how = alice_api(query=HIT).json()["how"]

    assert how["rewrite"] == "rewritten"
    assert how["queries"] == [HIT, "body typeface", "design system font"]
