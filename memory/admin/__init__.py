"""The memory app's admin: importing this package registers every page.

- memories.py: memories, edges and distillation proposals, with the forget and restore actions;
- audit.py: a memory's history and the revert console (re-registering Memory, and the op log's console with each
  row's revert);
- judge.py: the judge's settings and its rulings;
- knowledge.py: entities, their links and facts, profile and handoff versions, retrievals and evidence batches
  (read-only; their bodies behind `memory.view_memory_body`).

The read-only and body-masking mixins and `can_see_bodies` are palace.admin's (every app's admin uses them).
"""

from __future__ import annotations

from memory.admin import audit, judge, knowledge, memories

__all__ = ["audit", "judge", "knowledge", "memories"]
