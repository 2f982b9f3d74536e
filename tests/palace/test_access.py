"""The one access function: members read, owners and editors write, outsiders cannot tell a palace exists."""

from __future__ import annotations

from typing import Any

import pytest

from palace import selectors
from palace.errors import NotFound, PermissionDenied
from palace.models import Membership, Palace
from tests.conftest import PROJECT_ORIGIN


def test_every_new_user_gets_a_personal_palace_they_own(alice: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    assert palace.kind == "personal"
    assert Membership.objects.get(palace=palace, user=alice).role == "owner"
    assert selectors.palace_get(user=alice) == palace


def test_outsider_cannot_read_a_personal_palace_but_its_owner_can(alice: Any, charlie: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    assert selectors.palace_get(user=alice, palace_id=palace.pk) == palace
    with pytest.raises(NotFound):
        selectors.palace_get(user=charlie, palace_id=palace.pk)
    assert palace not in selectors.palaces_readable(user=charlie)
    assert palace in selectors.palaces_readable(user=alice)


def test_outsider_gets_the_same_answer_for_a_hidden_and_a_missing_project(
    project: Palace, alice: Any, charlie: Any
) -> None:
    assert selectors.palace_get(user=alice, origin=PROJECT_ORIGIN) == project
    with pytest.raises(NotFound) as hidden:
        selectors.palace_get(user=charlie, origin=PROJECT_ORIGIN)
    with pytest.raises(NotFound) as missing:
        selectors.palace_get(user=charlie, origin="git@github.com:atrium-test/nothing-here.git")
    assert type(hidden.value) is type(missing.value)
    assert str(hidden.value).replace(PROJECT_ORIGIN, "X") == str(missing.value).replace(
        "git@github.com:atrium-test/nothing-here.git", "X"
    )
    with pytest.raises(NotFound):
        selectors.palace_get(user=charlie, palace_id=project.pk)


def test_project_is_found_by_any_spelling_of_its_origin(project: Palace, alice: Any) -> None:
    for spelling in ["https://github.com/atrium-test/demo", "ssh://git@github.com/atrium-test/demo.git"]:
        assert selectors.palace_get(user=alice, origin=spelling) == project


def test_viewer_reads_but_may_not_write_while_the_owner_writes(project: Palace, alice: Any, bob: Any) -> None:
    assert selectors.palace_get(user=bob, palace_id=project.pk) == project
    with pytest.raises(PermissionDenied):
        selectors.palace_get(user=bob, palace_id=project.pk, write=True)
    assert selectors.palace_get(user=alice, palace_id=project.pk, write=True) == project
    assert project in selectors.palaces_readable(user=bob)
    assert project not in selectors.palaces_writable(user=bob)
    assert project in selectors.palaces_writable(user=alice)


def test_editor_may_write(project: Palace, bob_editor: Any) -> None:
    assert selectors.palace_get(user=bob_editor, palace_id=project.pk, write=True) == project


def test_inactive_and_anonymous_users_see_nothing(alice: Any, project: Palace) -> None:
    from django.contrib.auth.models import AnonymousUser

    assert selectors.palaces_readable(user=alice).count() == 2
    alice.is_active = False
    alice.save()
    assert selectors.palaces_readable(user=alice).count() == 0
    assert selectors.palaces_readable(user=AnonymousUser()).count() == 0
    with pytest.raises(NotFound):
        selectors.palace_get(user=AnonymousUser(), palace_id=project.pk)


def test_roles_listing_puts_the_personal_palace_first(project: Palace, bob: Any) -> None:
    pairs = selectors.palaces_with_roles(user=bob)
    assert [(p.kind, role) for p, role in pairs] == [("personal", "owner"), ("project", "viewer")]
