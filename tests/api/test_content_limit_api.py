"""The content limit at the REST door: stated in the OpenAPI document (maxLength on every field that carries memory
content, so a generated client knows it) and enforced there, with a 422 that names the field and the limit, before
anything is stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from memory.models import Edge, Memory
from palace.models import OpLog, Palace
from tests.fakes.memories import make_memory

LIMIT = settings.ATRIUM_MAX_CONTENT_CHARS
# A plain run of words, nothing the redactor or the low-entropy check would change: only the length is wrong.
OVER = ("the release train leaves on tuesday " * (LIMIT // 30))[: LIMIT + 1]
AT_LIMIT = " ".join(f"step{i} of the runbook" for i in range(LIMIT))[:LIMIT]


def _schema(document: dict[str, Any], name: str) -> dict[str, Any]:
    return document["components"]["schemas"][name]["properties"]["content"]


def _max_length(prop: dict[str, Any]) -> int | None:
    """maxLength of a string property, also when it is optional (anyOf string | null)."""
    if "maxLength" in prop:
        return int(prop["maxLength"])
    lengths = [int(p["maxLength"]) for p in prop.get("anyOf", []) if "maxLength" in p]
    return lengths[0] if lengths else None


def test_the_openapi_document_states_the_content_limit_on_every_content_field(client: Client, db: Any) -> None:
    document = client.get("/api/v1/openapi.json").json()
    for name in ("ItemIn", "SaveIn", "UpdateIn", "ResolveIn"):
        assert _max_length(_schema(document, name)) == LIMIT, name
    assert document["components"]["schemas"]["ItemIn"]["properties"]["placard"]["maxLength"] == 200
    # The control: a field without a limit reads as None, so the loop above cannot pass on a missing key.
    assert _max_length({"type": "string"}) is None


@pytest.fixture
def headers(alice: Any, token_for: Callable[..., str], bearer: Callable[[str], dict[str, str]]) -> dict[str, str]:
    return bearer(token_for(alice))


def _post(client: Client, path: str, body: dict[str, Any], headers: dict[str, str], *, method: str = "post") -> Any:
    send = getattr(client, method)
    return send(path, body, content_type="application/json", **headers)


def test_content_over_the_limit_is_a_422_naming_the_field_and_nothing_is_stored(
    client: Client, alice: Any, headers: dict[str, str]
) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    kept = make_memory(palace, "The release train leaves on Tuesday.")
    newer = make_memory(palace, "The release train leaves on Wednesday.")
    edge = Edge.objects.create(palace=palace, from_memory=newer, to_memory=kept, kind="contradicts", status="pending")
    memories, ops = Memory.objects.count(), OpLog.objects.count()

    refused = {
        "save": _post(client, "/api/v1/memories", {"content": OVER, "kind": "fact"}, headers),
        "batch": _post(
            client,
            "/api/v1/memories",
            {"items": [{"content": "A fine short memory about lunch.", "kind": "fact"}, {"content": OVER}]},
            headers,
        ),
        "update": _post(client, f"/api/v1/memories/{kept.pk}", {"content": OVER}, headers, method="patch"),
        "resolve": _post(
            client, f"/api/v1/edges/{edge.pk}/resolve", {"decision": "merge", "content": OVER, "reason": "x"}, headers
        ),
    }
    for name, response in refused.items():
        assert response.status_code == 422, (name, response.content)
        message = response.json()["error"]["message"]
        assert "content" in message and f"at most {LIMIT} characters" in message, (name, message)
    assert (Memory.objects.count(), OpLog.objects.count()) == (memories, ops)
    assert Memory.objects.get(pk=kept.pk).status == "active"
    assert Edge.objects.get(pk=edge.pk).status == "pending"

    # Positive control: exactly at the limit, the same door saves it (a row and its op row).
    saved = _post(client, "/api/v1/memories", {"content": AT_LIMIT, "kind": "fact"}, headers)
    assert saved.status_code == 201, saved.content
    stored = Memory.objects.get(pk=saved.json()["memory"]["id"])
    assert len(AT_LIMIT) == LIMIT and stored.content == AT_LIMIT.strip() and stored.palace_id == palace.pk
    assert OpLog.objects.filter(op="memory.save", target_id=stored.pk).exists()
