"""Staff in the admin for the memory admin's tests: a logged-in client holding named permissions, and the revert of
one op row through the audit console, refused to a restorer without the kind's permission and done by one with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from palace.models import OpLog

CONSOLE = "/admin/palace/oplog/"
Staff = Callable[..., Client]


@pytest.fixture
def staff_client(make_user: Callable[..., Any]) -> Staff:
    """staff_client("keeper", "restore_memory", "change_membership"): a staff user holding those permissions (by
    codename, any app), logged in."""

    def make(name: str, *codenames: str) -> Client:
        user = make_user(name)
        user.is_staff = True
        user.save()
        found = Permission.objects.filter(codename__in=codenames)
        assert sorted(found.values_list("codename", flat=True)) == sorted(codenames), "a permission is misspelt"
        user.user_permissions.set(found)
        client = Client()
        client.force_login(user)
        return client

    return make


def revert_url(row: OpLog) -> str:
    return f"/admin/memory/memory/revert/{row.pk}/"


@pytest.fixture
def revert_through_console(staff_client: Staff) -> Callable[..., OpLog]:
    """Revert `row` from the console as staff: first as a restorer without `permission` (the page offers no form,
    a POST is 403 and nothing is written), then as one with it (the positive control, `keeper<n>` for the n-th call
    of a test). Returns the revert's own op row, after checking it names the row, the staff member and the reason,
    and shows in the console."""

    calls = iter(range(1, 100))

    def revert(row: OpLog, permission: str, reason: str = "put back: ticket 77") -> OpLog:
        url, n = revert_url(row), next(calls)
        auditor = staff_client(f"auditor{n}", "view_oplog")  # no restore right at all
        assert auditor.post(url, {"reason": reason}).status_code == 403
        restorer = staff_client(f"restorer{n}", "view_oplog", "restore_memory")
        page = restorer.get(url).content.decode()
        assert "revert-form" not in page and permission in page, page
        assert restorer.post(url, {"reason": reason}).status_code == 403
        assert not OpLog.objects.filter(op="memory.revert", detail__reverts=row.pk).exists()

        keeper = staff_client(f"keeper{n}", "view_oplog", "restore_memory", permission)
        assert 'id="revert-form"' in keeper.get(url).content.decode()
        done = keeper.post(url, {"reason": reason})
        assert done.status_code == 302, done.content.decode()[:2000]
        revert_row = OpLog.objects.get(op="memory.revert", detail__reverts=row.pk)
        assert revert_row.reason == reason and revert_row.actor_user is not None
        assert (revert_row.actor_user.get_username(), revert_row.actor_name) == (f"keeper{n}", "admin")
        console = keeper.get(CONSOLE, {"actor": f"keeper{n}"}).content.decode()
        assert f"{CONSOLE}{revert_row.pk}/change/" in console  # the revert is itself on the log
        again = keeper.get(url).content.decode()
        assert f"already reverted (op #{revert_row.pk})" in again and "revert-form" not in again
        return revert_row

    return revert
