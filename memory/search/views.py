"""What each arm reads of a long conversational query: the dialogue so far, one "speaker: text" line per turn.

An agent often searches with the last turns of a chat rather than a clean question. What is being recalled is named
at the end; the opening is small talk, and earlier turns may mention other events in passing. The embedder reads at
most 512 word pieces (memory.providers cuts a query at CHUNK_CHARS from its start), so a long dialogue embedded
whole loses exactly its end, and the full-text arm over the whole dialogue matches everything a little.

So for a query that is a dialogue (at least MIN_TURNS lines, nearly all of them "speaker: text"), the semantic arm
embeds the *tail*: the last turns, without their speaker labels, within TAIL_CHARS (at least the last turn), mixed
with the embedding of the whole dialogue's end at VIEW_MIX; the full-text arm reads the last LEX_TAIL_TURNS turns (0:
the whole query). Any other query is read as given by both arms. The constants are tuned (memory.search.tuning) and
cross-validated on the dev sets (README, "Retrieval quality").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["QueryViews", "dialogue_turns", "query_views"]

MIN_TURNS = 3
TAIL_TURNS = 4  # turns the semantic arm embeds (0: the query as given)
TAIL_CHARS = 400  # ... but never more characters than this (the last turn always)
VIEW_MIX = 0.0  # weight of the whole dialogue's embedding beside the tail's
LEX_TAIL_TURNS = 0  # turns the full-text arm reads (0: the whole query)
WHOLE_CHARS = 1200  # the whole view keeps the dialogue's end within this many characters
# A speaker label: a name of up to 24 characters, spaces allowed inside ("Speaker A", "User 1", "小林"), an ASCII or
# full-width colon, then the turn's text.
_SPEAKER = re.compile(r"^\s*([^\s:：][^:：\n]{0,23}?)\s*[:：]\s*(\S.*)$")


@dataclass(frozen=True)
class QueryViews:
    semantic: list[tuple[str, float]]  # (text to embed, weight of its vector)
    lexical: str
    turns: int  # 0 when the query is not a dialogue

    def described(self) -> str:
        """How the query was read, for the result's label."""
        if not self.turns:
            return "as given"
        semantic = self.semantic[0][0].count("\n") + 1 if TAIL_TURNS > 0 else self.turns
        mixed = f" (+ the whole at {VIEW_MIX})" if len(self.semantic) > 1 else ""
        lexical = f"last {LEX_TAIL_TURNS}" if LEX_TAIL_TURNS > 0 else "all"
        return f"dialogue of {self.turns} turns: semantic arm the last {semantic}{mixed}, full text {lexical}"


def dialogue_turns(query: str) -> list[str] | None:
    """The turns' texts (speaker labels dropped) when the query is a dialogue, else None."""
    lines = [line for line in query.splitlines() if line.strip()]
    if len(lines) < MIN_TURNS:
        return None
    matches = [_SPEAKER.match(line) for line in lines]
    if sum(1 for m in matches if m) < 0.8 * len(lines):
        return None
    return [m.group(2).strip() if m else line.strip() for m, line in zip(matches, lines, strict=True)]


def _tail(turns: list[str], count: int, chars: int) -> str:
    picked: list[str] = []
    used = 0
    for text in reversed(turns[-count:] if count > 0 else turns):
        if picked and used + len(text) > chars:
            break
        picked.append(text)
        used += len(text) + 1
    return "\n".join(reversed(picked))


def query_views(query: str) -> QueryViews:
    turns = dialogue_turns(query)
    if turns is None or (TAIL_TURNS <= 0 and LEX_TAIL_TURNS <= 0):
        return QueryViews(semantic=[(query, 1.0)], lexical=query, turns=0 if turns is None else len(turns))
    semantic: list[tuple[str, float]] = []
    if TAIL_TURNS > 0:
        semantic.append((_tail(turns, TAIL_TURNS, TAIL_CHARS), 1.0))
        if VIEW_MIX > 0:
            semantic.append((_tail(turns, 0, WHOLE_CHARS), VIEW_MIX))
    else:
        semantic.append((query, 1.0))
    lexical = "\n".join(turns[-LEX_TAIL_TURNS:]) if LEX_TAIL_TURNS > 0 else query
    return QueryViews(semantic=semantic, lexical=lexical, turns=len(turns))
