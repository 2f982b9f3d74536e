"""REST search: GET and POST /api/v1/search — header honesty, hit fields, filters, isolation, bad input."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from memory.models import AccessRecord, Memory, SearchBatch
from memory.providers import embed_passages
from memory.text import build_embedding_text, build_search_text
from palace.actors import Actor
from palace.models import Palace
from palace.slots import slot_assign

URL = "/api/v1/search"


def remember(palace: Palace, content: str, *, kind: str = "fact", occurred_at: datetime | None = None) -> Memory:
    occurred = occurred_at or datetime(2026, 11, 1, tzinfo=UTC)
    fields: dict[str, Any] = {"content": content, "placard": "", "speaker": "", "occurred_at": occurred, "context": ""}
    return Memory.objects.create(
        palace=palace,
        kind=kind,
        content=content,
        occurred_at=occurred,
        search_text=build_search_text(**fields),
        embedding=embed_passages([build_embedding_text(**fields)])[0],
        slot=slot_assign(palace=palace, kind=kind, actor=Actor.for_system("tests")),
    )


@pytest.fixture
def shared(project: Palace) -> Memory:
    return remember(project, "The demo service listens on port 8443 behind the load balancer", kind="decision")


@pytest.fixture
def private(alice: Any) -> Memory:
    return remember(Palace.objects.get(personal_owner=alice), "Alice's locker code is kept in the team vault")


def test_get_returns_header_and_labelled_hits(
    alice: Any, shared: Memory, token_for: Callable[..., str], bearer: Callable[[str], dict[str, str]], client: Any
) -> None:
    response = client.get(URL, {"query": "which port does the demo service use"}, **bearer(token_for(alice)))

    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "hybrid" and body["degraded"] == [] and body["common_words"] == []
    assert body["batch"].startswith("b_")
    top = body["hits"][0]
    assert top["memory"]["id"] == shared.pk
    assert top["ref"] == "r1"
    assert top["label"].startswith("sem#") or top["label"].startswith("lex#")
    assert top["coordinate"] == "Decision Chamber#1"
    assert SearchBatch.objects.get(handle=body["batch"]).refs["r1"] == shared.pk
    assert AccessRecord.objects.filter(memory=shared, token_id__isnull=False).count() == 1


def test_post_takes_the_same_fields_as_json(
    alice: Any, shared: Memory, private: Memory, client_for: Callable[[Any], Any], project: Palace
) -> None:
    response = client_for(alice).post(
        URL,
        {"query": "port load balancer", "project": "https://github.com/atrium-test/demo"},
        content_type="application/json",
    )

    assert response.status_code == 200
    body = response.json()
    assert body["palaces"] == [project.pk]
    assert {h["memory"]["id"] for h in body["hits"]} == {shared.pk}


def test_embedder_down_says_lexical_and_degraded(
    alice: Any, shared: Memory, client_for: Callable[[Any], Any], embedder_down: None
) -> None:
    body = client_for(alice).get(URL, {"query": "load balancer port"}).json()

    assert body["mode"] == "lexical"
    assert body["degraded"] == ["semantic"]
    assert [h["label"] for h in body["hits"]] == ["lex#1"]


def test_filters_kind_room_and_as_of(
    alice: Any, shared: Memory, private: Memory, client_for: Callable[[Any], Any]
) -> None:
    client = client_for(alice)
    by_kind = client.get(URL, {"query": "vault port", "kind": "decision"}).json()
    by_room = client.get(URL, {"query": "vault port", "room": "Fact Hall"}).json()
    before = client.get(URL, {"query": "vault port", "as_of": "2026-01-01T00:00:00Z"}).json()

    assert [h["memory"]["id"] for h in by_kind["hits"]] == [shared.pk]
    assert [h["memory"]["id"] for h in by_room["hits"]] == [private.pk]
    assert before["hits"] == []


def test_viewer_reads_project_but_outsider_sees_nothing(
    alice: Any,
    bob: Any,
    charlie: Any,
    shared: Memory,
    private: Memory,
    project: Palace,
    client_for: Callable[[Any], Any],
) -> None:
    owner = client_for(alice).get(URL, {"query": "port locker vault"}).json()
    viewer = client_for(bob).get(URL, {"query": "port locker vault"}).json()
    outsider = client_for(charlie).get(URL, {"query": "port locker vault"}).json()
    named = client_for(charlie).get(URL, {"query": "port", "palace": project.pk})

    assert {h["memory"]["id"] for h in owner["hits"]} == {shared.pk, private.pk}  # positive control
    assert {h["memory"]["id"] for h in viewer["hits"]} == {shared.pk}
    assert outsider["hits"] == []
    assert named.status_code == 404
    assert named.json()["error"]["code"] == "not_found"


def test_read_scope_token_may_search(
    bob: Any, shared: Memory, token_for: Callable[..., str], bearer: Callable[[str], dict[str, str]], client: Any
) -> None:
    response = client.get(URL, {"query": "port"}, **bearer(token_for(bob, scope="read")))

    assert response.status_code == 200
    assert response.json()["hits"][0]["memory"]["id"] == shared.pk


def test_anonymous_gets_401(client: Any, shared: Memory) -> None:
    assert client.get(URL, {"query": "port"}).status_code == 401


@pytest.mark.parametrize(
    "params",
    [
        {"query": ""},
        {"query": "x" * 2001},
        {"query": "port", "limit": 0},
        {"query": "port", "limit": "many"},
        {"query": "port", "kind": "gossip"},
        {"query": "port", "as_of": "yesterday"},
        {"query": "port", "palace": 1, "project": "github.com/a/b"},
        {"query": "   "},
        {"query": "po\x00rt\x00"},
    ],
)
def test_bad_input_is_a_422_with_a_message_and_nothing_recorded(
    alice: Any, shared: Memory, client_for: Callable[[Any], Any], params: dict[str, Any]
) -> None:
    response = client_for(alice).post(URL, params, content_type="application/json")

    if params["query"] == "po\x00rt\x00":  # NUL bytes are blanked, the rest is a fine query
        assert response.status_code == 200
        return
    assert response.status_code == 422, response.content
    assert response.json()["error"]["message"]
    assert AccessRecord.objects.count() == 0
    assert SearchBatch.objects.count() == 0


def test_unknown_fields_are_refused(alice: Any, client_for: Callable[[Any], Any]) -> None:
    response = client_for(alice).post(URL, {"query": "port", "user": "alice"}, content_type="application/json")

    assert response.status_code == 422


def test_search_is_documented_in_openapi(client: Any, db: Any) -> None:
    paths = client.get("/api/v1/openapi.json").json()["paths"]

    assert {"get", "post"} <= set(paths["/api/v1/search"])


def _ranking_state(memory: Memory) -> tuple[int, Any, int]:
    memory.refresh_from_db()
    return memory.hit_count, memory.last_accessed_at, AccessRecord.objects.filter(memory=memory).count()


def test_a_session_get_writes_nothing_and_a_writers_post_reinforces(
    alice: Any, shared: Memory, client_for: Callable[[Any], Any]
) -> None:
    client = client_for(alice)
    before = _ranking_state(shared)

    response = client.get(URL, {"query": "which port does the demo service use"})
    assert response.status_code == 200
    assert response.json()["hits"][0]["memory"]["id"] == shared.pk
    assert response.json()["batch"] is None
    assert _ranking_state(shared) == before
    assert SearchBatch.objects.count() == 0

    response = client.post(URL, {"query": "which port does the demo service use"}, content_type="application/json")
    assert response.status_code == 200  # positive control: the owner's POST reinforces and registers a batch
    assert response.json()["batch"].startswith("b_")
    hits, last, records = _ranking_state(shared)
    assert (hits, records) == (before[0] + 1, before[2] + 1) and last is not None


def test_a_viewers_or_read_tokens_search_leaves_project_ranking_state_alone(
    alice: Any,
    bob: Any,
    shared: Memory,
    client_for: Callable[[Any], Any],
    token_for: Callable[..., str],
    bearer: Callable[[str], dict[str, str]],
) -> None:
    before = _ranking_state(shared)
    query = {"query": "which port does the demo service use"}

    as_viewer = client_for(bob).post(URL, query, content_type="application/json")
    as_read_token = client_for(alice).post(
        URL, query, content_type="application/json", **bearer(token_for(alice, scope="read", label="read"))
    )
    for response in (as_viewer, as_read_token):
        assert response.status_code == 200
        assert response.json()["hits"][0]["memory"]["id"] == shared.pk
        assert response.json()["batch"].startswith("b_")  # their own evidence batch is still theirs to cite
    assert _ranking_state(shared) == before

    response = client_for(alice).post(URL, query, content_type="application/json", **bearer(token_for(alice)))
    assert response.status_code == 200  # positive control: the owner's write token reinforces
    assert _ranking_state(shared)[0] == before[0] + 1
