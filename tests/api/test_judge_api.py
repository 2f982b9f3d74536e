"""REST: POST /api/v1/edges/{id}/resolve (every decision, outsider and viewer refused with a positive control),
the save result's edge ids, the judge's rulings, and the admin-only settings (the key never returned)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memory.models import Edge, Memory
from memory.save import memory_save
from palace.actors import Actor
from palace.models import OpLog, Palace
from tests.api.conftest import Api
from tests.fakes.openai_server import FakeOpenAI, chat_json

OLD = "The API server listens on port 8000."
NEW = "The API server listens on port 8001."
KEY = "sk-rest-abcdefgh12345678wxyz"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _edge_via_rest(api: Api, **where: Any) -> tuple[int, int, int]:
    status, first = api.send("post", "/api/v1/memories", {"content": OLD, **where})
    assert status == 201
    status, second = api.send("post", "/api/v1/memories", {"content": NEW, **where})
    assert status == 201 and second["disposition"] == "defer"
    assert len(second["edges"]) == 1 and f"edge={second['edges'][0]}" in second["hint"]
    return first["memory"]["id"], second["memory"]["id"], second["edges"][0]


@pytest.mark.parametrize("decision", ["keep_newer", "keep_older", "both_stand", "merge"])
def test_every_decision_through_rest(api_for: Callable[..., Api], alice: Any, decision: str) -> None:
    api = api_for(alice)
    older, newer, edge = _edge_via_rest(api)
    body: dict[str, Any] = {"decision": decision, "reason": "decided over REST"}
    if decision == "merge":
        body["content"] = "The API server listens on port 8001 (it was 8000 until May)."
    status, out = api.send("post", f"/api/v1/edges/{edge}/resolve", body)
    assert status == 200, out
    assert (out["edge"], out["decision"], out["newer"], out["older"]) == (edge, decision, newer, older)
    expected = {
        "keep_newer": ("superseded", "active"),
        "keep_older": ("active", "forgotten"),
        "both_stand": ("active", "active"),
        "merge": ("superseded", "superseded"),
    }[decision]
    assert (Memory.objects.get(pk=older).status, Memory.objects.get(pk=newer).status) == expected
    assert Edge.objects.get(pk=edge).status == ("dismissed" if decision == "both_stand" else "confirmed")
    assert (out["new_memory"] is not None) is (decision == "merge")
    op = OpLog.objects.get(op="edge.decide", target_id=edge)
    assert op.detail["decision"] == decision and op.actor_token_id is not None
    status, stats = api.get("/api/v1/stats")
    assert status == 200 and stats["pending_contradictions"] == 0


def test_outsider_gets_404_viewer_403_and_the_owner_decides(
    api_for: Callable[..., Api], project: Palace, alice: Any, bob: Any, charlie: Any
) -> None:
    _, _, edge = _edge_via_rest(api_for(alice), palace=project.pk)
    body = {"decision": "both_stand", "reason": "different contexts"}
    status, out = api_for(charlie).send("post", f"/api/v1/edges/{edge}/resolve", body)
    assert status == 404 and "edge not found" in json.dumps(out)
    status, missing = api_for(charlie).send("post", "/api/v1/edges/987654/resolve", body)
    assert status == 404 and missing == out  # the same answer as a missing edge
    assert api_for(bob).send("post", f"/api/v1/edges/{edge}/resolve", body)[0] == 403
    assert api_for(alice, scope="read").send("post", f"/api/v1/edges/{edge}/resolve", body)[0] == 403
    assert Edge.objects.get(pk=edge).status == "pending"
    assert api_for(alice).send("post", f"/api/v1/edges/{edge}/resolve", body)[0] == 200


def test_bad_decisions_are_422_not_500(api_for: Callable[..., Api], alice: Any) -> None:
    api = api_for(alice)
    _, _, edge = _edge_via_rest(api)
    assert api.send("post", f"/api/v1/edges/{edge}/resolve", {"decision": "nope"})[0] == 422
    assert api.send("post", f"/api/v1/edges/{edge}/resolve", {"decision": "merge"})[0] == 422
    assert api.send("post", f"/api/v1/edges/{edge}/resolve", {"decision": "both_stand"})[0] == 422
    assert api.send("post", f"/api/v1/edges/{edge}/resolve", {"decision": "both_stand", "reason": "ok"})[0] == 200
    assert api.send("post", f"/api/v1/edges/{edge}/resolve", {"decision": "both_stand", "reason": "ok"})[0] == 409


def test_adjudications_are_listed_for_members_only(
    api_for: Callable[..., Api], project: Palace, alice: Any, charlie: Any
) -> None:
    _edge_via_rest(api_for(alice), palace=project.pk)
    status, rows = api_for(alice).get("/api/v1/judge/adjudications", palace=project.pk)
    assert status == 200 and len(rows) == 1
    assert rows[0]["verdict"] == "defer" and rows[0]["why"].startswith("judged by the rules (off)")
    assert api_for(alice).get("/api/v1/judge/adjudications", palace=project.pk, model="true")[1] == []
    assert api_for(charlie).get("/api/v1/judge/adjudications", palace=project.pk)[0] == 404


def test_settings_are_admin_only_and_never_return_the_key(
    api_for: Callable[..., Api], make_user: Callable[..., Any], alice: Any, fake: FakeOpenAI
) -> None:
    admin = api_for(make_user("root", admin=True))
    body = {"enabled": True, "base_url": fake.base_url, "model": "judge-x", "timeout_ms": 2000, "api_key": KEY}
    assert api_for(alice).send("put", "/api/v1/judge/settings", body)[0] == 403
    assert api_for(alice).get("/api/v1/judge/settings")[0] == 403
    status, shown = admin.send("put", "/api/v1/judge/settings", body)
    assert status == 200 and shown["enabled"] and shown["api_key_mask"].endswith("wxyz")
    status, read = admin.get("/api/v1/judge/settings")
    assert status == 200 and KEY not in json.dumps(read) and "api_key" not in read
    assert admin.send("put", "/api/v1/judge/settings", {**body, "timeout_ms": 500})[0] == 422
    # The new settings judge the next save, without a restart.
    fake.script_chat([chat_json({"same": 0.02, "contradicts": 0.97, "reason": "ports differ"})])
    palace = Palace.objects.get(personal_owner=alice)
    memory_save(palace=palace, actor=Actor.for_user(alice), content=OLD, kind="fact")
    result = memory_save(palace=palace, actor=Actor.for_user(alice), content=NEW, kind="fact")
    assert "judged by model judge-x" in result.hint
    fake.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
    status, report = admin.send("post", "/api/v1/judge/test", {"base_url": fake.base_url, "model": "judge-y"})
    assert status == 200 and report["reachable"] and report["model"] == "judge-y"
    assert fake.requests[-1].headers["authorization"] == f"Bearer {KEY}"  # the stored key, as no key was typed
    assert api_for(alice).send("post", "/api/v1/judge/test", {"base_url": fake.base_url, "model": "m"})[0] == 403
