"""What the model reads from the judge family (memory_resolve)."""

from __future__ import annotations

from api.mcp import schemas


def resolved(out: schemas.ResolveOut) -> str:
    what = {
        "keep_newer": f"kept the newer #{out.newer}; #{out.older} is superseded by it",
        "keep_older": f"kept the older #{out.older}; #{out.newer} is forgotten (restorable)",
        "both_stand": f"both #{out.newer} and #{out.older} stand; the edge is dismissed",
        "merge": f"#{out.newer} and #{out.older} are superseded by the merged memory",
    }[out.decision]
    line = f"Resolved edge={out.edge} ({out.status}): {what}."
    if out.new_memory is not None:
        line += f" New memory id={out.new_memory.id} at {out.new_memory.coordinate or 'unslotted'}."
    return line
