"""The memory app's admin: importing this package registers every page.

- memories.py: memories, edges and distillation proposals, with the forget and restore actions;
- audit.py: a memory's history and the revert console (re-registering Memory, and the op log's console with each
  row's revert);
- judge.py: the judge's settings and its rulings;
- knowledge.py: entities, their links and facts, profile and handoff versions, retrievals and evidence batches
  (read-only; their bodies behind `memory.view_memory_body`).
"""

from __future__ import annotations

from memory.admin import audit, judge, knowledge, memories
from memory.admin.memories import can_see_bodies

__all__ = ["audit", "can_see_bodies", "judge", "knowledge", "memories"]
