"""Hypothesis over every MCP tool's input schema, through the official client: generated arguments, valid by the
schema (a small generator of JSON Schema values below: hypothesis-jsonschema 0.23 does not run on the current
hypothesis) or not (arbitrary JSON objects), always get a result or a tool error with a message
(isError), never a protocol error, an exception or a hang (each call bounded by a timeout).

`ATRIUM_MCP_FUZZ_EXAMPLES` (default 6 per tool) sets the size; a longer run by hand:
`ATRIUM_MCP_FUZZ_EXAMPLES=100 uv run pytest tests/api/mcp/test_fuzz.py -p no:randomly`.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memory.knowledge import facts_write
from palace.actors import Actor
from palace.models import Palace
from tests.api.mcp.conftest import mcp_client, run, text_of

EXAMPLES = int(os.environ.get("ATRIUM_MCP_FUZZ_EXAMPLES", "6"))
CALL_TIMEOUT = 30.0

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=8,
)


def from_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """Values for the JSON Schema subset pydantic writes for tool inputs (types, enums, bounds, arrays, anyOf, $ref);
    mostly valid, and near the bounds, which is where the interesting refusals are."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return from_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([from_schema(s, defs) for s in schema["anyOf"]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, defs) for k in kind])
    if schema.get("format") in ("date-time", "date"):
        # Aware, naive and date-only, as agents send them (issue 26: a naive as_of crashed memory_facts).
        moments = st.datetimes(timezones=st.none() | st.timezones())
        return moments.map(lambda m: m.isoformat()) | st.dates().map(str)
    if kind == "string":
        low, high = schema.get("minLength", 0), min(schema.get("maxLength", 80), 4000)
        return st.text(min_size=low, max_size=high) | st.just("x" * high)
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = from_schema(schema.get("items", {}), defs)
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=min(schema.get("maxItems", 5), 20))
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: from_schema(v, defs) for k, v in props.items() if k in required},
            optional={k: from_schema(v, defs) for k, v in props.items() if k not in required},
        )
    return JSON_VALUES


async def _tool_schemas(token: str) -> dict[str, dict[str, Any]]:
    async with mcp_client(token) as client:
        listed = await client.list_tools()
    return {t.name: t.input_schema for t in listed.tools}


async def _call(token: str, tool: str, args: dict[str, Any]) -> Any:
    async with mcp_client(token) as client:
        return await asyncio.wait_for(client.call_tool(tool, args), CALL_TIMEOUT)


def _fuzz(token: str, tool: str, schema: dict[str, Any], outcomes: dict[str, set[bool]]) -> None:
    invalid = st.dictionaries(
        st.sampled_from(sorted(schema.get("properties", {})) or ["x"]) | st.text(max_size=12),
        JSON_VALUES,
        max_size=5,
    )

    @given(args=st.one_of(from_schema(schema), invalid))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    def check(args: dict[str, Any]) -> None:
        result = run(_call(token, tool, args))  # an exception or a timeout fails the test
        if result.is_error:
            message = text_of(result).strip()
            assert message, f"{tool}({args!r}): a tool error without a message"
            # The SDK's generic text for an exception the runner did not expect (a crash, not a refusal).
            assert message != f"Error executing tool {tool}", f"{tool}({args!r}): crashed"
        outcomes.setdefault(tool, set()).add(bool(result.is_error))

    check()


def test_every_tool_answers_any_arguments_with_a_result_or_a_tool_error(tokens: dict[str, str], alice: Any) -> None:
    token = tokens["alice"]
    # a fact, so that as_of / known_at are compared with stored (aware) times
    personal = Palace.objects.get(personal_owner=alice)
    facts_write(palace=personal, actor=Actor.for_user(alice), facts=[{"entity": "demo", "content": "demo on 8443"}])
    schemas = run(_tool_schemas(token))
    assert "memory_search" in schemas and "memory_save" in schemas  # positive control: the tools are listed
    outcomes: dict[str, set[bool]] = {}
    for tool, schema in sorted(schemas.items()):
        _fuzz(token, tool, schema, outcomes)
    assert set(outcomes) == set(schemas)
    assert any(False in seen for seen in outcomes.values())  # some generated calls succeeded, not only errors
