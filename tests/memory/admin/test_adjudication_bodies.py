"""Staff without `memory.view_memory_body` do not read bodies through the judge's rulings (`new_text`, `reason`)
nor through the audit console's reason column (issue 24, Low); with the permission they do (the positive control)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import Permission
from django.test import Client

from memory.lifecycle import memory_forget
from memory.models import Adjudication
from palace.actors import Actor
from palace.models import OpLog, Palace
from tests.fakes.memories import make_memory

SAVED = "the vault passphrase sits under the blue mug"
RULING = "restates: both say the key is under the blue mug"
EPITAPH = "moved the spare key from the green teapot"


def staff(make_user: Callable[..., Any], name: str, *codenames: str) -> Client:
    user = make_user(name)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_a_ruling_shows_its_texts_only_with_the_body_permission(project: Palace, make_user: Any) -> None:
    ruling = Adjudication.objects.create(palace=project, verdict="merge", new_text=SAVED, reason=RULING)
    auditor = staff(make_user, "auditor", "view_adjudication")
    reader = staff(make_user, "reader", "view_adjudication", "view_memory_body")
    listed = auditor.get("/admin/memory/adjudication/", {"q": "blue mug"})
    assert listed.status_code == 200 and "blue mug" not in listed.content.decode()
    page = auditor.get(f"/admin/memory/adjudication/{ruling.pk}/change/").content.decode()
    assert "blue mug" not in page
    assert "hidden: seeing memory bodies" in page and "merge" in page  # the row itself is still there
    page = reader.get(f"/admin/memory/adjudication/{ruling.pk}/change/").content.decode()
    assert SAVED in page and RULING in page


def test_the_console_masks_reasons_without_the_body_permission(project: Palace, alice: Any, make_user: Any) -> None:
    memory = make_memory(project, "The spare key is in the green teapot.")
    memory_forget(memory_id=memory.pk, actor=Actor.for_user(alice), reason=EPITAPH)
    row = OpLog.objects.get(op="memory.forget", target_id=memory.pk)
    auditor = staff(make_user, "auditor", "view_oplog")
    reader = staff(make_user, "reader", "view_oplog", "view_memory_body")
    for url in ("/admin/palace/oplog/", f"/admin/palace/oplog/{row.pk}/change/"):
        hidden = auditor.get(url)
        assert hidden.status_code == 200 and "green teapot" not in hidden.content.decode(), url
        assert "hidden: reading what people wrote" in hidden.content.decode(), url
        assert "memory.forget" in hidden.content.decode(), url  # the row is listed, only its reason masked
        shown = reader.get(url)
        assert shown.status_code == 200 and EPITAPH in shown.content.decode(), url
