"""The export as a Markdown vault (Obsidian, Logseq): a zip with one file per memory.

Layout: `<palace folder>/<memory id>.md` and one `<palace folder>/index.md` per palace listing its rooms and
memories. Each memory file starts with YAML front matter (its fields; strings written as JSON strings, which YAML
reads as they are, so no YAML library is needed) and its body, then its links as `[[id]]` backlinks: the version it
supersedes, its edges both ways, and its room. Vault apps resolve `[[12]]` to the file `12.md` wherever it is.

Built from the export document (ops/portability/exporting.py), so it covers exactly what the JSON does for the same
person and scope, redacted or not. Vectors are not written (the JSON carries them).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections import defaultdict
from typing import Any

FRONT_MATTER = (
    "id",
    "kind",
    "status",
    "placard",
    "version",
    "confidence",
    "importance",
    "occurred_at",
    "created_at",
    "updated_at",
    "source_kind",
    "speaker",
    "created_by",
    "embedding_model",
    "review_enrolled",
    "epitaph",
)


def _yaml(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


def palace_folder(section: dict[str, Any]) -> str:
    label = section["origin"] or f"personal-{section['owner'] or section['id']}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or f"palace-{section['id']}"


def _slot_rooms(section: dict[str, Any]) -> dict[int, str]:
    rooms = {r["id"]: r["name"] for r in section["rooms"]}
    return {s["id"]: f"{rooms.get(s['room'], '?')}#{s['number']}" for s in section["slots"]}


def memory_markdown(memory: dict[str, Any], *, section: dict[str, Any], links: list[str], slot: str | None) -> str:
    lines = ["---"]
    lines += [f"{key}: {_yaml(memory.get(key))}" for key in FRONT_MATTER]
    lines.append(f"palace: {_yaml(section['origin'] or 'personal')}")
    lines.append(f"slot: {_yaml(slot)}")
    if memory.get("supersedes") is not None:
        lines.append(f'supersedes: "[[{memory["supersedes"]}]]"')
    lines.append(f"tags: {_yaml(['atrium', memory['kind'], memory['status']])}")
    lines += ["---", "", memory["content"], ""]
    if links:
        lines += ["## Links", "", *links, ""]
    return "\n".join(lines)


def _links(section: dict[str, Any]) -> dict[int, list[str]]:
    links: dict[int, list[str]] = defaultdict(list)
    for memory in section["memories"]:
        if memory.get("supersedes") is not None:
            links[memory["id"]].append(f"- supersedes [[{memory['supersedes']}]]")
            links[memory["supersedes"]].append(f"- superseded by [[{memory['id']}]]")
    for edge in section["edges"]:
        status = f" ({edge['status']})" if edge.get("status") else ""
        links[edge["from_memory"]].append(f"- {edge['kind']}{status} → [[{edge['to_memory']}]]")
        links[edge["to_memory"]].append(f"- {edge['kind']}{status} ← [[{edge['from_memory']}]]")
    return links


def _index(section: dict[str, Any], slots: dict[int, str]) -> str:
    title = section["origin"] or f"personal palace of {section['owner']}"
    lines = [f"# {title}", "", f"{len(section['memories'])} memories.", ""]
    by_room: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for memory in section["memories"]:
        room = slots.get(memory["slot"], "unslotted#").rsplit("#", 1)[0] if memory.get("slot") else "unslotted"
        by_room[room].append(memory)
    for room in sorted(by_room):
        lines += [f"## {room}", ""]
        for memory in by_room[room]:
            label = memory.get("placard") or memory["kind"]
            lines.append(f"- [[{memory['id']}]] {label} ({memory['status']})")
        lines.append("")
    return "\n".join(lines)


def markdown_zip(document: dict[str, Any]) -> bytes:
    """The vault as zip bytes, with a README.md saying what it was made from."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "README.md",
            f"# Atrium export\n\nExported by {document['exported_by']} at {document['exported_at']}"
            f" ({'redacted view: bodies are 40-character previews' if document['redacted'] else 'full bodies'}).\n",
        )
        for section in document["palaces"]:
            folder = palace_folder(section)
            slots = _slot_rooms(section)
            links = _links(section)
            archive.writestr(f"{folder}/index.md", _index(section, slots))
            for memory in section["memories"]:
                slot = slots.get(memory["slot"]) if memory.get("slot") is not None else None
                text = memory_markdown(memory, section=section, links=links.get(memory["id"], []), slot=slot)
                archive.writestr(f"{folder}/{memory['id']}.md", text)
    return buffer.getvalue()
