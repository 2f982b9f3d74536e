"""memory_profile_edit, memory_handoff_save/_load, memory_history and memory_checkout on a handoff, through the
official client: versions round-trip, stale versions refused, rollback keeps history, the profile text injects the
curated profile first within its budget, and a handoff stays private in a shared project (with positive controls)."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import HandoffVersion, ProfileVersion
from memory.text.wrapping import CLOSE_TAG, OPEN_TAG
from palace.models import OpLog
from tests.api.mcp.conftest import MODES, call_each, run, text_of
from tests.conftest import PROJECT_ORIGIN


def _wrapped(result: Any) -> str:
    text = text_of(result)
    assert text.startswith(OPEN_TAG) and text.rstrip().endswith(CLOSE_TAG) and text.count(OPEN_TAG) == 1, text
    return text


@pytest.mark.parametrize("mode", MODES)
def test_profile_edit_conflict_rollback_and_injection(tokens: dict[str, str], mode: str) -> None:
    view0, edit1, stale, edit2, rollback, profile, history = run(
        call_each(
            tokens["alice"],
            [
                ("memory_profile_edit", {"action": "view"}),
                ("memory_profile_edit", {"action": "edit", "content": "Alice likes green tea.", "expected_version": 0}),
                ("memory_profile_edit", {"action": "edit", "content": "Alice likes coffee.", "expected_version": 0}),
                ("memory_profile_edit", {"action": "edit", "content": "Alice likes oolong.", "expected_version": 1}),
                ("memory_profile_edit", {"action": "rollback", "version": 1, "expected_version": 2}),
                ("memory_profile", {}),
                ("memory_history", {"target": "profile"}),
            ],
            mode,
        )
    )
    assert not view0.is_error and view0.structured_content["version"] == 0 and view0.structured_content["canEdit"]
    _wrapped(view0)
    assert not edit1.is_error and edit1.structured_content["version"] == 1
    assert stale.is_error and "at version 1, not 0" in text_of(stale) and "expected_version=1" in text_of(stale)
    assert edit2.structured_content["version"] == 2
    assert rollback.structured_content["version"] == 3 and rollback.structured_content["content"] == (
        "Alice likes green tea."
    )
    text = _wrapped(profile)
    assert profile.structured_content["curated"] and profile.structured_content["tokens"] <= 1024
    assert text.index("Alice likes green tea.") < text.index("Curated profile:") + 200
    assert "Alice likes coffee." not in text  # the refused edit never landed
    versions = [v["version"] for v in history.structured_content["profile"]]
    assert versions == [3, 2, 1] and history.structured_content["profile"][0]["rolledBackFrom"] == 1
    _wrapped(history)
    assert [o.op for o in OpLog.objects.filter(op__startswith="profile.").order_by("pk")] == [
        "profile.edit",
        "profile.edit",
        "profile.rollback",
    ]
    assert all(o.actor_token_id for o in OpLog.objects.filter(op__startswith="profile."))


def test_project_profile_writers_edit_viewers_read_outsiders_see_nothing(
    tokens: dict[str, str], project: Any, bob: Any, token_for: Any
) -> None:
    bob_token = token_for(bob)  # a viewer of the project
    (edit,) = run(
        call_each(
            tokens["alice"],
            [
                (
                    "memory_profile_edit",
                    {
                        "action": "edit",
                        "content": "Demo ships weekly.",
                        "expected_version": 0,
                        "project": PROJECT_ORIGIN,
                    },
                )
            ],
        )
    )
    assert not edit.is_error
    view, refused, profile = run(
        call_each(
            bob_token,
            [
                ("memory_profile_edit", {"action": "view", "project": PROJECT_ORIGIN}),
                (
                    "memory_profile_edit",
                    {"action": "edit", "content": "Bob's view.", "expected_version": 1, "project": PROJECT_ORIGIN},
                ),
                ("memory_profile", {"project": PROJECT_ORIGIN}),
            ],
        )
    )
    assert view.structured_content["content"] == "Demo ships weekly." and not view.structured_content["canEdit"]
    assert refused.is_error and "read-only" in text_of(refused)
    assert "Demo ships weekly." in text_of(profile)  # the project's curated profile, for a member who names it
    outsider, outsider_profile = run(
        call_each(
            tokens["charlie"],
            [
                ("memory_profile_edit", {"action": "view", "project": PROJECT_ORIGIN}),
                ("memory_profile", {"project": PROJECT_ORIGIN}),
            ],
        )
    )
    assert outsider.is_error and "project not found" in text_of(outsider)
    assert outsider_profile.is_error and "Demo ships" not in text_of(outsider_profile)
    assert ProfileVersion.objects.filter(palace=project).count() == 1


def test_handoff_round_trip_checkout_and_bootstrap(tokens: dict[str, str]) -> None:
    save = {"doing": "wiring the parser", "next_steps": ["write tests"], "files": ["parser.py"], "expected_version": 0}
    saved, stale, again, checkout, load, history, mem = run(
        call_each(
            tokens["alice"],
            [
                ("memory_handoff_save", save),
                ("memory_handoff_save", {**save, "doing": "an old tab"}),
                ("memory_handoff_save", {"doing": "parser merged", "expected_version": 1}),
                ("memory_checkout", {"target": "handoff", "id": 1, "reason": "back to the parser"}),
                ("memory_handoff_load", {}),
                ("memory_history", {"target": "handoff"}),
                ("memory_save", {"content": "The parser uses a Pratt loop for precedence.", "kind": "fact"}),
            ],
        )
    )
    assert saved.structured_content["version"] == 1 and "expected_version=1" in text_of(saved)
    assert stale.is_error and "at version 1, not 0" in text_of(stale)
    assert again.structured_content["version"] == 2
    assert not checkout.is_error, text_of(checkout)
    assert checkout.structured_content["handoff"]["version"] == 3
    assert checkout.structured_content["handoff"]["doing"] == "wiring the parser"
    assert "revert forward" in text_of(checkout)
    assert load.structured_content["handoff"]["version"] == 3 and "wiring the parser" in _wrapped(load)
    assert [h["version"] for h in history.structured_content["handoffs"]] == [3, 2, 1]
    assert HandoffVersion.objects.count() == 3
    assert not mem.is_error

    (boot,) = run(call_each(tokens["alice"], [("memory_handoff_load", {"budget": 256})]))
    assert boot.structured_content["tokens"] <= 256 and boot.structured_content["budget"] == 256
    assert "Pratt loop" in text_of(boot)


def test_bob_cannot_load_alices_handoff_in_their_shared_project(
    tokens: dict[str, str], project: Any, bob_editor: Any, token_for: Any
) -> None:
    secret = {"doing": "alice's secret refactor", "expected_version": 0, "project": PROJECT_ORIGIN}
    (saved,) = run(call_each(tokens["alice"], [("memory_handoff_save", secret)]))
    assert not saved.is_error
    bob_token = token_for(bob_editor)
    load, history, checkout = run(
        call_each(
            bob_token,
            [
                ("memory_handoff_load", {"project": PROJECT_ORIGIN}),
                ("memory_history", {"target": "handoff", "project": PROJECT_ORIGIN}),
                ("memory_checkout", {"target": "handoff", "id": 1, "project": PROJECT_ORIGIN}),
            ],
        )
    )
    assert load.structured_content["handoff"]["version"] == 0
    assert "secret refactor" not in text_of(load) and "secret refactor" not in text_of(history)
    assert history.structured_content["handoffs"] == []
    assert checkout.is_error and "not found" in text_of(checkout)
    # Positive control: alice loads her own.
    (mine,) = run(call_each(tokens["alice"], [("memory_handoff_load", {"project": PROJECT_ORIGIN})]))
    assert mine.structured_content["handoff"]["version"] == 1 and "secret refactor" in text_of(mine)
    (charlie,) = run(call_each(tokens["charlie"], [("memory_handoff_load", {"project": PROJECT_ORIGIN})]))
    assert charlie.is_error and "project not found" in text_of(charlie)


def test_memory_history_of_a_memory_chain(tokens: dict[str, str]) -> None:
    (saved,) = run(
        call_each(tokens["alice"], [("memory_save", {"content": "The build takes ten minutes.", "kind": "fact"})])
    )
    first = saved.structured_content["items"][0]["id"]
    (updated,) = run(
        call_each(tokens["alice"], [("memory_update", {"id": first, "content": "The build takes four minutes now."})])
    )
    new = updated.structured_content["memory"]["id"]
    mine, theirs = (
        run(call_each(tokens["alice"], [("memory_history", {"target": "memory", "id": first})]))[0],
        run(call_each(tokens["charlie"], [("memory_history", {"target": "memory", "id": first})]))[0],
    )
    assert [m["id"] for m in mine.structured_content["memories"]] == [new, first]
    _wrapped(mine)
    assert theirs.is_error and "not found" in text_of(theirs)


def test_read_token_loads_but_cannot_save(tokens: dict[str, str]) -> None:
    save, load, view = run(
        call_each(
            tokens["alice_read"],
            [
                ("memory_handoff_save", {"doing": "x", "expected_version": 0}),
                ("memory_handoff_load", {}),
                ("memory_history", {"target": "profile"}),
            ],
        )
    )
    assert save.is_error and "read scope" in text_of(save)
    assert not load.is_error and not view.is_error
    assert HandoffVersion.objects.count() == 0
