"""Staff in the admin for the memory admin's tests: a logged-in client holding named permissions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

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
