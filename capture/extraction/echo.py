"""Anti-echo: Atrium's own recall inside a captured turn is replaced by a placeholder before anything is extracted."""

from __future__ import annotations

from dataclasses import dataclass, field

# Atrium's MCP tools that return stored memory (every read tool of api/mcp's registry). capture may not import api,
# so the names are kept here; tests/capture/extraction/test_echo.py compares them with the registry.
RECALL_TOOLS: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scrubbed:
    """The turn with every echo replaced by a placeholder, and the names of what was removed (one entry per echo)."""

    text: str
    removed: list[str] = field(default_factory=list)


def scrub_echo(text: str) -> Scrubbed:
    raise NotImplementedError
