"""The Entities view without a browser: the list (scope, kind filter, search as an htmx partial, counts, last
mentioned, pages), one entity's page (aliases, linked memories, the facts region), the writer's forms and what the
server does with them for the owner, an editor, a viewer and an outsider (each refusal with a positive control)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client

from memory.models import Entity, MemoryEntity
from palace.models import OpLog, Palace
from tests.entity_rows import make_entity


def _in_project(client: Client, project: Palace) -> Client:
    client.post("/scope/", {"mode": "project", "project": project.pk})
    return client


@pytest.fixture
def lexicon(make_memory: Any, project: Palace, personal: Palace) -> dict[str, Entity]:
    m1 = make_memory(project, "Carol ships the billing service")
    m2 = make_memory(project, "Carol is on call this week")
    m3 = make_memory(project, "Postgres 17 upgrade planned")
    return {
        "carol": make_entity(
            project,
            "Carol Smith",
            aliases=["Caro"],
            memories=[m1, m2],
            last_mentioned_at=datetime(2026, 11, 2, tzinfo=UTC),
        ),
        "pg": make_entity(project, "PostgreSQL", kind="tool", aliases=["pg"], memories=[m3]),
        "carl": make_entity(project, "Carlos"),
        "mine": make_entity(personal, "Grandma Rose", memories=[make_memory(personal, "Rose's birthday is in May")]),
    }


def test_list_follows_the_scope_with_counts_and_last_mentioned(
    alice: Any, client_for: Any, project: Palace, lexicon: dict[str, Entity]
) -> None:
    client = client_for(alice)
    mine = client.get("/entities/").content.decode()
    assert "Grandma Rose" in mine and "Carol Smith" not in mine and 'aria-current="page">Entities' in mine
    html = _in_project(client, project).get("/entities/").content.decode()
    assert "Grandma Rose" not in html
    row = html[html.index(f'id="entity-{lexicon["carol"].pk}"') :].split("</tr>")[0]
    assert "Carol Smith" in row and "Caro" in row and ">2<" in row and "2026-11-02" in row


def test_kind_filter_and_search_return_only_the_list(
    alice: Any, client_for: Any, project: Palace, lexicon: dict[str, Entity]
) -> None:
    client = _in_project(client_for(alice), project)
    tools = client.get("/entities/?kind=tool", HTTP_HX_REQUEST="true").content.decode()
    assert "PostgreSQL" in tools and "Carol Smith" not in tools and "<html" not in tools
    by_alias = client.get("/entities/?q=PG", HTTP_HX_REQUEST="true").content.decode()
    assert "PostgreSQL" in by_alias and "Carlos" not in by_alias
    car = client.get("/entities/?q=car").content.decode()
    assert car.index("Carol Smith") < car.index("Carlos") and "PostgreSQL" not in car and "<html" in car
    none = client.get("/entities/?q=zzz&kind=nonsense", HTTP_HX_REQUEST="true").content.decode()
    assert "No entity matches." in none


def test_list_pages(alice: Any, client_for: Any, personal: Palace, monkeypatch: pytest.MonkeyPatch) -> None:
    from panel.views import entities

    monkeypatch.setattr(entities, "PAGE_SIZE", 2)
    for name in ("Ann", "Ben", "Cid"):
        make_entity(personal, name)
    client = client_for(alice)
    first = client.get("/entities/?order=name").content.decode()
    assert "Ann" in first and "Ben" in first and "Cid" not in first and "Page 1 of 2" in first
    second = client.get("/entities/?order=name&page=2", HTTP_HX_REQUEST="true").content.decode()
    assert "Cid" in second and "Ann" not in second


def test_entity_page_shows_aliases_linked_memories_facts_region_and_forms(
    alice: Any, client_for: Any, lexicon: dict[str, Entity]
) -> None:
    carol = lexicon["carol"]
    html = client_for(alice).get(f"/entities/{carol.pk}/").content.decode()
    assert "Caro" in html and "Carol ships the billing service" in html and "Carol is on call" in html
    assert "Postgres 17" not in html
    # The facts region loads the timeline fragment, whose own form asks for another point (test_entity_facts.py).
    assert f'hx-get="/entities/{carol.pk}/facts/" hx-trigger="load"' in html
    assert 'id="rename-form"' in html and 'id="aliases-form"' in html and 'id="merge-form"' in html


def test_linked_memories_page_with_htmx(
    alice: Any, client_for: Any, lexicon: dict[str, Entity], monkeypatch: pytest.MonkeyPatch
) -> None:
    from panel.views import entities

    monkeypatch.setattr(entities, "LINKED_PAGE", 1)
    carol = lexicon["carol"]
    client = client_for(alice)
    first = client.get(f"/entities/{carol.pk}/").content.decode()
    assert "Carol is on call" in first and "billing" not in first and "?offset=1" in first
    more = client.get(f"/entities/{carol.pk}/?offset=1", HTTP_HX_REQUEST="true").content.decode()
    assert "billing" in more and "<html" not in more and "Carol is on call" not in more


def test_viewer_sees_no_forms_and_is_refused_by_the_server(
    alice: Any, bob: Any, client_for: Any, lexicon: dict[str, Entity]
) -> None:
    carol, carl = lexicon["carol"], lexicon["carl"]
    viewer = client_for(bob)
    html = viewer.get(f"/entities/{carol.pk}/").content.decode()
    assert "Carol ships the billing service" in html
    assert "rename-form" not in html and "aliases-form" not in html and "merge-form" not in html
    assert viewer.post(f"/entities/{carol.pk}/rename/", {"name": "Carol T."}).status_code == 403
    assert viewer.post(f"/entities/{carol.pk}/aliases/", {"add": "Cee"}).status_code == 403
    assert viewer.post(f"/entities/{carl.pk}/merge/", {"into": carol.pk}).status_code == 403
    carol.refresh_from_db()
    assert (carol.name, carol.aliases) == ("Carol Smith", ["Caro"]) and not OpLog.objects.filter(
        op__startswith="entity."
    )
    owner = client_for(alice)  # positive control
    assert owner.post(f"/entities/{carol.pk}/rename/", {"name": "Carol T."}).status_code == 302
    assert Entity.objects.get(pk=carol.pk).name == "Carol T."


def test_outsider_gets_404_everywhere_owner_does_not(
    alice: Any, charlie: Any, client_for: Any, lexicon: dict[str, Entity]
) -> None:
    carol = lexicon["carol"]
    outsider = client_for(charlie)
    assert outsider.get(f"/entities/{carol.pk}/").status_code == 404
    assert outsider.post(f"/entities/{carol.pk}/rename/", {"name": "x"}).status_code == 404
    assert outsider.post(f"/entities/{carol.pk}/aliases/", {"remove": "Caro"}).status_code == 404
    assert outsider.post(f"/entities/{lexicon['carl'].pk}/merge/", {"into": carol.pk}).status_code == 404
    assert "Carol Smith" not in outsider.get("/entities/?q=carol").content.decode()
    owner = client_for(alice)
    assert owner.get(f"/entities/{carol.pk}/").status_code == 200
    assert owner.post(f"/entities/{carol.pk}/aliases/", {"remove": "Caro"}).status_code == 302
    assert Entity.objects.get(pk=carol.pk).aliases == []


def test_editor_renames_edits_aliases_and_merges(bob_editor: Any, client_for: Any, lexicon: dict[str, Entity]) -> None:
    carol, carl, pg = lexicon["carol"], lexicon["carl"], lexicon["pg"]
    client = client_for(bob_editor)
    r = client.post(f"/entities/{carol.pk}/aliases/", {"add": "Cee, C. Smith"})
    assert r.status_code == 302 and r["Location"] == f"/entities/{carol.pk}/"
    clash = client.post(f"/entities/{carol.pk}/rename/", {"name": "pg"})
    assert clash.status_code == 409 and "PostgreSQL" in clash.content.decode() and "<html" in clash.content.decode()
    r = client.post(f"/entities/{carl.pk}/merge/", {"into": carol.pk})
    assert r.status_code == 302 and r["Location"] == f"/entities/{carol.pk}/"
    assert client.get(f"/entities/{carl.pk}/")["Location"] == f"/entities/{carol.pk}/"  # the tombstone leads on
    assert client.post(f"/entities/{pg.pk}/merge/", {}).status_code == 422
    carol.refresh_from_db()
    assert carol.aliases == ["Caro", "Cee", "C. Smith", "Carlos"]
    assert MemoryEntity.objects.filter(entity=carol).count() == 2
    ops = OpLog.objects.filter(op__startswith="entity.", actor_user_id=bob_editor.pk).values_list("op", flat=True)
    assert sorted(ops) == ["entity.aliases", "entity.merge"]


def test_the_view_speaks_chinese(alice: Any, client_for: Any, lexicon: dict[str, Entity]) -> None:
    client = client_for(alice)
    page = client.get("/entities/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert '<html lang="zh-hans">' in page and "名称或别名" in page and "人物" in page and "Grandma Rose" in page
    detail = client.get(f"/entities/{lexicon['carol'].pk}/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "关联的记忆" in detail and "事实暂不可用。" in detail
    assert "Linked memories" in client.get(f"/entities/{lexicon['carol'].pk}/").content.decode()


@pytest.mark.parametrize("n", [4, 20])
def test_list_and_entity_page_cost_the_same_queries_at_any_size(
    n: int, alice: Any, client_for: Any, personal: Palace, make_memory: Any, django_assert_num_queries: Any
) -> None:
    memories = [make_memory(personal, f"note {i}") for i in range(n)]
    for i in range(n):
        make_entity(personal, f"Person {i}", memories=memories[: i + 1])
    target = make_entity(personal, "Everyone", memories=memories)
    client = client_for(alice)
    # frame (3) + badge (3) + kinds + count + page; frame + badge + entity + role + merge choices + memories
    for url, htmx, pinned in [
        ("/entities/", False, 9),
        ("/entities/?q=person", True, 5),
        (f"/entities/{target.pk}/", False, 10),
    ]:
        headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
        client.get(url, **headers)  # warm the process caches
        with django_assert_num_queries(pinned):
            assert client.get(url, **headers).status_code == 200


@pytest.mark.parametrize("offset", ["100001", str(10**30)])
def test_an_offset_past_the_bound_is_clamped_not_a_server_error(
    alice: Any, client_for: Any, lexicon: dict[str, Entity], offset: str
) -> None:
    carol = lexicon["carol"]
    client = client_for(alice)
    # Positive control: the first page lists carol's memories.
    assert "Carol is on call" in client.get(f"/entities/{carol.pk}/").content.decode()
    response = client.get(f"/entities/{carol.pk}/?offset={offset}", HTTP_HX_REQUEST="true")
    assert response.status_code == 200  # before: 10**30 reached PostgreSQL's OFFSET as an out-of-range bigint
    assert "Carol is on call" not in response.content.decode()
