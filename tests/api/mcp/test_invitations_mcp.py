"""Issue 24 at the MCP door (official client): a user only invited to a project (pending) reads and writes nothing
there and gets the answer of a project that does not exist, as does a non-member; after accepting, the same calls
work (positive control)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from memory.models import Memory
from palace.actors import Actor
from palace.membership import invitation_accept, member_invite
from palace.models import Palace
from tests.api.mcp.conftest import call_each, run, text_of
from tests.conftest import PROJECT_ORIGIN
from tests.fakes.memories import remember

MISSING = "https://github.com/atrium-test/nothing-here"
SECRET = "The demo service's launch codename is Bluebird"


def _answers(token: str) -> list[tuple[bool, str]]:
    """(is_error, text with the origin named neutralised) for a read and a write in the project, then for a missing
    project."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for origin in (PROJECT_ORIGIN, MISSING):
        calls += [
            ("memory_search", {"query": "launch codename Bluebird", "project": origin}),
            ("memory_save", {"content": "charlie was here", "kind": "fact", "project": origin}),
        ]
    results = run(call_each(token, calls))
    return [(r.is_error, text_of(r).replace(PROJECT_ORIGIN, "X").replace(MISSING, "X")) for r in results]


def test_invited_and_outsider_get_the_missing_projects_answer_until_accepted(
    tokens: dict[str, str], alice: Any, charlie: Any, project: Palace
) -> None:
    with transaction.atomic():  # the transactional database: slot_assign locks rows
        remember(project, SECRET)
    owner_search = run(
        call_each(tokens["alice"], [("memory_search", {"query": "Bluebird", "project": PROJECT_ORIGIN})])
    )
    assert "Bluebird" in text_of(owner_search[0])  # positive control: the owner reads it
    outsider = _answers(tokens["charlie"])
    assert all(error for error, _ in outsider)
    assert outsider[0] == outsider[2] and outsider[1] == outsider[3]  # not a member == no such project
    member_invite(palace_id=project.pk, username="charlie", role="editor", actor=Actor.for_user(alice))
    assert _answers(tokens["charlie"]) == outsider  # pending: still exactly nothing
    assert not Memory.objects.filter(palace=project, content="charlie was here").exists()

    invitation_accept(palace_id=project.pk, actor=Actor.for_user(charlie))
    found, saved = run(
        call_each(
            tokens["charlie"],
            [
                ("memory_search", {"query": "launch codename Bluebird", "project": PROJECT_ORIGIN}),
                ("memory_save", {"content": "charlie was here", "kind": "fact", "project": PROJECT_ORIGIN}),
            ],
        )
    )
    assert not found.is_error and "Bluebird" in text_of(found)
    assert not saved.is_error and Memory.objects.filter(palace=project, content="charlie was here").exists()
