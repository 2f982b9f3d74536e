"""What leaves the process: the embedder (in-process multilingual-e5-small, or an OpenAI-compatible endpoint;
embeddings.py), the chat model every optional LLM use goes through (llm.py, configured per use by llm_config), and
the rule for where either may send a request (egress.py: no internal address unless the operator allows it)."""

from __future__ import annotations

from memory.providers.egress import (
    EgressError,
    EgressRefused,
    ReplyTooLarge,
    ReplyTooSlow,
    egress_check,
    egress_resolve,
    read_bounded,
)
from memory.providers.embeddings import (
    Embedder,
    EmbedderUnavailable,
    configure_openmp,
    embed_passages,
    embed_query,
    embed_query_soon,
    embedder_loaded_at,
    embedder_model_name,
    embedder_probe,
    embedder_status,
    embedder_warm,
    get_embedder,
    reset_after_fork,
    set_embedder,
)
from memory.providers.llm import LLMConfig, LLMError, LLMSchemaError, LLMTimeoutError, chat_json, llm_config

__all__ = [
    "EgressError",
    "EgressRefused",
    "Embedder",
    "EmbedderUnavailable",
    "LLMConfig",
    "LLMError",
    "LLMSchemaError",
    "LLMTimeoutError",
    "ReplyTooLarge",
    "ReplyTooSlow",
    "chat_json",
    "configure_openmp",
    "egress_check",
    "egress_resolve",
    "embed_passages",
    "embed_query",
    "embed_query_soon",
    "embedder_loaded_at",
    "embedder_model_name",
    "embedder_probe",
    "embedder_status",
    "embedder_warm",
    "get_embedder",
    "llm_config",
    "read_bounded",
    "reset_after_fork",
    "set_embedder",
]
