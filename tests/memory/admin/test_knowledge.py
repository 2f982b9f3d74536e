"""The knowledge layer in the admin (memory/admin/knowledge.py): entities, their links, facts, profile and handoff
versions, retrievals and evidence batches are listed for staff with the view permission, read-only; what was
remembered (an entity's names, a fact, a profile, a handoff, a search's query) only with `memory.view_memory_body`.
Each page is checked both ways: the auditor does not see the body, the reader (the positive control) does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from memory.context import HandoffInput, curated_edit, handoff_save
from memory.models import AccessRecord, Fact, MemoryEntity, SearchBatch
from palace.actors import Actor
from palace.models import OpLog, Palace
from tests.entity_rows import make_entity
from tests.fakes.memories import make_memory

NAME, ALIAS = "Zephyrine Okafor", "Zeph"
FACT = "Zephyrine approves the quarterly budget"
PROFILE = "The team ships every second Thursday"
DOING = "rotating the staging certificates"
QUERY = "who approves the budget"


@pytest.fixture
def rows(alice: Any, project: Palace) -> dict[str, Any]:
    memory = make_memory(project, "budget talk")
    entity = make_entity(project, NAME, aliases=[ALIAS], memories=[memory])
    owner = Actor.for_user(alice)
    handoff = HandoffInput(doing=DOING, next_steps=["renew the wildcard"])
    return {
        "entity": entity,
        "memoryentity": MemoryEntity.objects.get(entity=entity),
        "fact": Fact.objects.create(palace=project, entity=entity, content=FACT),
        "profileversion": curated_edit(palace=project, actor=owner, content=PROFILE, expected_version=0),
        "handoffversion": handoff_save(palace=project, actor=owner, data=handoff, expected_version=0),
        "accessrecord": AccessRecord.objects.create(memory=memory, user=alice, rank=1, via="search"),
        "searchbatch": SearchBatch.objects.create(handle="b-1", user=alice, query=QUERY, refs={"m1": memory.pk}),
    }


BODIES = {
    "entity": (NAME, ALIAS),
    "memoryentity": (NAME,),
    "fact": (FACT, NAME),
    "profileversion": (PROFILE,),
    "handoffversion": (DOING, "renew the wildcard"),
    "accessrecord": (),
    "searchbatch": (QUERY,),
}
# What the reader (with the body permission) sees on the row's page; an entity is named by id on the others' pages.
SHOWN = {
    "entity": (NAME, ALIAS),
    "memoryentity": (),
    "fact": (FACT,),
    "profileversion": (PROFILE,),
    "handoffversion": (DOING, "renew the wildcard"),
    "accessrecord": (),
    "searchbatch": (QUERY,),
}
VIEW = [f"view_{model}" for model in BODIES]


@pytest.mark.parametrize("model", sorted(BODIES))
def test_bodies_need_the_body_permission_and_the_rows_are_read_only(
    model: str, rows: dict[str, Any], staff_client: Callable[..., Client]
) -> None:
    obj = rows[model]
    change, listing = f"/admin/memory/{model}/{obj.pk}/change/", f"/admin/memory/{model}/"
    auditor = staff_client("auditor", *VIEW)
    reader = staff_client("reader", *VIEW, "view_memory_body")
    assert f"/admin/memory/{model}/{obj.pk}/change/" in auditor.get(listing).content.decode()  # the auditor sees rows
    for url in (change, listing):
        page = auditor.get(url)
        assert page.status_code == 200
        assert [body for body in BODIES[model] if body in page.content.decode()] == [], url
    shown = reader.get(change).content.decode()  # the positive control: the same page with the permission
    assert [body for body in SHOWN[model] if body not in shown] == []
    hidden = auditor.get(change).content.decode()
    assert ("(hidden: seeing memory bodies needs" in hidden) == bool(SHOWN[model])
    assert 'name="reason"' not in shown  # read-only: nothing to change, so nothing to give a reason for
    before = OpLog.objects.count()
    assert reader.post(change, {"reason": "edit"}).status_code == 403
    assert OpLog.objects.count() == before


def test_an_entitys_page_is_titled_by_id_without_the_body_permission(
    rows: dict[str, Any], staff_client: Callable[..., Client]
) -> None:
    entity = rows["entity"]
    auditor = staff_client("auditor", "view_entity")
    page = auditor.get(f"/admin/memory/entity/{entity.pk}/change/").content.decode()
    assert f"entity #{entity.pk} (person)" in page and NAME not in page
    history = auditor.get(f"/admin/memory/entity/{entity.pk}/history/").content.decode()
    assert f"entity #{entity.pk} (person)" in history and NAME not in history
    searched = auditor.get("/admin/memory/entity/", {"q": "Zephyrine"}).content.decode()
    assert NAME not in searched
    reader = staff_client("reader", "view_entity", "view_memory_body")
    assert NAME in reader.get(f"/admin/memory/entity/{entity.pk}/history/").content.decode()
    found = reader.get("/admin/memory/entity/", {"q": "Zephyrine"}).content.decode()
    assert f"/admin/memory/entity/{entity.pk}/change/" in found
