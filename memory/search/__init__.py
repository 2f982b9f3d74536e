"""Retrieval: the one search behind every door (search.py), what it is asked and answers (results.py), its
arms (arms.py), ranking (rank.py), query rewriting (rewrite.py), the overview on a miss (overview.py), the evidence
batches an assessment cites (evidence.py), and the walks over edges and along the tour (walks.py)."""

from __future__ import annotations

from memory.search.arms import (
    ARM_DEPTH,
    HNSW_EF_SEARCH,
    hnsw_ef_search,
    vector_arm_settings,
    vector_nearest,
    word_statistics_clear,
)
from memory.search.evidence import Verdict, evidence_assess, qualify_ref
from memory.search.overview import Overview, palace_overview
from memory.search.results import FALLBACKS, MAX_LIMIT, MAX_QUERY_CHARS, Hit, SearchRequest, SearchResult
from memory.search.search import memory_search
from memory.search.tuning import TUNABLE, ranking_constants, tuned
from memory.search.views import dialogue_turns
from memory.search.walks import (
    MAX_HOPS,
    TOUR_MAX_STOPS,
    TOUR_MIN_STOPS,
    TOUR_PAGE_MAX,
    EdgeNeighbour,
    Stretch,
    Tour,
    current_by_slot,
    edge_neighbours,
    tour_fixed,
    tour_stretch,
    tour_thematic,
)

__all__ = [
    "ARM_DEPTH",
    "FALLBACKS",
    "HNSW_EF_SEARCH",
    "MAX_HOPS",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "TOUR_MAX_STOPS",
    "TOUR_MIN_STOPS",
    "TOUR_PAGE_MAX",
    "TUNABLE",
    "EdgeNeighbour",
    "Hit",
    "Overview",
    "SearchRequest",
    "SearchResult",
    "Stretch",
    "Tour",
    "Verdict",
    "current_by_slot",
    "dialogue_turns",
    "edge_neighbours",
    "evidence_assess",
    "hnsw_ef_search",
    "memory_search",
    "palace_overview",
    "qualify_ref",
    "ranking_constants",
    "tour_fixed",
    "tour_stretch",
    "tour_thematic",
    "tuned",
    "vector_arm_settings",
    "vector_nearest",
    "word_statistics_clear",
]
