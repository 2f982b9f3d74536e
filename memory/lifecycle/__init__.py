"""What happens to a memory after it is saved: corrections, forgetting, restoring, archiving and outcome
reports, with the one write check every edit starts with (corrections.py); the edges a change closes (edges.py);
deciding a contradiction (resolve.py); and the versions of a supersede chain (versions.py)."""

from __future__ import annotations

from memory.lifecycle.corrections import (
    memory_archive,
    memory_forget,
    memory_lock,
    memory_reinforce_cited,
    memory_report,
    memory_restore,
    memory_update,
    memory_writable,
)
from memory.lifecycle.edges import edges_close_open
from memory.lifecycle.resolve import Resolution, edge_resolve
from memory.lifecycle.versions import chain_head, memory_checkout

__all__ = [
    "Resolution",
    "chain_head",
    "edge_resolve",
    "edges_close_open",
    "memory_archive",
    "memory_checkout",
    "memory_forget",
    "memory_lock",
    "memory_reinforce_cited",
    "memory_report",
    "memory_restore",
    "memory_update",
    "memory_writable",
]
