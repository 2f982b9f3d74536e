"""REST /api/v1/memories: save, list, get, update, forget, restore, report — access, input and stored state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory.models import Memory


def test_alice_saves_and_reads_back(
    alice: Any, token_for: Callable[..., str], bearer: Callable[..., dict[str, str]], client_for: Any
) -> None:
    client = client_for(alice)
    headers = bearer(token_for(alice))
    r = client.post(
        "/api/v1/memories",
        {"content": "Deploys happen on Fridays at 5pm.", "kind": "decision"},
        content_type="application/json",
        **headers,
    )
    assert r.status_code == 201, r.content
    mid = r.json()["memory"]["id"]
    r = client.get(f"/api/v1/memories/{mid}", **headers)
    assert r.status_code == 200, r.content
    r = client.get("/api/v1/memories", **headers)
    assert r.status_code == 200, r.content
    assert [m["id"] for m in r.json()["items"]] == [mid]
    assert Memory.objects.get(pk=mid).source_kind == "rest"
