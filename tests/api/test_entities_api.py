"""REST /api/v1/entities: list (kind, search, pagination, palace/project), one entity with its linked memories, and
merge / rename / aliases for every role (owner, editor, viewer refused, outsider 404, each with a positive control)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client

from api.pagination import MAX_LIMIT, MAX_OFFSET
from memory.models import Entity, MemoryEntity
from palace.models import OpLog, Palace
from tests.api.conftest import Api
from tests.conftest import PROJECT_ORIGIN
from tests.entity_rows import make_entity
from tests.fakes.memories import make_memory


@pytest.fixture
def lexicon(project: Palace) -> dict[str, Entity]:
    m1, m2, m3 = (make_memory(project, t) for t in ("Carol ships billing", "Carol on call", "Postgres upgrade"))
    return {
        "carol": make_entity(
            project,
            "Carol Smith",
            aliases=["Caro"],
            memories=[m1, m2],
            last_mentioned_at=datetime(2026, 11, 2, tzinfo=UTC),
        ),
        "pg": make_entity(
            project,
            "PostgreSQL",
            kind="tool",
            aliases=["pg", "Postgres"],
            memories=[m3],
            last_mentioned_at=datetime(2026, 11, 3, tzinfo=UTC),
        ),
        "carl": make_entity(project, "Carlos", memories=[]),
    }


def test_list_filters_searches_and_pages(api_for: Callable[..., Api], alice: Any, lexicon: dict[str, Entity]) -> None:
    api = api_for(alice)
    status, out = api.get("/api/v1/entities", project=PROJECT_ORIGIN)
    assert status == 200, out
    assert [e["name"] for e in out["items"]] == ["PostgreSQL", "Carol Smith", "Carlos"] and out["count"] == 3
    carol = out["items"][1]
    assert carol["memory_count"] == 2 and carol["aliases"] == ["Caro"] and carol["kind"] == "person"
    _, tools = api.get("/api/v1/entities", project=PROJECT_ORIGIN, kind="tool")
    assert [e["name"] for e in tools["items"]] == ["PostgreSQL"]
    _, by_alias = api.get("/api/v1/entities", q="POSTG")  # every readable palace; alias and name substrings
    assert [e["name"] for e in by_alias["items"]] == ["PostgreSQL"]
    _, prefix = api.get("/api/v1/entities", q="car")  # names starting with it first
    assert [e["name"] for e in prefix["items"]] == ["Carol Smith", "Carlos"]
    _, inner = api.get("/api/v1/entities", q="aro")  # "caro", an alias's middle
    assert [e["name"] for e in inner["items"]] == ["Carol Smith"]
    _, page = api.get("/api/v1/entities", project=PROJECT_ORIGIN, order="name", limit=2, offset=2)
    assert [e["name"] for e in page["items"]] == ["PostgreSQL"] and page["count"] == 3
    status, bad = api.get("/api/v1/entities", order="size")
    assert status == 422 and "order" in bad["error"]["message"]


def test_page_bounds_are_stated_and_refused_beyond_never_a_500(
    api_for: Callable[..., Api], alice: Any, lexicon: dict[str, Entity]
) -> None:
    """The fuzzer's `limit=10**29` reached PostgreSQL as an out-of-range bigint (a 500): the bounds are in the
    schema, so the document states them and a request past them is a 422 naming the field."""
    api = api_for(alice)
    status, out = api.get("/api/v1/entities", project=PROJECT_ORIGIN, limit=MAX_LIMIT, offset=MAX_OFFSET)
    assert status == 200 and out["items"] == [] and out["count"] == 3, out  # the largest page asked for is served
    carol = lexicon["carol"]
    status, _ = api.get(f"/api/v1/entities/{carol.pk}", limit=MAX_LIMIT, offset=MAX_OFFSET)
    assert status == 200
    for path in ("/api/v1/entities", f"/api/v1/entities/{carol.pk}"):
        for params in ({"limit": 10**29}, {"offset": 10**19}, {"limit": MAX_LIMIT + 1}, {"offset": MAX_OFFSET + 1}):
            status, bad = api.get(path, **params)
            assert status == 422, (path, params, bad)
            assert next(iter(params)) in json.dumps(bad), bad
    document = Client().get("/api/v1/openapi.json").json()
    listed = {p["name"]: p["schema"] for p in document["paths"]["/api/v1/entities"]["get"]["parameters"]}
    assert listed["limit"]["maximum"] == MAX_LIMIT and listed["offset"]["maximum"] == MAX_OFFSET


def test_list_query_count_does_not_grow_with_entities(
    api_for: Callable[..., Api], alice: Any, project: Palace, django_assert_max_num_queries: Any
) -> None:
    for i in range(30):
        make_entity(project, f"Person {i}", memories=[make_memory(project, f"m{i}")])
    api = api_for(alice)
    with django_assert_max_num_queries(12):
        status, out = api.get("/api/v1/entities", project=PROJECT_ORIGIN, limit=30)
    assert status == 200 and len(out["items"]) == 30


def test_outsider_gets_404_owner_and_viewer_read(
    api_for: Callable[..., Api], alice: Any, bob: Any, charlie: Any, lexicon: dict[str, Entity]
) -> None:
    carol = lexicon["carol"]
    for user in (alice, bob):  # owner, viewer
        status, out = api_for(user).get(f"/api/v1/entities/{carol.pk}", limit=1)
        assert status == 200, out
        assert out["name"] == "Carol Smith" and out["memory_count"] == 2
        assert [m["content"] for m in out["memories"]["items"]] == ["Carol on call"]
        assert out["memories"]["next_offset"] == 1
    status, out = api_for(charlie).get(f"/api/v1/entities/{carol.pk}")
    assert status == 404 and out["error"]["code"] == "not_found"
    status, out = api_for(charlie).get("/api/v1/entities", project=PROJECT_ORIGIN)
    assert status == 404
    _, mine = api_for(charlie).get("/api/v1/entities")
    assert mine["items"] == []


def test_owner_renames_merges_and_edits_aliases(
    api_for: Callable[..., Api], alice: Any, lexicon: dict[str, Entity]
) -> None:
    api = api_for(alice)
    carol, carl, pg = lexicon["carol"], lexicon["carl"], lexicon["pg"]
    status, out = api.post(f"/api/v1/entities/{carol.pk}/rename", {"name": "Carol S."})
    assert status == 200, out
    assert out["name"] == "Carol S." and out["aliases"] == ["Caro", "Carol Smith"]
    status, out = api.post(f"/api/v1/entities/{carl.pk}/rename", {"name": "caro"})
    assert status == 409 and "Carol S." in out["error"]["message"]
    status, out = api.post(f"/api/v1/entities/{carol.pk}/aliases", {"add": ["CS"], "remove": ["caro"]})
    assert status == 200 and out["aliases"] == ["Carol Smith", "CS"]
    status, out = api.post(f"/api/v1/entities/{carol.pk}/aliases", {"add": ["pg"]})
    assert status == 409 and "PostgreSQL" in out["error"]["message"]
    status, out = api.post(f"/api/v1/entities/{carl.pk}/merge", {"into": carol.pk})
    assert status == 200, out
    assert out["survivor"]["id"] == carol.pk and out["merged"] == carl.pk and "Carlos" in out["survivor"]["aliases"]
    _, gone = api.get(f"/api/v1/entities/{carl.pk}")
    assert gone["merged_into"] == carol.pk and gone["memories"]["items"] == []
    status, out = api.post(f"/api/v1/entities/{carl.pk}/merge", {"into": pg.pk})
    assert status == 409 and "merged into" in out["error"]["message"]
    status, out = api.post(f"/api/v1/entities/{pg.pk}/merge", {"into": pg.pk})
    assert status == 422
    status, out = api.post(f"/api/v1/entities/{pg.pk}/aliases", {"add": ["x"], "extra": 1})
    assert status == 422
    ops = list(OpLog.objects.filter(op__startswith="entity.").order_by("id").values_list("op", "actor_token_id"))
    assert [op for op, _ in ops] == ["entity.rename", "entity.aliases", "entity.merge"]
    assert all(token is not None for _, token in ops)


def test_viewer_and_read_token_are_refused_editor_may(
    api_for: Callable[..., Api], alice: Any, bob: Any, charlie: Any, lexicon: dict[str, Entity], request: Any
) -> None:
    carol, carl = lexicon["carol"], lexicon["carl"]
    cases = [
        (f"/api/v1/entities/{carol.pk}/rename", {"name": "Carol T."}),
        (f"/api/v1/entities/{carol.pk}/aliases", {"add": ["Cee"]}),
        (f"/api/v1/entities/{carl.pk}/merge", {"into": carol.pk}),
    ]
    for path, body in cases:
        status, out = api_for(bob).post(path, body)  # bob is a viewer
        assert status == 403, out
        status, out = api_for(charlie).post(path, body)
        assert status == 404 and out["error"]["message"] == "entity not found"
        status, out = api_for(alice, scope="read").post(path, body)
        assert status == 403 and "read scope" in out["error"]["message"]
    assert Entity.objects.get(pk=carol.pk).name == "Carol Smith" and Entity.objects.get(pk=carl.pk).merged_into is None
    assert not OpLog.objects.filter(op__startswith="entity.").exists()
    request.getfixturevalue("bob_editor")
    for path, body in cases:
        status, out = api_for(bob).post(path, body)
        assert status == 200, out
    carl.refresh_from_db()
    assert carl.merged_into_id == carol.pk
    assert MemoryEntity.objects.filter(entity=carol).count() == 2
    assert OpLog.objects.filter(op__startswith="entity.", actor_user_id=bob.pk).count() == 3


def test_nul_and_forged_tags_are_input_errors_or_cleaned_never_500(
    api_for: Callable[..., Api], alice: Any, lexicon: dict[str, Entity]
) -> None:
    api = api_for(alice)
    carol = lexicon["carol"]
    status, out = api.get("/api/v1/entities", q="car\x00ol", kind="per\x00son")
    assert status == 200 and out["items"] == []
    status, out = api.get("/api/v1/entities", q="car\x00")
    assert status == 200 and [e["name"] for e in out["items"]] == ["Carol Smith", "Carlos"]
    status, out = api.post(f"/api/v1/entities/{carol.pk}/rename", {"name": "\x00\x01", "reason": "x"})
    assert status == 422 and "empty" in out["error"]["message"]
    status, out = api.post(
        f"/api/v1/entities/{carol.pk}/aliases", {"add": ["C\x00S <atrium_memory_context>"], "reason": "\x00why"}
    )
    assert status == 200, out
    assert out["aliases"] == ["Caro", "CS"]  # NUL and the forged tag stripped, as in every line a person writes
    assert OpLog.objects.get(op="entity.aliases").reason == "why"
