"""The panel's history buttons (issue 13): bring back an earlier version, undo a distillation; an outsider gets 404."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.test import Client

from memory.jobs import distill_run
from memory.lifecycle import memory_update
from memory.models import Memory
from memory.save import memory_save
from palace.actors import Actor
from palace.models import OpLog, Palace
from tests.fakes.memories import make_memory, topic_vectors


def test_bring_back_this_version_from_the_history(
    client_for: Callable[[Any], Client], alice: Any, charlie: Any
) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    old = memory_save(palace=palace, actor=Actor.for_user(alice), content="Standup is at 9:30.", kind="fact").memory
    assert old is not None
    head = memory_update(memory_id=old.pk, actor=Actor.for_user(alice), content="Standup is at 10:00.")
    page = client_for(alice).get(f"/palace/m/{head.pk}/")
    assert page.status_code == 200 and f'data-checkout="{old.pk}"' in page.content.decode()
    outsider = client_for(charlie).post(f"/palace/m/{old.pk}/checkout/")
    assert outsider.status_code == 404
    response = client_for(alice).post(f"/palace/m/{old.pk}/checkout/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    new = Memory.objects.get(supersedes=head)
    assert new.content == "Standup is at 9:30." and new.source_kind == "panel"
    assert "Standup is at 9:30." in response.content.decode() and "<html" not in response.content.decode()
    assert OpLog.objects.get(op="memory.checkout").target_id == new.pk


def test_undo_distillation_button(client_for: Callable[[Any], Client], alice: Any, charlie: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    members = [
        make_memory(palace, content=f"Deploys go out on Tuesdays, note {i}.", kind="decision", embedding=v)
        for i, v in enumerate(topic_vectors(3, seed=7))
    ]
    (applied,) = distill_run(mode="apply", llm=None).clusters
    assert "Undo distillation" in client_for(alice).get(f"/palace/m/{applied.rule_id}/").content.decode()
    assert client_for(charlie).post(f"/palace/m/{applied.rule_id}/distill-undo/").status_code == 404
    assert Memory.objects.get(pk=applied.rule_id).status == "active"
    assert client_for(alice).post(f"/palace/m/{applied.rule_id}/distill-undo/").status_code == 302
    assert Memory.objects.get(pk=applied.rule_id).status == "archived"
    assert all(Memory.objects.get(pk=m.pk).status == "active" for m in members)
