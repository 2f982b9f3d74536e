"""REST for issue 13: save with importance and restore, checkout, distill undo, and the distillation proposals —
each refused to an outsider (404) and a read token, with the owner as the positive control."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory.jobs import distill_proposals_store, distill_run
from memory.models import DistillProposal, Memory
from palace.models import OpLog, Palace
from tests.api.conftest import Api
from tests.fakes.memories import make_memory, topic_vectors

URL = "/api/v1/memories"


def test_save_takes_importance_and_restore(api_for: Callable[..., Api], alice: Any) -> None:
    api = api_for(alice)
    status, body = api.post(URL, {"content": "The build cache is bucket atrium-ci.", "importance": 0.15})
    assert status == 201 and body["memory"]["importance"] == 0.15
    first = body["memory"]["id"]
    assert api.post(f"{URL}/{first}/forget", {"reason": "bucket deleted"})[0] == 200
    status, body = api.post(URL, {"content": "The build cache is bucket atrium-ci."})
    assert status == 200 and body["disposition"] == "defer" and body["memory"] is None
    assert body["forgotten"] == first and "bucket deleted" in body["hint"]
    status, body = api.post(URL, {"content": "The build cache is bucket atrium-ci.", "restore": True})
    assert status == 200 and body["restored"] is True and body["memory"]["id"] == first
    assert body["memory"]["status"] == "active"


def test_checkout_route(api_for: Callable[..., Api], alice: Any, charlie: Any) -> None:
    api = api_for(alice)
    old = api.post(URL, {"content": "Standup is at 9:30 in room Ada."})[1]["memory"]["id"]
    head = api.post(f"{URL}/{old}/update", {"content": "Standup is at 10:00 in room Ada."})[1]["id"]
    status, body = api_for(charlie).post(f"{URL}/{old}/checkout", {})
    assert status == 404
    assert api_for(alice, scope="read").post(f"{URL}/{old}/checkout", {})[0] == 403
    status, body = api.post(f"{URL}/{old}/checkout", {"reason": "reverted"})
    assert status == 201 and body["content"] == "Standup is at 9:30 in room Ada." and body["supersedes"] == head
    assert api.post(f"{URL}/{body['id']}/checkout", {})[0] == 409  # already current
    assert OpLog.objects.filter(op="memory.checkout").count() == 1


@pytest.fixture
def cluster(alice: Any) -> list[Memory]:
    palace = Palace.objects.get(personal_owner=alice)
    return [
        make_memory(palace, content=f"Deploys go out on Tuesdays, note {i}.", kind="decision", embedding=v)
        for i, v in enumerate(topic_vectors(3, seed=7))
    ]


def test_distill_undo_route(api_for: Callable[..., Api], alice: Any, charlie: Any, cluster: list[Memory]) -> None:
    (applied,) = distill_run(mode="apply", llm=None).clusters
    assert api_for(charlie).post(f"{URL}/{applied.rule_id}/distill-undo", {})[0] == 404
    status, body = api_for(alice).post(f"{URL}/{applied.rule_id}/distill-undo", {"reason": "too coarse"})
    assert status == 200 and body["rule"]["status"] == "archived" and body["restored"] == [m.pk for m in cluster]
    assert api_for(alice).post(f"{URL}/{cluster[0].pk}/distill-undo", {})[0] == 422  # not a rule


def test_proposal_routes(api_for: Callable[..., Api], alice: Any, charlie: Any, cluster: list[Memory]) -> None:
    (first,) = distill_proposals_store(result=distill_run(mode="suggest", llm=None))
    status, rows = api_for(alice).get("/api/v1/distill/proposals")
    assert status == 200 and [r["id"] for r in rows] == [first.pk]
    assert rows[0]["member_ids"] == [m.pk for m in cluster] and rows[0]["producer"] == "rules"
    assert api_for(charlie).get("/api/v1/distill/proposals") == (200, [])  # sees none of alice's
    assert api_for(charlie).post(f"/api/v1/distill/proposals/{first.pk}/apply")[0] == 404
    assert api_for(charlie).post(f"/api/v1/distill/proposals/{first.pk}/reject", {})[0] == 404
    status, body = api_for(alice).post(f"/api/v1/distill/proposals/{first.pk}/apply")
    assert status == 200 and body["status"] == "applied" and body["rule"] is not None
    assert api_for(alice).post(f"/api/v1/distill/proposals/{first.pk}/reject", {})[0] == 409
    # A second proposal (after undo, the same members are remembered as rejected: a new cluster is needed).
    second = DistillProposal.objects.create(
        palace=first.palace, kind="decision", member_ids=[cluster[0].pk], content="x", producer="rules"
    )
    status, body = api_for(alice).post(f"/api/v1/distill/proposals/{second.pk}/reject", {"reason": "no"})
    assert status == 200 and body["status"] == "rejected" and body["reason"] == "no"
    status, rows = api_for(alice).get("/api/v1/distill/proposals", status="any")
    assert {r["status"] for r in rows} == {"applied", "rejected"}
