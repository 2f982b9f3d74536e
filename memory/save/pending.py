"""A bulk chunk's new memories, held until the chunk's end and inserted in one statement (memory/save/bulk.py).

A chunk written without a savepoint an item (any failure rolls back all of it) inserts its memories as it goes one
`Memory.save()` each; most of what that cost was Django building one INSERT a row. Held here instead, a new memory:

- gets its id up front from the table's own sequence (ids reserved for the chunk in one query), so its slot, its
  edges, its rulings, entity links and op row point to it at once (Django's PostgreSQL foreign keys are DEFERRABLE
  INITIALLY DEFERRED: checked when the transaction commits);
- is a neighbour of the chunk's later items exactly as an inserted row was: `nearest` adds the held memories, by
  exact cosine, to what the database's index gives (memory/save/neighbours.py), and keeps the nearest;
- takes a later restatement's reinforcement in place (`get`), as the row would have in an UPDATE;
- is inserted by `flush()` before the chunk's other deferred rows, inside the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.db.models import Model

from memory.judge import Neighbour
from memory.models import Memory
from memory.save.neighbours import NEIGHBOURS
from palace.sequences import IdReserve


@dataclass
class PendingMemories:
    reserve: int = 10
    memories: list[Memory] = field(default_factory=list)
    _vectors: list[np.ndarray] = field(default_factory=list)  # unit vectors of the held memories that have one
    _with_vector: list[Memory] = field(default_factory=list)
    _by_id: dict[int, Memory] = field(default_factory=dict)
    _ids: IdReserve = field(default_factory=IdReserve)

    def __post_init__(self) -> None:
        self._ids.block = max(1, self.reserve)

    def next_id(self, model: type[Model] = Memory) -> int:
        """An id for a new row of `model` (a memory; an edge of the chunk's, memory/save/pipeline.py `Deferred`)."""
        return self._ids.next_id(model)

    def add(self, memory: Memory, vector: list[float] | None) -> None:
        """Hold `memory` (its id from `next_id`) for the chunk's insert."""
        self.memories.append(memory)
        self._by_id[memory.pk] = memory
        if vector is not None:
            v = np.asarray(vector, dtype=np.float64)
            norm = float(np.linalg.norm(v))
            if norm > 0:
                self._vectors.append(v / norm)
                self._with_vector.append(memory)

    def get(self, pk: int) -> Memory | None:
        """The held memory with this id, if it is one of the chunk's."""
        return self._by_id.get(pk)

    def nearest(self, *, vector: list[float], found: list[Neighbour], limit: int = NEIGHBOURS) -> list[Neighbour]:
        """The `limit` nearest of `found` (the database's, for an active memory) and the held memories, nearest
        first: what the index gives once these memories are rows of the palace."""
        if not self._vectors:
            return found
        v = np.asarray(vector, dtype=np.float64)
        norm = float(np.linalg.norm(v))
        if norm == 0:
            return found
        similarities = np.stack(self._vectors) @ (v / norm)
        held = [
            Neighbour(
                id=m.pk, kind=m.kind, content=m.content, placard=m.placard, speaker=m.speaker, similarity=float(s)
            )
            for m, s in zip(self._with_vector, similarities, strict=True)
        ]
        return sorted([*found, *held], key=lambda n: -n.similarity)[:limit]

    def flush(self) -> None:
        """Insert the held memories (one statement), inside the transaction that made them."""
        if self.memories:
            Memory.objects.bulk_create(self.memories)
        self.memories, self._vectors, self._with_vector, self._by_id = [], [], [], {}
