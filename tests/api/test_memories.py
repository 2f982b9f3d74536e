"""REST /api/v1/memories: every route with alice (owner), bob (viewer) and charlie (outsider), read tokens,
session CSRF, bad input, conflicts, and the list endpoint's query count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memory.models import Memory
from memory.save import memory_save
from palace.actors import Actor
from palace.models import OpLog, Palace
from tests.api.conftest import Api

URL = "/api/v1/memories"
PROJECT_HTTPS = "https://github.com/atrium-test/demo"


@pytest.fixture
def project_memory(project: Palace, alice: Any) -> Memory:
    result = memory_save(
        palace=project,
        actor=Actor.for_user(alice),
        content="Releases are cut from the main branch every Tuesday.",
        kind="decision",
        placard="release day",
    )
    assert result.memory is not None
    return result.memory


def memory_rows() -> int:
    return Memory.objects.count()


# --- save ----------------------------------------------------------------------------------------------------------


def test_save_into_personal_palace_stamps_rest_provenance(alice: Any, api_for: Callable[..., Api]) -> None:
    status, body = api_for(alice).post(URL, {"content": "Deploys happen on Fridays at 5pm.", "kind": "decision"})
    assert status == 201, body
    assert body["disposition"] == "accept" and body["memory"]["slot"] == "Decision Chamber#1"
    memory = Memory.objects.get(pk=body["memory"]["id"])
    assert memory.palace == Palace.objects.get(personal_owner=alice)
    assert memory.source_kind == "rest" and memory.created_by_id == alice.pk
    assert memory.created_by_token_id is not None
    assert body["memory"]["source"]["token_id"] == memory.created_by_token_id


def test_client_cannot_forge_provenance_fields(alice: Any, api_for: Callable[..., Api]) -> None:
    status, body = api_for(alice).post(URL, {"content": "Deploys happen on Fridays.", "source": "import"})
    assert status == 422 and "source" in body["error"]["message"]
    status, body = api_for(alice).post(URL, {"content": "Deploys happen on Fridays.", "created_by": 1})
    assert status == 422
    assert memory_rows() == 0


def test_project_is_addressed_by_id_or_any_spelling_of_its_origin(
    project: Palace, alice: Any, bob: Any, charlie: Any, api_for: Callable[..., Api]
) -> None:
    alice_api = api_for(alice)
    status, body = alice_api.post(URL, {"project": PROJECT_HTTPS, "content": "CI runs on GitHub Actions."})
    assert status == 201, body
    assert body["memory"]["palace"] == project.pk
    assert Memory.objects.get(pk=body["memory"]["id"]).palace_id == project.pk
    status, body = alice_api.post(URL, {"palace": project.pk, "content": "Linting uses ruff with strict rules."})
    assert status == 201 and body["memory"]["palace"] == project.pk
    assert Memory.objects.get(pk=body["memory"]["id"]).palace_id == project.pk
    # bob is a viewer: he sees the project but may not write to it
    status, body = api_for(bob).post(URL, {"project": PROJECT_HTTPS, "content": "CI moved to Jenkins."})
    assert status == 403 and body["error"]["code"] == "forbidden"
    # charlie is an outsider: the project does not exist for him
    for ref in ({"project": PROJECT_HTTPS}, {"palace": project.pk}):
        status, body = api_for(charlie).post(URL, {**ref, "content": "CI moved to Jenkins."})
        assert status == 404 and body["error"]["code"] == "not_found"
    assert Memory.objects.filter(palace=project).count() == 2


def test_merge_answers_200_and_drop_stores_nothing(alice: Any, api_for: Callable[..., Api]) -> None:
    api = api_for(alice)
    status, first = api.post(URL, {"content": "The API server listens on port 8000."})
    assert status == 201
    status, again = api.post(URL, {"content": "The API server runs on port 8000."})
    assert status == 200 and again["disposition"] == "merge"
    assert again["merged_into"] == first["memory"]["id"] and again["memory"]["hit_count"] == 1
    status, dropped = api.post(URL, {"content": "ok thanks"})
    assert status == 200 and dropped["disposition"] == "drop" and dropped["memory"] is None
    assert memory_rows() == 1


def test_defer_reports_the_candidate(alice: Any, api_for: Callable[..., Api]) -> None:
    api = api_for(alice)
    _, first = api.post(URL, {"content": "The API server listens on port 8000.", "placard": "API port"})
    status, second = api.post(URL, {"content": "The API server listens on port 8001.", "placard": "API port"})
    assert status == 201 and second["disposition"] == "defer"
    assert second["contradicts"] == [first["memory"]["id"]] and "API port" in second["hint"]


def test_redaction_types_come_back_and_values_are_not_stored(alice: Any, api_for: Callable[..., Api]) -> None:
    status, body = api_for(alice).post(URL, {"content": "The staging AWS key is AKIAIOSFODNN7EXAMPLE for now."})
    assert status == 201 and body["redactions"] == ["aws_access_key"]
    assert "AKIA" not in body["memory"]["content"] and "AKIA" not in Memory.objects.get().content
    assert OpLog.objects.get(op="memory.save").detail["redactions"] == ["aws_access_key"]


def test_batch_save_reports_each_item(alice: Any, api_for: Callable[..., Api]) -> None:
    items = [
        {"content": "The API server listens on port 8000."},
        {"content": "The API server runs on port 8000."},
        {"content": "ok"},
        {"content": "Code review needs two approvals.", "kind": "decision"},
    ]
    status, body = api_for(alice).post(URL, {"items": items})
    assert status == 200, body
    assert (body["count"], body["failed"]) == (4, 0)
    assert [i["disposition"] for i in body["items"]] == ["accept", "merge", "drop", "accept"]
    assert body["items"][1]["merged_into"] == body["items"][0]["memory"]["id"]
    assert memory_rows() == 2


def test_batch_item_error_is_reported_and_others_saved(alice: Any, api_for: Callable[..., Api]) -> None:
    items = [{"content": "Code review needs two approvals."}, {"content": "\x00 \x00"}]
    status, body = api_for(alice).post(URL, {"items": items})
    assert status == 200 and body["failed"] == 1
    assert body["items"][1] == {"index": 1, "error": {"code": "invalid", "message": "content is empty"}}
    assert memory_rows() == 1


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"content": ""},
        {"content": "   "},
        {"content": "\u0000\u0000"},
        {"content": "x" * 20_001},
        {"content": 42},
        {"content": ["a list"]},
        {"content": "A fine memory.", "kind": "rumour"},
        {"content": "A fine memory.", "placard": "p" * 201},
        {"content": "A fine memory.", "importance": "high"},
        {"content": "A fine memory.", "importance": 7},
        {"content": "A fine memory.", "occurred_at": "last tuesday"},
        {"content": "A fine memory.", "items": [{"content": "Another one."}]},
        {"items": []},
        {"items": [{"content": f"Distinct memory number {i}."} for i in range(11)]},
        {"items": "not a list"},
        {"content": "A fine memory.", "palace": "mine"},
        {"content": "A fine memory.", "palace": 1, "project": PROJECT_HTTPS},
    ],
)
def test_bad_input_is_422_with_a_message_and_nothing_stored(
    alice: Any, api_for: Callable[..., Api], body: dict[str, Any]
) -> None:
    status, answer = api_for(alice).post(URL, body)
    assert status == 422, answer
    assert answer["error"]["code"] == "invalid" and answer["error"]["message"]
    assert memory_rows() == 0 and not OpLog.objects.filter(op__startswith="memory.").exists()


def test_malformed_json_is_a_4xx_not_a_500(alice: Any, token_for: Callable[..., str]) -> None:
    r = Client().post(
        URL, "{not json", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token_for(alice)}"
    )
    assert 400 <= r.status_code < 500 and memory_rows() == 0


def test_a_body_over_the_upload_limit_is_a_4xx(alice: Any, token_for: Callable[..., str]) -> None:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(alice)}"}
    body = {"content": "y" * 3_000_000}
    r = Client().post(URL, body, content_type="application/json", **headers)
    assert 400 <= r.status_code < 500 and memory_rows() == 0


# --- auth ----------------------------------------------------------------------------------------------------------


def test_read_token_cannot_write_but_can_read(alice: Any, project_memory: Memory, api_for: Callable[..., Api]) -> None:
    reader = api_for(alice, scope="read")
    mid = project_memory.pk
    attempts = [
        (URL, {"content": "Deploys happen on Fridays."}),
        (f"{URL}/{mid}/update", {"content": "Releases are cut on Wednesdays."}),
        (f"{URL}/{mid}/forget", {"reason": "stale"}),
        (f"{URL}/{mid}/restore", {}),
        (f"{URL}/{mid}/report", {"outcome": "success"}),
    ]
    for path, body in attempts:
        status, answer = reader.post(path, body)
        assert status == 403, path
        assert answer["error"]["code"] == "forbidden" and "read scope" in answer["error"]["message"]
    status, _ = reader.patch(f"{URL}/{mid}", {"content": "Releases are cut on Wednesdays."})
    assert status == 403
    assert reader.get(f"{URL}/{mid}")[0] == 200  # positive control: reading is fine
    project_memory.refresh_from_db()
    assert project_memory.status == "active" and project_memory.confidence == 0.7 and memory_rows() == 1


def test_unauthenticated_is_401(project_memory: Memory) -> None:
    client = Client()
    assert client.get(URL).status_code == 401
    assert client.get(f"{URL}/{project_memory.pk}").status_code == 401
    assert client.post(URL, {"content": "hello there world"}, content_type="application/json").status_code == 401


def test_session_auth_needs_csrf_for_writes(alice: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    body = {"content": "Deploys happen on Fridays at 5pm."}
    refused = client.post(URL, body, content_type="application/json")
    assert refused.status_code == 403 and memory_rows() == 0
    client.get("/api/v1/memories")  # any page; the token comes from the cookie jar below
    from django.middleware.csrf import _get_new_csrf_string  # noqa: PLC0415

    token = _get_new_csrf_string()
    client.cookies["csrftoken"] = token
    ok = client.post(URL, body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert ok.status_code == 201, ok.content
    assert client.get(URL).status_code == 200


# --- read routes: isolation ------------------------------------------------------------------------------------------


def test_get_one_memory_alice_bob_charlie(
    project_memory: Memory, alice: Any, bob: Any, charlie: Any, api_for: Callable[..., Api]
) -> None:
    path = f"{URL}/{project_memory.pk}"
    status, body = api_for(alice).get(path)
    assert status == 200 and body["content"].startswith("Releases are cut") and body["superseded_by"] is None
    assert api_for(bob).get(path)[0] == 200  # a viewer reads
    status, body = api_for(charlie).get(path)
    assert status == 404 and body == {"error": {"code": "not_found", "message": "memory not found"}}
    assert api_for(alice).get(f"{URL}/999999") == (404, body)  # invisible == nonexistent


def test_list_shows_only_readable_palaces(
    project_memory: Memory, alice: Any, bob: Any, charlie: Any, api_for: Callable[..., Api]
) -> None:
    memory_save(
        palace=Palace.objects.get(personal_owner=charlie),
        actor=Actor.for_user(charlie),
        content="Charlie's private note about his bike.",
        kind="fact",
    )
    assert [m["id"] for m in api_for(alice).get(URL)[1]["items"]] == [project_memory.pk]
    assert [m["id"] for m in api_for(bob).get(URL)[1]["items"]] == [project_memory.pk]
    charlie_items = api_for(charlie).get(URL)[1]["items"]
    assert [m["content"] for m in charlie_items] == ["Charlie's private note about his bike."]
    status, body = api_for(charlie).get(URL, project=PROJECT_HTTPS)
    assert status == 404
    assert api_for(charlie).get(URL, palace=project_memory.palace_id)[0] == 404
    assert api_for(alice).get(URL, project=PROJECT_HTTPS)[1]["items"][0]["id"] == project_memory.pk


def test_list_filters_and_cursor(alice: Any, api_for: Callable[..., Api]) -> None:
    api = api_for(alice)
    ids = []
    for i in range(5):
        _, body = api.post(URL, {"content": f"Service {i} listens on port {8100 + i * 13} in rack {i}."})
        ids.append(body["memory"]["id"])
    _, decision = api.post(URL, {"content": "We squash-merge pull requests.", "kind": "decision"})
    status, page = api.get(URL, limit=4)
    assert status == 200 and len(page["items"]) == 4 and page["next_cursor"]
    status, rest = api.get(URL, limit=4, cursor=page["next_cursor"])
    assert [m["id"] for m in page["items"] + rest["items"]] == [decision["memory"]["id"], *reversed(ids)]
    assert rest["next_cursor"] is None
    assert [m["id"] for m in api.get(URL, kind="decision")[1]["items"]] == [decision["memory"]["id"]]
    assert [m["id"] for m in api.get(URL, room="Decision Chamber")[1]["items"]] == [decision["memory"]["id"]]
    api.post(f"{URL}/{ids[0]}/forget", {"reason": "obsolete"})
    assert [m["id"] for m in api.get(URL, status="forgotten")[1]["items"]] == [ids[0]]
    assert len(api.get(URL, status="any")[1]["items"]) == 6
    for bad in ({"limit": 0}, {"limit": 500}, {"kind": "rumour"}, {"status": "zombie"}, {"cursor": "@@"}):
        status, body = api.get(URL, **bad)
        assert status == 422, bad


def test_list_query_count_does_not_grow_with_rows(alice: Any, token_for: Any) -> None:
    alice_palace = Palace.objects.get(personal_owner=alice)
    actor = Actor.for_user(alice)
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(alice)}"}

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            r = client.get(URL, {"limit": 50}, **headers)
        assert r.status_code == 200
        return len(ctx.captured_queries)

    for i in range(2):
        memory_save(palace=alice_palace, actor=actor, content=f"Rack {i} holds server {i * 31}.", kind="fact")
    queries()  # the first request also stamps the token's last use
    few = queries()
    for i in range(2, 12):
        memory_save(palace=alice_palace, actor=actor, content=f"Rack {i} holds server {i * 31}.", kind="fact")
    assert queries() == few
    assert few <= 4  # token lookup, readable palaces, the page (ids, then rows, across palaces)


# --- write routes: isolation, stored state, op rows ------------------------------------------------------------------


def test_update_alice_bob_charlie(
    project_memory: Memory, alice: Any, bob: Any, charlie: Any, api_for: Callable[..., Api]
) -> None:
    path = f"{URL}/{project_memory.pk}/update"
    body = {"content": "Releases are cut from main every Wednesday.", "expected_version": 1}
    assert api_for(charlie).post(path, body)[0] == 404
    assert api_for(bob).post(path, body)[0] == 403
    project_memory.refresh_from_db()
    assert project_memory.status == "active"
    status, new = api_for(alice).post(path, body)
    assert status == 201, new
    assert new["supersedes"] == project_memory.pk and new["version"] == 2 and new["placard"] == "release day"
    project_memory.refresh_from_db()
    assert project_memory.status == "superseded"
    assert OpLog.objects.get(op="memory.update").detail["supersedes"] == project_memory.pk
    # the same correction again: someone already won
    status, answer = api_for(alice).post(path, body)
    assert status == 409 and answer["error"]["code"] == "conflict"
    assert api_for(alice).get(f"{URL}/{project_memory.pk}")[1]["superseded_by"] == new["id"]


def test_patch_is_the_same_correction_and_stale_version_is_409(
    project_memory: Memory, alice: Any, api_for: Callable[..., Api]
) -> None:
    api = api_for(alice)
    status, body = api.patch(
        f"{URL}/{project_memory.pk}", {"content": "Releases on Wednesdays.", "expected_version": 5}
    )
    assert status == 409 and "version 1" in body["error"]["message"]
    status, body = api.patch(f"{URL}/{project_memory.pk}", {"content": "Releases on Wednesdays."})
    assert status == 201 and body["supersedes"] == project_memory.pk
    status, body = api.patch(f"{URL}/{body['id']}", {"content": ""})
    assert status == 422


def test_forget_restore_alice_bob_charlie(
    project_memory: Memory, alice: Any, bob: Any, charlie: Any, api_for: Callable[..., Api]
) -> None:
    forget, restore = f"{URL}/{project_memory.pk}/forget", f"{URL}/{project_memory.pk}/restore"
    assert api_for(charlie).post(forget, {"reason": "x"})[0] == 404
    assert api_for(bob).post(forget, {"reason": "x"})[0] == 403
    project_memory.refresh_from_db()
    assert project_memory.status == "active"
    status, body = api_for(alice).post(forget, {"reason": "we release continuously now"})
    assert status == 200 and body["status"] == "forgotten" and body["epitaph"] == "we release continuously now"
    project_memory.refresh_from_db()
    assert project_memory.status == "forgotten"
    assert api_for(alice).post(forget, {})[0] == 409
    assert api_for(charlie).post(restore, {})[0] == 404
    assert api_for(bob).post(restore, {})[0] == 403
    status, body = api_for(alice).post(restore, {})
    assert status == 200 and body["status"] == "active"
    project_memory.refresh_from_db()
    assert project_memory.status == "active"
    assert [o.op for o in OpLog.objects.filter(target_kind="memory", target_id=project_memory.pk).order_by("pk")] == [
        "memory.save",
        "memory.forget",
        "memory.restore",
    ]


def test_report_alice_bob_charlie(
    project_memory: Memory, alice: Any, bob: Any, charlie: Any, api_for: Callable[..., Api]
) -> None:
    path = f"{URL}/{project_memory.pk}/report"
    assert api_for(charlie).post(path, {"outcome": "failure"})[0] == 404
    assert api_for(bob).post(path, {"outcome": "failure"})[0] == 403
    assert api_for(alice).post(path, {"outcome": "meh"})[0] == 422
    status, body = api_for(alice).post(path, {"outcome": "failure", "note": "Tuesday was wrong"})
    assert status == 200 and body["confidence"] == pytest.approx(0.6)
    project_memory.refresh_from_db()
    assert project_memory.confidence == pytest.approx(0.6)
    op = OpLog.objects.get(op="memory.report")
    assert op.detail["outcome"] == "failure" and op.reason == "Tuesday was wrong"


def test_editor_may_write_to_the_project(project_memory: Memory, bob_editor: Any, api_for: Callable[..., Api]) -> None:
    status, body = api_for(bob_editor).post(f"{URL}/{project_memory.pk}/report", {"outcome": "success"})
    assert status == 200 and body["confidence"] == pytest.approx(0.75)
    status, body = api_for(bob_editor).post(URL, {"project": PROJECT_HTTPS, "content": "Bob owns the CI config."})
    assert status == 201


def test_openapi_lists_the_memory_routes(alice: Any, client_for: Callable[..., Client]) -> None:
    schema = client_for(alice).get("/api/v1/openapi.json").json()
    for path in ("/api/v1/memories", "/api/v1/memories/{memory_id}", "/api/v1/memories/{memory_id}/forget"):
        assert path in schema["paths"]
