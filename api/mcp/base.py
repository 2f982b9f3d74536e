"""How every MCP tool runs: caller from the token, one hop to the ORM thread, errors the model can fix as isError.

A tool body is a plain sync function `body(caller, **arguments) -> (output model, text)`, run through `run_tool`:

1. the caller (user + token) is loaded from the verified bearer token — never from an argument;
2. a write tool refuses a `read` token (tools/list already hides write tools from such tokens);
3. the body runs on the request's ORM thread (the ASGI wrapper gives each MCP request its own);
4. domain errors become `ToolError`s — an `isError` result with a message that says what to do; anything else
   is logged here and reaches the client as the SDK's generic "Error executing tool <name>", never a traceback;
5. the result carries the text rendering (what the model reads), `structuredContent` (validated against the
   tool's outputSchema by the SDK), and in `_meta` the milliseconds the service call took; the same time goes into
   the response's `Server-Timing` header (api/mcp/timing.py), so a benchmark can tell the cost of the protocol from
   the cost of the work.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from accounts.caller import Caller
from api.mcp.context import current_token_id, load_caller
from api.mcp.timing import current_timing
from palace.errors import AtriumError, Conflict, InvalidInput, NotFound, PermissionDenied

log = logging.getLogger("atrium.mcp")

SERVICE_MS_META = "dev.atrium/service_ms"

Body = Callable[..., tuple[BaseModel, str]]


def _advice(exc: AtriumError) -> str:
    if isinstance(exc, NotFound):
        return " Check the id (search first: ids are printed as id=…) or the project origin."
    if isinstance(exc, Conflict):
        return " Reload with memory_examine and retry with the current state."
    if isinstance(exc, PermissionDenied):
        return ""
    if isinstance(exc, InvalidInput):
        return " Fix the argument and call again."
    return ""


def _invoke(body: Body, token_id: int, write: bool, arguments: dict[str, Any]) -> tuple[BaseModel, str, float]:
    caller: Caller = load_caller(token_id)
    if write:
        caller.require_write()
    started = time.perf_counter()
    try:
        out, text = body(caller, **arguments)
    finally:
        service_ms = (time.perf_counter() - started) * 1000
        timing = current_timing.get()
        if timing is not None:  # the request's Server-Timing (api/mcp/timing.py)
            timing.service_ms += service_ms
            timing.tool_calls += 1
    return out, text, service_ms


async def run_tool(name: str, body: Body, *, write: bool, **arguments: Any) -> CallToolResult:
    """Run one tool body for the caller behind this request (see the module docstring)."""
    try:
        token_id = current_token_id()
        out, text, service_ms = await sync_to_async(_invoke)(body, token_id, write, arguments)
    except AtriumError as exc:
        raise ToolError(f"{exc.message}.{_advice(exc)}".replace("..", ".")) from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise ToolError(f"invalid input: {problems}") from None
    except ToolError:
        raise
    except Exception:
        log.exception("MCP tool %s failed", name)
        raise
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=out.model_dump(mode="json", by_alias=True),
        _meta={SERVICE_MS_META: round(service_ms, 3)},
    )
