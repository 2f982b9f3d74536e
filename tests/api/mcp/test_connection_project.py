"""The project follows the workspace: a connection names its project once (an X-Atrium-Project header, or ?project=
on the MCP URL), and every tool that addresses one palace uses it when given no `project` (api/mcp/connection.py,
ToolCall.palace in api/mcp/runner.py). Precedence: the argument, the connection, the token's default project, the
personal palace; every result says which palace it used and why (`palaceUsed`, and the text's last line). A
connection naming a project the user is not a member of is an error for the tools that would use it, never a save
somewhere else; the acting user still comes from the token alone."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from accounts.tokens import token_create
from memory.models import Memory
from palace.actors import Actor
from palace.models import OpLog, Palace
from palace.services import project_create
from tests.api.mcp.conftest import BASE, call_each, mcp_client, run, text_of
from tests.conftest import PROJECT_ORIGIN

OTHER_ORIGIN = "https://github.com/atrium-test/other"
THIRD_ORIGIN = "https://github.com/atrium-test/third"
HEADER = "X-Atrium-Project"


def _saved(result: Any) -> Memory:
    assert not result.is_error, text_of(result)
    return Memory.objects.get(pk=int(result.structured_content["items"][0]["id"]))


def _used(result: Any) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    used = result.structured_content["palaceUsed"]
    assert isinstance(used, dict), result.structured_content
    return used


def _palace_line(result: Any) -> str:
    """The text's "Palace used:" line (the last line, or the last inside the wrapper of a recalled result)."""
    lines = [line for line in text_of(result).splitlines() if line.startswith("Palace used: ")]
    assert len(lines) == 1, text_of(result)
    return lines[0]


