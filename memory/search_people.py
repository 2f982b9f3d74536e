"""The people a palace's memories name, and what search does with a question that names one of them.

Measured on LoCoMo: names dominate a small embedding model's idea of similarity (every question about Caroline
looked like every turn mentioning her), so the vector arm reads the question without the people it names and the
speaker cue puts the person back in, precisely (memory.search).

Who counts as a person: today the speakers of a palace's memories (transcripts saved with a speaker). Roles are not
people: a speaker called "User", "Assistant", "System" or a model's name ("Claude", "GPT-4o") names a seat in a chat,
not someone a question asks about, so stripping it would cut words a question means. `known_people` is the one
place to add other sources of names (the entities of another issue) later.
"""

from __future__ import annotations

import re
import time

from django.db import connection

__all__ = ["is_role_name", "known_people", "name_pattern", "people_named", "without_names"]

PEOPLE_TTL_SECONDS = 60.0
MAX_PEOPLE = 200

# Seats in a chat transcript, lower-cased.
_ROLES = frozenset(
    {"user", "assistant", "system", "human", "ai", "bot", "agent", "model", "tool", "developer", "me", "you"}
)
# Model and assistant families: a speaker named after one is a model, whatever version follows. Families that are
# also common given names (Gemma, Ernie, Kimi, Yi, Phi) are left out: a person may be called that.
_MODEL_FAMILIES = frozenset(
    {
        "chatgpt", "gpt", "claude", "gemini", "bard", "llama", "mistral", "mixtral", "qwen", "deepseek", "copilot",
        "codex", "grok", "vicuna", "glm", "chatglm", "sonnet", "opus", "haiku", "openai", "anthropic",
    }
)  # fmt: skip


def is_role_name(name: str) -> bool:
    """True for a chat role or a model's name ("User", "assistant", "Claude 3.5", "gpt-4o"), not a person's.

    A digit in the name also marks a model or a handle ("bot42"), not a name a question would ask about.
    """
    cleaned = name.strip().lower()
    if not cleaned or cleaned in _ROLES or any(ch.isdigit() for ch in cleaned):
        return True
    first = re.split(r"[\s\-_.:/]+", cleaned)[0]
    return first in _MODEL_FAMILIES or first in _ROLES


# The people a palace set's memories were said by, for a minute: a hint for query cleanup and the speaker cue, so
# staleness is harmless.
_people_cache: dict[tuple[int, ...], tuple[float, list[str]]] = {}


def known_people(palaces: list[int]) -> list[str]:
    """The people of these palaces: capitalised speakers that are not roles (see is_role_name)."""
    key = tuple(palaces)
    cached = _people_cache.get(key)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT speaker FROM memory_memory WHERE palace_id = ANY(%s) AND speaker <> '' LIMIT %s",
            [palaces, MAX_PEOPLE],
        )
        speakers = {str(r[0]).strip() for r in cursor.fetchall()}
    names = sorted(s for s in speakers if s[:1].isupper() and not is_role_name(s))
    if len(_people_cache) > 1000:
        _people_cache.clear()
    _people_cache[key] = (time.monotonic() + PEOPLE_TTL_SECONDS, names)
    return names


def name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(name)}(?:'s)?\b")


def people_named(query: str, people: list[str]) -> list[str]:
    return [name for name in people if name_pattern(name).search(query)]


def without_names(query: str, names: list[str]) -> str:
    """The query without the people it names (for the vector arm); the query itself if nothing else is left."""
    stripped = query
    for name in names:
        stripped = name_pattern(name).sub(" ", stripped)
    stripped = re.sub(r"\s+([?,.!])", r"\1", " ".join(stripped.split()))
    return stripped if stripped.strip(" ?,.!") else query
