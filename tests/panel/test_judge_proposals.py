"""The Judge view's pending distillation proposals: members, proposed rule, who wrote it; Apply / Reject for writers
through the same services as the REST routes (htmx, and a plain form without JS); viewers read; outsiders see none."""

from __future__ import annotations

from typing import Any

from django.test import Client

from memory.models import DistillProposal, Memory
from palace.models import OpLog, Palace
from tests.fakes.judging import DEPLOY, deploy_day_proposal


def _in_project(client: Client, project: Palace) -> Client:
    client.post("/scope/", {"mode": "project", "project": project.pk, "next": "/judge/"})
    return client


def test_pending_proposals_listed_for_members_with_buttons_for_writers_only(
    alice: Any, bob: Any, charlie: Any, client_for: Any, project: Palace
) -> None:
    proposal = deploy_day_proposal(project)
    hidden = DistillProposal.objects.create(
        palace=Palace.objects.get(personal_owner=charlie),
        kind="fact",
        member_ids=[],
        content="Charlie's private rule.",
        producer="llm",
    )
    owner = _in_project(client_for(alice), project).get("/judge/").content.decode()
    assert f'id="proposal-{proposal.pk}"' in owner and all(t in owner for t in DEPLOY)
    assert proposal.content in owner and "written by the rules" in owner
    assert f"/judge/p/{proposal.pk}/apply/" in owner and f'hx-post="/judge/p/{proposal.pk}/reject/"' in owner
    assert "csrfmiddlewaretoken" in owner and f'id="proposal-{hidden.pk}"' not in owner
    viewer = _in_project(client_for(bob), project).get("/judge/").content.decode()
    assert f'id="proposal-{proposal.pk}"' in viewer and f"/judge/p/{proposal.pk}/apply/" not in viewer
    outsider = client_for(charlie).get("/judge/").content.decode()
    assert f'id="proposal-{proposal.pk}"' not in outsider and DEPLOY[0] not in outsider
    assert f'id="proposal-{hidden.pk}"' in outsider and "written by the model" in outsider  # his own: listed


def test_zh_labels(alice: Any, client_for: Any, project: Palace) -> None:
    deploy_day_proposal(project)
    client = _in_project(client_for(alice), project)
    page = client.get("/judge/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "待处理的提炼提议" in page and "由规则写成" in page and "驳回" in page


def test_apply_with_htmx_and_reject_without_js_use_the_services(
    alice: Any, bob: Any, charlie: Any, client_for: Any, project: Palace
) -> None:
    proposal = deploy_day_proposal(project)
    assert client_for(charlie).post(f"/judge/p/{proposal.pk}/apply/").status_code == 404  # invisible to him
    viewer = _in_project(client_for(bob), project)  # the service answers 404 to anyone who may not write it
    assert viewer.post(f"/judge/p/{proposal.pk}/apply/").status_code == 404
    assert DistillProposal.objects.get(pk=proposal.pk).status == "pending"
    owner = _in_project(client_for(alice), project)
    response = owner.post(f"/judge/p/{proposal.pk}/apply/", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith('<section id="judge"')
    assert f'id="proposal-{proposal.pk}"' not in body and "No pending distillation proposals" in body
    applied = DistillProposal.objects.get(pk=proposal.pk)
    assert applied.status == "applied" and applied.rule_id is not None and applied.decided_by_id == alice.pk
    assert Memory.objects.get(pk=applied.rule_id).palace_id == project.pk
    assert OpLog.objects.filter(op="distill.apply", target_id=proposal.pk).exists()
    second = DistillProposal.objects.create(
        palace=project, kind="decision", member_ids=[applied.member_ids[0]], content="x", producer="rules"
    )
    response = owner.post(f"/judge/p/{second.pk}/reject/", {"reason": "too coarse"})
    assert response.status_code == 302 and response["Location"].endswith("/judge/")
    rejected = DistillProposal.objects.get(pk=second.pk)
    assert rejected.status == "rejected" and rejected.reason == "too coarse"
    assert owner.post(f"/judge/p/{second.pk}/reject/").status_code == 409  # decided already: a clear refusal
