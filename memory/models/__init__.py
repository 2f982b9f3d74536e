"""The memory app's models, one module per concept; importing this package registers them all with Django.

- memory.py: Memory, Edge (the links between memories), AccessRecord and SearchBatch (what searches returned),
  DistillProposal, DistillJob; the vector helpers of raw SQL.
- knowledge.py: Entity, MemoryEntity, Fact (the temporal layer), ProfileVersion and HandoffVersion.
- judge.py: Adjudication (every ruling on a save) and JudgeSettings (the one row of the judge's configuration).
"""

from __future__ import annotations

from memory.models.judge import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS, Adjudication, JudgeSettings
from memory.models.knowledge import Entity, Fact, HandoffVersion, MemoryEntity, ProfileVersion
from memory.models.memory import (
    EMBEDDING_DIM,
    HALF_DISTANCE,
    AccessRecord,
    DistillJob,
    DistillProposal,
    Edge,
    Memory,
    SearchBatch,
    vector_literal,
)

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "EMBEDDING_DIM",
    "HALF_DISTANCE",
    "MAX_TIMEOUT_MS",
    "MIN_TIMEOUT_MS",
    "AccessRecord",
    "Adjudication",
    "DistillJob",
    "DistillProposal",
    "Edge",
    "Entity",
    "Fact",
    "HandoffVersion",
    "JudgeSettings",
    "Memory",
    "MemoryEntity",
    "ProfileVersion",
    "SearchBatch",
    "vector_literal",
]
