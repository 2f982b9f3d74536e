"""The Judge view (/judge/): open contradictions of the scope side by side with the four decisions, recent rulings
with filters, and the admin's settings card (the key never in the page source)."""

from __future__ import annotations

from typing import Any

from memory.judge import judge_config
from memory.models import Edge, JudgeSettings
from palace.models import Palace
from tests.fakes.judging import NEWER, OLDER, contradiction
from tests.fakes.openai_server import FakeOpenAI, chat_json

KEY = "sk-view-secret-key-98765-zyxw"


def test_open_contradictions_side_by_side_only_for_members(
    alice: Any, bob: Any, charlie: Any, client_for: Any, project: Palace
) -> None:
    edge = contradiction(project, alice).edge.pk
    owner = client_for(alice)
    assert f'id="edge-{edge}"' not in owner.get("/judge/").content.decode()  # the scope is "my palace"
    owner.post("/scope/", {"mode": "both", "project": project.pk, "next": "/judge/"})
    page = owner.get("/judge/").content.decode()
    assert f'id="edge-{edge}"' in page and OLDER in page and NEWER in page and "Older" in page and "Newer" in page
    assert 'value="keep_older"' in page and "rules (off)" in page
    viewer = client_for(bob)
    viewer.post("/scope/", {"mode": "project", "project": project.pk, "next": "/judge/"})
    seen = viewer.get("/judge/").content.decode()
    assert f'id="edge-{edge}"' in seen and 'value="keep_older"' not in seen  # a viewer reads, cannot decide
    other = client_for(charlie).get("/judge/").content.decode()
    assert f'id="edge-{edge}"' not in other and OLDER not in other and "No open contradictions" in other


def test_a_decision_from_the_view_returns_to_it_and_the_edge_leaves(
    alice: Any, client_for: Any, personal: Palace
) -> None:
    edge = contradiction(personal, alice).edge.pk
    client = client_for(alice)
    response = client.post(f"/palace/e/{edge}/resolve/", {"decision": "keep_newer", "back": "judge"})
    assert response.status_code == 302 and response["Location"].endswith("/judge/")
    assert Edge.objects.get(pk=edge).status == "confirmed"
    assert f'id="edge-{edge}"' not in client.get("/judge/").content.decode()


def test_rulings_filter_by_verdict_and_by_who_ruled(alice: Any, client_for: Any, personal: Palace) -> None:
    contradiction(personal, alice)
    client = client_for(alice)
    assert 'class="row ruling v-defer"' in client.get("/judge/?verdict=defer").content.decode()
    assert 'class="row ruling' not in client.get("/judge/?verdict=merge").content.decode()
    assert 'class="row ruling' not in client.get("/judge/?by=model").content.decode()
    assert 'class="row ruling' in client.get("/judge/?by=rules&fallback=off").content.decode()


def test_settings_card_is_for_admins_and_never_carries_the_key(alice: Any, client_for: Any, make_user: Any) -> None:
    admin = client_for(make_user("root", admin=True))
    with FakeOpenAI() as fake:
        form = {"enabled": "on", "base_url": fake.base_url, "model": "judge-v", "timeout_ms": "2000", "api_key": KEY}
        assert admin.post("/judge/settings/", form).status_code == 302
        assert JudgeSettings.objects.get().enabled and judge_config().llm is not None
        page = admin.get("/judge/").content.decode()
        assert 'id="judge-settings"' in page and KEY not in page and "zyxw" in page  # the mask only
        fake.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
        tested = admin.post("/judge/test/", {**form, "model": "typed", "api_key": ""}).content.decode()
        assert "Reachable: typed answered in" in tested and KEY not in tested
        assert JudgeSettings.objects.get().model == "judge-v"  # the typed model was not stored
    member = client_for(alice)
    assert 'id="judge-settings"' not in member.get("/judge/").content.decode()
    assert member.post("/judge/settings/", {**form, "enabled": ""}).status_code == 403
    assert JudgeSettings.objects.get().enabled
