"""Argument errors as the model reads them: one line per problem, `argument <name>: <what is wrong>; send <what to
send instead>`, and an unknown argument refused by name with the nearest one ("unknown argument asof: did you mean
as_of?"). What to send is read from the argument's JSON schema, the one tools/list shows, so the advice and the
schema cannot disagree. Never pydantic's dump: no errors.pydantic.dev URL, no "memory_saveArguments"."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_snake

Schema = dict[str, Any]

# Errors about the kind of value sent (a word for a number, a list for a text): "got <what was sent>" says it.
_TYPE_ERRORS = ("_type", "_parsing", "literal_error", "enum", "is_instance_of", "int_from_float", "json_invalid")
_SHOWN_CHARS = 40
# Bounds this large are a storage limit (a 64-bit id), not advice.
_NO_ADVICE_ABOVE = 2**53


def argument_errors(tool: str, schema: Schema, exc: ValidationError) -> str:
    """The message for arguments that failed `schema` (a tool's input schema): a first line naming the tool, then
    one line per argument (a union's members each report the same argument: the first report stands)."""
    lines: dict[str, str] = {}
    for error in exc.errors(include_url=False):
        path, line = _line(schema, error)
        lines.setdefault(path, line)
    return "\n".join([f"Error executing tool {tool}: invalid arguments, one line per problem:", *lines.values()])


def _line(schema: Schema, error: Any) -> tuple[str, str]:
    loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden" and loc:
        path, parent = _walk(schema, loc[:-1])
        key = str(loc[-1])
        shown = key if key.isidentifier() else repr(key)  # an empty or odd key stays visible
        name = f"{path}.{shown}" if path else shown
        return name, f"unknown argument {name}{_did_you_mean(key, _object(parent, schema))}"
    path, node = _walk(schema, loc)
    send = _describe(node, schema)
    return path, f"argument {path or '(all)'}: {_wrong(error)}; send {send}"


def _did_you_mean(key: str, node: Schema | None) -> str:
    names = list((node or {}).get("properties", {}))
    if not names:
        return ""
    spelled = {name.replace("_", "").lower(): name for name in names}
    close = difflib.get_close_matches(to_snake(key).replace("_", "").lower(), list(spelled), n=1, cutoff=0.6)
    if close:
        return f": did you mean {spelled[close[0]]}?"
    return f"; the arguments here are {', '.join(names)}"


def _resolve(node: Schema, root: Schema) -> Schema:
    ref = node.get("$ref")
    if isinstance(ref, str):
        return _resolve(root.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {}), root)
    return node


def _members(node: Schema, root: Schema) -> list[Schema]:
    node = _resolve(node, root)
    return [_resolve(m, root) for m in node["anyOf"]] if "anyOf" in node else [node]


def _object(node: Schema, root: Schema) -> Schema | None:
    return next((m for m in _members(node, root) if "properties" in m), None)


def _walk(root: Schema, loc: tuple[Any, ...]) -> tuple[str, Schema]:
    """The argument's path as the schema spells it (`items[0].occurred_at`) and its schema. A step the schema does
    not know is a union member's tag (`list[SaveItem]`, `int`), not a place in the arguments, and is passed over; a
    camelCase step is the accepted spelling of a snake_case property."""
    path, node = "", root
    for step in loc:
        if isinstance(step, int):
            array = next((m for m in _members(node, root) if "items" in m), None)
            if array is not None:
                path, node = f"{path}[{step}]", array["items"]
            continue
        found = _object(node, root)
        props = found.get("properties", {}) if found is not None else {}
        name = step if step in props else to_snake(str(step))
        if name in props:
            path, node = f"{path}.{name}" if path else name, props[name]
    return path, node


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return (
            "an empty text" if not value else repr(value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "…")
        )
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _wrong(error: Any) -> str:
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return "missing"
    if kind == "string_too_short":
        return "is empty" if not value else f"has {len(value)} characters, fewer than {ctx.get('min_length')}"
    if kind == "string_too_long":
        return f"has {len(value)} characters, more than {ctx.get('max_length')}"
    if kind in ("too_short", "too_long"):
        more = "more" if kind == "too_long" else "fewer"
        limit = ctx.get("max_length" if kind == "too_long" else "min_length")
        return f"has {ctx.get('actual_length')} items, {more} than {limit}"
    bounds = {
        "greater_than_equal": ("ge", "less than"),
        "greater_than": ("gt", "not more than"),
        "less_than_equal": ("le", "more than"),
        "less_than": ("lt", "not less than"),
    }
    if kind in bounds:
        key, relation = bounds[kind]
        return f"is {_shown(value)}, {relation} {ctx.get(key)}"
    if kind in ("value_error", "assertion_error"):
        return str(ctx.get("error") or error["msg"])
    if any(kind.endswith(t) for t in _TYPE_ERRORS):
        return f"got {_shown(value)}"
    message = str(error["msg"])
    return message[:1].lower() + message[1:]


def _describe(node: Schema, root: Schema, depth: int = 0) -> str:
    """What a value of this schema is, in words: "an integer of at least 1", "one of fact, preference…"."""
    members = [m for m in _members(node, root) if m.get("type") != "null"]
    if len(members) != 1:
        described = dict.fromkeys(_describe(m, root, depth) for m in members)
        return " or ".join(described) if described else "null"
    node = members[0]
    if "enum" in node:
        return "one of " + ", ".join(str(v) for v in node["enum"])
    if "const" in node:
        return repr(node["const"])
    kind = node.get("type")
    if kind == "string":
        return _text(node)
    if kind in ("integer", "number"):
        return ("an integer" if kind == "integer" else "a number") + _bounds(node)
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        return _array(node, root, depth)
    if kind == "object" or "properties" in node:
        names = list(node.get("properties", {}))
        required = [n for n in node.get("required", []) if n in names]
        needs = f" ({', '.join(required)} required)" if required else ""
        return f"an object with {', '.join(names)}{needs}" if names else "an object"
    return "a value as the tool's input schema describes"


def _text(node: Schema) -> str:
    shape = node.get("format")
    if shape == "date-time":
        return "an ISO 8601 date-time, e.g. 2026-03-02T14:05:00+01:00"
    if shape == "date":
        return "an ISO 8601 date, e.g. 2026-03-02"
    low, high = node.get("minLength"), node.get("maxLength")
    if low and high:
        return f"a text of {low}–{high} characters"
    if high:
        return f"a text of at most {high} characters"
    if low:
        return "a non-empty text" if low == 1 else f"a text of at least {low} characters"
    return "a text"


def _bounds(node: Schema) -> str:
    low = node.get("minimum")
    high = node.get("maximum")
    high = None if high is not None and high >= _NO_ADVICE_ABOVE else high
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" of at least {low}"
    if high is not None:
        return f" of at most {high}"
    if "exclusiveMinimum" in node:
        return f" above {node['exclusiveMinimum']}"
    return ""


def _array(node: Schema, root: Schema, depth: int) -> str:
    low, high = node.get("minItems"), node.get("maxItems")
    if low and high:
        count = f" of {low}–{high} items"
    elif high:
        count = f" of up to {high} items"
    elif low:
        count = f" of at least {low} item{'s' if low > 1 else ''}"
    else:
        count = ""
    if depth >= 2 or "items" not in node:
        return f"a list{count}"
    return f"a list{count}, each {_describe(node['items'], root, depth + 1)}"
