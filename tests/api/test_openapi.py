"""The OpenAPI document itself: Swagger UI (the docs page) refuses a document with a repeated key, which a JSON
parser would silently accept by keeping the last one."""

from __future__ import annotations

import json
from typing import Any


def test_the_openapi_document_repeats_no_key(client: Any, db: Any) -> None:
    repeated: list[list[str]] = []

    def keep(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        if len(keys) != len(set(keys)):
            repeated.append(keys)
        return dict(pairs)

    document = json.loads(client.get("/api/v1/openapi.json").content, object_pairs_hook=keep)

    assert "/api/v1/profile.txt" in document["paths"]  # the walk read the whole document
    assert repeated == []
    assert "text/plain" in document["paths"]["/api/v1/profile.txt"]["get"]["responses"]["200"]["content"]
