"""The panel door of the correction loop: a memory's detail shows each contradiction with the judge's ruling and,
for a writer, the four decisions; deciding writes the op log and Today's open count goes down."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Edge, Memory
from memory.selectors import memory_stats
from palace.models import OpLog, Palace
from tests.fakes.judging import contradiction


def test_detail_shows_the_edge_the_ruling_and_the_decisions(alice: Any, client_for: Any, personal: Palace) -> None:
    older, newer, edge = contradiction(personal, alice).ids
    page = client_for(alice).get(f"/palace/m/{older}/").content.decode()
    assert f"edge {edge}" in page and f"/palace/e/{edge}/resolve/" in page
    assert 'value="keep_newer"' in page and 'value="merge"' in page
    # The ruling in words, as the Judge page says it; the stored label stays beside it.
    assert "The rules found nearly the same sentence" in page and "“8001” instead of “8000”" in page
    assert "judged by the rules (off)" in page
    zh = client_for(alice).get(f"/palace/m/{older}/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "规则发现几乎相同的句子" in zh and "judged by the rules (off)" in zh


@pytest.mark.parametrize("decision", ["keep_newer", "keep_older", "both_stand", "merge"])
def test_every_decision_from_the_panel(alice: Any, client_for: Any, personal: Palace, decision: str) -> None:
    older, newer, edge = contradiction(personal, alice).ids
    client = client_for(alice)
    assert memory_stats(palace_ids=[personal.pk]).pending_contradictions == 1
    body = {"decision": decision, "reason": "decided in the panel", "back": str(older)}
    if decision == "merge":
        body["content"] = "The API server listens on port 8001 since May."
    response = client.post(f"/palace/e/{edge}/resolve/", body)
    assert response.status_code == 302
    state = Edge.objects.get(pk=edge)
    assert state.status == ("dismissed" if decision == "both_stand" else "confirmed") and state.resolution == decision
    op = OpLog.objects.get(op="edge.decide", target_id=edge)
    assert op.actor_user_id == alice.pk and op.reason == "decided in the panel"
    if decision == "merge":
        merged = Memory.objects.get(supersedes_id=older)
        assert response["Location"].endswith(f"/palace/m/{merged.pk}/") and merged.source_kind == "panel"
    else:
        assert response["Location"].endswith(f"/palace/m/{older}/")
    assert memory_stats(palace_ids=[personal.pk]).pending_contradictions == 0  # Today's open count


def test_an_outsider_gets_404_a_viewer_403_and_sees_no_buttons(
    alice: Any, bob: Any, charlie: Any, client_for: Any, project: Palace
) -> None:
    older, newer, edge = contradiction(project, alice).ids
    body = {"decision": "both_stand", "reason": "not in conflict"}
    assert client_for(charlie).post(f"/palace/e/{edge}/resolve/", body).status_code == 404
    assert client_for(bob).post(f"/palace/e/{edge}/resolve/", body).status_code == 403
    assert f"/palace/e/{edge}/resolve/" not in client_for(bob).get(f"/palace/m/{older}/").content.decode()
    assert Edge.objects.get(pk=edge).status == "pending"
    assert client_for(alice).post(f"/palace/e/{edge}/resolve/", body).status_code == 302  # positive control
    assert Edge.objects.get(pk=edge).status == "dismissed"


def test_a_bad_decision_is_a_clear_error_not_a_500(alice: Any, client_for: Any, personal: Palace) -> None:
    _, _, edge = contradiction(personal, alice).ids
    response = client_for(alice).post(f"/palace/e/{edge}/resolve/", {"decision": "merge"})
    assert response.status_code == 422 and "content" in response.content.decode()
