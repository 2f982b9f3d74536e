"""What the model reads, one module per family of tools (api/mcp/tools/), with what they share in common.py:
plain lines, one memory per line, `id=` first so the model can copy it into the next call. Everything recalled is
wrapped in `<atrium_memory_context>`; confirmations of writes are not recall and stay unwrapped. Tools use these as
`text.x`; this face lists every one."""

from __future__ import annotations

from api.mcp.text.arguments import argument_errors
from api.mcp.text.browse import closed_wing, neighbours, stats, timeline_created, timeline_tour, toured
from api.mcp.text.common import (
    INSTRUCTIONS,
    connection_project_not_found,
    default_project_gone,
    domain_error,
    flat,
    invalid_input,
    palace_not_found,
    palace_used,
    row_line,
    rows_text,
    tool_timeout,
    with_zone_note,
)
from api.mcp.text.episodes import episode_timeline
from api.mcp.text.facts import fact_line, facts_queried, facts_written
from api.mcp.text.handoff import handoff_body, handoff_saved, history, profile_edit
from api.mcp.text.ingest import ingested
from api.mcp.text.judge import resolved
from api.mcp.text.recall import assessed, examined, searched
from api.mcp.text.review import audit, queue, reported
from api.mcp.text.save import distilled, entities_text, entity_list, forgot, restored, saved, updated
from api.mcp.text.versions import checked_out, distill_undone

__all__ = [
    "INSTRUCTIONS",
    "argument_errors",
    "assessed",
    "audit",
    "checked_out",
    "closed_wing",
    "connection_project_not_found",
    "default_project_gone",
    "distill_undone",
    "distilled",
    "domain_error",
    "entities_text",
    "entity_list",
    "episode_timeline",
    "examined",
    "fact_line",
    "facts_queried",
    "facts_written",
    "flat",
    "forgot",
    "handoff_body",
    "handoff_saved",
    "history",
    "ingested",
    "invalid_input",
    "neighbours",
    "palace_not_found",
    "palace_used",
    "profile_edit",
    "queue",
    "reported",
    "resolved",
    "restored",
    "row_line",
    "rows_text",
    "saved",
    "searched",
    "stats",
    "timeline_created",
    "timeline_tour",
    "tool_timeout",
    "toured",
    "updated",
    "with_zone_note",
]
