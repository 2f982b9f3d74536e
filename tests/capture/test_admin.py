"""Capture in the admin (capture/admin.py): sessions, turns and backfill runs are listed for staff with the view
permission, read-only; a turn's text and a session's summary only with `memory.view_memory_body`. Each page is
checked both ways: the auditor does not see the body, the reader (the positive control) does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from capture.models import BackfillRun, CaptureSession, CaptureTurn
from palace.models import OpLog, Palace

TEXT = "Zephyrine approves the quarterly budget on the first Monday"
SUMMARY = "Planning the budget approval with Zephyrine"
VIEW = ("view_capturesession", "view_captureturn", "view_backfillrun")


@pytest.fixture
def staff(make_user: Callable[..., Any]) -> Callable[..., Client]:
    def make(name: str, *codenames: str) -> Client:
        user = make_user(name)
        user.is_staff = True
        user.save()
        user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def rows(alice: Any, palace: Palace) -> dict[str, Any]:
    session = CaptureSession.objects.create(user=alice, palace=palace, key="s-admin", summary=SUMMARY)
    turn = CaptureTurn.objects.create(session=session, index=0, role="user", text=TEXT)
    return {"capturesession": session, "captureturn": turn, "backfillrun": BackfillRun.objects.create(user=alice)}


@pytest.mark.parametrize(("model", "body"), [("captureturn", TEXT), ("capturesession", SUMMARY)])
def test_captured_text_needs_the_body_permission_and_the_rows_are_read_only(
    model: str, body: str, rows: dict[str, Any], staff: Callable[..., Client]
) -> None:
    obj = rows[model]
    change, listing = f"/admin/capture/{model}/{obj.pk}/change/", f"/admin/capture/{model}/"
    auditor, reader = staff("auditor", *VIEW), staff("reader", *VIEW, "view_memory_body")
    assert change in auditor.get(listing).content.decode()  # the auditor sees the row
    hidden = auditor.get(change).content.decode()
    assert body not in hidden and "(hidden: seeing captured text needs" in hidden
    assert body not in auditor.get(listing, {"q": body.split()[0]}).content.decode()  # no search by the body
    shown = reader.get(change).content.decode()
    assert body in shown  # the positive control: the same page with the permission
    assert 'name="reason"' not in shown
    before = OpLog.objects.count()
    assert reader.post(change, {"reason": "edit"}).status_code == 403
    assert OpLog.objects.count() == before


def test_a_backfill_run_is_listed_read_only(rows: dict[str, Any], staff: Callable[..., Client]) -> None:
    run = rows["backfillrun"]
    auditor = staff("auditor", *VIEW)
    assert auditor.get(f"/admin/capture/backfillrun/{run.pk}/change/").status_code == 200
    assert auditor.get("/admin/capture/backfillrun/add/").status_code == 403
