"""What a search is asked and what it answers: the request a door builds (`SearchRequest`, checked when made, as
the save path's `SaveItem`), one query's ranked candidates (`Retrieved`), and the result with its hits and the
labels that say how it was produced."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from memory.knowledge import EntityTag, FactView
from memory.models import Memory
from memory.search.rank import Candidate
from palace.errors import InvalidInput

if TYPE_CHECKING:
    from memory.search.overview import Overview

MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100
FALLBACKS = ("overview",)


@dataclass(frozen=True, kw_only=True)
class SearchRequest:
    """One search as a door received it: the query and its filters. Making one checks them (an empty or overlong
    query, an unknown kind, status or fallback, a limit out of range: InvalidInput), and the query
    is kept with NUL bytes replaced and surrounding whitespace trimmed.

    `palace_ids` narrows the palaces the caller may read (None: all of them); `as_of` (world time) and `known_at`
    (record time) make it a view of the palaces as they stood then; `fallback="overview"` adds an overview on a
    miss; `rewrite` (None: the ATRIUM_SEARCH_REWRITE setting) lets a configured chat model rewrite the query."""

    query: str
    palace_ids: list[int] | None = None
    kind: str | None = None
    room: str | None = None
    status: str | None = Memory.Status.ACTIVE
    as_of: datetime | None = None
    known_at: datetime | None = None
    limit: int = 10
    fallback: str | None = None
    rewrite: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.query, str):
            raise InvalidInput("query must be text")
        query = self.query.replace("\x00", " ").strip()
        if not query:
            raise InvalidInput("query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInput(f"query is longer than {MAX_QUERY_CHARS} characters")
        object.__setattr__(self, "query", query)
        if self.kind is not None and self.kind not in Memory.Kind.values:
            raise InvalidInput(f"kind must be one of {', '.join(Memory.Kind.values)}")
        if self.status is not None and self.status not in Memory.Status.values:
            raise InvalidInput(f"status must be one of {', '.join(Memory.Status.values)}")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
        if self.fallback is not None and self.fallback not in FALLBACKS:
            raise InvalidInput(f"fallback must be one of {', '.join(FALLBACKS)}")


@dataclass
class Hit:
    memory: Memory
    score: float
    label: str
    ref: str = ""
    ranks: dict[str, int] = field(default_factory=dict)
    expanded_from: int | None = None
    cues: list[str] = field(default_factory=list)
    # The facts of the entities this memory is linked to, true at the search's as_of / known_at (or now).
    facts: list[FactView] = field(default_factory=list)
    entities: list[EntityTag] = field(default_factory=list)  # the entities this memory is linked to


@dataclass
class SearchResult:
    mode: str  # "hybrid" only when both arms ran; "lexical" / "semantic" when one did; "none" when none could
    degraded: list[str]
    hits: list[Hit]
    batch: str | None = None
    palace_ids: list[int] = field(default_factory=list)
    # Query words (as stemmed lexemes) too common to bring lexical candidates on their own: they still count in
    # the rank of memories found by the query's other words (see memory.search.arms.lexical_plan).
    common_words: list[str] = field(default_factory=list)
    # False when nothing passed on either arm: no hits, and nothing here is evidence.
    matched: bool = False
    # The cosine a memory sharing no word with the query needed (memory.search.rank.floor_for); None: no floor.
    floor: float | None = None
    below_floor: int = 0  # candidates that shared no word with the query and sat below the floor
    # How the query was read (memory.search.views): "as given", or for a dialogue which turns the semantic arm
    # embedded and the weight it had.
    query_read: str = "as given"
    # The database the search read: "primary", or a read replica's alias (config/dbrouter.py), whose rows may lag.
    database: str = "primary"
    # The fallback this search was asked for (None: none), and on a miss with fallback="overview" what the palaces
    # hold, labelled "overview" (never hits, never evidence). The overview is built only on a miss.
    fallback: str | None = None
    overview: Overview | None = None
    # Query rewriting: "off" (no model or switched off), "rewritten" (the queries below were retrieved and fused),
    # or "failed" / "timeout" (the single query ran instead; rewrite_error says why).
    rewrite: str = "off"
    queries: list[str] = field(default_factory=list)
    rewrite_error: str = ""
    # The moments of an as-of view (None: today's palace); `view` says which in words for the result header.
    as_of: datetime | None = None
    known_at: datetime | None = None

    @property
    def arms(self) -> list[str]:
        """The retrieval arms that ran, as the doors name them: the full-text arm runs whenever a palace was
        searched; the vector arm only when the query could be embedded (`mode` "hybrid")."""
        return {"hybrid": ["lexical", "semantic"], "lexical": ["lexical"], "semantic": ["semantic"]}.get(self.mode, [])

    @property
    def view(self) -> str:
        parts = []
        if self.as_of is not None:
            parts.append(f"as of {self.as_of.isoformat()} (world time)")
        if self.known_at is not None:
            parts.append(f"as known at {self.known_at.isoformat()} (record time)")
        return " and ".join(parts) if parts else "current"


@dataclass
class Retrieved:
    """One query's ranked candidates, before hits are loaded."""

    ranked: list[Candidate]
    mode: str
    degraded: list[str]
    common: list[str]
    matched: bool
    floor: float | None
    below_floor: int
    query_read: str = "as given"
