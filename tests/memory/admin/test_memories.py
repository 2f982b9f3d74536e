"""The memory admin: every action needs its own permission, and memory bodies need `memory.view_memory_body`.

A staff user with only the view permission lists metadata, cannot run forget/restore (a forged POST changes
nothing) and does not see the body; a staff user holding the permissions can (the positive control)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from memory.models import Memory
from memory.save import SaveResult
from palace.models import OpLog

URL = "/admin/memory/memory/"
BODY = "The vault combination is under the blue mug"


@pytest.fixture
def secret(save: Callable[..., SaveResult]) -> Memory:
    result = save(BODY, placard="mug cue")
    assert result.memory is not None
    return result.memory


def staff(make_user: Callable[..., Any], name: str, *codenames: str) -> Client:
    user = make_user(name)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="memory", codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_view_only_staff_cannot_forget_or_restore_but_a_holder_of_the_permissions_can(
    secret: Memory, make_user: Callable[..., Any]
) -> None:
    viewer = staff(make_user, "auditor", "view_memory")
    listing = viewer.get(URL).content.decode()
    assert f"{URL}{secret.pk}/change/" in listing  # the viewer does see the row
    assert "forget_memories" not in listing and "restore_memories" not in listing  # actions are not offered
    viewer.post(URL, {"reason": "audit test", "action": "forget_memories", "_selected_action": [secret.pk]})
    secret.refresh_from_db()
    assert secret.status == "active"
    assert not OpLog.objects.filter(target_id=secret.pk, op="memory.forget").exists()

    keeper = staff(make_user, "keeper", "view_memory", "forget_memory", "restore_memory")
    assert "forget_memories" in keeper.get(URL).content.decode()
    keeper.post(URL, {"reason": "audit test", "action": "forget_memories", "_selected_action": [secret.pk]})
    secret.refresh_from_db()
    assert secret.status == "forgotten"
    viewer.post(URL, {"reason": "audit test", "action": "restore_memories", "_selected_action": [secret.pk]})
    secret.refresh_from_db()
    assert secret.status == "forgotten"  # restore refused for the viewer as well
    keeper.post(URL, {"reason": "audit test", "action": "restore_memories", "_selected_action": [secret.pk]})
    secret.refresh_from_db()
    assert secret.status == "active"


def test_a_forget_holder_without_restore_cannot_restore(secret: Memory, make_user: Callable[..., Any]) -> None:
    forgetter = staff(make_user, "forgetter", "view_memory", "forget_memory")
    forgetter.post(URL, {"reason": "audit test", "action": "forget_memories", "_selected_action": [secret.pk]})
    forgetter.post(URL, {"reason": "audit test", "action": "restore_memories", "_selected_action": [secret.pk]})
    secret.refresh_from_db()
    assert secret.status == "forgotten"


def test_memory_bodies_need_the_body_permission(secret: Memory, make_user: Callable[..., Any]) -> None:
    viewer = staff(make_user, "auditor", "view_memory")
    change = f"{URL}{secret.pk}/change/"
    for page in (viewer.get(URL), viewer.get(change), viewer.get(URL, {"q": "vault"})):
        assert page.status_code == 200
        assert BODY not in page.content.decode() and "mug cue" not in page.content.decode()
    assert "hidden" in viewer.get(change).content.decode()
    # searching by content would read it one guess at a time: the search finds nothing by body words
    assert f"{URL}{secret.pk}/change/" not in viewer.get(URL, {"q": "vault"}).content.decode()

    reader = staff(make_user, "reader", "view_memory", "view_memory_body")
    assert BODY in reader.get(change).content.decode() and "mug cue" in reader.get(change).content.decode()
    assert f"{URL}{secret.pk}/change/" in reader.get(URL, {"q": "vault"}).content.decode()


def test_superuser_sees_bodies_and_runs_actions(secret: Memory, make_user: Callable[..., Any]) -> None:
    root = make_user("root", admin=True)
    client = Client()
    client.force_login(root)
    assert BODY in client.get(f"{URL}{secret.pk}/change/").content.decode()
    client.post(URL, {"reason": "audit test", "action": "forget_memories", "_selected_action": [secret.pk]})
    secret.refresh_from_db()
    assert secret.status == "forgotten"


def test_edges_and_review_cards_show_no_body(secret: Memory, make_user: Callable[..., Any]) -> None:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from memory.models import Edge
    from review.models import ReviewCard

    card = ReviewCard.objects.create(memory=secret, palace=secret.palace, due_at=timezone.now())
    edge = Edge.objects.create(palace=secret.palace, from_memory=secret, to_memory=secret, kind="related")
    viewer = staff(make_user, "auditor")
    get_user_model().objects.get(username="auditor").user_permissions.set(
        Permission.objects.filter(codename__in=["view_memory", "view_edge", "view_reviewcard"])
    )
    pages = [
        "/admin/memory/edge/",
        f"/admin/memory/edge/{edge.pk}/change/",
        "/admin/review/reviewcard/",
        f"/admin/review/reviewcard/{card.pk}/change/",
        f"{URL}{secret.pk}/history/",
    ]
    for url in pages:
        page = viewer.get(url)
        assert page.status_code == 200 and f"#{secret.pk} fact" in page.content.decode()
        assert BODY not in page.content.decode()
    # the placard search is a body search: it finds nothing for the viewer, the card for a body reader
    found = viewer.get("/admin/review/reviewcard/", {"q": "mug"}).content.decode()
    assert f"/reviewcard/{card.pk}/change/" not in found
    reader = staff(make_user, "reader", "view_memory_body")
    get_user_model().objects.get(username="reader").user_permissions.add(
        *Permission.objects.filter(codename__in=["view_reviewcard"])
    )
    assert f"/reviewcard/{card.pk}/change/" in reader.get("/admin/review/reviewcard/", {"q": "mug"}).content.decode()
