"""Limits at the MCP door: content over ATRIUM_MAX_CONTENT_CHARS is refused by the schema of every tool that takes
content, and a memory of another tenant answers exactly like a missing one."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Memory
from palace.models import OpLog
from tests.api.mcp.conftest import call_each, mcp_client, run, text_of

LIMIT = 20000


def _save(token: str, content: str) -> int:
    (saved,) = run(call_each(token, [("memory_save", {"content": content, "kind": "fact"})]))
    return int(saved.structured_content["items"][0]["id"])


def test_content_over_the_limit_is_refused_by_every_tool_that_takes_content(tokens: dict[str, str]) -> None:
    (saved,) = run(
        call_each(tokens["alice"], [("memory_save", {"content": "The kettle is by the window.", "kind": "fact"})])
    )
    memory_id = saved.structured_content["items"][0]["id"]
    ops = OpLog.objects.count()
    over = "word " * (LIMIT // 5) + "x"
    calls = [
        ("memory_save", {"content": over, "kind": "fact"}),
        (
            "memory_save",
            {"items": [{"content": "A fine short memory.", "kind": "fact"}, {"content": over, "kind": "fact"}]},
        ),
        ("memory_update", {"id": memory_id, "content": over}),
        ("memory_resolve", {"edge": 1, "decision": "merge", "content": over}),
    ]
    for (name, _), result in zip(calls, run(call_each(tokens["alice"], calls)), strict=True):
        assert result.is_error, name
        assert f"more than {LIMIT}; send a text of" in text_of(result), (name, text_of(result))
    assert list(Memory.objects.values_list("content", flat=True)) == ["The kettle is by the window."]
    assert OpLog.objects.count() == ops

    # Positive control: exactly at the limit is accepted.
    at_limit = " ".join(f"step{i} of the runbook" for i in range(LIMIT))[:LIMIT]
    (ok,) = run(call_each(tokens["alice"], [("memory_update", {"id": memory_id, "content": at_limit})]))
    assert not ok.is_error, text_of(ok)


@pytest.mark.parametrize("args", [{"outcome": "failure"}, {"grade": 2}, {"outcome": "success", "note": "n" * 10}])
def test_report_on_another_tenants_memory_answers_like_a_missing_one(
    tokens: dict[str, str], args: dict[str, Any], settings: Any
) -> None:
    settings.ATRIUM_REVIEW_FIRST_DUE_DAYS = 0
    (saved,) = run(
        call_each(tokens["alice"], [("memory_save", {"content": "Alice's build runs on ci-7.", "kind": "fact"})])
    )
    alices = saved.structured_content["items"][0]["id"]
    missing = alices + 1000

    theirs, nowhere = run(
        call_each(
            tokens["charlie"], [("memory_report", {"id": alices, **args}), ("memory_report", {"id": missing, **args})]
        )
    )
    assert theirs.is_error and nowhere.is_error
    assert text_of(theirs).replace(str(alices), "N") == text_of(nowhere).replace(str(missing), "N")
    assert theirs.structured_content == nowhere.structured_content
    confidence = Memory.objects.get(pk=alices).confidence

    (own,) = run(call_each(tokens["alice"], [("memory_report", {"id": alices, **args})]))  # positive control
    assert not own.is_error, text_of(own)
    assert Memory.objects.get(pk=alices).confidence != confidence or "grade" in args


def _max_length(prop: dict[str, Any]) -> int | None:
    """maxLength of a string property, also when it is optional (anyOf string | null)."""
    if "maxLength" in prop:
        return int(prop["maxLength"])
    lengths = [int(p["maxLength"]) for p in prop.get("anyOf", []) if "maxLength" in p]
    return lengths[0] if lengths else None


def test_tools_list_states_the_content_limit_on_every_content_argument(tokens: dict[str, str]) -> None:
    async def listed() -> dict[str, Any]:
        async with mcp_client(tokens["alice"]) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    schemas = run(listed())
    save = schemas["memory_save"]
    item = save["$defs"]["SaveItem"]["properties"]["content"]
    stated = {
        "memory_save": _max_length(save["properties"]["content"]),
        "memory_save items[]": _max_length(item),
        "memory_update": _max_length(schemas["memory_update"]["properties"]["content"]),
        "memory_resolve": _max_length(schemas["memory_resolve"]["properties"]["content"]),
    }
    assert stated == dict.fromkeys(stated, LIMIT)
    # Every tool argument named `content` that is memory content is among them (the profile's is its own, 4,000).
    with_content = {name for name, schema in schemas.items() if "content" in schema.get("properties", {})}
    assert with_content == {"memory_save", "memory_update", "memory_resolve", "memory_profile_edit"}
    assert _max_length(schemas["memory_profile_edit"]["properties"]["content"]) == 4000
    assert _max_length({"type": "string"}) is None  # control: a missing limit reads as None


def test_tour_offsets_are_bounded_like_the_rest_apis(tokens: dict[str, str]) -> None:
    from api.pagination import MAX_OFFSET

    _save(tokens["alice"], "The kettle is by the window.")
    calls = [
        ("memory_tour", {"mode": "fixed", "offset": 0}),
        ("memory_timeline", {"order": "tour", "offset": 0}),
        ("memory_tour", {"mode": "fixed", "offset": MAX_OFFSET + 1}),
        ("memory_timeline", {"order": "tour", "offset": MAX_OFFSET + 1}),
        ("memory_tour", {"mode": "fixed", "offset": MAX_OFFSET}),
    ]
    tour, timeline, *refused, deepest = run(call_each(tokens["alice"], calls))
    assert not tour.is_error and not timeline.is_error, text_of(tour) + text_of(timeline)
    assert "kettle" in text_of(tour) and "kettle" in text_of(timeline)
    for result in refused:
        assert result.is_error and "offset" in text_of(result), text_of(result)
    assert not deepest.is_error and "kettle" not in text_of(deepest)  # at the bound: an empty page, not an error
