"""The MCP tools, by family: save (save, update, forget, distill), recall (search, assess, examine, profile),
browse (timeline, tour, neighbours, stats, the closed wing), review (queue, audit, report), versions (checkout,
distill undo), judge (resolve), handoff (profile edit, handoff save/load, history) and facts
(memory_facts), export (memory_export), episodes (memory_episode_timeline), ingest (memory_ingest_history: backfill).

To add a tool, in the family's module (or a new module imported below):

    @tool("memory_thing", title="Do the thing", write=False)
    async def memory_thing(id: schemas.MemoryId) -> Annotated[CallToolResult, schemas.ThingOut]:
        \"\"\"What the model reads: when to use it, what it returns. Next: what to call after it.\"\"\"
        return await run(lambda call: _thing(call, id=id))

    def _thing(call: ToolCall, *, id: int) -> tuple[schemas.ThingOut, str]:
        out = ...  # call a service or selector as call.user / call.actor; call.palace(project) for a palace
        return out, text.thing(out)

The name and the write flag are declared once, in `@tool` (api/mcp/registry.py); `run` (api/mcp/runner.py) loads
the caller, refuses write tools to read tokens and maps domain errors. Output models go in the family's module of
api/mcp/schemas/, texts in its module of api/mcp/text/. Tool names are
a public contract (`memory_<verb>`).
"""

from __future__ import annotations

from api.mcp.tools import browse, episodes, export, facts, handoff, ingest, judge, recall, review, save, versions

__all__ = [
    "browse",
    "episodes",
    "export",
    "facts",
    "handoff",
    "ingest",
    "judge",
    "recall",
    "review",
    "save",
    "versions",
]
