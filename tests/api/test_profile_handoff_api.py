"""REST for the curated profile and the handoff: view/edit/rollback/history, save/load/history/checkout, profile.txt
and bootstrap.txt — conflicts refused (409 naming the version), rollback keeps history, budgets respected, and each
refusal beside its positive control."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory.models import HandoffVersion, ProfileVersion
from memory.text.wrapping import CLOSE_TAG, OPEN_TAG
from palace.models import OpLog
from tests.api.conftest import Api
from tests.conftest import PROJECT_ORIGIN
from tests.fakes.memories import make_memory


def test_curated_profile_routes(api_for: Callable[..., Api], alice: Any, charlie: Any) -> None:
    api = api_for(alice)
    assert api.get("/api/v1/profile/curated") == (
        200,
        {
            "palace": api.get("/api/v1/profile/curated")[1]["palace"],
            "label": "my palace",
            "version": 0,
            "content": "",
            "can_edit": True,
        },
    )
    status, one = api.send("put", "/api/v1/profile/curated", {"content": "I review PRs daily.", "expected_version": 0})
    assert status == 201 and one["version"] == 1 and one["created_by"] == "alice"
    status, stale = api.send("put", "/api/v1/profile/curated", {"content": "Overwrite.", "expected_version": 0})
    assert status == 409 and stale["error"]["version"] == 1 and "at version 1, not 0" in stale["error"]["message"]
    assert api.send("put", "/api/v1/profile/curated", {"content": "Second.", "expected_version": 1})[0] == 201
    status, back = api.send("post", "/api/v1/profile/curated/rollback", {"version": 1, "expected_version": 2})
    assert status == 201 and back["version"] == 3 and back["rolled_back_from"] == 1
    status, history = api.get("/api/v1/profile/curated/history")
    assert status == 200 and [v["version"] for v in history] == [3, 2, 1]
    assert api.send("put", "/api/v1/profile/curated", {"content": "x", "expected_version": "nope"})[0] == 422
    assert api.send("put", "/api/v1/profile/curated", {"content": "x" * 5000, "expected_version": 3})[0] == 422

    # profile.txt injects it first.
    status, text = api.get("/api/v1/profile.txt")
    assert status == 200 and text.startswith(OPEN_TAG) and "I review PRs daily." in text

    # A read token reads but does not write; charlie sees only his own (empty) profile.
    reader = api_for(alice, scope="read")
    assert reader.get("/api/v1/profile/curated")[1]["version"] == 3
    assert reader.send("put", "/api/v1/profile/curated", {"content": "r", "expected_version": 3})[0] == 403
    theirs = api_for(charlie)
    assert theirs.get("/api/v1/profile/curated")[1]["version"] == 0
    mine = api.get("/api/v1/profile/curated")[1]["palace"]
    assert theirs.get("/api/v1/profile/curated", palace=mine)[0] == 404  # alice's palace: like one that is not there
    assert theirs.get("/api/v1/profile/curated/history", palace=mine)[0] == 404
    assert api.get("/api/v1/profile/curated", palace=mine)[0] == 200  # positive control
    assert ProfileVersion.objects.count() == 3 and OpLog.objects.filter(op__startswith="profile.").count() == 3


def test_project_curated_profile_and_profile_txt(
    api_for: Callable[..., Api], alice: Any, bob: Any, charlie: Any, project: Any
) -> None:
    owner, viewer, outsider = api_for(alice), api_for(bob), api_for(charlie)
    body = {"project": PROJECT_ORIGIN, "content": "Demo: trunk-based.", "expected_version": 0}
    assert owner.send("put", "/api/v1/profile/curated", body)[0] == 201
    status, seen = viewer.get("/api/v1/profile/curated", project=PROJECT_ORIGIN)
    assert status == 200 and seen["content"] == "Demo: trunk-based." and not seen["can_edit"]
    assert viewer.send("put", "/api/v1/profile/curated", {**body, "expected_version": 1})[0] == 403
    assert outsider.get("/api/v1/profile/curated", project=PROJECT_ORIGIN)[0] == 404
    assert outsider.send("put", "/api/v1/profile/curated", {**body, "expected_version": 1})[0] == 404
    assert "Demo: trunk-based." in viewer.get("/api/v1/profile.txt", project=PROJECT_ORIGIN)[1]
    assert "Demo: trunk-based." not in viewer.get("/api/v1/profile.txt")[1]
    assert outsider.get("/api/v1/profile.txt", project=PROJECT_ORIGIN)[0] == 404


def test_handoff_routes_and_bootstrap(api_for: Callable[..., Api], alice: Any, bob_editor: Any, project: Any) -> None:
    alice_api, bob_api = api_for(alice), api_for(bob_editor)
    save = {"project": PROJECT_ORIGIN, "expected_version": 0, "doing": "alice ships 1.2", "next_steps": ["tag"]}
    status, one = alice_api.send("put", "/api/v1/handoff", save)
    assert status == 201 and one["version"] == 1
    status, stale = alice_api.send("put", "/api/v1/handoff", {**save, "doing": "old tab"})
    assert status == 409 and stale["error"]["version"] == 1
    assert alice_api.send("put", "/api/v1/handoff", {**save, "expected_version": 1, "doing": "released"})[0] == 201
    status, back = alice_api.send("post", "/api/v1/handoff/checkout", {"project": PROJECT_ORIGIN, "version": 1})
    assert status == 201 and back["version"] == 3 and back["doing"] == "alice ships 1.2" and back["restored_from"] == 1
    status, history = alice_api.get("/api/v1/handoff/history", project=PROJECT_ORIGIN)
    assert [h["version"] for h in history] == [3, 2, 1]
    assert alice_api.send("put", "/api/v1/handoff", {"project": PROJECT_ORIGIN, "expected_version": 3})[0] == 422

    # Bob, editor of the same project: his own handoff is empty; hers never shows (alice is the positive control).
    assert bob_api.get("/api/v1/handoff", project=PROJECT_ORIGIN)[1]["version"] == 0
    assert bob_api.get("/api/v1/handoff/history", project=PROJECT_ORIGIN)[1] == []
    assert bob_api.send("post", "/api/v1/handoff/checkout", {"project": PROJECT_ORIGIN, "version": 1})[0] == 404
    status, bob_boot = bob_api.get("/api/v1/bootstrap.txt", project=PROJECT_ORIGIN)
    assert status == 200 and "alice ships" not in bob_boot and "none saved yet" in bob_boot
    assert alice_api.get("/api/v1/handoff", project=PROJECT_ORIGIN)[1]["doing"] == "alice ships 1.2"

    for n in range(12):
        make_memory(project, f"Project memory {n}: " + "detail " * 40, created_at=None)
    r = alice_api.client.get("/api/v1/bootstrap.txt", {"project": PROJECT_ORIGIN, "budget": "300"})
    text = r.content.decode()
    assert r.status_code == 200 and text.startswith(OPEN_TAG) and text.rstrip().endswith(CLOSE_TAG)
    used, budget = r["X-Atrium-Bootstrap-Tokens"].split("/")
    assert float(used) <= int(budget) == 300 and r["X-Atrium-Handoff-Version"] == "3"
    assert "alice ships 1.2" in text
    assert alice_api.get("/api/v1/bootstrap.txt", budget=5)[0] == 422
    assert HandoffVersion.objects.filter(user=bob_editor).count() == 0


def test_a_tokens_default_project_brings_its_curated_profile_and_handoff(
    api_for: Callable[..., Api], alice: Any, bob: Any, charlie: Any, project: Any
) -> None:
    from accounts.tokens import token_create
    from palace.actors import Actor
    from palace.errors import NotFound
    from palace.membership import member_remove_by

    owner = api_for(alice)
    body = {"project": PROJECT_ORIGIN, "content": "Demo: trunk-based.", "expected_version": 0}
    assert owner.send("put", "/api/v1/profile/curated", body)[0] == 201
    handoff = {"project": PROJECT_ORIGIN, "doing": "wiring the demo deploy", "expected_version": 0}
    assert owner.send("put", "/api/v1/handoff", handoff)[0] in (200, 201)
    _, raw = token_create(
        user=alice, label="demo agent", project="https://github.com/atrium-test/demo", actor=Actor.for_user(alice)
    )
    agent = Api(raw)
    assert "Demo: trunk-based." in agent.get("/api/v1/profile.txt")[1]  # no `project` asked: the token's default
    assert "wiring the demo deploy" in agent.get("/api/v1/bootstrap.txt")[1]
    plain = api_for(alice)  # the positive control's contrast: a token without a default project
    assert "Demo: trunk-based." not in plain.get("/api/v1/profile.txt")[1]
    # Not a project charlie belongs to: refused as if it did not exist.
    with pytest.raises(NotFound):
        token_create(user=charlie, label="x", project=PROJECT_ORIGIN, actor=Actor.for_user(charlie))
    # bob's token names the project; once he is removed, it brings nothing of it.
    _, bobs = token_create(user=bob, label="bob agent", project=PROJECT_ORIGIN, actor=Actor.for_user(bob))
    assert "Demo: trunk-based." in Api(bobs).get("/api/v1/profile.txt")[1]
    member_remove_by(palace_id=project.pk, username=bob.username, actor=Actor.for_user(alice))
    assert "Demo: trunk-based." not in Api(bobs).get("/api/v1/profile.txt")[1]