def _save(content: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    return ("memory_save", {"content": content, "kind": "fact", **extra})


@pytest.fixture
def other(alice: Any, system: Actor, mcp_db: None) -> Palace:
    return project_create(origin=OTHER_ORIGIN, owner=alice, actor=system)


@pytest.fixture
def third(alice: Any, system: Actor, mcp_db: None) -> Palace:
    return project_create(origin=THIRD_ORIGIN, owner=alice, actor=system)


def test_a_header_or_the_url_names_the_connection_s_project(
    tokens: dict[str, str], alice: Any, project: Palace
) -> None:
    personal = Palace.objects.get(personal_owner=alice)
    (by_header,) = run(
        call_each(tokens["alice"], [_save("The demo app deploys on Fridays.")], headers={HEADER: PROJECT_ORIGIN})
    )
    (by_query,) = run(
        call_each(
            tokens["alice"],
            [_save("The demo app's CI runs on Postgres 18.")],
            url=f"{BASE}/mcp?project={quote(PROJECT_ORIGIN, safe='')}",
        )
    )
    (unnamed,) = run(call_each(tokens["alice"], [_save("Alice reads release notes on Mondays.")]))

    for result in (by_header, by_query):
        assert _saved(result).palace_id == project.pk
        assert _used(result) == {"id": project.pk, "name": project.label, "kind": "project", "chosenBy": "connection"}
        assert text_of(result).endswith(
            f"Palace used: {project.label} (named by this connection "
            "(X-Atrium-Project header or ?project= on the MCP URL))"
        )
    # Positive control for "the connection chose it": the same token without one saves to the personal palace.
    assert _saved(unnamed).palace_id == personal.pk
    assert _used(unnamed)["chosenBy"] == "personal"
    # The acting user is the token's, whatever the connection names: the op row says alice, through that token.
    op = OpLog.objects.get(op="memory.save", target_id=_saved(by_header).pk)
    assert op.palace_id == project.pk and op.actor_user_id == alice.pk


def test_precedence_is_argument_then_connection_then_token_then_personal(
    tokens: dict[str, str], alice: Any, project: Palace, other: Palace, third: Palace
) -> None:
    personal = Palace.objects.get(personal_owner=alice)
    _, with_default = token_create(user=alice, label="other agent", project=OTHER_ORIGIN, actor=Actor.for_user(alice))
    connection = {HEADER: PROJECT_ORIGIN}
    argument, from_connection, personal_argument = run(
        call_each(
            with_default,
            [
                _save("Third pins Node 22.", project="github.com/atrium-test/third"),  # the key, as results name it
                _save("Demo pins Node 20."),
                _save("Alice prefers tabs.", project="personal"),
            ],
            headers=connection,
        )
    )
    (from_token,) = run(call_each(with_default, [_save("Other pins Node 18.")]))
    (from_nothing,) = run(call_each(tokens["alice"], [_save("Alice drinks tea.")]))

    expected = [
        (argument, third, "argument"),
        (from_connection, project, "connection"),
        (personal_argument, personal, "argument"),
        (from_token, other, "token"),
        (from_nothing, personal, "personal"),
    ]
    for result, palace, chosen_by in expected:
        assert _saved(result).palace_id == palace.pk, (chosen_by, text_of(result))
        assert _used(result) == {"id": palace.pk, "name": palace.label, "kind": palace.kind, "chosenBy": chosen_by}
        assert _palace_line(result).startswith(f"Palace used: {palace.label} (")


def test_a_connection_naming_a_project_the_user_is_not_in_is_refused_where_it_would_be_used(
    tokens: dict[str, str], alice: Any, charlie: Any, project: Palace
) -> None:
    connection = {HEADER: PROJECT_ORIGIN}
    seed = Memory.objects.filter(palace=project).count()
    # Positive control: alice, a member, works in the project through the same connection.
    (member,) = run(call_each(tokens["alice"], [_save("Demo releases are tagged vX.Y.Z.")], headers=connection))
    assert _saved(member).palace_id == project.pk
    memories, ops = Memory.objects.count(), OpLog.objects.count()

    charlie_personal = Palace.objects.get(personal_owner=charlie)
    save, stats, handoff, named, search = run(
        call_each(
            tokens["charlie"],
            [
                _save("Charlie's note meant for the demo project."),
                ("memory_stats", {}),
                ("memory_handoff_load", {}),
                _save("Charlie keeps notes in a diary.", project="personal"),
                ("memory_search", {"query": "release tags"}),
            ],
            headers=connection,
        )
    )
    for name, result in (("memory_save", save), ("memory_stats", stats), ("memory_handoff_load", handoff)):
        assert result.is_error, (name, text_of(result))
        message = text_of(result)
        assert "X-Atrium-Project" in message and "`project`" in message and "not one of your palaces" in message
    # Refused, not redirected: nothing stored anywhere for the failed save (not in charlie's personal palace either).
    assert not Memory.objects.filter(content__contains="meant for the demo").exists()
    # An explicit `project` still wins over the connection; a tool that reads every palace is not narrowed by it,
    # and charlie sees none of the project's memories.
    assert _saved(named).palace_id == charlie_personal.pk
    assert _used(named)["chosenBy"] == "argument"
    assert not search.is_error and search.structured_content["palaceUsed"] is None
    assert [h["id"] for h in search.structured_content["hits"]] == []
    assert (Memory.objects.count(), OpLog.objects.count()) == (memories + 1, ops + 1)
    assert Memory.objects.filter(palace=project).count() == seed + 1


def test_a_viewer_s_connection_reads_the_project_and_a_write_says_where_the_palace_came_from(
    tokens: dict[str, str], bob: Any, project: Palace, token_for: Any
) -> None:
    bob_token = token_for(bob)  # bob is a viewer of the demo project
    stats, save = run(
        call_each(bob_token, [("memory_stats", {}), _save("Bob's note for demo.")], headers={HEADER: PROJECT_ORIGIN})
    )
    assert _used(stats) == {"id": project.pk, "name": project.label, "kind": "project", "chosenBy": "connection"}
    assert save.is_error
    assert "read-only" in text_of(save) and "X-Atrium-Project" in text_of(save)
    assert not Memory.objects.filter(content__contains="Bob's note").exists()


def test_a_header_and_a_url_that_name_different_projects_are_refused_and_one_project_in_two_spellings_is_not(
    tokens: dict[str, str], project: Palace, other: Palace
) -> None:
    (conflict,) = run(
        call_each(
            tokens["alice"],
            [_save("Which project is this for?")],
            url=f"{BASE}/mcp?project={quote(OTHER_ORIGIN, safe='')}",
            headers={HEADER: PROJECT_ORIGIN},
        )
    )
    assert conflict.is_error
    assert "more than one project" in text_of(conflict) and OTHER_ORIGIN in text_of(conflict)
    assert not Memory.objects.filter(content__contains="Which project").exists()
    (same,) = run(
        call_each(
            tokens["alice"],
            [_save("Demo's staging is at staging.demo.test.")],
            url=f"{BASE}/mcp?project=https://github.com/atrium-test/demo",
            headers={HEADER: "github.com/atrium-test/demo"},
        )
    )
    assert _saved(same).palace_id == project.pk


def test_every_tool_that_addresses_a_palace_labels_it(tokens: dict[str, str], project: Palace) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory_stats", {}),
        ("memory_timeline", {}),
        ("memory_tour", {}),
        ("memory_audit_forgotten", {}),
        ("memory_handoff_load", {}),
        ("memory_handoff_save", {"doing": "labels", "expected_version": 0}),
        ("memory_history", {}),
        ("memory_profile", {}),
        ("memory_profile_edit", {}),
        ("memory_distill", {}),
        ("memory_export", {}),
        ("memory_search", {"query": "anything", "project": "personal"}),
    ]
    results = run(call_each(tokens["alice"], calls, headers={HEADER: PROJECT_ORIGIN}))
    for (name, args), result in zip(calls, results, strict=True):
        used = _used(result)
        chosen_by = "argument" if "project" in args else "connection"
        assert used["chosenBy"] == chosen_by, (name, used)
        assert (used["id"] == project.pk) == (chosen_by == "connection"), (name, used)
        assert _palace_line(result).startswith(f"Palace used: {used['name']} ("), name


def test_every_tool_with_a_project_argument_declares_palace_used(tokens: dict[str, str]) -> None:
    async def listed() -> Any:
        async with mcp_client(tokens["alice"]) as client:
            return await client.list_tools()

    tools = run(listed()).tools
    with_project = [t for t in tools if "project" in (t.input_schema.get("properties") or {})]
    assert len(with_project) >= 15, [t.name for t in with_project]
    for t in with_project:
        assert "palaceUsed" in (t.output_schema or {}).get("properties", {}), t.name
