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


def test_no_two_rest_schemas_share_a_name() -> None:
    """django-ninja names a schema in the OpenAPI document by its class name and keeps the last one it meets: two
    routers' `RenameIn` made the room rename documented with the entity rename's fields (the fuzz test caught it)."""
    import importlib
    import inspect
    import pkgutil

    from ninja import Schema

    import api.routers

    seen: dict[str, str] = {}
    clashes = []
    modules = [api.routers.__name__ + "." + m.name for m in pkgutil.iter_modules(api.routers.__path__)]
    for name in [*modules, "api.schemas"]:
        module = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, Schema) or cls.__module__ != name or cls_name.startswith("_"):
                continue
            if cls_name in seen:
                clashes.append(f"{cls_name}: {seen[cls_name]} and {name}")
            seen[cls_name] = name
    assert len(seen) > 20  # the positive control: the walk found the routers' schemas
    assert clashes == []
