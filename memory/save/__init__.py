"""The write pipeline every door saves through (pipeline.py; many items at once, as a batch, an import or a capture:
bulk.py): the typed request and its cleaning (input.py), the derived texts and vectors (derived_texts.py), the
nearest neighbours it is disposed against (neighbours.py), the forgotten it must not bring back (tombstones.py), and
a new memory's importance (importance.py)."""

from __future__ import annotations

from memory.save.bulk import (
    MAX_BATCH_ITEMS,
    BatchResult,
    Chunk,
    ItemError,
    memory_chunk_embed,
    memory_chunk_prepare,
    memory_chunk_save,
    memory_save_batch,
    memory_save_bulk,
)
from memory.save.derived_texts import derive_texts, embed_texts
from memory.save.importance import importance_for
from memory.save.input import ITEM_FIELDS, MAX_PLACARD_CHARS, SOURCES, Prepared, SaveItem, check_source, prepare_item
from memory.save.neighbours import nearest
from memory.save.pipeline import SaveResult, create_memory, memory_save

__all__ = [
    "ITEM_FIELDS",
    "MAX_BATCH_ITEMS",
    "MAX_PLACARD_CHARS",
    "SOURCES",
    "BatchResult",
    "Chunk",
    "ItemError",
    "Prepared",
    "SaveItem",
    "SaveResult",
    "check_source",
    "create_memory",
    "derive_texts",
    "embed_texts",
    "importance_for",
    "memory_chunk_embed",
    "memory_chunk_prepare",
    "memory_chunk_save",
    "memory_save",
    "memory_save_batch",
    "memory_save_bulk",
    "nearest",
    "prepare_item",
]
