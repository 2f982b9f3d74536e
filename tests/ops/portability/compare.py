"""Comparing export documents with ids normalised (each row's id becomes its position in its section)."""

from __future__ import annotations

from typing import Any

from ops.portability import OP_TARGETS, TABLES


def normalised(section: dict[str, Any], *, op_ids: set[int] | None = None) -> dict[str, Any]:
    """A palace section without its own identity (id, name, origin, members) and with every row id and reference
    replaced by positions; `op_ids` keeps only those op rows."""
    out: dict[str, Any] = {}
    position = {t.section: {row["id"]: n for n, row in enumerate(section[t.section])} for t in TABLES}
    if op_ids is not None:
        section = dict(section, oplog=[r for r in section["oplog"] if r["id"] in op_ids])
        position["oplog"] = {row["id"]: n for n, row in enumerate(section["oplog"])}
    for table in TABLES:
        rows = []
        for row in section[table.section]:
            item = dict(row, id=position[table.section][row["id"]])
            for name, target in table.refs.items():
                if item.get(name) is not None:
                    item[name] = position[target].get(item[name], ("outside", item[name]))
            if table.section == "oplog" and item.get("target_id") is not None:
                op_section = OP_TARGETS.get(item["target_kind"])
                if op_section:
                    item["target_id"] = position[op_section].get(item["target_id"], ("outside", item["target_id"]))
                elif item["target_kind"] == "palace":
                    item["target_id"] = "palace"
            rows.append(item)
        out[table.section] = rows
    return out
