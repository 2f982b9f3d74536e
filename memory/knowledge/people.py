"""The people a palace's memories name, and what search does with a question that names one of them.

Measured on LoCoMo: names dominate a small embedding model's idea of similarity (every question about Caroline
looked like every turn mentioning her), so the vector arm reads the question without the people it names and the
speaker cue puts the person back in, precisely (memory.search).

Who counts as a person (`known_people`): the speakers of a palace's memories (transcripts saved with a speaker),
and the names its memories keep mentioning (`frequent_names`: agent-written facts carry no speaker, but "Caroline
attended…", "Caroline is planning…" name her all the same). Roles are not people: a speaker called "User",
"Assistant", "System" or a model's name ("Claude", "GPT-4o") names a seat in a chat, not someone a question asks
about, so stripping it would cut words a question means. `known_people` is the one place to add other sources of
names (the entity links of another issue) later: they would replace the capitalisation heuristic.
The speaker cue uses speakers only (`speakers`): a mentioned name says what a memory is about, not who said it.
"""

from __future__ import annotations

import math
import re
import time

from django.db import connection

__all__ = [
    "frequent_names",
    "is_role_name",
    "known_people",
    "name_pattern",
    "people_named",
    "speakers",
    "without_names",
]

PEOPLE_TTL_SECONDS = 60.0
MAX_PEOPLE = 200
NAME_SAMPLE = 400  # newest memories per palace read for the names they keep mentioning
NAME_CHARS = 500  # of each
NAME_SHARE = 0.05  # a name in at least this share of them is one the palace keeps mentioning
NAME_MIN_COUNT = 3

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


# Capitalised words that are not names in English text: calendar words.
_CALENDAR = frozenset(
    {
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march",
        "april", "may", "june", "july", "august", "september", "october", "november", "december",
    }
)  # fmt: skip
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_SENTENCE_START = re.compile(r"(?:\A|[.!?…。！？:\n])[\s\"'“‘(]*\Z")


def frequent_names(texts: list[str], *, min_share: float = NAME_SHARE, min_count: int = NAME_MIN_COUNT) -> list[str]:
    """Names the texts keep mentioning: capitalised words, capitalised at least once where a sentence does not
    start and never written in lower case, in at least `min_share` of the texts (and `min_count` of them). Not
    calendar words, roles or models."""
    mentions: dict[str, int] = {}
    inside: set[str] = set()  # capitalised somewhere a sentence does not start: evidence of a name
    lower: set[str] = set()
    for text in texts:
        seen: set[str] = set()
        for match in _WORD.finditer(text):
            word = re.sub(r"['’]s$", "", match.group())
            if word[:1].isupper() and not word.isupper() and len(word) > 1:
                seen.add(word)
                if not _SENTENCE_START.search(text[: match.start()]):
                    inside.add(word)
            elif word[:1].islower():
                lower.add(word.lower())
        for word in seen:
            mentions[word] = mentions.get(word, 0) + 1
    wanted = max(min_count, math.ceil(min_share * len(texts)))
    return sorted(
        w
        for w, n in mentions.items()
        if n >= wanted and w in inside and w.lower() not in lower | _CALENDAR and not is_role_name(w)
    )


# The people of a palace set, for a minute: a hint for query cleanup and the speaker cue, so staleness is harmless.
_people_cache: dict[tuple[int, ...], tuple[float, list[str], list[str]]] = {}


def _people(palaces: list[int]) -> tuple[list[str], list[str]]:
    key = tuple(palaces)
    cached = _people_cache.get(key)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1], cached[2]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT speaker FROM memory_memory WHERE palace_id = ANY(%s) AND speaker <> '' LIMIT %s",
            [palaces, MAX_PEOPLE],
        )
        found = {str(r[0]).strip() for r in cursor.fetchall()}
        # The newest memories are a sample of what a palace talks about; bounded whatever the palace's size.
        # Per palace, so the (palace, status, -created_at) index serves each sample in order.
        cursor.execute(
            "SELECT m.content FROM unnest(%s::bigint[]) AS p(id), LATERAL (SELECT content FROM memory_memory"
            " WHERE palace_id = p.id AND status = 'active' ORDER BY created_at DESC LIMIT %s) AS m",
            [palaces, NAME_SAMPLE],
        )
        sample = [str(r[0])[:NAME_CHARS] for r in cursor.fetchall()]
    speakers = sorted(s for s in found if s[:1].isupper() and not is_role_name(s))
    people = sorted(set(speakers) | set(frequent_names(sample)))
    if len(_people_cache) > 1000:
        _people_cache.clear()
    _people_cache[key] = (time.monotonic() + PEOPLE_TTL_SECONDS, speakers, people)
    return speakers, people


def known_people(palaces: list[int]) -> list[str]:
    """The people of these palaces: capitalised speakers that are not roles, and the names their memories keep
    mentioning (see frequent_names), sorted."""
    return _people(palaces)[1]


def speakers(palaces: list[int]) -> list[str]:
    """The people who said these palaces' memories (capitalised speakers that are not roles)."""
    return _people(palaces)[0]


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
