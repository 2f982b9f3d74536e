"""Text in and out, pure (no models, no I/O): cleaning what comes in (forged protocol tags, control characters,
whitespace; memory/text/protocol_tags.py), redacting secrets (redaction.py), the texts full-text search and the
embedder read (searchtext.py, with CJK 2-grams from textproc.py), token estimates and safe cuts (textproc.py), and the
wrapper every recalled text leaves in (wrapping.py)."""

from __future__ import annotations

from memory.text.cleaning import clean_inbound_text, clean_line, scrub_inbound_text
from memory.text.protocol_tags import PROTOCOL_TAG_NAMES, strip_protocol_tags
from memory.text.redaction import REDACTION_TYPES, RedactionResult, redact
from memory.text.searchtext import (
    build_embedding_text,
    build_search_text,
    query_lexemes_sql,
    query_text,
    search_vector_sql,
)
from memory.text.textproc import chunk_text, estimate_tokens, is_low_entropy, search_text_cjk, truncate_to_chars
from memory.text.wrapping import (
    seal_structured,
    seal_text,
    unwrap_memory_field,
    wrap_memory_context,
    wrap_memory_field,
    wrap_memory_fields,
    wrapper_overhead,
)

__all__ = [
    "PROTOCOL_TAG_NAMES",
    "REDACTION_TYPES",
    "RedactionResult",
    "build_embedding_text",
    "build_search_text",
    "chunk_text",
    "clean_inbound_text",
    "clean_line",
    "estimate_tokens",
    "is_low_entropy",
    "query_lexemes_sql",
    "query_text",
    "redact",
    "scrub_inbound_text",
    "seal_structured",
    "seal_text",
    "search_text_cjk",
    "search_vector_sql",
    "strip_protocol_tags",
    "truncate_to_chars",
    "unwrap_memory_field",
    "wrap_memory_context",
    "wrap_memory_field",
    "wrap_memory_fields",
    "wrapper_overhead",
]
