"""The tool registry: each tool declares here, once, its public name and whether it writes.

`@tool("memory_x", title=..., write=True)` on an `async def` records a `ToolSpec`; api/mcp/server.py registers
every spec with the SDK. The write flag is read from the spec by everything that needs it:

- tools/list hides write tools from a `read` token (api/mcp/server.py, `ScopedToolList`);
- the runner refuses a write tool to a `read` token, and resolves a tool's palace for writing when it writes
  (api/mcp/runner.py, `run` and `ToolCall.palace`);
- the tool's annotations (`readOnlyHint`, `destructiveHint`).

The decorator returns the function wrapped so that, while it runs, `current_tool()` is its spec: the runner learns
which tool it runs without being told again.

This module imports nothing else of api/mcp, so every other module may import it.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from mcp_types import ToolAnnotations

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    write: bool
    destructive: bool
    idempotent: bool
    fn: Callable[..., Awaitable[Any]]
    # A read tool with a write mode (memory_facts): listed for read tokens and run for them; its write mode checks
    # the caller's right to write itself. Not read-only in its annotations.
    writes_in_a_mode: bool = False

    @property
    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            title=self.title,
            read_only_hint=not (self.write or self.writes_in_a_mode),
            destructive_hint=self.destructive if self.write else None,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    title: str
    description: str
    mime_type: str
    fn: Callable[[], Awaitable[str]]


TOOLS: dict[str, ToolSpec] = {}
RESOURCES: dict[str, ResourceSpec] = {}

_current: ContextVar[ToolSpec | None] = ContextVar("atrium_mcp_tool", default=None)


def tool(
    name: str,
    *,
    title: str,
    write: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    writes_in_a_mode: bool = False,
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Declare an MCP tool: its public name (`memory_<verb>`, a contract), title, and whether it writes (always, or
    only in one of its modes: see ToolSpec.writes_in_a_mode)."""

    def register(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        if name in TOOLS:
            raise ValueError(f"MCP tool {name!r} is declared twice")

        @functools.wraps(fn)  # the SDK reads the signature and docstring through __wrapped__
        async def running(*args: P.args, **kwargs: P.kwargs) -> R:
            reset = _current.set(spec)
            try:
                return await fn(*args, **kwargs)
            finally:
                _current.reset(reset)

        spec = ToolSpec(
            name=name,
            title=title,
            write=write,
            destructive=destructive,
            idempotent=idempotent,
            fn=running,
            writes_in_a_mode=writes_in_a_mode,
        )
        TOOLS[name] = spec
        return running

    return register


def resource(
    uri: str, *, name: str, title: str, description: str, mime_type: str = "text/plain"
) -> Callable[[Callable[[], Awaitable[str]]], Callable[[], Awaitable[str]]]:
    """Declare an MCP resource (read-only text for the caller of the request)."""

    def register(fn: Callable[[], Awaitable[str]]) -> Callable[[], Awaitable[str]]:
        RESOURCES[uri] = ResourceSpec(
            uri=uri, name=name, title=title, description=description, mime_type=mime_type, fn=fn
        )
        return fn

    return register


def current_tool() -> ToolSpec:
    """The tool whose function is running (set by `@tool`)."""
    spec = _current.get()
    if spec is None:
        raise RuntimeError("not inside an MCP tool declared with @tool")
    return spec


def write_tool_names() -> frozenset[str]:
    return frozenset(name for name, spec in TOOLS.items() if spec.write)
