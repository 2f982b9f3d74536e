"""Shared fixtures: the personas alice (owner), bob (member, a viewer unless a test makes him an editor) and
charlie (an outsider), a project palace they share, clients and tokens for each, and an embedder that is down."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client

from palace.actors import Actor
from palace.models import Membership, Palace
from palace.services import member_set, project_create, user_create

PROJECT_ORIGIN = "git@github.com:atrium-test/demo.git"


def pytest_configure() -> None:
    # Password hashing is deliberately slow in production; tests create many users.
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _acting_as_system() -> Iterator[None]:
    """Tests set up data and check stored state as the server does (row-level security, palace/rls.py); the doors
    they call (the test Client, MCP, the websocket) act as their caller inside, and restore this afterwards. A test
    of what a caller sees through raw SQL switches with `rls.acting_as(...)` / `rls.acting_as_nobody()`."""
    from palace.rls import acting_as_system

    with acting_as_system("tests"):
        yield


@pytest.fixture
def system() -> Actor:
    return Actor.for_system("tests")


@pytest.fixture
def make_user(db: Any, system: Actor) -> Callable[..., Any]:
    def make(username: str, *, password: str = "correct-horse-9", admin: bool = False) -> Any:
        return user_create(
            username=username, email=f"{username}@example.test", password=password, is_admin=admin, actor=system
        )

    return make


@pytest.fixture
def alice(make_user: Callable[..., Any]) -> Any:
    return make_user("alice")


@pytest.fixture
def bob(make_user: Callable[..., Any]) -> Any:
    return make_user("bob")


@pytest.fixture
def charlie(make_user: Callable[..., Any]) -> Any:
    return make_user("charlie")


@pytest.fixture
def project(alice: Any, bob: Any, system: Actor) -> Palace:
    """github.com/atrium-test/demo: alice owns it, bob is a viewer."""
    palace = project_create(origin=PROJECT_ORIGIN, owner=alice, actor=system)
    member_set(palace=palace, user=bob, role=Membership.Role.VIEWER, actor=system)
    return palace


@pytest.fixture
def bob_editor(project: Palace, bob: Any, system: Actor) -> Any:
    member_set(palace=project, user=bob, role=Membership.Role.EDITOR, actor=system)
    return bob


@pytest.fixture
def client_for(db: Any) -> Callable[[Any], Client]:
    def make(user: Any) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def token_for(db: Any) -> Callable[..., str]:
    from accounts.tokens import token_create

    def make(user: Any, scope: str = "write", label: str = "test") -> str:
        _, raw = token_create(user=user, label=label, scope=scope, actor=Actor.for_user(user))
        return raw

    return make


@pytest.fixture
def bearer() -> Callable[[str], dict[str, str]]:
    return lambda raw: {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


class FailingEmbedder:
    """An embedder whose every call fails, as a crashed model or an unreachable endpoint would."""

    name = "failing"

    def passages(self, texts: list[str]) -> Any:
        from memory.providers import EmbedderUnavailable

        raise EmbedderUnavailable("embedder is down (test)")

    def query(self, text: str) -> Any:
        from memory.providers import EmbedderUnavailable

        raise EmbedderUnavailable("embedder is down (test)")


@pytest.fixture
def embedder_down() -> Iterator[None]:
    """The embedder is down for this test (saves go without vectors, search runs its lexical arm only)."""
    from memory.providers import set_embedder

    set_embedder(FailingEmbedder())
    try:
        yield
    finally:
        set_embedder(None, active=False)
