from __future__ import annotations

from typing import Any

from palace.models import Palace


def test_palaces_lists_mine_with_roles_by_session_and_token(
    project: Palace, alice: Any, bob: Any, charlie: Any, client_for: Any, client: Any, token_for: Any, bearer: Any
) -> None:
    by_session = client_for(bob).get("/api/v1/palaces").json()
    assert [(p["kind"], p["role"], p["origin"]) for p in by_session] == [
        ("personal", "owner", None),
        ("project", "viewer", "github.com/atrium-test/demo"),
    ]
    by_token = client.get("/api/v1/palaces", **bearer(token_for(alice))).json()
    assert [(p["kind"], p["role"]) for p in by_token] == [("personal", "owner"), ("project", "owner")]
    outsider = client_for(charlie).get("/api/v1/palaces").json()
    assert [p["kind"] for p in outsider] == ["personal"]


def test_members_of_a_project_are_visible_to_members_only(
    project: Palace, alice: Any, charlie: Any, client_for: Any
) -> None:
    ok = client_for(alice).get(f"/api/v1/palaces/{project.pk}/members")
    assert ok.status_code == 200
    assert ok.json() == [{"username": "alice", "role": "owner"}, {"username": "bob", "role": "viewer"}]
    hidden = client_for(charlie).get(f"/api/v1/palaces/{project.pk}/members")
    missing = client_for(charlie).get("/api/v1/palaces/999999/members")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"


def test_no_credentials_get_a_json_401(client: Any, db: Any) -> None:
    response = client.get("/api/v1/palaces")
    assert response.status_code == 401
    assert response.json()["error"]["message"]


def test_openapi_and_docs_are_served(client: Any, db: Any) -> None:
    schema = client.get("/api/v1/openapi.json")
    assert schema.status_code == 200
    assert "/api/v1/palaces" in schema.json()["paths"]
    assert client.get("/api/v1/docs").status_code == 200
