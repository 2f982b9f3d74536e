"""Login throttling per address (a password spray across user names) and the password validators (issue 24,
Low), through the login form, the admin's add-user form and `atrium createuser`."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

RIGHT = "correct-horse-9"  # the personas' password (tests/conftest.py)
SPRAYER, OFFICE = "203.0.113.7", "198.51.100.20"


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_failures_across_many_user_names_lock_the_address(url: str, make_user: Any) -> None:
    make_user("alice", admin=True)
    limit = settings.ATRIUM_LOGIN_IP_FAILURE_LIMIT
    assert limit > settings.ATRIUM_LOGIN_FAILURE_LIMIT  # one failure per name never trips the per-user rule
    sprayer = Client(REMOTE_ADDR=SPRAYER)
    for n in range(limit):
        response = sprayer.post(url, {"username": f"guess{n}", "password": "Winter2026!"})
        assert response.status_code == (429 if n == limit - 1 else 200), n
    # the address is refused now, for a user name it never tried and with the right password
    locked = sprayer.post(url, {"username": "alice", "password": RIGHT})
    assert locked.status_code == 429 and not logged_in(sprayer)
    # positive control: the same user from another address logs in
    office = Client(REMOTE_ADDR=OFFICE)
    assert office.post(url, {"username": "alice", "password": RIGHT}).status_code == 302 and logged_in(office)


def test_below_the_address_limit_the_address_still_logs_in(make_user: Any) -> None:
    make_user("alice")
    client = Client(REMOTE_ADDR=SPRAYER)
    for n in range(settings.ATRIUM_LOGIN_IP_FAILURE_LIMIT - 1):
        assert client.post("/login/", {"username": f"guess{n}", "password": "nope-nope"}).status_code == 200
    assert client.post("/login/", {"username": "alice", "password": RIGHT}).status_code == 302 and logged_in(client)


def test_createuser_refuses_a_common_or_similar_password(db: Any, monkeypatch: Any) -> None:
    users = get_user_model().objects
    for name, password, said in [
        ("dora", "password123\n", "too common"),
        ("dorothea", "dorothea1\n", "too similar"),
        ("dora", "short\n", "too short"),
    ]:
        monkeypatch.setattr("sys.stdin", io.StringIO(password))
        with pytest.raises(CommandError, match=said):
            call_command("createuser", name, "--password-stdin")
        assert not users.filter(username=name).exists()
    # positive control: an uncommon password that is not the user name is accepted
    monkeypatch.setattr("sys.stdin", io.StringIO("violet-anchor-47\n"))
    call_command("createuser", "dora", "--password-stdin")
    assert users.get(username="dora").check_password("violet-anchor-47")


def test_the_admin_add_user_form_refuses_a_common_password(make_user: Any) -> None:
    root = make_user("root", admin=True)
    client = Client()
    client.force_login(root)
    url = "/admin/auth/user/add/"
    form = {"username": "erin", "usable_password": "true", "reason": "new colleague"}
    refused = client.post(url, {**form, "password1": "password123", "password2": "password123"})
    assert refused.status_code == 200
    assert "too common" in " ".join(refused.context["adminform"].form.errors.get("password2", []))
    assert not get_user_model().objects.filter(username="erin").exists()
    accepted = client.post(url, {**form, "password1": "violet-anchor-47", "password2": "violet-anchor-47"})
    assert accepted.status_code == 302
    assert get_user_model().objects.get(username="erin").check_password("violet-anchor-47")
